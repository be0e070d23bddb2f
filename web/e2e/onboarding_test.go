package e2e_test

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"

	"amsg/push"
	"amsg/web/browsertest"
)

// clientConfig is the amsg-app record the worker reads on
// pushsubscriptionchange.
type clientConfig struct {
	APIBase        string `json:"apiBase"`
	UserID         string `json:"userId"`
	UserKeyHex     string `json:"userKeyHex"`
	VAPIDPublicKey string `json:"vapidPublicKey"`
}

const readClientConfigJS = `new Promise((resolve, reject) => {
	const r = indexedDB.open('amsg-app', 1);
	r.onerror = () => reject(r.error);
	r.onsuccess = () => {
		const g = r.result.transaction('config').objectStore('config').get('client');
		g.onsuccess = () => { r.result.close(); resolve(g.result || null); };
		g.onerror = () => reject(g.error);
	};
})`

// onboard clicks through the onboarding of a browser whose permission the
// test grants when the page asks, and waits for the device list.
func onboard(t *testing.T, b *browsertest.Browser, p *browsertest.Page, origin string) {
	t.Helper()
	p.WaitFor(`document.querySelector('#enable')`)
	b.GrantNotifications(origin)
	p.Eval(`document.querySelector('#enable').click()`, nil)
	p.WaitFor(`document.querySelector('.onboarding .notice.ok') && document.querySelector('.device-count')`)
}

// newDevicePage returns a server and a page whose browser the onboarding
// made one of the user's devices.
func newDevicePage(t *testing.T) (*server, *browsertest.Browser, *browsertest.Page) {
	t.Helper()
	srv := newServer(t)
	b := browsertest.New(t, browsertest.Config{})
	p, _ := openPage(t, b, srv, "")
	onboard(t, b, p, srv.URL)
	return srv, b, p
}

func TestOnboardingRegistersThisDevice(t *testing.T) {
	srv := newServer(t)
	b := browsertest.New(t, browsertest.Config{})
	p, sub := openPage(t, b, srv, "")
	onboard(t, b, p, srv.URL)

	id := userID(t, p)
	sum, err := srv.Store.SubscriptionSummary(t.Context(), id)
	if err != nil {
		t.Fatal(err)
	}
	if !sum.Exists || sum.Devices != 1 || sum.Endpoint != sub.Endpoint {
		t.Fatalf("server has %+v for the page's user, want the one stubbed subscription %s", sum, sub.Endpoint)
	}
	var page struct {
		Count   string `json:"count"`
		ThisOne bool   `json:"thisOne"`
		Status  string `json:"status"`
		Subs    []struct {
			UserVisibleOnly      bool   `json:"userVisibleOnly"`
			ApplicationServerKey string `json:"applicationServerKey"`
		} `json:"subs"`
	}
	p.Eval(`({count: document.querySelector('.device-count').textContent,
		thisOne: Boolean(document.querySelector('.this-device')),
		status: document.getElementById('device-status').textContent,
		subs: window.__browsertestSubscribeCalls})`, &page)
	if page.Count != "One device receives your notifications." || !page.ThisOne || page.Status != "Notifications on" {
		t.Errorf("device list %+v", page)
	}
	if len(page.Subs) == 0 || !page.Subs[0].UserVisibleOnly || page.Subs[0].ApplicationServerKey != srv.Store.Secrets().VAPIDPublicKey {
		t.Errorf("subscribe calls %+v, want userVisibleOnly with the server's VAPID key", page.Subs)
	}
	var cfg clientConfig
	p.Eval(readClientConfigJS, &cfg)
	want := clientConfig{"/api/v1", id, srv.Store.Keyring().UserKey(id).Hex(), srv.Store.Secrets().VAPIDPublicKey}
	if cfg != want {
		t.Errorf("worker client config %+v, want %+v", cfg, want)
	}

	// Every start registers again, idempotently: still one device.
	p.Navigate(srv.URL + "/?again#/settings")
	p.WaitFor(`document.querySelector('.this-device')`)
	if sum, _ := srv.Store.SubscriptionSummary(t.Context(), id); sum.Devices != 1 {
		t.Errorf("after a restart the user has %d devices, want 1", sum.Devices)
	}

	// Removing this device deletes it on the server and shows the onboarding's way back.
	p.Eval(`document.querySelector('.this-device button').click()`, nil)
	p.WaitFor(`document.querySelector('.device-count') && document.querySelector('.device-count').textContent.startsWith('No device')`)
	if sum, _ := srv.Store.SubscriptionSummary(t.Context(), id); sum.Exists {
		t.Errorf("after removing this device the server still has %+v", sum)
	}
	// A removed device stays removed on the next start.
	p.Navigate(srv.URL + "/?removed#/settings")
	p.WaitFor(`document.querySelector('.device-count') && document.getElementById('device-status').textContent.startsWith('Notifications off')`)
	if sum, _ := srv.Store.SubscriptionSummary(t.Context(), id); sum.Exists {
		t.Errorf("the next start registered the removed device again: %+v", sum)
	}
}

