package web

import (
	"embed"
	"io/fs"
	"net/http"
	"strings"
)

//go:embed admin
var adminFiles embed.FS

// AdminPath is where the operator page is served; its files are below it.
const AdminPath = "/admin"

// AdminHandler serves the operator page (admin/, embedded): AdminPath and
// AdminPath/ are its index.html, AdminPath/<file> the rest. The page asks
// for the operator token itself; the data it shows comes from the admin
// API, which checks it.
func AdminHandler() http.Handler {
	assets := map[string]asset{}
	err := fs.WalkDir(adminFiles, "admin", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		body, err := fs.ReadFile(adminFiles, p)
		if err != nil {
			return err
		}
		urlPath := AdminPath + strings.TrimPrefix(p, "admin")
		if p == "admin/index.html" {
			assets[AdminPath] = newAsset(p, body)
			urlPath = AdminPath + "/"
		}
		assets[urlPath] = newAsset(p, body)
		return nil
	})
	if err != nil {
		panic(err) // the embedded tree is readable by construction
	}
	return serveAssets(assets)
}
