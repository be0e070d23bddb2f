package scheduler

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func ts(t *testing.T, s string) time.Time {
	t.Helper()
	v, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func recurrence(t *testing.T, typ RecurrenceType, tz, expr string) Recurrence {
	t.Helper()
	r, err := ParseRecurrence(typ, tz, expr)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The standard's vectors (amsg-server-contract §3.4) and the time-change
// cases around them.
func TestNextAfterVectors(t *testing.T) {
	for _, c := range []struct {
		name          string
		typ           RecurrenceType
		tz, expr      string
		nominal, now  string // now "" means the nominal time
		want          string
		wantSkipCount int
	}{
		{"NY daily into DST is 23 h", RecurrenceDaily, "America/New_York", "", "2026-03-07T13:00:00Z", "", "2026-03-08T12:00:00Z", 1},
		{"NY daily out of DST is 25 h", RecurrenceDaily, "America/New_York", "", "2026-10-31T12:00:00Z", "", "2026-11-01T13:00:00Z", 1},
		{"London daily into BST", RecurrenceDaily, "Europe/London", "", "2026-03-28T08:00:00Z", "", "2026-03-29T07:00:00Z", 1},
		{"NY weekly across DST", RecurrenceWeekly, "America/New_York", "", "2026-03-04T13:00:00Z", "", "2026-03-11T12:00:00Z", 1},
		{"Tokyo keeps milliseconds", RecurrenceDaily, "Asia/Tokyo", "", "2026-06-01T13:00:00.123Z", "", "2026-06-02T13:00:00.123Z", 1},
		{"UTC daily skips to the first future occurrence", RecurrenceDaily, "UTC", "", "2026-06-01T09:00:00Z", "2026-06-04T09:05:00Z", "2026-06-05T09:00:00Z", 4},
		{"NY daily a month late", RecurrenceDaily, "America/New_York", "", "2026-03-01T13:00:00Z", "2026-04-01T00:00:00Z", "2026-04-01T12:00:00Z", 31},
		{"spring-forward gap moves forward", RecurrenceDaily, "America/New_York", "", "2026-03-07T07:30:00Z", "", "2026-03-08T07:30:00Z", 1},
		{"fall-back overlap takes the earlier instant (NY)", RecurrenceDaily, "America/New_York", "", "2026-10-31T05:30:00Z", "", "2026-11-01T05:30:00Z", 1},
		{"fall-back overlap takes the earlier instant (London)", RecurrenceDaily, "Europe/London", "", "2026-10-24T00:30:00Z", "", "2026-10-25T00:30:00Z", 1},
		{"after the overlap the wall clock holds", RecurrenceDaily, "America/New_York", "", "2026-11-01T05:30:00Z", "", "2026-11-02T06:30:00Z", 1},
		{"Tokyo is 24 h across New York's change", RecurrenceDaily, "Asia/Tokyo", "", "2026-03-08T00:00:00Z", "", "2026-03-09T00:00:00Z", 1},
		{"no zone is 24 h steps", RecurrenceDaily, "", "", "2026-03-07T13:00:00Z", "", "2026-03-08T13:00:00Z", 1},
		{"no zone weekly", RecurrenceWeekly, "", "", "2026-03-07T13:00:00Z", "2026-03-20T00:00:00Z", "2026-03-21T13:00:00Z", 2},
		{"now exactly on an occurrence skips it", RecurrenceDaily, "", "", "2026-03-07T13:00:00Z", "2026-03-08T13:00:00Z", "2026-03-09T13:00:00Z", 2},
		{"cron every minute", RecurrenceCron, "", "*/1 * * * *", "2026-06-01T10:00:00Z", "", "2026-06-01T10:01:00Z", 1},
		{"cron from a time off the schedule", RecurrenceCron, "", "*/15 * * * *", "2026-06-01T10:07:30.500Z", "", "2026-06-01T10:15:00Z", 1},
		{"cron in a zone across DST", RecurrenceCron, "America/New_York", "0 9 * * *", "2026-03-07T14:00:00Z", "", "2026-03-08T13:00:00Z", 1},
		{"cron late counts what it skips", RecurrenceCron, "", "0 * * * *", "2026-06-01T10:00:00Z", "2026-06-01T13:30:00Z", "2026-06-01T14:00:00Z", 4},
		{"cron weekdays only", RecurrenceCron, "Asia/Tokyo", "0 8 * * 1-5", "2026-06-05T23:00:00Z", "", "2026-06-07T23:00:00Z", 1},
		// robfig/cron skips a time that a spring-forward gap removes.
		{"cron in a gap fires the next day", RecurrenceCron, "America/New_York", "30 2 * * *", "2026-03-07T07:30:00Z", "", "2026-03-09T06:30:00Z", 1},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := recurrence(t, c.typ, c.tz, c.expr)
			nominal := ts(t, c.nominal)
			now := nominal
			if c.now != "" {
				now = ts(t, c.now)
			}
			got, skipped := r.NextAfter(nominal, now)
			if !got.Equal(ts(t, c.want)) || skipped != c.wantSkipCount {
				t.Errorf("NextAfter(%s, %s) = %s, %d; want %s, %d", c.nominal, now.Format(time.RFC3339), got.Format(time.RFC3339Nano), skipped, c.want, c.wantSkipCount)
			}
		})
	}
}

