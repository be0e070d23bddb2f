package main

import (
	"context"
	"log/slog"
	"math"
	"time"

	"amsg/llm"
	"amsg/store"

	"github.com/prometheus/client_golang/prometheus"
)

// newLLMMetrics registers the LLM call metrics and returns the observer
// the LLM client reports each call to. Labels are bounded: the model and
// the endpoint come from callers and are left out.
func newLLMMetrics(reg prometheus.Registerer) (func(llm.CallStats), error) {
	duration := prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Name:    "amsg_llm_call_duration_seconds",
		Help:    "LLM call duration, reading a streamed answer included, by outcome and mode.",
		Buckets: []float64{0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120},
	}, []string{"outcome", "stream"})
	tokens := prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "amsg_llm_tokens_total",
		Help: "Tokens the LLM reported, by kind (input, cached_input, output, reasoning).",
	}, []string{"kind"})
	for _, c := range []prometheus.Collector{duration, tokens} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return func(c llm.CallStats) {
		outcome, stream := "ok", "false"
		if c.Failed {
			outcome = "failed"
		}
		if c.Stream {
			stream = "true"
		}
		duration.WithLabelValues(outcome, stream).Observe(c.Duration.Seconds())
		tokens.WithLabelValues("input").Add(float64(c.Usage.InputTokens))
		tokens.WithLabelValues("cached_input").Add(float64(c.Usage.CachedInputTokens))
		tokens.WithLabelValues("output").Add(float64(c.Usage.OutputTokens))
		tokens.WithLabelValues("reasoning").Add(float64(c.Usage.ReasoningTokens))
	}, nil
}

// newLatenessMetric registers the histogram of how late the scheduler
// claims occurrences (claim time minus nominal time) and returns its
// observer.
func newLatenessMetric(reg prometheus.Registerer) (func(time.Duration), error) {
	lateness := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    "amsg_scheduler_claim_lateness_seconds",
		Help:    "How late the scheduler claimed each occurrence, after its nominal time.",
		Buckets: []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30, 60, 300, 3600},
	})
	if err := reg.Register(lateness); err != nil {
		return nil, err
	}
	return func(d time.Duration) { lateness.Observe(max(d, 0).Seconds()) }, nil
}

// dueTasksGauge reports the scheduler's backlog, counted at scrape time:
// pending tasks whose time has come and that no one is delivering (NaN
// when the count fails).
func dueTasksGauge(st *store.Store, now func() time.Time, log *slog.Logger) prometheus.Collector {
	return prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "amsg_scheduler_due_tasks",
		Help: "Pending tasks whose time has come and that are not being delivered (the scheduler's backlog).",
	}, func() float64 {
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		n, err := st.DueTasks(ctx, now())
		if err != nil {
			log.Warn("metrics: could not count due tasks", "err", err)
			return math.NaN()
		}
		return float64(n)
	})
}

// storeCommitsCounter counts the store's write transactions, each of one
// write or a group of them (store.Store.Commits).
func storeCommitsCounter(st *store.Store) prometheus.Collector {
	return prometheus.NewCounterFunc(prometheus.CounterOpts{
		Name: "amsg_store_commits_total",
		Help: "Write transactions the store committed, each holding one write or a group of them.",
	}, func() float64 { return float64(st.Commits()) })
}
