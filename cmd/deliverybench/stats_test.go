package main

import (
	"os"
	"testing"
	"time"
)

func TestPercentile(t *testing.T) {
	ms := func(vs ...int) []time.Duration {
		out := make([]time.Duration, len(vs))
		for i, v := range vs {
			out[i] = time.Duration(v) * time.Millisecond
		}
		return out
	}
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = 100 - i // reversed, so sorting matters
	}
	for _, tc := range []struct {
		name string
		ds   []time.Duration
		p    float64
		want time.Duration
	}{
		{"empty", nil, 99, 0},
		{"one value", ms(7), 50, 7 * time.Millisecond},
		{"p50 of four is the second", ms(4, 1, 3, 2), 50, 2 * time.Millisecond},
		{"p99 of 100 is the 99th", ms(hundred...), 99, 99 * time.Millisecond},
		{"p100 is the maximum", ms(hundred...), 100, 100 * time.Millisecond},
		{"a tiny p is the minimum", ms(hundred...), 0.001, time.Millisecond},
		{"p99 of ten is the maximum", ms(1, 2, 3, 4, 5, 6, 7, 8, 9, 10), 99, 10 * time.Millisecond},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := percentile(tc.ds, tc.p); got != tc.want {
				t.Errorf("percentile(%v) = %s, want %s", tc.p, got, tc.want)
			}
		})
	}
}

func TestRates(t *testing.T) {
	if got := perSecond(3000, 2500*time.Millisecond); got != 1200 {
		t.Errorf("perSecond = %v, want 1200", got)
	}
	if got := perSecond(5, 0); got != 0 {
		t.Errorf("perSecond over no time = %v, want 0", got)
	}
	if got := perPush(1500*time.Millisecond, 3000); got != 500 {
		t.Errorf("perPush = %v µs, want 500", got)
	}
	if got := perPush(time.Second, 0); got != 0 {
		t.Errorf("perPush of no pushes = %v, want 0", got)
	}
}

func TestParseStatCPU(t *testing.T) {
	// A command name with a space and a parenthesis, as a process may set.
	line := "4242 (amsg (x) y) S 1 4242 4242 0 -1 4194560 1000 0 0 0 250 31 0 0 20 0 9 0 100 0 0\n"
	got, err := parseStatCPU([]byte(line))
	if err != nil || got != 2810*time.Millisecond {
		t.Fatalf("parseStatCPU = %s, %v; want 2.81s (281 ticks)", got, err)
	}
	for _, bad := range []string{"", "4242 amsg S 1", "4242 (amsg) S 1 2 3", "4242 (amsg) S 1 4242 4242 0 -1 4194560 1000 0 0 0 x 31 0"} {
		if _, err := parseStatCPU([]byte(bad)); err == nil {
			t.Errorf("parseStatCPU(%q) succeeded", bad)
		}
	}
}

