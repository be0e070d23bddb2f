//go:build ignore

// gen_zones writes zones.txt, the IANA zone names of the Go distribution's
// time zone database (the data time/tzdata embeds), one per line, so zone
// names can be looked up without regard to case.
package main

import (
	"archive/zip"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
)

func main() {
	zr, err := zip.OpenReader(filepath.Join(runtime.GOROOT(), "lib", "time", "zoneinfo.zip"))
	if err != nil {
		log.Fatal(err)
	}
	defer zr.Close()
	var names []string
	for _, f := range zr.File {
		if !strings.HasSuffix(f.Name, "/") {
			names = append(names, f.Name)
		}
	}
	slices.Sort(names)
	if err := os.WriteFile("zones.txt", []byte(strings.Join(names, "\n")+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
}
