package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"sync"
	"testing"

	"github.com/chromedp/cdproto/browser"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/serviceworker"
	"github.com/chromedp/cdproto/storage"
	"github.com/chromedp/chromedp"

	"amsg/push"
)

// Page is one browser tab. Its methods report failures to the test it was
// opened for; With binds it to a subtest.
type Page struct {
	t testing.TB
	*tab
}

// tab is the state a Page and its With views share.
type tab struct {
	b   *Browser
	ctx context.Context

	mu     sync.Mutex
	regs   map[string]serviceworker.RegistrationID // live registrations by scope URL
	origin string                                  // set by WaitServiceWorker
	regID  serviceworker.RegistrationID
}

// NewPage opens a tab (the first call takes the browser's initial tab) with
// the ServiceWorker domain enabled, so pushes can be delivered through it.
func (b *Browser) NewPage() *Page {
	b.t.Helper()
	ctx := b.ctx
	if b.started {
		ctx, _ = chromedp.NewContext(b.ctx) // closed with the browser
	}
	b.started = true
	p := &Page{t: b.t, tab: &tab{b: b, ctx: ctx, regs: map[string]serviceworker.RegistrationID{}}}
	chromedp.ListenTarget(ctx, p.onEvent)
	if err := chromedp.Run(ctx, serviceworker.Enable()); err != nil {
		b.t.Fatalf("browsertest: open page: %v", err)
	}
	b.mu.Lock()
	b.pages = append(b.pages, p.tab)
	b.mu.Unlock()
	return p
}

// With returns the same tab reporting failures to t, for use in subtests.
func (p *Page) With(t testing.TB) *Page {
	return &Page{t: t, tab: p.tab}
}

func (p *tab) onEvent(ev any) {
	if ev, ok := ev.(*serviceworker.EventWorkerRegistrationUpdated); ok {
		p.mu.Lock()
		for _, r := range ev.Registrations {
			if r.IsDeleted {
				delete(p.regs, r.ScopeURL)
			} else {
				p.regs[r.ScopeURL] = r.RegistrationID
			}
		}
		p.mu.Unlock()
		return
	}
	p.b.recordConsole("page", ev)
}

// Navigate loads url and waits for its load event.
func (p *Page) Navigate(url string) {
	p.t.Helper()
	if err := p.b.run(p.ctx, chromedp.Navigate(url)); err != nil {
		p.t.Fatalf("browsertest: navigate to %s: %v", url, err)
	}
}

// Eval evaluates a JavaScript expression in the page, awaiting it when it
// is a promise, and unmarshals its JSON value into out (nil ignores it). It
// fails the test on an error or an exception.
func (p *Page) Eval(expr string, out any) {
	p.t.Helper()
	if err := p.EvalErr(expr, out); err != nil {
		p.t.Fatalf("browsertest: eval %q: %v", abbreviate(expr), err)
	}
}

// EvalErr is Eval returning the error (an exception or a rejection) instead
// of failing the test.
func (p *Page) EvalErr(expr string, out any) error {
	return p.b.run(p.ctx, evaluate(expr, out))
}

func evaluate(expr string, out any) chromedp.Action {
	return chromedp.Evaluate(expr, out, func(e *runtime.EvaluateParams) *runtime.EvaluateParams {
		return e.WithAwaitPromise(true)
	})
}

// WaitFor polls the expression until its value, awaited when it is a
// promise, is truthy.
func (p *Page) WaitFor(expr string) {
	p.t.Helper()
	p.b.poll(p.t, abbreviate(expr), func() (bool, error) {
		var ok bool
		err := p.EvalErr("(async () => Boolean(await ("+expr+")))()", &ok)
		return ok, err
	})
}