func TestOnboardingRetriesTheZombieEndpoint(t *testing.T) {
	tests := []struct {
		zombies  int
		wantOK   bool
		wantWait []int
	}{
		{zombies: 0, wantOK: true, wantWait: nil},
		{zombies: 2, wantOK: true, wantWait: []int{800, 1600}},
		{zombies: 3, wantOK: false, wantWait: []int{800, 1600}},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.zombies)+" zombies", func(t *testing.T) {
			srv := newServer(t)
			b := browsertest.New(t, browsertest.Config{})
			p, sub := openPage(t, b, srv, "#/welcome")
			p.WaitFor(`document.querySelector('#enable')`)
			// Chromium's placeholder endpoint for the first answers, then the
			// real subscription; the backoff is recorded instead of slept.
			p.Eval(`(async () => {
				const device = await import('/js/device.js');
				window.__waits = [];
				device.timing.sleep = async (ms) => { window.__waits.push(ms); };
				const real = PushManager.prototype.subscribe;
				let calls = 0;
				window.__unsubscribed = 0;
				PushManager.prototype.subscribe = async function (options) {
					const s = await real.call(this, options);
					if (++calls > `+strconv.Itoa(tt.zombies)+`) return s;
					const endpoint = 'https://permanently-removed.invalid/fcm/send/zombie';
					return { ...s, endpoint, toJSON: () => ({ ...s.toJSON(), endpoint }), unsubscribe: async () => { window.__unsubscribed++; return true; } };
				};
				PushManager.prototype.getSubscription = async () => null;
			})()`, nil)
			b.GrantNotifications(srv.URL)
			p.Eval(`document.querySelector('#enable').click()`, nil)
			p.WaitFor(`document.querySelector('.onboarding .notice.ok, .onboarding .notice.error')`)
			var got struct {
				OK           bool   `json:"ok"`
				Text         string `json:"text"`
				Waits        []int  `json:"waits"`
				Unsubscribed int    `json:"unsubscribed"`
			}
			p.Eval(`({ok: Boolean(document.querySelector('.onboarding .notice.ok')),
				text: document.querySelector('.onboarding .notice').textContent,
				waits: window.__waits, unsubscribed: window.__unsubscribed})`, &got)
			if got.OK != tt.wantOK || !slices.Equal(got.Waits, tt.wantWait) || got.Unsubscribed != min(tt.zombies, 3) {
				t.Fatalf("got %+v; want ok=%v, waits %v, %d unsubscribes", got, tt.wantOK, tt.wantWait, min(tt.zombies, 3))
			}
			sum, err := srv.Store.SubscriptionSummary(t.Context(), userID(t, p))
			if err != nil {
				t.Fatal(err)
			}
			if tt.wantOK && (sum.Devices != 1 || sum.Endpoint != sub.Endpoint) {
				t.Errorf("server has %+v, want the live endpoint only", sum)
			}
			if !tt.wantOK {
				if sum.Exists {
					t.Errorf("server registered %+v after three zombies", sum)
				}
				if !strings.Contains(got.Text, "dead push endpoint") || !strings.Contains(got.Text, "PUSH_ENDPOINT_ZOMBIE") {
					t.Errorf("error shown: %q", got.Text)
				}
			}
		})
	}
}

// TestPushReachesTheNotificationEndToEnd: the test push the settings page
// asks for goes through the server's real sender to the fake push service,
// which decrypts it; delivered to the worker, it shows a notification.
func TestPushReachesTheNotificationEndToEnd(t *testing.T) {
	srv, _, p := newDevicePage(t)

	p.Navigate(srv.URL + "/?settings#/settings")
	p.WaitFor(`document.querySelector('.this-device')`)
	p.Eval(`[...document.querySelectorAll('.devices button')].find((b) => b.textContent.includes('test notification')).click()`, nil)
	plaintext := srv.waitPush(t, 1)
	var got push.ContentPush
	if err := json.Unmarshal(plaintext, &got); err != nil {
		t.Fatalf("decrypted push %s: %v", plaintext, err)
	}
	if got.Message != "amsg can reach this device." || got.MessageID == "" {
		t.Fatalf("decrypted push %s", plaintext)
	}
	deliverPushes(p, string(plaintext))
	n := p.WaitNotification("the test push", func(n browsertest.Notification) bool { return n.Tag == got.MessageID })
	if n.Body != "amsg can reach this device." || n.Title != "amsg" || n.Icon != srv.URL+"/icon-192x192.png" || n.Badge != srv.URL+"/badge-72x72.png" {
		t.Errorf("notification %+v", n)
	}
	p.WaitFor(`document.getElementById('toast').textContent === 'Test notification sent.'`)
}
