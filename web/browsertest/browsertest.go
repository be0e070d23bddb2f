// Package browsertest runs tests against a real headless Chromium, in the
// spirit of net/http/httptest: New starts a browser with a fresh profile for
// one test and closes it when the test ends; a Page drives one tab.
//
// It finds the browser in $AMSG_CHROMIUM or /usr/bin/chromium and skips the
// test when there is none, unless AMSG_REQUIRE_BROWSER=1 (set by CI), which
// turns a missing browser into a failure so browser tests never skip silently.
//
// Everything a test waits for is polled with a deadline (Config.Timeout):
// browser events such as a notification being shown have no other signal.
// Console errors and uncaught exceptions of pages and service workers fail
// the test unless taken with TakeConsoleErrors or allowed by the Config. When
// a test fails, a screenshot of every open page is saved and its path logged.
package browsertest

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/cdproto/target"
	"github.com/chromedp/chromedp"
)

// Environment variables the harness reads.
const (
	// EnvBinary names the Chromium executable to use.
	EnvBinary = "AMSG_CHROMIUM"
	// EnvRequire, set to 1, makes a missing browser fail the test instead of
	// skipping it.
	EnvRequire = "AMSG_REQUIRE_BROWSER"
)

// DefaultBinary is where Debian's chromium package installs the browser.
const DefaultBinary = "/usr/bin/chromium"

// DefaultTimeout bounds every wait and command when Config.Timeout is zero.
const DefaultTimeout = 10 * time.Second

// Config configures a Browser. The zero value is ready to use.
type Config struct {
	// Binary is the browser executable; empty means FindBinary.
	Binary string
	// Timeout bounds each wait and each browser command; zero means
	// DefaultTimeout.
	Timeout time.Duration
	// AllowConsoleErrors keeps console errors and uncaught exceptions from
	// failing the test.
	AllowConsoleErrors bool
	// ArtifactsDir receives failure screenshots; empty means
	// os.TempDir()/amsg-browsertest/<test name>. (t.TempDir is removed when
	// the test ends, so it cannot hold them.)
	ArtifactsDir string
}

// FindBinary returns the browser executable: $AMSG_CHROMIUM when set, else
// /usr/bin/chromium, else chromium on PATH.
func FindBinary() (string, error) {
	if path := os.Getenv(EnvBinary); path != "" {
		if _, err := os.Stat(path); err != nil {
			return "", fmt.Errorf("browsertest: %s=%s: %w", EnvBinary, path, err)
		}
		return path, nil
	}
	if _, err := os.Stat(DefaultBinary); err == nil {
		return DefaultBinary, nil
	}
	if path, err := exec.LookPath("chromium"); err == nil {
		return path, nil
	}
	return "", fmt.Errorf("browsertest: no Chromium at %s or on PATH (install Debian's chromium package or set %s)", DefaultBinary, EnvBinary)
}

// Browser is a headless Chromium with a fresh profile, owned by one test.
type Browser struct {
	t       testing.TB
	cfg     Config
	ctx     context.Context // the browser's first tab; cancelling it stops Chromium
	started bool            // whether the first tab is taken by a Page

	mu      sync.Mutex
	done    bool // the test has ended: no more t.Logf
	pages   []*tab
	workers map[target.ID]*worker
	errs    []string
}

// worker is a service worker target the harness attached to, for its
// console and for WorkerEval.
type worker struct {
	ctx   context.Context
	url   string
	alive bool
	seq   int // attach order: the newest live worker of an origin wins
}

