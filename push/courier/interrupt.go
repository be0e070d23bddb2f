package courier

import (
	"encoding/json"
	"time"

	"amsg/push"
	"amsg/push/webpush"
)

// approvalDelivery is how an approval goes (issue 21): a tool_request push
// with an interrupt member waits for a person, so it wakes the device
// (Urgency high) and is worth delivering only until the interrupt expires
// (TTL the time left, at least a second). Other pushes keep their source's
// and kind's defaults (zero values).
func approvalDelivery(p push.Push, now time.Time) (time.Duration, webpush.Urgency) {
	if p.Kind() != push.KindToolRequest {
		return 0, ""
	}
	for _, m := range p.CommonFields().Unknown {
		if m.Key != "interrupt" {
			continue
		}
		var in struct {
			ExpiresAt string `json:"expiresAt"`
		}
		if json.Unmarshal(m.Value, &in) != nil {
			return 0, ""
		}
		expires, err := time.Parse(time.RFC3339Nano, in.ExpiresAt)
		if err != nil {
			return 0, ""
		}
		return min(max(expires.Sub(now), time.Second), webpush.MaxTTL), webpush.UrgencyHigh
	}
	return 0, ""
}
