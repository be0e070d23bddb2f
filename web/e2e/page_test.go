package e2e_test

import (
	"testing"

	"amsg/web/browsertest"
)

func TestPageLoadsAndWorkerControlsIt(t *testing.T) {
	srv := newServer(t)
	_, p, _ := openApp(t, srv, "")
	p.WaitFor(`document.querySelector('main h1') !== null`)
	var got struct {
		Title      string `json:"title"`
		Heading    string `json:"heading"`
		Controller string `json:"controller"`
	}
	p.Eval(`({title: document.title, heading: document.querySelector('main h1').textContent,
		controller: navigator.serviceWorker.controller.scriptURL})`, &got)
	if got.Controller != srv.URL+"/sw.js" {
		t.Errorf("controlled by %q", got.Controller)
	}
	if got.Title != "Notifications · amsg" || got.Heading != "Messages that reach you" {
		t.Errorf("first visit shows %q / %q, want the onboarding", got.Title, got.Heading)
	}
	for _, v := range []browsertest.Viewport{browsertest.Desktop, browsertest.Phone} {
		if len(p.Screenshot(v)) == 0 {
			t.Errorf("empty screenshot at %dx%d", v.Width, v.Height)
		}
	}
}