// WaitServiceWorker waits until an activated service worker controls the page and its
// registration for the page origin's root scope is known, and returns the
// registration id. DeliverPush and StopAllWorkers use that registration
// afterwards, even while the tab shows another page.
func (p *Page) WaitServiceWorker() serviceworker.RegistrationID {
	p.t.Helper()
	var origin string
	p.Eval("location.origin", &origin)
	// The controller is set by clients.claim() while the worker is still
	// activating; functional events such as pushes want it activated.
	p.WaitFor("navigator.serviceWorker.controller !== null && navigator.serviceWorker.controller.state === 'activated'")
	var id serviceworker.RegistrationID
	p.b.poll(p.t, "the service worker registration of "+origin+"/", func() (bool, error) {
		p.mu.Lock()
		defer p.mu.Unlock()
		var ok bool
		id, ok = p.regs[origin+"/"]
		return ok, nil
	})
	p.mu.Lock()
	p.origin, p.regID = origin, id
	p.mu.Unlock()
	return id
}

func (p *tab) registration() (string, serviceworker.RegistrationID, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.origin == "" {
		return "", "", errors.New("call WaitServiceWorker first")
	}
	return p.origin, p.regID, nil
}

// DeliverPush hands data to the service worker as the payload of a Web Push
// message (ServiceWorker.deliverPushMessage), as if the push service had
// delivered it; the plaintext skips encryption.
func (p *Page) DeliverPush(data string) {
	p.t.Helper()
	origin, id, err := p.registration()
	if err == nil {
		err = p.b.run(p.ctx, serviceworker.DeliverPushMessage(origin, id, data))
	}
	if err != nil {
		p.t.Fatalf("browsertest: deliver push: %v", err)
	}
}

// DeliverPushJSON delivers v, JSON-encoded, as a push.
func (p *Page) DeliverPushJSON(v any) {
	p.t.Helper()
	data, err := json.Marshal(v)
	if err != nil {
		p.t.Fatalf("browsertest: encode push: %v", err)
	}
	p.DeliverPush(string(data))
}

// StopAllWorkers stops every service worker of the browser; the next event
// (a push, a message) starts a fresh worker, so in-memory state is gone.
func (p *Page) StopAllWorkers() {
	p.t.Helper()
	if err := p.b.run(p.ctx, serviceworker.StopAllWorkers()); err != nil {
		p.t.Fatalf("browsertest: stop workers: %v", err)
	}
}

// ClearSiteData clears storage of the page's origin as the user's "clear
// site data" does (Storage.clearDataForOrigin); storageTypes is a comma
// list such as "indexeddb" or "all". Open IndexedDB connections are
// force-closed, which only fires their close event.
func (p *Page) ClearSiteData(storageTypes string) {
	p.t.Helper()
	origin, _, err := p.registration()
	if err == nil {
		err = p.b.run(p.ctx, storage.ClearDataForOrigin(origin, storageTypes))
	}
	if err != nil {
		p.t.Fatalf("browsertest: clear %s: %v", storageTypes, err)
	}
}

// WorkerEval evaluates an expression in the service worker of the page's
// origin (starting it if it is stopped), awaiting promises, and unmarshals
// the JSON value into out. It fails the test on an error.
func (p *Page) WorkerEval(expr string, out any) {
	p.t.Helper()
	if err := p.WorkerEvalErr(expr, out); err != nil {
		p.t.Fatalf("browsertest: worker eval %q: %v", abbreviate(expr), err)
	}
}

// WorkerEvalErr is WorkerEval returning the error instead of failing.
func (p *Page) WorkerEvalErr(expr string, out any) error {
	origin, _, err := p.registration()
	if err != nil {
		return err
	}
	if err := p.b.run(p.ctx, serviceworker.StartWorker(origin+"/")); err != nil {
		return fmt.Errorf("start worker: %w", err)
	}
	var w *worker
	err = p.b.waitUntil("a running service worker of "+origin, func() (bool, error) {
		var err error
		w, err = p.b.liveWorker(origin)
		return w != nil, err
	})
	if err != nil {
		return err
	}
	return p.b.run(w.ctx, evaluate(expr, out))
}

// WaitForWorker polls the expression in the service worker of the page's
// origin until its value, awaited when it is a promise, is truthy. It works
// while the tab shows another origin or about:blank.
func (p *Page) WaitForWorker(expr string) {
	p.t.Helper()
	p.b.poll(p.t, "worker: "+abbreviate(expr), func() (bool, error) {
		var ok bool
		err := p.WorkerEvalErr("(async () => Boolean(await ("+expr+")))()", &ok)
		return ok, err
	})
}

