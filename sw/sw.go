// Package sw serves amsg's service worker: the push, notification, dedupe,
// multipart, request-queue and offline-shell logic that runs in the browser.
// The script is embedded; Handler serves it with a version stamped in, so a
// new build yields a byte-different worker and browsers install it.
package sw

import (
	"bytes"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io/fs"
	"net/http"
	"time"

	"amsg/push/notifytext"
)

//go:embed sw.js
var source []byte

// versionPlaceholder is the JavaScript string literal in sw.js that Script
// replaces with the version.
const versionPlaceholder = `"__AMSG_SW_VERSION__"`

// textsPlaceholder is the JavaScript string literal in sw.js that Script
// replaces with push/notifytext's tables, so the notification texts the
// worker writes itself come from the same table as the server's.
const textsPlaceholder = `"__AMSG_NOTIFY_TEXTS__"`

// DefaultVersion is stamped in when the caller gives no version.
const DefaultVersion = "dev"

// Script returns the service worker source with version and the
// notification texts stamped in. The
// worker names its offline-shell cache after the version, so pass a hash of
// the web assets it precaches.
func Script(version string) []byte {
	if version == "" {
		version = DefaultVersion
	}
	// JSON string escaping is valid JavaScript, including U+2028/U+2029.
	literal, err := json.Marshal(version)
	if err != nil {
		panic(err) // a string always marshals
	}
	texts, err := json.Marshal(notifytext.Tables())
	if err != nil {
		panic(err) // maps of strings always marshal
	}
	script := bytes.Replace(source, []byte(versionPlaceholder), literal, 1)
	return bytes.Replace(script, []byte(textsPlaceholder), texts, 1)
}

// Handler serves Script(version). Mount it at /sw.js so the worker's scope is
// the whole origin. It answers GET and HEAD, revalidates with an ETag, and
// sends Cache-Control: no-cache so browsers check for a new worker on every
// update check.
func Handler(version string) http.Handler {
	body := Script(version)
	sum := sha256.Sum256(body)
	etag := `"` + hex.EncodeToString(sum[:16]) + `"`
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/javascript; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("ETag", etag)
		http.ServeContent(w, r, "sw.js", time.Time{}, bytes.NewReader(body))
	})
}

// AssetVersion hashes every file of fsys (paths and contents, in lexical
// order) into a short version for Handler, so the worker, and with it the
// offline-shell cache, changes exactly when the web assets do.
func AssetVersion(fsys fs.FS) (string, error) {
	h := sha256.New()
	err := fs.WalkDir(fsys, ".", func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		data, err := fs.ReadFile(fsys, path)
		if err != nil {
			return err
		}
		// Length-prefixed, so no two different trees hash alike.
		fmt.Fprintf(h, "%d:%s%d:", len(path), path, len(data))
		h.Write(data)
		return nil
	})
	if err != nil {
		return "", fmt.Errorf("sw: hash web assets: %w", err)
	}
	return hex.EncodeToString(h.Sum(nil)[:8]), nil
}