// The ended children's CPU is fields 16 and 17 (cutime, cstime).
func TestStatTicksWithChildren(t *testing.T) {
	fields, err := parseStat([]byte("77 (postgres) S 1 77 77 0 -1 4194560 1000 0 0 0 250 31 500 19 20 0 9 0 100 0 0\n"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := statTicks(fields, 16, 17)
	if err != nil || got != 5190*time.Millisecond {
		t.Errorf("statTicks(16, 17) = %s, %v; want 5.19s (519 ticks)", got, err)
	}
	if fields[4-3] != "1" {
		t.Errorf("parent field %q, want 1", fields[4-3])
	}
}

func TestParseVmHWM(t *testing.T) {
	status := "Name:\tamsg\nVmPeak:\t  900000 kB\nVmHWM:\t   30720 kB\nVmRSS:\t   20000 kB\n"
	got, err := parseVmHWM([]byte(status))
	if err != nil || got != 30<<20 {
		t.Fatalf("parseVmHWM = %d, %v; want %d", got, err, 30<<20)
	}
	for _, bad := range []string{"Name:\tamsg\n", "VmHWM:\t12 MB\n", "VmHWM:\tlots kB\n"} {
		if _, err := parseVmHWM([]byte(bad)); err == nil {
			t.Errorf("parseVmHWM(%q) succeeded", bad)
		}
	}
}

func TestParseAllowedCPUs(t *testing.T) {
	status := "Name:\tpostgres\nCpus_allowed:\t2\nCpus_allowed_list:\t1\nMems_allowed_list:\t0\n"
	if got, err := parseAllowedCPUs([]byte(status)); err != nil || got != "1" {
		t.Fatalf("parseAllowedCPUs = %q, %v; want 1", got, err)
	}
	if got, err := parseAllowedCPUs([]byte("Cpus_allowed_list:\t0-3,6\n")); err != nil || got != "0-3,6" {
		t.Fatalf("parseAllowedCPUs = %q, %v; want 0-3,6", got, err)
	}
	for _, bad := range []string{"Name:\tpostgres\n", "Cpus_allowed_list:\t\n", "Cpus_allowed_list:\tall\n"} {
		if _, err := parseAllowedCPUs([]byte(bad)); err == nil {
			t.Errorf("parseAllowedCPUs(%q) succeeded", bad)
		}
	}
}

func TestDueAt(t *testing.T) {
	want := time.UnixMilli(1795498508335)
	got, ok := dueAt([]byte(`{"message":"Reminder 1. deliverybench-due:1795498508335","taskId":50}`))
	if !ok || !got.Equal(want) {
		t.Fatalf("dueAt = %v, %v; want %v", got, ok, want)
	}
	for _, bad := range []string{`{"message":"no marker"}`, `deliverybench-due:`, `deliverybench-due:x12`, `deliverybench-due:99999999999999999999`} {
		if _, ok := dueAt([]byte(bad)); ok {
			t.Errorf("dueAt(%q) found a due time", bad)
		}
	}
}

func TestDueTimes(t *testing.T) {
	start := time.Unix(1000, 0)
	burst := dueTimes(start, options{Scenario: scenarioCompare})
	if !burst(0).Equal(start) || !burst(2999).Equal(start) {
		t.Errorf("compare: tasks are not all due at the start")
	}
	spread := dueTimes(start, options{Scenario: scenarioLatency, Rate: 1000})
	if got := spread(1500).Sub(start); got != 1500*time.Millisecond {
		t.Errorf("latency at 1000/s: task 1500 due %s after the start, want 1.5s", got)
	}
}

func TestEstimateLead(t *testing.T) {
	// 100 registrations in 100 ms: 1 ms each, so 3000 tasks get 2 s + 6 s.
	if got := estimateLead(100*time.Millisecond, 100, 3000); got != 8*time.Second {
		t.Errorf("estimateLead = %s, want 8s", got)
	}
	// Very fast registrations still assume 0.5 ms a request.
	if got := estimateLead(time.Millisecond, 100, 1000); got != 3*time.Second {
		t.Errorf("estimateLead = %s, want 3s", got)
	}
}

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		vs          []float64
		lo, mid, hi float64
	}{
		{nil, 0, 0, 0},
		{[]float64{2}, 2, 2, 2},
		{[]float64{3, 1, 2}, 1, 2, 3},
		{[]float64{4, 1, 3, 2}, 1, 2.5, 4},
	} {
		lo, mid, hi := spread(tc.vs)
		if lo != tc.lo || mid != tc.mid || hi != tc.hi {
			t.Errorf("spread(%v) = %v, %v, %v; want %v, %v, %v", tc.vs, lo, mid, hi, tc.lo, tc.mid, tc.hi)
		}
	}
}

func TestSummarize(t *testing.T) {
	t0 := time.Unix(1000, 0)
	list := []arrival{
		{at: t0.Add(30 * time.Millisecond), due: t0},
		{at: t0.Add(10 * time.Millisecond), due: t0.Add(5 * time.Millisecond)},
		{at: t0.Add(20 * time.Millisecond)},
	}
	res := summarize(list, false)
	if res.Delivered != 3 || res.First != t0.Add(10*time.Millisecond).UnixNano() || res.Last != t0.Add(30*time.Millisecond).UnixNano() ||
		res.ErrorCount != 0 || res.LatenciesMicros != nil {
		t.Errorf("without latencies: %+v", res)
	}
	res = summarize(list, true)
	if len(res.LatenciesMicros) != 2 || res.LatenciesMicros[0] != 30_000 || res.LatenciesMicros[1] != 5_000 ||
		res.ErrorCount != 1 || len(res.Errors) != 1 {
		t.Errorf("with latencies, one push without a due time: %+v", res)
	}
}

func TestParseSchedstat(t *testing.T) {
	ran, waited, err := parseSchedstat([]byte("550824 371647 1\n"))
	if err != nil || ran != 550824*time.Nanosecond || waited != 371647*time.Nanosecond {
		t.Errorf("parseSchedstat = %s, %s, %v; want 550.824µs, 371.647µs", ran, waited, err)
	}
	for _, bad := range []string{"", "550824", "550824 x 1", "1 -5 1", "-1 5 1"} {
		if _, _, err := parseSchedstat([]byte(bad)); err == nil {
			t.Errorf("parseSchedstat(%q) succeeded", bad)
		}
	}
}

func TestOwnCPUCountsThisProcessInNanoseconds(t *testing.T) {
	tick := 10 * time.Millisecond // /proc stat's unit
	for range 2 {
		cpu, parent, err := ownCPU(os.Getpid())
		if err != nil {
			t.Fatal(err)
		}
		if parent != os.Getppid() {
			t.Errorf("ownCPU's parent = %d; want %d", parent, os.Getppid())
		}
		if cpu > 0 && cpu%tick != 0 {
			return
		}
	}
	t.Error("ownCPU read whole clock ticks twice: not schedstat's nanoseconds")
}
