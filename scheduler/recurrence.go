package scheduler

import (
	"amsg/push"
	"cmp"

	_ "embed"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"
	_ "time/tzdata" // zones resolve on hosts without a zoneinfo database

	"github.com/robfig/cron/v3"
)

// Errors of ParseRecurrence.
var (
	ErrUnknownZone = errors.New("unknown IANA time zone")
	ErrCronExpr    = errors.New("invalid cron expression")
)

//go:generate go run gen_zones.go

// zoneNames lists the IANA zone names time/tzdata carries.
//
//go:embed zones.txt
var zoneNames string

var zonesByFold = sync.OnceValue(func() map[string]string {
	m := make(map[string]string)
	for name := range strings.Lines(zoneNames) {
		name = strings.TrimSpace(name)
		m[strings.ToLower(name)] = name
	}
	return m
})

// LoadZone resolves an IANA zone name without regard to case, as
// JavaScript's Intl does ("asia/tokyo", "utc", "US/Eastern"). Names that are
// not zones (including "" and "Local") are ErrUnknownZone.
func LoadZone(name string) (*time.Location, error) {
	canonical, ok := zonesByFold()[strings.ToLower(name)]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUnknownZone, name)
	}
	loc, err := time.LoadLocation(canonical)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrUnknownZone, name, err)
	}
	return loc, nil
}

// ParseCron parses a cron expression as crontab(5) writes them: five fields
// (minute, hour, day of month, month, day of week) or a descriptor such as
// @daily. The zone comes from the task, so CRON_TZ= and TZ= prefixes are
// refused, and so is @every, which has no fixed times. An expression that
// never fires (30 February) is refused too.
func ParseCron(expr string) (cron.Schedule, error) {
	expr = strings.TrimSpace(expr)
	if expr == "" || strings.HasPrefix(expr, "CRON_TZ=") || strings.HasPrefix(expr, "TZ=") || strings.HasPrefix(expr, "@every") {
		return nil, fmt.Errorf("%w: %q", ErrCronExpr, expr)
	}
	sched, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %w", ErrCronExpr, expr, err)
	}
	if sched.Next(time.Now()).IsZero() {
		return nil, fmt.Errorf("%w: %q never fires", ErrCronExpr, expr)
	}
	return sched, nil
}

// Recurrence computes a task's occurrences.
type Recurrence struct {
	Type push.Recurrence
	// Zone is where daily and weekly tasks keep their wall-clock time and
	// where cron expressions are read; nil means UTC, and for daily and
	// weekly plain 24-hour steps.
	Zone *time.Location
	cron cron.Schedule
}

// ParseRecurrence builds the recurrence of a task from its stored fields:
// recurrenceType ("" is none), tzId ("" is none) and cronExpr.
func ParseRecurrence(typ push.Recurrence, tzID, cronExpr string) (Recurrence, error) {
	r := Recurrence{Type: cmp.Or(typ, push.RecurrenceNone)}
	if !r.Type.Valid() {
		return Recurrence{}, fmt.Errorf("unknown recurrenceType %q", typ)
	}
	if tzID != "" {
		loc, err := LoadZone(tzID)
		if err != nil {
			return Recurrence{}, err
		}
		r.Zone = loc
	}
	if r.Type == push.RecurrenceCron {
		sched, err := ParseCron(cronExpr)
		if err != nil {
			return Recurrence{}, err
		}
		r.cron = sched
	}
	return r, nil
}

// Recurring reports whether the task has occurrences after this one.
func (r Recurrence) Recurring() bool { return r.Type != push.RecurrenceNone }

// maxCountedSkips bounds how many missed cron occurrences NextAfter counts;
// the count only informs last_error.
const maxCountedSkips = 10_000

// NextAfter returns the first occurrence after nominal that is later than
// now, and how many occurrences that skips counting nominal itself (1 when
// the next one is simply the following occurrence). Occurrences step from
// the nominal time, never from now, so a late or retried delivery does not
// shift the schedule. It must not be called for a one-off task.
func (r Recurrence) NextAfter(nominal, now time.Time) (time.Time, int) {
	if r.Type == push.RecurrenceCron {
		return r.nextCron(nominal, now)
	}
	days := 1
	if r.Type == push.RecurrenceWeekly {
		days = 7
	}
	period := time.Duration(days) * 24 * time.Hour
	// A step is period long give or take the hour a time change adds or
	// takes, so the estimate less one is never past the answer.
	k := max(1, int(now.Sub(nominal)/period)-1)
	for !r.step(nominal, k*days).After(now) {
		k++
	}
	return r.step(nominal, k*days), k
}

// step is nominal plus n calendar days: in Zone at the same wall-clock time,
// else n×24 hours.
func (r Recurrence) step(nominal time.Time, n int) time.Time {
	if r.Zone == nil {
		return nominal.Add(time.Duration(n) * 24 * time.Hour)
	}
	w := nominal.In(r.Zone)
	return wallClock(w.Year(), w.Month(), w.Day()+n, w.Hour(), w.Minute(), w.Second(), w.Nanosecond(), r.Zone)
}

func (r Recurrence) nextCron(nominal, now time.Time) (time.Time, int) {
	loc := cmp.Or(r.Zone, time.UTC)
	next := r.cron.Next(later(nominal, now).In(loc)).UTC()
	skipped := 1
	for t := r.cron.Next(nominal.In(loc)); !t.IsZero() && !t.After(now) && skipped < maxCountedSkips; t = r.cron.Next(t) {
		skipped++
	}
	return next, skipped
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// wallClock is the instant a clock in loc shows the given reading, with the
// standard's rules for the two readings a time change makes irregular: one
// that falls in a spring-forward gap moves forward by the gap (02:30 becomes
// 03:30), and one that a fall-back shows twice is the earlier instant. Go's
// time.Date promises neither.
func wallClock(year int, month time.Month, day, hour, min, sec, nsec int, loc *time.Location) time.Time {
	w := time.Date(year, month, day, hour, min, sec, nsec, time.UTC)
	_, before := w.Add(-48 * time.Hour).In(loc).Zone()
	_, after := w.Add(48 * time.Hour).In(loc).Zone()
	var found time.Time
	for _, offset := range []int{before, after} {
		c := w.Add(-time.Duration(offset) * time.Second)
		if sameReading(c.In(loc), w) && (found.IsZero() || c.Before(found)) {
			found = c
		}
	}
	if found.IsZero() {
		// In a gap: read the wall clock with the offset in force before it.
		found = w.Add(-time.Duration(before) * time.Second)
	}
	return found.UTC()
}

// sameReading reports whether t in its zone reads as the UTC reading w.
func sameReading(t, w time.Time) bool {
	y1, m1, d1 := t.Date()
	y2, m2, d2 := w.Date()
	return y1 == y2 && m1 == m2 && d1 == d2 && t.Hour() == w.Hour() && t.Minute() == w.Minute() &&
		t.Second() == w.Second() && t.Nanosecond() == w.Nanosecond()
}
