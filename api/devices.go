package api

import (
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	"amsg/push"
	"amsg/push/errcode"
)

// devicesFeature is amsg's liveness of push devices: POST /device-seen
// reports that this browser is alive (the page when it opens, the service
// worker for every push it receives), GET /devices lists the user's
// devices with when each was last seen, for the page's device list, and
// DELETE /devices?deviceId= removes one. The list names each device by id
// and push service host, never by endpoint: an endpoint is a capability to
// push to the device, and an X-User-Id is only a claim (issue 22).
// Housekeeping expires the devices silent for too long (store
// ExpireSilentDevices), since Apple's push service keeps accepting pushes
// for a subscription iOS revoked.
func (s *Server) devicesFeature() feature {
	return feature{
		capabilities: []string{"device-liveness"},
		routes: []route{
			{http.MethodPost, "device-seen", authClient, s.handleDeviceSeen},
			{http.MethodGet, "devices", authClient, s.handleListDevices},
			{http.MethodDelete, "devices", authClient, s.handleDeleteDevice},
		},
	}
}

// maxDeviceSeenBody bounds POST /device-seen: one endpoint URL, which the
// store bounds with the whole subscription at 8 KiB.
const maxDeviceSeenBody = 16 << 10

var (
	errInvalidDeviceSeen = fail(errcode.DeviceSeenBody)
	errDeviceNotFound    = fail(errcode.DeviceNotFound)
	errEndpointTaken     = fail(errcode.EndpointTaken)
	errInvalidDeviceID   = fail(errcode.InvalidDeviceID).withDetails(map[string]any{"invalidFields": []string{"deviceId"}})
)

// decodeDeviceSeen reads a POST /device-seen body: a JSON object whose
// endpoint is a non-blank string. Other members are ignored.
func decodeDeviceSeen(body []byte) (string, error) {
	var req struct {
		Endpoint *string `json:"endpoint"`
	}
	switch {
	case push.JSONKind(body) != '{' || json.Unmarshal(body, &req) != nil:
		return "", errInvalidDeviceSeen.withDetails(map[string]any{"reason": "body must be a JSON object"})
	case req.Endpoint == nil || strings.TrimSpace(*req.Endpoint) == "":
		return "", errInvalidDeviceSeen.withDetails(map[string]any{"invalidFields": []string{"endpoint"}})
	}
	return *req.Endpoint, nil
}

// handleDeviceSeen records that the user's device with this endpoint is
// alive. 404 tells the browser its device is not registered (expired or
// removed), so it can register again.
func (s *Server) handleDeviceSeen(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	body, err := readBody(w, r, maxDeviceSeenBody)
	if err != nil {
		return err
	}
	endpoint, err := decodeDeviceSeen(body)
	if err != nil {
		return err
	}
	seen, err := s.deps.Store.SeeDevice(r.Context(), userID, endpoint)
	if err != nil {
		return err
	}
	if !seen {
		return errDeviceNotFound
	}
	writeData(w, http.StatusOK, struct {
		Seen bool `json:"seen"`
	}{true})
	return nil
}

// deviceView is one device of GET /devices; never its endpoint or keys.
type deviceView struct {
	DeviceID   int64  `json:"deviceId"`
	PushHost   string `json:"pushHost"`
	CreatedAt  int64  `json:"createdAt"`
	UpdatedAt  int64  `json:"updatedAt"`
	LastSeenAt int64  `json:"lastSeenAt"`
}

// handleListDevices lists the user's devices, most recently updated first.
func (s *Server) handleListDevices(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	devices, err := s.deps.Store.DevicesSeen(r.Context(), userID)
	if err != nil {
		return err
	}
	views := make([]deviceView, len(devices))
	for i, d := range devices {
		views[i] = deviceView{d.ID, endpointHost(d.Endpoint), d.CreatedAt.UnixMilli(), d.UpdatedAt.UnixMilli(), d.LastSeenAt.UnixMilli()}
	}
	writeData(w, http.StatusOK, struct {
		Devices []deviceView `json:"devices"`
	}{views})
	return nil
}

// handleDeleteDevice removes the user's device with ?deviceId=, the id
// GET /devices and PUT /push-subscription give.
func (s *Server) handleDeleteDevice(w http.ResponseWriter, r *http.Request) error {
	userID, err := requireUserID(r)
	if err != nil {
		return err
	}
	id, err := strconv.ParseInt(r.URL.Query().Get("deviceId"), 10, 64)
	if err != nil || id <= 0 {
		return errInvalidDeviceID
	}
	deleted, err := s.deps.Store.RemoveDevice(r.Context(), userID, id)
	if err != nil {
		return err
	}
	s.deps.Courier.Forget(userID)
	writeData(w, http.StatusOK, struct {
		Deleted bool `json:"deleted"`
	}{deleted})
	return nil
}
