package api

import (
	"context"
	"encoding/json"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"amsg/builders/declarativetest"
	"amsg/push"
	"amsg/push/clocktest"
	"amsg/push/courier"
	"amsg/store"
	"amsg/store/storetest"
)

func listDevices(t *testing.T, s *Server, userID string) []deviceView {
	t.Helper()
	got := do(t, s, http.MethodGet, "/api/v1/devices", map[string]string{"X-User-Id": userID})
	var body struct {
		Devices []deviceView `json:"devices"`
	}
	decodeData(t, got.body, &body)
	return body.Devices
}

func seeDevice(s *Server, userID, body string) response {
	return post(s, "/api/v1/device-seen", body, map[string]string{"X-User-Id": userID, "Content-Type": "application/json"})
}

func TestDeviceSeenAndList(t *testing.T) {
	clk := clocktest.New(time.Date(2026, 11, 1, 9, 0, 0, 0, time.UTC))
	st := storetest.Open(t, store.Config{Now: clk.Now})
	deliveries, fake := newTestCourier(t, st, courier.PolicyVisible)
	s := newTestServer(t, Config{AllowPrivateEndpoints: true, Now: clk.Now, AdminToken: testAdminToken}, Deps{Store: st, Courier: deliveries})
	phone, laptop := fake.Subscribe(), fake.Subscribe()
	var phoneDevice struct {
		DeviceID int64 `json:"deviceId"`
	}
	decodeData(t, putSubscription(t, s, testUserID, map[string]any{"subscription": phone}).body, &phoneDevice)
	putSubscription(t, s, testUserID, map[string]any{"subscription": laptop})
	registered := clk.Now().UnixMilli()

	clk.Add(3 * time.Hour)
	body, _ := json.Marshal(map[string]string{"endpoint": phone.Endpoint})
	if got := seeDevice(s, testUserID, string(body)); got.status != http.StatusOK || !strings.Contains(got.body, `"seen":true`) {
		t.Fatalf("device-seen: %d %s", got.status, got.body)
	}
	seenAt := clk.Now().UnixMilli()
	devices := listDevices(t, s, testUserID)
	if len(devices) != 2 {
		t.Fatalf("devices %+v", devices)
	}
	for _, d := range devices {
		want := registered
		if d.DeviceID == phoneDevice.DeviceID {
			want = seenAt
		}
		if d.LastSeenAt != want || d.CreatedAt != registered || d.DeviceID == 0 || d.PushHost != pushHost(phone.Endpoint) {
			t.Errorf("device %d: %+v, want lastSeenAt %d and host %s", d.DeviceID, d, want, pushHost(phone.Endpoint))
		}
	}
	// The list never hands an endpoint out (issue 22): an X-User-Id is a
	// claim, and an endpoint is a capability to push to the device.
	if got := do(t, s, http.MethodGet, "/api/v1/devices", map[string]string{"X-User-Id": testUserID}); strings.Contains(got.body, phone.Endpoint) ||
		strings.Contains(got.body, laptop.Endpoint) || strings.Contains(got.body, `"endpoint"`) {
		t.Errorf("GET /devices shows endpoints: %s", got.body)
	}
	// The operator's list shows the same last sign of life.
	var admin struct {
		Devices []struct {
			PushHost   string `json:"pushHost"`
			LastSeenAt string `json:"lastSeenAt"`
		} `json:"devices"`
	}
	decodeData(t, adminDo(s, http.MethodGet, "/api/v1/admin/users/"+testUserID+"/devices", "").body, &admin)
	var lastSeen []string
	for _, d := range admin.Devices {
		lastSeen = append(lastSeen, d.LastSeenAt)
	}
	if !slices.Contains(lastSeen, push.FormatTimestamp(time.UnixMilli(seenAt))) || !slices.Contains(lastSeen, push.FormatTimestamp(time.UnixMilli(registered))) {
		t.Errorf("operator's list: %+v", admin.Devices)
	}
	// Another user cannot see (or touch) this user's device.
	const other = "123e4567-e89b-42d3-a456-426614174000"
	if got := seeDevice(s, other, string(body)); got.status != http.StatusNotFound || !strings.Contains(got.body, "PUSH_SUBSCRIPTION_NOT_FOUND") {
		t.Errorf("another user's device: %d %s", got.status, got.body)
	}
	if got := listDevices(t, s, other); len(got) != 0 {
		t.Errorf("another user lists %+v", got)
	}
}

// pushHost is the host part of a push endpoint.
func pushHost(endpoint string) string {
	u, _ := url.Parse(endpoint)
	return u.Host
}

