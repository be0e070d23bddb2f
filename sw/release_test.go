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
// and from its clicks. The worker makes those calls one at a time, and
// every notification of the burst is there once the pushes settled.
func TestABurstOfPushesKeepsEveryNotification(t *testing.T) {
	srv := newTestServer(t, "v-burst")
	_, p := openWorkerPage(t, srv)
	const burst = 24
	var before int
	p.WorkerEval(`self.__amsgTest.pushesSettled()`, &before)
	// Count the worker's notification calls in flight at once.
	p.WorkerEval(`(() => {
		const reg = self.registration;
		self.__burst = { inFlight: 0, most: 0 };
		for (const name of ['showNotification', 'getNotifications']) {
			const call = reg[name].bind(reg);
			reg[name] = async (...args) => {
				self.__burst.most = Math.max(self.__burst.most, ++self.__burst.inFlight);
				try { return await call(...args); } finally { self.__burst.inFlight--; }
			};
		}
		return true;
	})()`, nil)
	for i := range burst {
		p.DeliverPushJSON(map[string]any{
			"messageKind": "content", "message": "m" + strconv.Itoa(i), "contactName": "Rei",
			"messageId": fmt.Sprintf("m-burst-%d", i), "sessionId": fmt.Sprintf("s-burst-%d", i),
			"notification": map[string]any{"tag": fmt.Sprintf("burst-%d", i)},
		})
	}
	p.WaitForWorker(`self.__amsgTest.pushesSettled() >= ` + strconv.Itoa(before+burst))
	var shown, most int
	p.WorkerEval(`self.__amsgTest.notificationsShown()`, &shown)
	p.WorkerEval(`self.__burst.most`, &most)
	if most != 1 {
		t.Errorf("%d notification calls were in flight at once, want 1", most)
	}
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
