package e2e_test

import (
	"testing"

	"amsg/web/browsertest"
)

// A subscribe that never settles (a headless browser offline reaches no
// push service) ends with a clear message instead of "Subscribing…"
// forever.
func TestSubscribeTimesOut(t *testing.T) {
	srv := newServer(t)
	b := browsertest.New(t, browsertest.Config{})
	b.GrantNotifications(srv.URL)
	p := b.NewPage() // no StubPushSubscribe: the real subscribe hangs
	p.Navigate(srv.URL + "/")
	p.WaitServiceWorker()
	p.WaitFor(`document.querySelector('#enable')`)
	p.Eval(`import('/js/device.js').then((m) => { m.timing.subscribeTimeoutMs = 300; return true; })`, nil)
	p.Eval(`document.querySelector('#enable').click()`, nil)
	p.WaitFor(`document.querySelector('.onboarding .notice.error')?.textContent.includes('did not finish turning on notifications')`)
	if errs := b.TakeConsoleErrors(); len(errs) > 0 {
		t.Fatalf("console errors: %v", errs)
	}
}
