package sw_test

import (
	"fmt"
	"strconv"
	"testing"
)

// Pushes that arrive together, as a quiet-hours release sends a night's
// messages, each show their notification and each list the notifications
// of their session to close its status one (closeTagged). Chromium's
// getNotifications() deletes a notification it finds stored but not yet
// displayed, so a listing made while another push's notification was on
// its way lost that notification: shown, but gone from getNotifications()
// and from its clicks. Every notification of the burst is there once the
// pushes settled.
func TestABurstOfPushesKeepsEveryNotification(t *testing.T) {
	srv := newTestServer(t, "v-burst")
	_, p := openWorkerPage(t, srv)
	const burst = 24
	var before int
	p.WorkerEval(`self.__amsgTest.pushesSettled()`, &before)
	for i := range burst {
		p.DeliverPushJSON(map[string]any{
			"messageKind": "content", "message": "m" + strconv.Itoa(i), "contactName": "Rei",
			"messageId": fmt.Sprintf("m-burst-%d", i), "sessionId": fmt.Sprintf("s-burst-%d", i),
			"notification": map[string]any{"tag": fmt.Sprintf("burst-%d", i)},
		})
	}
	p.WaitForWorker(`self.__amsgTest.pushesSettled() >= ` + strconv.Itoa(before+burst))
	var shown int
	p.WorkerEval(`self.__amsgTest.notificationsShown()`, &shown)
	tags := map[string]bool{}
	for _, n := range p.Notifications() {
		tags[n.Tag] = true
	}
	var missing []int
	for i := range burst {
		if !tags[fmt.Sprintf("burst-%d", i)] {
			missing = append(missing, i)
		}
	}
	if len(missing) > 0 {
		t.Fatalf("the worker showed %d notifications, but those of pushes %v are gone", shown, missing)
	}
}
