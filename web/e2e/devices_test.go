package e2e_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// The device list shows every device of the user with when it was last
// seen, this browser first, and removes any of them.
func TestDeviceListShowsLastSeenAndRemovesAnyDevice(t *testing.T) {
	srv, _, p := newDevicePage(t)
	id := userID(t, p)
	other := srv.Push.Subscribe()
	raw, _ := json.Marshal(other)
	if _, err := srv.Store.PutSubscription(t.Context(), id, raw, time.Time{}); err != nil {
		t.Fatal(err)
	}
	p.Navigate(srv.URL + "/?devices#/settings")
	p.WaitFor(`document.querySelectorAll('.device-list .device').length === 2`)
	var rows []struct {
		Mine bool   `json:"mine"`
		Name string `json:"name"`
		Text string `json:"text"`
	}
	p.Eval(`[...document.querySelectorAll('.device-list .device')].map((li) => ({
		mine: li.classList.contains('this-device'), name: li.querySelector('strong').textContent,
		text: li.querySelector('.device-seen').textContent }))`, &rows)
	if len(rows) != 2 || !rows[0].Mine || rows[1].Mine || rows[1].Name != "Another device" {
		t.Fatalf("rows %+v, want this device first, then the other", rows)
	}
	for _, r := range rows {
		if !strings.Contains(r.Text, "last seen") {
			t.Errorf("row %q does not say when the device was last seen", r.Text)
		}
	}
	// Removing the other device leaves this one.
	p.Eval(`document.querySelectorAll('.device-list .device')[1].querySelector('button').click()`, nil)
	p.WaitFor(`document.querySelectorAll('.device-list .device').length === 1 && document.querySelector('.this-device')`)
	devices, err := srv.Store.Devices(t.Context(), id)
	if err != nil || len(devices) != 1 || devices[0].Subscription.Endpoint == other.Endpoint {
		t.Errorf("the server keeps %s, %v; want only this browser", fmt.Sprint(devices), err)
	}
}
