package sw_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"os"
	"path/filepath"
	"testing"
	"time"

	"amsg/builders"
	"amsg/builders/declarativetest"
	"amsg/push"
	"amsg/web/browsertest"
)

// upstreamEnv names the directory holding @rei-standard/amsg-sw and
// @rei-standard/amsg-shared (a node_modules/@rei-standard of an install of
// amsg-sw 2.3.1, the version the registry serves). Its code is not part of
// this repository: .ci/run installs it, and with CI set a missing directory
// fails the test; elsewhere the test skips without it.
const upstreamEnv = "AMSG_UPSTREAM_SW_DIR"

// upstreamWorker serves upstream's amsg-sw as a module worker at /sw.js,
// with what its README asks the app to add (skipWaiting, clients.claim),
// and its two modules at /sw.js?file=<package>.
func upstreamWorker(t *testing.T, dir string) http.Handler {
	t.Helper()
	read := func(pkg string) []byte {
		b, err := os.ReadFile(filepath.Join(dir, pkg, "dist", "index.mjs"))
		if err != nil {
			t.Fatalf("%s: %v", upstreamEnv, err)
		}
		return b
	}
	sw := bytes.ReplaceAll(read("amsg-sw"), []byte(`"@rei-standard/amsg-shared"`), []byte(`"/sw.js?file=amsg-shared"`))
	files := map[string][]byte{
		"amsg-sw":     sw,
		"amsg-shared": read("amsg-shared"),
		// The root module counts the notifications upstream's worker has
		// finished showing, so the test reads them only once they settled
		// (see browsertest.Page.Notifications).
		"": []byte(`import { installReiSW } from '/sw.js?file=amsg-sw';
const show = self.registration.showNotification.bind(self.registration);
let settled = 0;
self.registration.showNotification = (...args) => show(...args).finally(() => { settled++; });
self.__upstreamTest = { notificationsSettled: () => settled };
installReiSW(self);
self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (event) => event.waitUntil(self.clients.claim()));
`),
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, ok := files[r.URL.Query().Get("file")]
		if !ok {
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "text/javascript")
		w.Write(body)
	})
}

// Upstream's worker shows amsg's declarative content push as it shows the
// same push without the declarative members, and shows the quiet tool
// request and error pushes (show:'always').
func TestUpstreamWorkerShowsAmsgPushes(t *testing.T) {
	dir := os.Getenv(upstreamEnv)
	switch {
	case dir == "" && os.Getenv("CI") != "":
		t.Fatalf("%s is not set: CI installs upstream's worker (.ci/run) so this test runs there", upstreamEnv)
	case dir == "":
		t.Skipf("%s is not set", upstreamEnv)
	}
	srv := newTestServer(t, "unused")
	h := upstreamWorker(t, dir)
	srv.worker.Store(&h)
	b := browsertest.New(t, browsertest.Config{})
	b.GrantNotifications(srv.URL)
	p := b.NewPage()
	p.Navigate(srv.URL + "/?module")
	p.WaitServiceWorker()

	build := builders.Builder{Now: time.Now, PageURL: srv.URL}
	common := func(id string) builders.Common {
		return builders.Common{MessageType: push.TypeInstant, Source: push.SourceInstant, MessageID: id, SessionID: "sess_up"}
	}
	declarative, _, err := build.BuildContentPush(builders.ContentArgs{Common: common("msg_up_dwp"), Message: "Tea at five?", ContactName: "Rei", Title: "来自 Rei"})
	if err != nil {
		t.Fatal(err)
	}
	out, _ := push.Encode(declarative)
	if _, err := declarativetest.Parse(out); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	bare := *declarative
	bare.MessageID, bare.Notification, bare.Unknown = "msg_up_bare", nil, nil
	tool, err := build.BuildToolRequestPush(builders.ToolRequestArgs{Common: common("msg_up_tool"), ContactName: "Rei",
		ToolCalls: json.RawMessage(`[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]`)})
	if err != nil {
		t.Fatal(err)
	}
	for _, pp := range []push.Push{&bare, declarative, tool} {
		out, err := push.Encode(pp)
		if err != nil {
			t.Fatal(err)
		}
		p.DeliverPush(string(out))
	}
	// The worker handles each push event on its own, so the notifications
	// may appear in any order: wait until all three settled, then read them
	// (polling while one is being shown would lose it).
	p.WaitForWorker("self.__upstreamTest.notificationsSettled() >= 3")
	ns := map[string]browsertest.Notification{}
	for _, n := range p.Notifications() {
		ns[n.Tag] = n
	}
	sessionTag := builders.SessionTag("sess_up")
	for _, tag := range []string{"msg_up_bare", "msg_up_dwp", sessionTag} {
		if _, ok := ns[tag]; !ok {
			t.Fatalf("no notification tagged %s among %+v", tag, ns)
		}
	}
	before, after := ns["msg_up_bare"], ns["msg_up_dwp"]
	if before.Title != "来自 Rei" || after.Title != before.Title || after.Body != before.Body || after.Body != "Tea at five?" ||
		after.Icon != before.Icon || after.Silent != before.Silent {
		t.Errorf("declarative push shown as %+v, the same push without its declarative members as %+v", after, before)
	}
	if n := ns[sessionTag]; !n.Silent || n.Body != "Rei needs this device to continue" || n.Title != "From Rei" {
		t.Errorf("tool request shown as %+v", n)
	}
}