// A device is removed by the id GET /devices gives, and only the user's own.
func TestDeleteDeviceByID(t *testing.T) {
	s, fake := subscriptionServer(t, Config{AllowPrivateEndpoints: true})
	var phone struct {
		DeviceID int64 `json:"deviceId"`
	}
	decodeData(t, putSubscription(t, s, testUserID, map[string]any{"subscription": fake.Subscribe()}).body, &phone)
	remove := func(userID, id string) response {
		return do(t, s, http.MethodDelete, "/api/v1/devices?deviceId="+id, map[string]string{"X-User-Id": userID})
	}
	const other = "123e4567-e89b-42d3-a456-426614174000"
	id := strconv.FormatInt(phone.DeviceID, 10)
	if got := remove(other, id); got.status != http.StatusOK || !strings.Contains(got.body, `"deleted":false`) {
		t.Errorf("another user deleting the device: %d %s", got.status, got.body)
	}
	for _, bad := range []string{"", "0", "-1", "x", "1e3", "99999999999999999999"} {
		if got := remove(testUserID, bad); got.status != http.StatusBadRequest || !strings.Contains(got.body, "INVALID_PARAMETERS") {
			t.Errorf("deviceId=%q: %d %s", bad, got.status, got.body)
		}
	}
	if got := listDevices(t, s, testUserID); len(got) != 1 {
		t.Fatalf("devices after refused deletes: %+v", got)
	}
	if got := remove(testUserID, id); got.status != http.StatusOK || !strings.Contains(got.body, `"deleted":true`) {
		t.Errorf("deleting the device: %d %s", got.status, got.body)
	}
	if got := listDevices(t, s, testUserID); len(got) != 0 {
		t.Errorf("devices after the delete: %+v", got)
	}
}

func TestDeviceSeenRefusesBadRequests(t *testing.T) {
	s, _ := subscriptionServer(t, Config{AllowPrivateEndpoints: true})
	for _, c := range []struct {
		name, user, body string
		status           int
		code             string
	}{
		{"no user", "", `{"endpoint":"https://x"}`, http.StatusBadRequest, "USER_ID_REQUIRED"},
		{"not JSON", testUserID, `{`, http.StatusBadRequest, "INVALID_PARAMETERS"},
		{"an array", testUserID, `["https://x"]`, http.StatusBadRequest, "INVALID_PARAMETERS"},
		{"no endpoint", testUserID, `{}`, http.StatusBadRequest, "INVALID_PARAMETERS"},
		{"blank endpoint", testUserID, `{"endpoint":"  "}`, http.StatusBadRequest, "INVALID_PARAMETERS"},
		{"endpoint a number", testUserID, `{"endpoint":5}`, http.StatusBadRequest, "INVALID_PARAMETERS"},
		{"unknown device", testUserID, `{"endpoint":"https://push.example/none"}`, http.StatusNotFound, "PUSH_SUBSCRIPTION_NOT_FOUND"},
		{"too large", testUserID, `{"endpoint":"` + strings.Repeat("a", maxDeviceSeenBody) + `"}`, http.StatusRequestEntityTooLarge, "PAYLOAD_TOO_LARGE"},
	} {
		header := map[string]string{}
		if c.user != "" {
			header["X-User-Id"] = c.user
		}
		got := post(s, "/api/v1/device-seen", c.body, header)
		if got.status != c.status || !strings.Contains(got.body, `"code":"`+c.code+`"`) {
			t.Errorf("%s: %d %s, want %d %s", c.name, got.status, got.body, c.status, c.code)
		}
	}
}

func FuzzDecodeDeviceSeen(f *testing.F) {
	for _, seed := range []string{`{"endpoint":"https://push.example/x"}`, `{}`, `[]`, `{"endpoint":null}`, ` {"endpoint":"\u0000"} `, ``, `{"endpoint":"a","endpoint":"b"}`} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		endpoint, err := decodeDeviceSeen(body)
		if err == nil && strings.TrimSpace(endpoint) == "" {
			t.Fatalf("accepted a blank endpoint from %q", body)
		}
	})
}

// A content push as it leaves amsg, decrypted by the fake push service, is
// a Declarative Web Push message that keeps the standard's members at its
// root.
func TestContentPushLeavesAsDeclarativeMessage(t *testing.T) {
	s, fake := subscriptionServer(t, Config{AllowPrivateEndpoints: true, PageURL: "https://amsg.example"})
	putSubscription(t, s, testUserID, map[string]any{"subscription": fake.Subscribe()})
	if got := post(s, "/api/v1/test-push", "", map[string]string{"X-User-Id": testUserID}); got.status != http.StatusOK {
		t.Fatalf("test-push: %d %s", got.status, got.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	pushes, err := fake.WaitPushes(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	raw := pushes[0].JSON
	m, err := declarativetest.Parse(raw)
	if err != nil {
		t.Fatalf("%v: %s", err, raw)
	}
	decoded, err := push.Decode(raw)
	if err != nil {
		t.Fatal(err)
	}
	c, ok := decoded.(*push.ContentPush)
	if !ok || m.Title != "amsg" || m.Body != c.Message || m.Tag != c.MessageID || !m.Mutable ||
		m.Navigate.String() != "https://amsg.example/#/chat/"+c.SessionID || len(raw) > 3993 {
		t.Errorf("declarative %+v from %s", m, raw)
	}
}
