package push_test

import (
	"testing"

	"amsg/push"
)

func TestBookkeepingNamesItsPush(t *testing.T) {
	for _, tt := range []struct {
		b     push.Bookkeeping
		id    string
		empty bool
	}{
		{push.Bookkeeping{UserID: "u"}, "", true},
		{push.Bookkeeping{Record: []push.OutboxMessage{{MessageID: "m_rec"}}}, "m_rec", false},
		{push.Bookkeeping{Delivered: []string{"m_del"}}, "m_del", false},
		{push.Bookkeeping{Attempts: []push.Attempt{{MessageID: "m_try"}}}, "m_try", false},
		{push.Bookkeeping{Gone: []int64{3}}, "", false},
	} {
		if got := tt.b.MessageID(); got != tt.id || tt.b.Empty() != tt.empty {
			t.Errorf("%+v: MessageID %q, Empty %v; want %q, %v", tt.b, got, tt.b.Empty(), tt.id, tt.empty)
		}
	}
}