// New starts Chromium for t with the flags the project's browser tests use
// and a fresh user-data-dir. It skips t when no browser is installed unless
// AMSG_REQUIRE_BROWSER=1. The browser is closed when t ends.
func New(t testing.TB, cfg Config) *Browser {
	t.Helper()
	if cfg.Timeout <= 0 {
		cfg.Timeout = DefaultTimeout
	}
	bin := cfg.Binary
	if bin == "" {
		var err error
		if bin, err = FindBinary(); err != nil {
			if os.Getenv(EnvRequire) == "1" {
				t.Fatalf("%v (%s=1 forbids skipping)", err, EnvRequire)
			}
			t.Skipf("skipping browser test: %v", err)
		}
	}
	profile := t.TempDir() // registered before the close below, so removed after it

	opts := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(bin),
		chromedp.UserDataDir(profile),
		chromedp.Flag("headless", "new"),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-sync", true),
	)
	allocCtx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	b := &Browser{t: t, cfg: cfg, workers: map[target.ID]*worker{}}
	ctx, cancel := chromedp.NewContext(allocCtx, chromedp.WithErrorf(b.logf), chromedp.WithLogf(b.logf))
	b.ctx = ctx
	t.Cleanup(func() {
		b.finish()
		// A graceful close waits for Chromium to exit, so its profile can be removed.
		if err := chromedp.Cancel(ctx); err != nil {
			t.Logf("browsertest: close browser: %v", err)
		}
		cancel()
		cancelAlloc()
	})
	// Start the browser without a deadline: a timeout on the first Run would
	// kill it later.
	if err := chromedp.Run(ctx); err != nil {
		t.Fatalf("browsertest: start %s: %v", bin, err)
	}
	chromedp.ListenBrowser(ctx, b.onBrowserEvent)
	return b
}

// logf passes chromedp's own diagnostics to the test log, dropping the
// protocol-version noise of events newer than the pinned cdproto.
func (b *Browser) logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if strings.Contains(msg, "could not unmarshal event") || strings.Contains(msg, "unhandled") {
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.done {
		b.t.Logf("chromedp: %s", msg)
	}
}

// onBrowserEvent attaches to every service worker as it starts, to collect
// its console errors and to evaluate in it.
func (b *Browser) onBrowserEvent(ev any) {
	switch ev := ev.(type) {
	case *target.EventTargetCreated:
		if ev.TargetInfo.Type == "service_worker" {
			go b.attachWorker(ev.TargetInfo.TargetID, ev.TargetInfo.URL)
		}
	case *target.EventTargetDestroyed:
		b.mu.Lock()
		if w := b.workers[ev.TargetID]; w != nil {
			w.alive = false
		}
		b.mu.Unlock()
	}
}

