package e2e_test

import (
	"strconv"
	"strings"
	"testing"

	"amsg/web/browsertest"
)

// TestRelativeTime runs the page's relative time on offsets around each
// unit's edge, in an English locale.
func TestRelativeTime(t *testing.T) {
	srv := newServer(t)
	b := browsertest.New(t, browsertest.Config{})
	p := b.NewPage()
	p.Navigate(srv.URL + "/#/settings")

	const (
		second = 1000
		minute = 60 * second
		hour   = 60 * minute
		day    = 24 * hour
	)
	tests := []struct {
		offset int64
		want   string
	}{
		{0, "now"},
		{20 * second, "in 20 seconds"},
		{-59 * second, "59 seconds ago"},
		{59*second + 600, "in 1 minute"},
		{90 * minute, "in 2 hours"},
		{23*hour + 40*minute, "tomorrow"},
		{-23*hour - 40*minute, "yesterday"},
		{6*day + 13*hour, "next week"},
		{6*day + 11*hour, "in 6 days"},
		{15 * day, "in 2 weeks"},
	}
	for _, tt := range tests {
		var got string
		p.Eval(`import('/js/ui.js').then((ui) => ui.relativeTime(1e12 + (`+strconv.FormatInt(tt.offset, 10)+`), 1e12))`, &got)
		if got != tt.want {
			t.Errorf("relativeTime(now%+d ms) = %q, want %q", tt.offset, got, tt.want)
		}
	}
}

// TestRestoredQuestionPrecedesItsRoundsPushes merges a transcript into a
// conversation whose pushes arrived first, all stamped in one millisecond
// (a fast model): the user's question still comes before the round's
// reasoning and tool request.
func TestRestoredQuestionPrecedesItsRoundsPushes(t *testing.T) {
	srv := newServer(t)
	b := browsertest.New(t, browsertest.Config{})
	p := b.NewPage()
	p.Navigate(srv.URL + "/#/settings")
	var types []string
	p.Eval(`import('/js/conversations.js').then((c) => {
		const timestamp = '2026-11-22T12:00:00.000Z', sessionId = 'sess_tie';
		c.ingest({ messageKind: 'reasoning', messageId: 'm_r', sessionId, timestamp, reasoningContent: 'Need the zone.' });
		c.ingest({ messageKind: 'tool_request', messageId: 'm_t', sessionId, timestamp,
			toolCalls: [{ id: 'call_1', type: 'function', function: { name: 'get_timezone', arguments: '{}' } }] });
		const conv = c.mergeTranscript(sessionId, { messages: [
			{ id: '01A', type: 'input', timestamp, messages: [{ role: 'user', content: 'Which zone am I in?' }], pushes: [] },
			{ id: '01B', type: 'reasoning', timestamp, text: 'Need the zone.', pushes: ['m_r'] },
			{ id: '01C', type: 'tool-calls', timestamp, calls: [{ id: 'call_1', name: 'get_timezone' }], pushes: ['m_t'] },
		] });
		return conv.items.map((i) => i.type);
	})`, &types)
	if strings.Join(types, ",") != "user,reasoning,tool" {
		t.Errorf("items %q, want the question first", types)
	}
}
