package receipt_test

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"amsg/push/receipt"
)

func TestTokensCheckOnlyForTheirPushAndDevice(t *testing.T) {
	s := receipt.NewSigner([32]byte{1})
	tok := s.Token("alice", "msg_1", 42)
	if len(tok) > receipt.MaxTokenBytes || !strings.HasPrefix(tok, "42.") {
		t.Fatalf("token %q: want the device id first, at most %d bytes", tok, receipt.MaxTokenBytes)
	}
	if !s.Check(tok, "alice", "msg_1", 42) {
		t.Fatal("a token does not check for its own push")
	}
	for name, c := range map[string]struct {
		signer               *receipt.Signer
		token, user, message string
		device               int64
	}{
		"other message":        {s, tok, "alice", "msg_2", 42},
		"other device":         {s, tok, "alice", "msg_1", 43},
		"other user":           {s, tok, "bob", "msg_1", 42},
		"other key":            {receipt.NewSigner([32]byte{2}), tok, "alice", "msg_1", 42},
		"names shifted":        {s, s.Token("ali", "cemsg_1", 42), "alice", "msg_1", 42},
		"forged mac":           {s, "42.AAAAAAAAAAAAAAAAAAAAAA", "alice", "msg_1", 42},
		"device id rewritten":  {s, "43" + tok[2:], "alice", "msg_1", 43},
		"malformed":            {s, "42", "alice", "msg_1", 42},
		"truncated mac":        {s, tok[:len(tok)-1], "alice", "msg_1", 42},
		"padded device id":     {s, "042" + tok[2:], "alice", "msg_1", 42},
		"signed device id":     {s, "+42" + tok[2:], "alice", "msg_1", 42},
		"over the token bound": {s, tok + strings.Repeat("A", 40), "alice", "msg_1", 42},
	} {
		if c.signer.Check(c.token, c.user, c.message, c.device) {
			t.Errorf("%s: token %q checks", name, c.token)
		}
	}
}

func TestStampAddsTheTokenAsTheLastMember(t *testing.T) {
	s := receipt.NewSigner([32]byte{1})
	tok := s.Token("alice", "m", 1)
	for payload, want := range map[string]string{
		`{"messageId":"m"}`: `{"messageId":"m","receiptToken":"` + tok + `"}`,
		`{}`:                `{"receiptToken":"` + tok + `"}`,
		`{"a":{"b":1}} `:    `{"a":{"b":1},"receiptToken":"` + tok + `"}`,
	} {
		got := s.Stamp([]byte(payload), "alice", "m", 1)
		if string(got) != want || !json.Valid(got) {
			t.Errorf("Stamp(%s) = %s, want %s", payload, got, want)
		}
	}
}

// A token minted once stays valid: the MAC's input and encoding are fixed
// (a token of the last release, in a push not yet shown, must still check).
func TestTokensKeepTheirForm(t *testing.T) {
	const minted = "42.u2pOHkQTkT_G7C6Zp2rIsA" // by the first release with receipts
	s := receipt.NewSigner([32]byte{1})
	if got := s.Token("alice", "msg_task_50@1795498508335_0", 42); got != minted {
		t.Errorf("token %q, want %q", got, minted)
	}
	if !s.Check(minted, "alice", "msg_task_50@1795498508335_0", 42) {
		t.Error("an earlier token no longer checks")
	}
}

func TestDecodeBatchRefusesWhatIsNotABatch(t *testing.T) {
	tok := receipt.NewSigner([32]byte{1}).Token("alice", "m", 1)
	ok := `{"messageId":"m","token":"` + tok + `","type":"clicked","action":"reply"}`
	b, err := receipt.DecodeBatch([]byte(`{"endpoint":"https://push.example/x","receipts":[` + ok + `],"newer":true}`))
	if err != nil || len(b.Reports) != 1 || b.Reports[0].Action != "reply" || b.Endpoint != "https://push.example/x" {
		t.Fatalf("DecodeBatch(valid) = %+v, %v", b, err)
	}
	many := strings.Repeat(ok+",", receipt.MaxReports) + ok
	for name, c := range map[string]struct {
		body  string
		index int
	}{
		"not JSON":          {`{"receipts":`, -1},
		"an array":          {`[` + ok + `]`, -1},
		"no receipts":       {`{"receipts":[]}`, -1},
		"too many":          {`{"receipts":[` + many + `]}`, -1},
		"receipts a string": {`{"receipts":"x"}`, -1},
		"too large":         {`{"receipts":[` + ok + `],"pad":"` + strings.Repeat("x", receipt.MaxBatchBytes) + `"}`, -1},
		"unknown type":      {`{"receipts":[` + ok + `,{"messageId":"m","token":"` + tok + `","type":"read"}]}`, 1},
		"no message id":     {`{"receipts":[{"token":"` + tok + `","type":"shown"}]}`, 0},
		"forged shape":      {`{"receipts":[{"messageId":"m","token":"1.!!","type":"shown"}]}`, 0},
		"action not click":  {`{"receipts":[{"messageId":"m","token":"` + tok + `","type":"shown","action":"x"}]}`, 0},
		"long action":       {`{"receipts":[{"messageId":"m","token":"` + tok + `","type":"clicked","action":"` + strings.Repeat("a", 129) + `"}]}`, 0},
	} {
		_, err := receipt.DecodeBatch([]byte(c.body))
		var be *receipt.BatchError
		if !errors.As(err, &be) || be.Index != c.index || !errors.Is(err, receipt.ErrBatch) {
			t.Errorf("%s: DecodeBatch = %v, want a BatchError at %d", name, err, c.index)
		}
	}
}

func FuzzDecodeBatch(f *testing.F) {
	tok := receipt.NewSigner([32]byte{1}).Token("alice", "m", 1)
	for _, seed := range []string{
		`{"receipts":[{"messageId":"m","token":"` + tok + `","type":"shown"}]}`,
		`{"endpoint":"https://push.example/x","receipts":[{"messageId":"m","token":"` + tok + `","type":"clicked","action":"open"}]}`,
		`{"receipts":[{"messageId":"m","token":"1.","type":"dismissed"}]}`,
		`{"receipts":null}`, `[]`, `{`, "", `{"receipts":[{"messageId":1}]}`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		b, err := receipt.DecodeBatch(body)
		if err != nil {
			if !errors.Is(err, receipt.ErrBatch) {
				t.Fatalf("error %v is not ErrBatch", err)
			}
			return
		}
		if len(b.Reports) == 0 || len(b.Reports) > receipt.MaxReports {
			t.Fatalf("accepted %d reports", len(b.Reports))
		}
		for _, r := range b.Reports {
			if _, _, err := receipt.Parse(r.Token); err != nil || r.MessageID == "" {
				t.Fatalf("accepted report %+v", r)
			}
		}
	})
}

func FuzzParseToken(f *testing.F) {
	for _, seed := range []string{"42.AAAAAAAAAAAAAAAAAAAAAA", "0.x", "-1.AAAAAAAAAAAAAAAAAAAAAA", "", "."} {
		f.Add(seed)
	}
	s := receipt.NewSigner([32]byte{1})
	f.Fuzz(func(t *testing.T, token string) {
		device, _, err := receipt.Parse(token)
		if err == nil && device <= 0 {
			t.Fatalf("parsed device %d from %q", device, token)
		}
		if s.Check(token, "alice", "m", device) && token != s.Token("alice", "m", device) {
			t.Fatalf("%q checks but is not the token", token)
		}
	})
}