func (b *Browser) attachWorker(id target.ID, url string) {
	ctx, _ := chromedp.NewContext(b.ctx, chromedp.WithTargetID(id)) // ends with the browser
	chromedp.ListenTarget(ctx, func(ev any) { b.recordConsole("worker "+url, ev) })
	if err := chromedp.Run(ctx); err != nil {
		return // the worker stopped before we could attach
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if _, gone := b.workers[id]; gone {
		return
	}
	b.workers[id] = &worker{ctx: ctx, url: url, alive: true, seq: len(b.workers)}
}

// recordConsole keeps console errors, failed assertions, uncaught exceptions
// and error log entries (failed loads) from a page or worker.
func (b *Browser) recordConsole(where string, ev any) {
	var msg string
	switch ev := ev.(type) {
	case *runtime.EventConsoleAPICalled:
		if ev.Type != runtime.APITypeError && ev.Type != runtime.APITypeAssert {
			return
		}
		parts := make([]string, 0, len(ev.Args))
		for _, arg := range ev.Args {
			parts = append(parts, remoteObjectText(arg))
		}
		msg = "console." + string(ev.Type) + ": " + strings.Join(parts, " ")
	case *runtime.EventExceptionThrown:
		d := ev.ExceptionDetails
		msg = "uncaught: " + d.Text
		if d.Exception != nil {
			msg += " " + remoteObjectText(d.Exception)
		}
	case *log.EventEntryAdded:
		if ev.Entry.Level != log.LevelError {
			return
		}
		msg = "log: " + ev.Entry.Text
		if ev.Entry.URL != "" {
			msg += " (" + ev.Entry.URL + ")"
		}
	default:
		return
	}
	b.mu.Lock()
	b.errs = append(b.errs, where+": "+msg)
	b.mu.Unlock()
}

func remoteObjectText(o *runtime.RemoteObject) string {
	switch {
	case o.Description != "":
		return o.Description
	case o.Value != nil:
		var text string
		if json.Unmarshal(o.Value, &text) == nil {
			return text
		}
		return string(o.Value)
	default:
		return string(o.Type)
	}
}

// TakeConsoleErrors returns the console errors and uncaught exceptions seen
// so far and forgets them, so a test can assert on errors it provoked.
func (b *Browser) TakeConsoleErrors() []string {
	b.mu.Lock()
	defer b.mu.Unlock()
	errs := b.errs
	b.errs = nil
	return errs
}

// GrantNotifications grants the notifications and push permissions to
// origin (Browser.setPermission, falling back to Browser.grantPermissions).
func (b *Browser) GrantNotifications(origin string) {
	b.t.Helper()
	err := b.run(b.ctx, chromedp.ActionFunc(func(ctx context.Context) error {
		exec := cdp.WithExecutor(ctx, chromedp.FromContext(ctx).Browser)
		return grantNotifications(exec, origin)
	}))
	if err != nil {
		b.t.Fatalf("browsertest: grant notifications to %s: %v", origin, err)
	}
}

// finish runs when the test ends: screenshots on failure, then the console
// check, then no more logging from browser goroutines.
func (b *Browser) finish() {
	if b.t.Failed() {
		b.saveFailureScreenshots()
	}
	errs := b.TakeConsoleErrors()
	if len(errs) > 0 && !b.cfg.AllowConsoleErrors {
		b.t.Errorf("browsertest: %d console error(s):\n  %s", len(errs), strings.Join(errs, "\n  "))
	}
	b.mu.Lock()
	b.done = true
	b.mu.Unlock()
}

func (b *Browser) saveFailureScreenshots() {
	dir := b.cfg.ArtifactsDir
	if dir == "" {
		dir = filepath.Join(os.TempDir(), "amsg-browsertest", safeName(b.t.Name()))
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Logf("browsertest: screenshots: %v", err)
		return
	}
	b.mu.Lock()
	pages := append([]*tab(nil), b.pages...)
	b.mu.Unlock()
	for i, p := range pages {
		var png []byte
		ctx, cancel := context.WithTimeout(p.ctx, b.cfg.Timeout)
		err := chromedp.Run(ctx, chromedp.CaptureScreenshot(&png))
		cancel()
		path := filepath.Join(dir, fmt.Sprintf("page-%d.png", i+1))
		if err == nil {
			err = os.WriteFile(path, png, 0o644)
		}
		if err != nil {
			b.t.Logf("browsertest: screenshot of page %d: %v", i+1, err)
			continue
		}
		b.t.Logf("browsertest: screenshot of page %d at failure: %s", i+1, path)
	}
}

var unsafeNameChars = regexp.MustCompile(`[^A-Za-z0-9._-]+`)

func safeName(name string) string {
	return unsafeNameChars.ReplaceAllString(name, "_")
}

// run runs actions on ctx with the configured timeout.
func (b *Browser) run(ctx context.Context, actions ...chromedp.Action) error {
	ctx, cancel := context.WithTimeout(ctx, b.cfg.Timeout)
	defer cancel()
	return chromedp.Run(ctx, actions...)
}

// poll calls cond until it reports true, failing t when the deadline passes.
func (b *Browser) poll(t testing.TB, what string, cond func() (bool, error)) {
	t.Helper()
	if err := b.waitUntil(what, cond); err != nil {
		t.Fatalf("browsertest: %v", err)
	}
}

// waitUntil calls cond every 20 ms until it reports true or Config.Timeout
// passes; the error then names what and cond's last error.
func (b *Browser) waitUntil(what string, cond func() (bool, error)) error {
	deadline := time.Now().Add(b.cfg.Timeout)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := cond()
		if ok {
			return nil
		}
		if time.Now().After(deadline) {
			if err != nil {
				return fmt.Errorf("timed out after %v waiting for %s: %w", b.cfg.Timeout, what, err)
			}
			return fmt.Errorf("timed out after %v waiting for %s", b.cfg.Timeout, what)
		}
		<-tick.C
	}
}

// liveWorker returns the newest attached, running service worker whose
// script is under origin.
func (b *Browser) liveWorker(origin string) (*worker, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	var best *worker
	for _, w := range b.workers {
		if w.alive && strings.HasPrefix(w.url, origin+"/") && (best == nil || w.seq > best.seq) {
			best = w
		}
	}
	if best == nil {
		return nil, errors.New("no running service worker attached")
	}
	return best, nil
}
