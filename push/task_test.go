package push_test

import (
	"encoding/json"
	"testing"

	"amsg/push"
)

func TestTaskID(t *testing.T) {
	for _, tc := range []struct {
		id      push.TaskID
		json    string
		text    string
		numeric bool
	}{
		{push.NumericTaskID(42), `42`, "42", true},
		{push.NumericTaskID(-9007199254740993), `-9007199254740993`, "-9007199254740993", true},
		{push.StringTaskID("42"), `"42"`, "42", false},
		{push.StringTaskID(""), `""`, "", false},
	} {
		out, err := json.Marshal(tc.id)
		if err != nil || string(out) != tc.json {
			t.Errorf("%v: marshal %s, %v", tc.id, out, err)
		}
		var back push.TaskID
		if err := json.Unmarshal(out, &back); err != nil || back != tc.id {
			t.Errorf("%s: unmarshal %#v, %v", out, back, err)
		}
		if _, numeric := tc.id.Int64(); numeric != tc.numeric || tc.id.String() != tc.text {
			t.Errorf("%#v: String %q numeric %v", tc.id, tc.id.String(), numeric)
		}
	}
	for _, bad := range []string{`1.5`, `1e3`, `true`, `null`, `{}`, `99999999999999999999`} {
		var id push.TaskID
		if err := json.Unmarshal([]byte(bad), &id); err == nil {
			t.Errorf("%s decoded as %#v", bad, id)
		}
	}
}