// Notification is a shown notification as registration.getNotifications()
// reports it.
type Notification struct {
	Title              string         `json:"title"`
	Body               string         `json:"body"`
	Tag                string         `json:"tag"`
	Icon               string         `json:"icon"`
	Badge              string         `json:"badge"`
	Silent             bool           `json:"silent"`
	RequireInteraction bool           `json:"requireInteraction"`
	Renotify           bool           `json:"renotify"`
	Data               map[string]any `json:"data"`
}

const notificationsJS = `(async () => {
	const reg = await navigator.serviceWorker.getRegistration('/');
	if (!reg) return [];
	return (await reg.getNotifications()).map((n) => ({
		title: n.title, body: n.body, tag: n.tag, icon: n.icon, badge: n.badge, silent: n.silent,
		requireInteraction: n.requireInteraction, renotify: n.renotify, data: n.data,
	}));
})()`

// Notifications returns the notifications the origin's service worker shows
// now. Call it only once the showNotification calls of interest have
// settled (wait on a signal from the worker, e.g. with WaitForWorker):
// Chromium's getNotifications() deletes a notification it catches between
// being stored and being displayed, so polling it during a show loses the
// notification for good.
func (p *Page) Notifications() []Notification {
	p.t.Helper()
	var ns []Notification
	p.Eval(notificationsJS, &ns)
	return ns
}

// WaitNotification polls until a shown notification satisfies match and
// returns it. The caveat of Notifications applies: start it only after the
// worker's showNotification settled.
func (p *Page) WaitNotification(what string, match func(Notification) bool) Notification {
	p.t.Helper()
	var found Notification
	p.b.poll(p.t, "notification "+what, func() (bool, error) {
		var ns []Notification
		if err := p.EvalErr(notificationsJS, &ns); err != nil {
			return false, err
		}
		for _, n := range ns {
			if match(n) {
				found = n
				return true, nil
			}
		}
		return false, fmt.Errorf("%d other notification(s) shown", len(ns))
	})
	return found
}

// CloseNotifications closes every shown notification of the origin.
func (p *Page) CloseNotifications() {
	p.t.Helper()
	p.Eval(`(async () => {
		const reg = await navigator.serviceWorker.getRegistration('/');
		if (reg) (await reg.getNotifications()).forEach((n) => n.close());
	})()`, nil)
}

// RecordWorkerMessages makes this tab record every message a service worker
// posts to it, from the next document on (call it before Navigate). Read
// them with WorkerMessages.
func (p *Page) RecordWorkerMessages() {
	p.addInitScript(`window.__browsertestSWMessages = [];
if (navigator.serviceWorker) {
	navigator.serviceWorker.addEventListener('message', (e) => window.__browsertestSWMessages.push(e.data));
	navigator.serviceWorker.startMessages();
}`)
}

// WorkerMessages returns the messages recorded since the document loaded.
func (p *Page) WorkerMessages() []json.RawMessage {
	p.t.Helper()
	var msgs []json.RawMessage
	p.Eval("window.__browsertestSWMessages || []", &msgs)
	return msgs
}

// StubPushSubscribe replaces PushManager.prototype.subscribe and
// getSubscription, from the next document on, with a fake that returns sub.
// A real subscribe never settles in an offline headless browser; with the
// stub the test owns the subscription's keys and can decrypt what a server
// sends to it. The options of every subscribe call are kept in
// window.__browsertestSubscribeCalls (applicationServerKey as base64url).
func (p *Page) StubPushSubscribe(sub push.Subscription) {
	p.t.Helper()
	subJSON, err := json.Marshal(sub)
	if err != nil {
		p.t.Fatalf("browsertest: encode subscription: %v", err)
	}
	p.addInitScript(fmt.Sprintf(stubSubscribeJS, subJSON))
}

