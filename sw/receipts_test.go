package sw_test

import (
	"encoding/json"
	"testing"
)

// A push that carries a receipt token is reported shown, then dismissed
// when its notification is closed; while the server cannot be reached the
// reports wait in IndexedDB, and the next push flushes them in one batch.
// A push without a token reports nothing.
func TestReceiptsWaitOfflineAndGoInOneBatchWithTheNextPush(t *testing.T) {
	srv := newTestServer(t, "v-receipts")
	b, p := openWorkerPage(t, srv)
	srv.offline.Store(true)
	p.DeliverPushJSON(map[string]any{"messageKind": "content", "messageId": "m-receipt", "message": "hi", "receiptToken": "7.token"})
	p.WaitForWorker(`self.__amsgTest.pushesSettled() >= 1`)
	p.WorkerEval(`(async () => {
		const [n] = await self.registration.getNotifications({ tag: 'm-receipt' });
		self.dispatchEvent(new NotificationEvent('notificationclose', { notification: n }));
		return true;
	})()`, nil)
	p.WaitForWorker(`self.__amsgTest.queuedReceipts().then((q) => q.length === 2)`)
	// The flushes that failed have ended: none is still on its way when the
	// server comes back.
	p.WaitForWorker(`self.__amsgTest.receiptFlushesDone()`)

	srv.offline.Store(false)
	p.DeliverPushJSON(map[string]any{"messageKind": "content", "messageId": "m-plain", "message": "no token"})
	p.WaitForWorker(`self.__amsgTest.pushesSettled() >= 2`)
	p.WaitForWorker(`self.__amsgTest.receiptBatchesSettled() >= 1`)
	b.TakeConsoleErrors() // the offline attempts

	srv.mu.Lock()
	bodies := append([]string(nil), srv.receipts...)
	srv.mu.Unlock()
	if len(bodies) != 1 {
		t.Fatalf("POST /receipts got %d bodies %q, want one batch", len(bodies), bodies)
	}
	var batch struct {
		Receipts []map[string]string `json:"receipts"`
	}
	if err := json.Unmarshal([]byte(bodies[0]), &batch); err != nil {
		t.Fatal(err)
	}
	want := []map[string]string{
		{"messageId": "m-receipt", "token": "7.token", "type": "shown"},
		{"messageId": "m-receipt", "token": "7.token", "type": "dismissed"},
	}
	if len(batch.Receipts) != 2 || !equalReports(batch.Receipts, want) {
		t.Errorf("the batch %s, want shown then dismissed of m-receipt", bodies[0])
	}
	var left []any
	p.WorkerEval(`self.__amsgTest.queuedReceipts()`, &left)
	if len(left) != 0 {
		t.Errorf("%d receipts still queued after the server took them", len(left))
	}
}

func equalReports(got, want []map[string]string) bool {
	for i := range want {
		if len(got[i]) != len(want[i]) {
			return false
		}
		for k, v := range want[i] {
			if got[i][k] != v {
				return false
			}
		}
	}
	return true
}
