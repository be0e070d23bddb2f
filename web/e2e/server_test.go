package e2e_test

import (
	"log/slog"
	"net/http/httptest"
	"testing"

	"amsg/api"
	"amsg/store"
	"amsg/store/storetest"
	"amsg/sw"
	"amsg/web"
	"amsg/web/browsertest"
)

// server is the amsg HTTP server as cmd/amsg assembles it, on loopback.
type server struct {
	*httptest.Server
	Store *store.Store
}

func newServer(t *testing.T) *server {
	t.Helper()
	st := storetest.New(t)
	version, err := sw.AssetVersion(web.FS())
	if err != nil {
		t.Fatal(err)
	}
	h, err := api.New(api.Config{
		Logger: slog.New(slog.NewTextHandler(t.Output(), &slog.HandlerOptions{Level: slog.LevelWarn})),
	}, api.Deps{Store: st, Web: web.Handler(), ServiceWorker: sw.Handler(version)})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return &server{Server: srv, Store: st}
}

// openApp starts a browser with notifications granted, loads the page at
// hash and waits until the service worker controls it.
func openApp(t *testing.T, srv *server, hash string) (*browsertest.Browser, *browsertest.Page) {
	t.Helper()
	b := browsertest.New(t, browsertest.Config{})
	b.GrantNotifications(srv.URL)
	p := b.NewPage()
	p.Navigate(srv.URL + "/" + hash)
	p.WaitServiceWorker()
	return b, p
}
