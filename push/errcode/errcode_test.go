package errcode

import (
	"net/http"
	"testing"
	"unicode"
)

// TestEachCodeOnce holds the table to one definition per code: each code
// has exactly one default message, every other message of the code is tied
// to it, and the codes' statuses are HTTP error statuses (or 0 for a code
// that is never an answer's own).
func TestEachCodeOnce(t *testing.T) {
	defaults := map[string]int{}
	for _, m := range Table() {
		if m.General() == m {
			defaults[m.Code()]++
			if s := m.Status(); s != 0 && (s < 400 || s > 599 || http.StatusText(s) == "") {
				t.Errorf("%s: status %d is not an HTTP error status", m.Code(), s)
			}
			continue
		}
		if g := m.General(); g.Code() != m.Code() || g.Status() != m.Status() || g.General() != g {
			t.Errorf("%s %q is tied to %s, a message that is no code's default", m.Code(), m.Chinese(), g.Code())
		}
	}
	for code, n := range defaults {
		if n != 1 {
			t.Errorf("%s is defined %d times", code, n)
		}
		if m, ok := Lookup(code); !ok || m.Code() != code || m.General() != m {
			t.Errorf("Lookup(%s) = %v, %v", code, m, ok)
		}
	}
	if len(defaults) < 100 {
		t.Fatalf("only %d codes in the table", len(defaults))
	}
	if _, ok := Lookup("NO_SUCH_CODE"); ok {
		t.Error("Lookup found a code the table does not define")
	}
}

// TestBothLanguages: every message has the standard's Chinese and each
// code's default an English; no English holds Chinese; only a specific
// message may leave its English to its code's; no two messages of a code
// say the same Chinese.
func TestBothLanguages(t *testing.T) {
	seen := map[[2]string]bool{}
	for _, m := range Table() {
		key := [2]string{m.Code(), m.Chinese()}
		if seen[key] {
			t.Errorf("%s %q is in the table twice", m.Code(), m.Chinese())
		}
		seen[key] = true
		if m.Chinese() == "" || hasHan(m.English()) {
			t.Errorf("%s: want a Chinese text and an English one without Chinese, got %q / %q", m.Code(), m.English(), m.Chinese())
		}
		if m.English() == "" && m.General() == m {
			t.Errorf("%s: a code's default needs its own English", m.Code())
		}
	}
}

func TestFormatting(t *testing.T) {
	for _, tc := range []struct {
		m        *Message
		en, zh   string
		code     string
		status   int
		specific *Message // the message tied to the same default
	}{
		{QuotaOf.With("tasks", 5), "", "超出配额 tasks（上限 5）", "QUOTA_EXCEEDED", http.StatusForbidden, QuotaExceeded},
		{SubscriptionRefused.With("endpoint: no https", "must be an https URL"), "Invalid push subscription: must be an https URL", "推送订阅无效：endpoint: no https", "INVALID_PUSH_SUBSCRIPTION", http.StatusBadRequest, InvalidSubscription},
		{InvalidCloudKind.With(100), "kind must be a string of at most 100 characters", "kind 必须是不超过 100 字符的字符串", "INVALID_CLOUD_KIND", http.StatusBadRequest, InvalidCloudKind},
		{CleanupTooMany.With(1000), "Too many resources in one plan", "单次最多选择 1000 项资源", "INVALID_CLEANUP_SELECTION", http.StatusBadRequest, CleanupNoResources},
		{LLMCallFailed.Quoting("LLM answered 401"), "LLM answered 401", "LLM answered 401", "LLM_CALL_FAILED", http.StatusBadGateway, LLMCallFailed},
		{CredRefsOrInline.Under(InvalidUpdateData), CredRefsOrInline.English(), CredRefsOrInline.Chinese(), "INVALID_UPDATE_DATA", http.StatusBadRequest, InvalidUpdateData},
		{StateNameLength.With(2, "key", 64).Under(InvalidStateKey), "entries[2].key must be a string of 1-64 characters", "entries[2].key 必须是 1-64 字符的字符串", "INVALID_STATE_KEY", 0, InvalidStateKey},
	} {
		if tc.m.English() != tc.en || tc.m.Chinese() != tc.zh || tc.m.Code() != tc.code || tc.m.Status() != tc.status || tc.m.General() != tc.specific {
			t.Errorf("got %s %d %q / %q, want %s %d %q / %q", tc.m.Code(), tc.m.Status(), tc.m.English(), tc.m.Chinese(), tc.code, tc.status, tc.en, tc.zh)
		}
	}
	if QuotaOf.Chinese() != "超出配额 %s（上限 %d）" {
		t.Error("With changed the table's message")
	}
}

func hasHan(s string) bool {
	for _, r := range s {
		if unicode.Is(unicode.Han, r) {
			return true
		}
	}
	return false
}
