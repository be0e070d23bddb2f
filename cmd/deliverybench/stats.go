package main

import (
	"bytes"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// perSecond is n events over d, per second; 0 when d is not positive.
func perSecond(n int, d time.Duration) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / d.Seconds()
}

// perPush is the CPU time spent per push, in microseconds.
func perPush(cpu time.Duration, n int) float64 {
	if n <= 0 {
		return 0
	}
	return float64(cpu.Microseconds()) / float64(n)
}

// percentile returns the nearest-rank p-th percentile (0 < p <= 100) of ds,
// which it sorts; 0 for no values.
func percentile(ds []time.Duration, p float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	slices.Sort(ds)
	rank := int(float64(len(ds))*p/100 + 0.999999999)
	return ds[min(max(rank, 1), len(ds))-1]
}

// spread returns the least, the median and the greatest of vs, which it
// sorts; the median of an even count is the mean of the middle two.
func spread(vs []float64) (lo, median, hi float64) {
	if len(vs) == 0 {
		return 0, 0, 0
	}
	slices.Sort(vs)
	n := len(vs)
	median = vs[n/2]
	if n%2 == 0 {
		median = (vs[n/2-1] + vs[n/2]) / 2
	}
	return vs[0], median, vs[n-1]
}

// clockTick is Linux's USER_HZ, the unit of the CPU times in /proc/pid/stat:
// 100 on every architecture Go supports.
const clockTick = 10 * time.Millisecond

// processCPU returns the user plus system CPU time pid has used so far.
func processCPU(pid int) (time.Duration, error) {
	fields, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	return statTicks(fields, 14, 15)
}

// ownCPU returns the time pid's threads have run so far, and its parent.
// The time is schedstat's, in nanoseconds, not /proc stat's 10 ms ticks: a
// PostgreSQL session may use only a few ticks in a burst, so with five of
// them the ticks alone moved a 12 000-push phase by ±4 µs a push (issue 24).
func ownCPU(pid int) (cpu time.Duration, parent int, err error) {
	fields, err := procStat(pid)
	if err != nil {
		return 0, 0, err
	}
	if parent, err = strconv.Atoi(fields[4-3]); err != nil {
		return 0, 0, fmt.Errorf("/proc stat parent %q is not a pid", fields[4-3])
	}
	cpu, _, err = threadSchedstats(pid)
	return cpu, parent, err
}

// reapedCPU returns the CPU time the ended children of pid that it waited
// for have used (cutime and cstime).
func reapedCPU(pid int) (time.Duration, error) {
	fields, err := procStat(pid)
	if err != nil {
		return 0, err
	}
	return statTicks(fields, 16, 17)
}

func procStat(pid int) ([]string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return nil, fmt.Errorf("reading CPU time of process %d: %w", pid, err)
	}
	return parseStat(b)
}

// parseStatCPU reads utime and stime (fields 14 and 15) of a /proc/pid/stat
// line.
func parseStatCPU(stat []byte) (time.Duration, error) {
	fields, err := parseStat(stat)
	if err != nil {
		return 0, err
	}
	return statTicks(fields, 14, 15)
}

// parseStat splits a /proc/pid/stat line into its fields from field 3
// (state) to field 17 (cstime) at least. The command name in field 2 may
// hold spaces and parentheses, so the fields are counted from its last ')'.
func parseStat(stat []byte) ([]string, error) {
	end := bytes.LastIndexByte(stat, ')')
	if end < 0 {
		return nil, fmt.Errorf("/proc stat line without a command name: %.40q", stat)
	}
	fields := strings.Fields(string(stat[end+1:]))
	if len(fields) < 15 {
		return nil, fmt.Errorf("/proc stat line has %d fields after the name, want at least 15", len(fields))
	}
	return fields, nil
}

