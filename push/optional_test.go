package push_test

import (
	"encoding/json"
	"testing"

	"amsg/push"
)

// Optional keeps absent, null and a value apart through encoding/json, the
// way request structs in other packages use it.
func TestOptionalWithEncodingJSON(t *testing.T) {
	type request struct {
		AvatarURL push.Optional[string] `json:"avatarUrl,omitzero"`
		MaxTokens push.Optional[int]    `json:"maxTokens,omitzero"`
	}
	for _, tc := range []struct {
		in            string
		absent, null  bool
		value         string
		wantRoundTrip string
	}{
		{`{}`, true, false, "", `{}`},
		{`{"avatarUrl":null}`, false, true, "", `{"avatarUrl":null}`},
		{`{"avatarUrl":"https://a.example/x.png"}`, false, false, "https://a.example/x.png", `{"avatarUrl":"https://a.example/x.png"}`},
		{`{"avatarUrl":""}`, false, false, "", `{"avatarUrl":""}`},
	} {
		var r request
		if err := json.Unmarshal([]byte(tc.in), &r); err != nil {
			t.Fatalf("%s: %v", tc.in, err)
		}
		v, ok := r.AvatarURL.Get()
		if r.AvatarURL.IsAbsent() != tc.absent || r.AvatarURL.IsNull() != tc.null || v != tc.value || ok != (!tc.absent && !tc.null) {
			t.Errorf("%s: absent %v null %v value %q ok %v", tc.in, r.AvatarURL.IsAbsent(), r.AvatarURL.IsNull(), v, ok)
		}
		out, err := json.Marshal(r)
		if err != nil || string(out) != tc.wantRoundTrip {
			t.Errorf("%s: marshal = %s, %v", tc.in, out, err)
		}
	}
	var r request
	if err := json.Unmarshal([]byte(`{"maxTokens":"5"}`), &r); err == nil {
		t.Fatal("a string into Optional[int] decoded without error")
	}
}
