package api

import (
	"errors"
	"net/http"

	"amsg/push"
	"amsg/push/errcode"
	"amsg/push/receipt"
	"amsg/store"
)

// POST /receipts takes what a device's service worker saw happen to the
// pushes it received: shown, clicked (with the action) and dismissed, in
// batches (push/receipt). Each report carries the receipt token its push
// carried, which names the device and proves the server sent that message
// there; the batch may name the reporting device by its endpoint, and a
// token of another device is then refused. The whole batch is checked
// before anything is written; a report sent again counts once.

var (
	errInvalidReceipts      = fail(errcode.InvalidReceipts)
	errReceiptTokenInvalid  = fail(errcode.ReceiptTokenInvalid)
	errReceiptOtherDevice   = fail(errcode.ReceiptOtherDevice)
	errReceiptDeviceUnknown = fail(errcode.ReceiptDeviceUnknown)
)

// receiptsResult is POST /receipts' data.
type receiptsResult struct {
	Recorded   int `json:"recorded"`
	Duplicates int `json:"duplicates"` // reports already recorded
}

func (s *Server) handleReceipts(w http.ResponseWriter, r *http.Request) error {
	if err := requireJSONContent(r); err != nil {
		return err
	}
	body, err := readBody(w, r, receipt.MaxBatchBytes)
	if err != nil {
		return err
	}
	batch, err := receipt.DecodeBatch(body)
	var be *receipt.BatchError
	if errors.As(err, &be) {
		return errInvalidReceipts.withDetails(batchErrorDetails(be))
	}
	events, err := s.receiptEvents(r, batch)
	if err != nil {
		return err
	}
	recorded, err := s.deps.Store.RecordReceipts(r.Context(), events)
	if err != nil {
		return err
	}
	var res receiptsResult
	for _, ok := range recorded {
		if ok {
			res.Recorded++
		} else {
			res.Duplicates++
		}
	}
	writeData(w, http.StatusOK, res)
	return nil
}

func batchErrorDetails(be *receipt.BatchError) map[string]any {
	details := map[string]any{"reason": be.Reason}
	if be.Index >= 0 {
		details["index"] = be.Index
	}
	return details
}

// receiptEvents checks every report's token (against the reporting
// device, when the batch names it) and returns the events to record.
func (s *Server) receiptEvents(r *http.Request, batch receipt.Batch) ([]store.MessageEvent, error) {
	ctx := r.Context()
	var reporter int64
	if batch.Endpoint != "" {
		id, err := s.deps.Store.DeviceAt(ctx, batch.Endpoint)
		if errors.Is(err, store.ErrUnknownDevice) {
			return nil, errReceiptDeviceUnknown
		}
		if err != nil {
			return nil, err
		}
		reporter = id
	}
	signer := s.deps.Store.ReceiptSigner()
	owners := map[int64]string{} // a batch is one device's, usually: one read
	events := make([]store.MessageEvent, len(batch.Reports))
	for i, rep := range batch.Reports {
		at := map[string]any{"index": i}
		device, _, _ := receipt.Parse(rep.Token) // DecodeBatch parsed it
		if reporter != 0 && device != reporter {
			return nil, errReceiptOtherDevice.withDetails(at)
		}
		owner, ok := owners[device]
		if !ok {
			var err error
			owner, err = s.deps.Store.DeviceOwner(ctx, device)
			if err != nil && !errors.Is(err, store.ErrUnknownDevice) {
				return nil, err
			}
			owners[device] = owner
		}
		// A device that is gone cannot be checked against: its token is
		// as invalid as a forged one, and says no more about which.
		if owner == "" || !signer.Check(rep.Token, owner, rep.MessageID, device) {
			return nil, errReceiptTokenInvalid.withDetails(at)
		}
		events[i] = store.MessageEvent{UserID: owner, MessageID: rep.MessageID, DeviceID: store.DeviceIDString(device), Type: rep.Type}
		if rep.Action != "" {
			events[i].Detail = actionDetail(rep.Action)
		}
	}
	return events, nil
}

// actionDetail is a clicked event's detail naming its action.
func actionDetail(action string) []byte {
	b, _ := push.MarshalNoEscape(struct {
		Action string `json:"action"`
	}{action}) // cannot fail: a string
	return b
}