const stubSubscribeJS = `(() => {
	if (!self.PushManager) return;
	const json = %s;
	const b64url = (buf) => btoa(String.fromCharCode(...new Uint8Array(buf))).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
	const unb64url = (s) => Uint8Array.from(atob(s.replace(/-/g, '+').replace(/_/g, '/')), (c) => c.charCodeAt(0)).buffer;
	const toBuffer = (k) => (k == null ? null : typeof k === 'string' ? unb64url(k) : ArrayBuffer.isView(k) ? k.buffer.slice(k.byteOffset, k.byteOffset + k.byteLength) : k);
	let current = null;
	self.__browsertestSubscribeCalls = [];
	PushManager.prototype.subscribe = async function (options = {}) {
		const applicationServerKey = toBuffer(options.applicationServerKey);
		self.__browsertestSubscribeCalls.push({ userVisibleOnly: options.userVisibleOnly, applicationServerKey: applicationServerKey && b64url(applicationServerKey) });
		current = {
			endpoint: json.endpoint,
			expirationTime: json.expirationTime,
			options: { userVisibleOnly: Boolean(options.userVisibleOnly), applicationServerKey },
			getKey: (name) => (json.keys[name] ? unb64url(json.keys[name]) : null),
			toJSON: () => JSON.parse(JSON.stringify(json)),
			unsubscribe: async () => { current = null; return true; },
		};
		return current;
	};
	PushManager.prototype.getSubscription = async function () { return current; };
	PushManager.prototype.permissionState = async function () { return 'granted'; };
})();`

// addInitScript runs script in every new document of the tab and in the
// current one.
func (p *Page) addInitScript(script string) {
	p.t.Helper()
	err := p.b.run(p.ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		_, err := page.AddScriptToEvaluateOnNewDocument(script).Do(ctx)
		return err
	}), chromedp.Evaluate(script, nil))
	if err != nil {
		p.t.Fatalf("browsertest: add init script: %v", err)
	}
}

// Viewport is a window size for screenshots.
type Viewport struct {
	Width, Height int64
	Mobile        bool    // touch and mobile layout
	Scale         float64 // device pixel ratio; zero means 1
}

// Common viewports.
var (
	Desktop = Viewport{Width: 1280, Height: 800}
	Phone   = Viewport{Width: 390, Height: 844, Mobile: true, Scale: 3}
)

// Screenshot resizes the tab to v and returns a PNG of the viewport.
func (p *Page) Screenshot(v Viewport) []byte {
	p.t.Helper()
	opts := []chromedp.EmulateViewportOption{}
	if v.Scale > 0 {
		opts = append(opts, chromedp.EmulateScale(v.Scale))
	}
	if v.Mobile {
		opts = append(opts, chromedp.EmulateMobile)
	}
	var png []byte
	if err := p.b.run(p.ctx, chromedp.EmulateViewport(v.Width, v.Height, opts...), chromedp.CaptureScreenshot(&png)); err != nil {
		p.t.Fatalf("browsertest: screenshot at %dx%d: %v", v.Width, v.Height, err)
	}
	return png
}

// EmulateColorScheme makes prefers-color-scheme match scheme ("light" or
// "dark") in the tab; "" restores the browser's own.
func (p *Page) EmulateColorScheme(scheme string) {
	p.t.Helper()
	features := []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}}
	if err := p.b.run(p.ctx, emulation.SetEmulatedMedia().WithFeatures(features)); err != nil {
		p.t.Fatalf("browsertest: emulate color scheme %q: %v", scheme, err)
	}
}

// SaveScreenshot writes Screenshot(v) to path.
func (p *Page) SaveScreenshot(path string, v Viewport) {
	p.t.Helper()
	if err := os.WriteFile(path, p.Screenshot(v), 0o644); err != nil {
		p.t.Fatalf("browsertest: %v", err)
	}
}

func grantNotifications(ctx context.Context, origin string) error {
	err := browser.SetPermission(&browser.PermissionDescriptor{Name: "notifications"}, browser.PermissionSettingGranted).
		WithOrigin(origin).Do(ctx)
	if err == nil {
		err = browser.SetPermission(&browser.PermissionDescriptor{Name: "push", UserVisibleOnly: true}, browser.PermissionSettingGranted).
			WithOrigin(origin).Do(ctx)
	}
	if err != nil {
		// Older or newer browsers may know only the deprecated call.
		return browser.GrantPermissions([]browser.PermissionType{browser.PermissionTypeNotifications}).WithOrigin(origin).Do(ctx)
	}
	return nil
}

func abbreviate(s string) string {
	if len(s) > 80 {
		return s[:77] + "..."
	}
	return s
}
