package push_test

import (
	"testing"

	"amsg/push"
)

func TestMessageTypePairsWithSource(t *testing.T) {
	for _, tc := range []struct {
		typ    push.MessageType
		valid  bool
		source push.Source
	}{
		{push.TypeInstant, true, push.SourceInstant},
		{push.TypeFixed, true, push.SourceScheduled},
		{push.TypePrompted, true, push.SourceScheduled},
		{push.TypeAuto, true, push.SourceScheduled},
		{"banana", false, ""},
		{"", false, ""},
		{"Instant", false, ""},
	} {
		if tc.typ.Valid() != tc.valid || tc.typ.Source() != tc.source {
			t.Errorf("%q: Valid %v Source %q", tc.typ, tc.typ.Valid(), tc.typ.Source())
		}
	}
	if !push.SourceInstant.Valid() || !push.SourceScheduled.Valid() || push.Source("cron").Valid() {
		t.Error("Source.Valid")
	}
	if !push.RecurrenceWeekly.Valid() || !push.RecurrenceCron.Valid() || push.Recurrence("monthly").Valid() || push.Recurrence("").Valid() {
		t.Error("Recurrence.Valid")
	}
}
