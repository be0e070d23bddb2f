package push

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
)

// TaskIdentity ties a push to the scheduled task occurrence that produced it.
// The scheduler stamps it; instant pushes carry at most a null TaskID.
type TaskIdentity struct {
	TaskID         Optional[TaskID]
	TaskUUID       Optional[string]
	RecurrenceType Optional[Recurrence]
	// OccurrenceMs is the occurrence's nominal fire time in epoch
	// milliseconds.
	OccurrenceMs Optional[int64]
}

// TaskID is a scheduled task's id as the wire carries it: the row id, a JSON
// integer, or a string. The zero TaskID is the number 0.
type TaskID struct {
	num   int64
	str   string
	isStr bool
}

// NumericTaskID returns the task id n, written as a JSON number.
func NumericTaskID(n int64) TaskID { return TaskID{num: n} }

// StringTaskID returns the task id s, written as a JSON string.
func StringTaskID(s string) TaskID { return TaskID{str: s, isStr: true} }

// Int64 returns the numeric id and true, or 0 and false for a string id.
func (t TaskID) Int64() (int64, bool) { return t.num, !t.isStr }

// String returns the id as text: the string, or the number in decimal.
func (t TaskID) String() string {
	if t.isStr {
		return t.str
	}
	return strconv.FormatInt(t.num, 10)
}

func (t TaskID) appendJSON(b []byte) []byte {
	if t.isStr {
		return appendString(b, t.str)
	}
	return strconv.AppendInt(b, t.num, 10)
}

// MarshalJSON writes the id as a JSON number or string.
func (t TaskID) MarshalJSON() ([]byte, error) { return t.appendJSON(nil), nil }

var errTaskID = errors.New("want an integer or a string")

// UnmarshalJSON reads a JSON string or a JSON integer that fits in int64.
func (t *TaskID) UnmarshalJSON(data []byte) error {
	data = bytes.TrimSpace(data)
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		*t = StringTaskID(s)
		return nil
	}
	n, err := strconv.ParseInt(string(data), 10, 64)
	if err != nil {
		return errTaskID
	}
	*t = NumericTaskID(n)
	return nil
}