// statTicks sums the CPU tick fields from to to (numbered as in proc(5)) of
// parseStat's fields, whose first is field 3.
func statTicks(fields []string, from, to int) (time.Duration, error) {
	var total time.Duration
	for _, f := range fields[from-3 : to-3+1] {
		ticks, err := strconv.ParseInt(f, 10, 64)
		if err != nil || ticks < 0 {
			return 0, fmt.Errorf("/proc stat CPU field %q is not a tick count", f)
		}
		total += time.Duration(ticks) * clockTick
	}
	return total, nil
}

// peakRSS returns the peak resident set size of pid (VmHWM), in bytes.
func peakRSS(pid int) (int64, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, fmt.Errorf("reading the memory of process %d: %w", pid, err)
	}
	return parseVmHWM(b)
}

// parseVmHWM reads the "VmHWM:  1234 kB" line of /proc/pid/status.
func parseVmHWM(status []byte) (int64, error) {
	rest, ok := statusLine(status, "VmHWM")
	if !ok {
		return 0, fmt.Errorf("/proc status has no VmHWM line")
	}
	kb, unit, _ := strings.Cut(rest, " ")
	n, err := strconv.ParseInt(kb, 10, 64)
	if err != nil || n < 0 || strings.TrimSpace(unit) != "kB" {
		return 0, fmt.Errorf("/proc status line %q is not a size in kB", "VmHWM: "+rest)
	}
	return n << 10, nil
}

// allowedCPUs returns the CPUs pid may run on, as /proc lists them
// ("0-1", "1"): where a process the benchmark did not start, such as
// PostgreSQL, was placed, which moves its CPU a push (issue 24).
func allowedCPUs(pid int) (string, error) {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return "", fmt.Errorf("reading the CPUs of process %d: %w", pid, err)
	}
	return parseAllowedCPUs(b)
}

// parseAllowedCPUs reads the "Cpus_allowed_list:  0-1" line of
// /proc/pid/status.
func parseAllowedCPUs(status []byte) (string, error) {
	list, ok := statusLine(status, "Cpus_allowed_list")
	if !ok || list == "" || strings.Trim(list, "0123456789,-") != "" {
		return "", fmt.Errorf("/proc status has no list of allowed CPUs")
	}
	return list, nil
}

// statusLine returns the value of the "key:" line of /proc/pid/status,
// trimmed.
func statusLine(status []byte, key string) (string, bool) {
	for line := range strings.Lines(string(status)) {
		if rest, ok := strings.CutPrefix(line, key+":"); ok {
			return strings.TrimSpace(rest), true
		}
	}
	return "", false
}

// runQueueWait returns how long the threads of pid have waited, runnable,
// for a CPU so far: the time a busy machine kept from a process that had
// work. A thread that ended is not counted.
func runQueueWait(pid int) (time.Duration, error) {
	_, waited, err := threadSchedstats(pid)
	return waited, err
}

// threadSchedstats returns how long the threads of pid have run and have
// waited, runnable, for a CPU so far (the first two fields of each
// /proc/pid/task/*/schedstat). A thread that ended is not counted.
func threadSchedstats(pid int) (ran, waited time.Duration, err error) {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return 0, 0, fmt.Errorf("reading the threads of process %d: %w", pid, err)
	}
	for _, task := range tasks {
		b, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, task.Name()))
		if err != nil {
			continue // the thread ended
		}
		r, w, err := parseSchedstat(b)
		if err != nil {
			return 0, 0, err
		}
		ran, waited = ran+r, waited+w
	}
	return ran, waited, nil
}

// parseSchedstat reads the time on a CPU and the run-queue wait
// (nanoseconds, the first two fields) of a schedstat line.
func parseSchedstat(line []byte) (ran, waited time.Duration, err error) {
	fields := strings.Fields(string(line))
	if len(fields) < 2 {
		return 0, 0, fmt.Errorf("schedstat line %q has %d fields, want 3", line, len(fields))
	}
	var ns [2]int64
	for i := range ns {
		if ns[i], err = strconv.ParseInt(fields[i], 10, 64); err != nil || ns[i] < 0 {
			return 0, 0, fmt.Errorf("schedstat field %q is not a count of nanoseconds", fields[i])
		}
	}
	return time.Duration(ns[0]), time.Duration(ns[1]), nil
}
