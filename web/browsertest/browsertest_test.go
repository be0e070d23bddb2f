package browsertest

import (
	"bytes"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"amsg/push"
)

func TestFindBinary(t *testing.T) {
	t.Setenv(EnvBinary, filepath.Join(t.TempDir(), "no-such-chromium"))
	if _, err := FindBinary(); err == nil || !strings.Contains(err.Error(), EnvBinary) {
		t.Errorf("a missing $%s gave %v, want an error naming it", EnvBinary, err)
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	t.Setenv(EnvBinary, self)
	if got, err := FindBinary(); err != nil || got != self {
		t.Errorf("FindBinary() = %q, %v; want $%s", got, err, EnvBinary)
	}
}

// harnessServer serves a page and a worker that misbehave on request.
func harnessServer(t *testing.T) *httptest.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		io.WriteString(w, `<!doctype html><html lang="en"><head><meta charset="utf-8"><title>harness</title><link rel="icon" href="data:,"></head>
<body style="background:#0a7"><h1>harness</h1><script>navigator.serviceWorker.register('/sw.js');</script></body></html>`)
	})
	mux.HandleFunc("GET /sw.js", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/javascript")
		io.WriteString(w, `self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));
self.addEventListener('message', (e) => {
	if (e.data === 'echo') e.source.postMessage({ echoed: true });
	if (e.data === 'fail') console.error('worker boom');
});
self.addEventListener('push', (e) => e.waitUntil(self.registration.showNotification('pushed', { body: e.data.text(), tag: 't1', data: { n: 1 } }).then(() => { self.__shown = true; })));`)
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func TestPage(t *testing.T) {
	srv := harnessServer(t)
	b := New(t, Config{})
	b.GrantNotifications(srv.URL)
	p := b.NewPage()
	p.RecordWorkerMessages()
	sub := push.Subscription{Endpoint: "http://127.0.0.1:1/push/abc", Keys: push.SubscriptionKeys{P256dh: "BPk", Auth: "YXV0aA"}}
	p.StubPushSubscribe(sub)
	p.Navigate(srv.URL + "/")
	if id := p.WaitServiceWorker(); id == "" {
		t.Fatal("no registration id")
	}

	var permission string
	p.Eval(`Notification.permission`, &permission)
	if permission != "granted" {
		t.Errorf("Notification.permission = %q", permission)
	}

	t.Run("push and notifications", func(t *testing.T) {
		p := p.With(t)
		p.DeliverPush("hello")
		// Reading notifications while one is being shown loses it (see Notifications).
		p.WaitForWorker(`self.__shown`)
		n := p.WaitNotification("t1", func(n Notification) bool { return n.Tag == "t1" })
		if n.Title != "pushed" || n.Body != "hello" || !reflect.DeepEqual(n.Data, map[string]any{"n": 1.0}) {
			t.Errorf("notification %+v", n)
		}
		p.CloseNotifications()
		if ns := p.Notifications(); len(ns) != 0 {
			t.Errorf("still shown after CloseNotifications: %+v", ns)
		}
	})

	t.Run("worker messages and eval", func(t *testing.T) {
		p := p.With(t)
		p.Eval(`navigator.serviceWorker.controller.postMessage('echo')`, nil)
		p.WaitFor(`window.__browsertestSWMessages.length > 0`)
		if msgs := p.WorkerMessages(); len(msgs) != 1 || string(msgs[0]) != `{"echoed":true}` {
			t.Errorf("worker messages %s", msgs)
		}
		var scope string
		p.WorkerEval(`self.registration.scope`, &scope)
		if scope != srv.URL+"/" {
			t.Errorf("worker eval saw scope %q", scope)
		}
		p.WorkerEval(`self.__mark = 1`, nil)
		p.StopAllWorkers()
		var mark string
		p.WorkerEval(`typeof self.__mark`, &mark)
		if mark != "undefined" {
			t.Errorf("after StopAllWorkers the worker still has its globals")
		}
	})

	t.Run("stubbed subscribe", func(t *testing.T) {
		p := p.With(t)
		var got struct {
			JSON  push.Subscription `json:"json"`
			Calls []map[string]any  `json:"calls"`
			Same  bool              `json:"same"`
		}
		p.Eval(`(async () => {
			const reg = await navigator.serviceWorker.ready;
			const s = await reg.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: new Uint8Array([4, 1, 2]) });
			return { json: s.toJSON(), calls: window.__browsertestSubscribeCalls, same: (await reg.pushManager.getSubscription()) === s };
		})()`, &got)
		if !reflect.DeepEqual(got.JSON, sub) || !got.Same {
			t.Errorf("stub subscription %+v (same as getSubscription: %v), want %+v", got.JSON, got.Same, sub)
		}
		if want := []map[string]any{{"userVisibleOnly": true, "applicationServerKey": "BAEC"}}; !reflect.DeepEqual(got.Calls, want) {
			t.Errorf("recorded calls %v, want %v", got.Calls, want)
		}
	})

	t.Run("console errors", func(t *testing.T) {
		p := p.With(t)
		p.Eval(`console.error('page boom'); setTimeout(() => { throw new Error('thrown boom'); }); navigator.serviceWorker.controller.postMessage('fail')`, nil)
		var errs []string
		err := b.waitUntil("three console errors", func() (bool, error) {
			errs = append(errs, b.TakeConsoleErrors()...)
			return len(errs) >= 3, nil
		})
		if err != nil {
			t.Error(err)
		}
		joined := strings.Join(errs, "\n")
		for _, want := range []string{"page: console.error: page boom", "page: uncaught: ", "thrown boom", "worker " + srv.URL + "/sw.js: console.error: worker boom"} {
			if !strings.Contains(joined, want) {
				t.Errorf("console errors lack %q:\n%s", want, joined)
			}
		}
	})

	t.Run("screenshots", func(t *testing.T) {
		p := p.With(t)
		for _, v := range []Viewport{Desktop, Phone} {
			img, err := png.Decode(bytes.NewReader(p.Screenshot(v)))
			if err != nil {
				t.Fatal(err)
			}
			scale := v.Scale
			if scale == 0 {
				scale = 1
			}
			if got, want := img.Bounds().Dx(), int(float64(v.Width)*scale); got != want {
				t.Errorf("screenshot at %+v is %d px wide, want %d", v, got, want)
			}
		}
		dir := t.TempDir()
		b.cfg.ArtifactsDir = dir
		b.saveFailureScreenshots()
		if _, err := os.Stat(filepath.Join(dir, "page-1.png")); err != nil {
			t.Errorf("failure screenshot: %v", err)
		}
	})
}
