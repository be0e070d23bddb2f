package api

import (
	"net/http"
	"strconv"
	"time"

	"amsg/push"
	"amsg/push/errcode"
	"amsg/store"
)

// The operator's view of messages' stories (issue 25): any user's
// message's timeline, and a daily chart of messages sent, shown and
// clicked.

// chartTypes are the event types of the daily chart.
var chartTypes = []string{store.EventSent, store.EventShown, store.EventClicked}

// Bounds of the chart.
const (
	defaultChartDays = 14
	maxChartDays     = 28 // the outbox's retention, which the events share
)

// handleAdminMessageTimeline answers the timeline of the message the route
// names, of the user the userId query names.
func (s *Server) handleAdminMessageTimeline(w http.ResponseWriter, r *http.Request) error {
	userID := r.URL.Query().Get("userId")
	if userID == "" || len(userID) > maxAdminUserIDLen {
		return invalidFields(errcode.AdminTimelineUser, "userId")
	}
	status, err := s.messageStatus(r, userID)
	if err != nil {
		return err
	}
	writeData(w, http.StatusOK, status)
	return nil
}

// dayJSON is one day of the chart.
type dayJSON struct {
	Day    string         `json:"day"` // YYYY-MM-DD, UTC
	Counts map[string]int `json:"counts"`
}

// handleAdminMessagesPerDay counts the events of chartTypes per UTC day
// over the last days days (default 14); days without any are left out.
func (s *Server) handleAdminMessagesPerDay(w http.ResponseWriter, r *http.Request) error {
	days := defaultChartDays
	if raw := r.URL.Query().Get("days"); raw != "" {
		n, err := strconv.Atoi(raw)
		if err != nil || n < 1 || n > maxChartDays {
			return invalidFields(errcode.AdminDays.With(maxChartDays), "days")
		}
		days = n
	}
	since := s.now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1-days)
	counts, err := s.deps.Store.EventsPerDay(r.Context(), since, chartTypes)
	if err != nil {
		return err
	}
	out := []dayJSON{}
	for _, c := range counts {
		day := c.Day.Format(time.DateOnly)
		if len(out) == 0 || out[len(out)-1].Day != day {
			out = append(out, dayJSON{day, map[string]int{}})
		}
		out[len(out)-1].Counts[c.Type] = c.Count
	}
	writeData(w, http.StatusOK, map[string]any{"since": push.FormatTimestamp(since), "types": chartTypes, "days": out})
	return nil
}
