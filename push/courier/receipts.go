package courier

import "amsg/push/webpush"

// withReceipt is msg as the device deviceID of userID gets it: stamped with
// the push's receipt token (Config.Receipts), with which amsg's service
// worker reports the push shown, clicked or dismissed. The request's own
// subscription (device 0) and a round without a user get none: no stored
// device could report for them.
func (c *Courier) withReceipt(msg webpush.Message, userID string, deviceID int64) webpush.Message {
	if c.cfg.Receipts == nil || userID == "" || deviceID == 0 {
		return msg
	}
	msg.Payload = c.cfg.Receipts.Stamp(msg.Payload, userID, msg.ID, deviceID)
	return msg
}