func TestNextAfterIsAlwaysTheFirstFutureOccurrence(t *testing.T) {
	nominal := ts(t, "2026-01-01T07:15:00.250Z")
	for _, tz := range []string{"", "America/New_York", "Europe/London", "Australia/Lord_Howe", "Asia/Kolkata"} {
		for _, typ := range []RecurrenceType{RecurrenceDaily, RecurrenceWeekly} {
			r := recurrence(t, typ, tz, "")
			for hours := 0; hours < 2*366*24; hours += 7 {
				now := nominal.Add(time.Duration(hours) * time.Hour)
				next, k := r.NextAfter(nominal, now)
				days := 1
				if typ == RecurrenceWeekly {
					days = 7
				}
				if !next.After(now) || !next.Equal(r.step(nominal, k*days)) || (k > 1 && r.step(nominal, (k-1)*days).After(now)) {
					t.Fatalf("%s %s at %s: next %s (k=%d) is not the first occurrence after now", tz, typ, now, next, k)
				}
			}
		}
	}
}

func TestLoadZoneIgnoresCase(t *testing.T) {
	for _, c := range []struct{ name, want string }{
		{"Asia/Tokyo", "Asia/Tokyo"},
		{"asia/tokyo", "Asia/Tokyo"},
		{"AMERICA/NEW_YORK", "America/New_York"},
		{"utc", "UTC"},
		{"us/eastern", "US/Eastern"},
		{"est5edt", "EST5EDT"},
		{"america/port-au-prince", "America/Port-au-Prince"},
	} {
		loc, err := LoadZone(c.name)
		if err != nil || loc.String() != c.want {
			t.Errorf("LoadZone(%q) = %v, %v; want %s", c.name, loc, err, c.want)
		}
	}
	for _, name := range []string{"", "Local", "Mars/Olympus_Mons", "Asia", "../etc/passwd", "Asia/Tokyo "} {
		if _, err := LoadZone(name); !errors.Is(err, ErrUnknownZone) {
			t.Errorf("LoadZone(%q) = %v, want ErrUnknownZone", name, err)
		}
	}
}

// zones.txt must name only zones the embedded database has.
func TestEveryListedZoneLoads(t *testing.T) {
	n := 0
	for name := range strings.Lines(zoneNames) {
		name = strings.TrimSpace(name)
		if _, err := time.LoadLocation(name); err != nil {
			t.Errorf("%s: %v", name, err)
		}
		n++
	}
	if n < 400 {
		t.Errorf("only %d zones listed", n)
	}
}

func TestParseCron(t *testing.T) {
	for _, expr := range []string{"*/1 * * * *", "0 9 * * 1-5", "30 8 1,15 * *", "@daily", "@hourly", " 0 0 * * SUN "} {
		if _, err := ParseCron(expr); err != nil {
			t.Errorf("ParseCron(%q) = %v", expr, err)
		}
	}
	for _, expr := range []string{"", "* * * *", "0 0 0 * * *", "61 * * * *", "CRON_TZ=UTC 0 9 * * *", "TZ=UTC 0 9 * * *",
		"@every 1h", "0 0 30 2 *", "@yearly x", "nonsense"} {
		if _, err := ParseCron(expr); !errors.Is(err, ErrCronExpr) {
			t.Errorf("ParseCron(%q) = %v, want ErrCronExpr", expr, err)
		}
	}
}

func TestParseRecurrence(t *testing.T) {
	if r, err := ParseRecurrence("", "", ""); err != nil || r.Type != RecurrenceNone || r.Recurring() {
		t.Errorf("empty = %+v, %v", r, err)
	}
	if _, err := ParseRecurrence("monthly", "", ""); err == nil {
		t.Error("monthly accepted")
	}
	if _, err := ParseRecurrence(RecurrenceDaily, "Nowhere/Land", ""); !errors.Is(err, ErrUnknownZone) {
		t.Errorf("bad zone: %v", err)
	}
	if _, err := ParseRecurrence(RecurrenceCron, "", ""); !errors.Is(err, ErrCronExpr) {
		t.Errorf("cron without an expression: %v", err)
	}
}
