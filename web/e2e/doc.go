// Package e2e holds the companion page's end-to-end tests: the real API
// server (api.New over a real SQLite store, the page and the service worker
// mounted as cmd/amsg mounts them) on loopback, driven in headless Chromium
// by web/browsertest.
//
// Screenshots of every view at 1280×800 and 390×844, light and dark, are
// written by
//
//	AMSG_SCREENSHOTS=/tmp/amsg-shots go test ./web/e2e -run TestScreenshots -v
//
// (without AMSG_SCREENSHOTS they go to the system temp dir and the path is
// logged). Failing tests save screenshots of their pages the same way.
package e2e
