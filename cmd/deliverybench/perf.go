package main

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

// errNoPerf reports that --perf cannot work here.
var errNoPerf = errors.New("--perf needs Linux perf (perf_event_open allowed for this user)")

// profiler samples amsg's CPU, or PostgreSQL's, with perf from the due
// time to the last arrival.
type profiler struct {
	perf string // path of perf
	data string // its output file
	rec  *child
}

// startProfile starts `perf record` on pids, writing into dir; name
// names the file.
func startProfile(sup *supervisor, dir, name string, pids []int) (*profiler, error) {
	perf, err := exec.LookPath("perf")
	if err != nil {
		return nil, errNoPerf
	}
	list := make([]string, len(pids))
	for i, pid := range pids {
		list[i] = strconv.Itoa(pid)
	}
	p := &profiler{perf: perf, data: filepath.Join(dir, "perf-"+name+".data")}
	p.rec, _, err = sup.start(childSpec{name: "perf record", cpu: -1, path: perf,
		args: []string{"record", "-F", "999", "-g", "-o", p.data, "-p", strings.Join(list, ",")}})
	if err != nil {
		return nil, err
	}
	return p, nil
}

// stop ends the recording and summarizes where the processes spent their
// samples, self time only: by package, then the top functions.
func (p *profiler) stop(ctx context.Context, sup *supervisor) (string, error) {
	// perf writes its file on SIGTERM as on SIGINT.
	if err := sup.stop(p.rec, 30*time.Second); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	out, err := exec.CommandContext(ctx, p.perf, "report", "-i", p.data, "--stdio", "--no-children",
		"--sort", "symbol", "-g", "none", "-q").Output()
	if err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			return "", fmt.Errorf("perf report: %w: %s", err, exit.Stderr)
		}
		return "", fmt.Errorf("perf report: %w", err)
	}
	return summarizeProfile(parsePerfReport(string(out))), nil
}

// perfEntry is one line of `perf report --sort symbol`.
type perfEntry struct {
	percent float64
	kernel  bool
	symbol  string
}

// parsePerfReport reads the lines "  3.67%  [k] symbol" of perf's report;
// others are skipped.
func parsePerfReport(text string) []perfEntry {
	var out []perfEntry
	for line := range strings.Lines(text) {
		f := strings.Fields(line)
		if len(f) < 3 || !strings.HasSuffix(f[0], "%") || (f[1] != "[k]" && f[1] != "[.]") {
			continue
		}
		pct, err := strconv.ParseFloat(strings.TrimSuffix(f[0], "%"), 64)
		if err != nil {
			continue
		}
		out = append(out, perfEntry{percent: pct, kernel: f[1] == "[k]", symbol: f[2]})
	}
	return out
}

// packageOf names where a symbol lives: a Go package path, "kernel", or
// "other" for assembly and C symbols without one.
func packageOf(e perfEntry) string {
	if e.kernel {
		return "kernel"
	}
	dir, name := "", e.symbol
	if i := strings.LastIndexByte(e.symbol, '/'); i >= 0 {
		dir, name = e.symbol[:i+1], e.symbol[i+1:]
	}
	pkg, _, ok := strings.Cut(name, ".")
	if !ok || pkg == "" {
		return "other (assembly, C)"
	}
	return dir + pkg
}

// perfTopPackages and perfTopFunctions bound the summary.
const (
	perfTopPackages  = 12
	perfTopFunctions = 15
)

// summarizeProfile prints the share of each package and the top functions.
func summarizeProfile(entries []perfEntry) string {
	byPackage := map[string]float64{}
	for _, e := range entries {
		byPackage[packageOf(e)] += e.percent
	}
	pkgs := slices.SortedFunc(maps.Keys(byPackage), func(a, b string) int {
		return cmp.Or(cmp.Compare(byPackage[b], byPackage[a]), strings.Compare(a, b))
	})
	var b strings.Builder
	b.WriteString("  by package:\n")
	for _, pkg := range pkgs[:min(len(pkgs), perfTopPackages)] {
		fmt.Fprintf(&b, "    %5.1f%%  %s\n", byPackage[pkg], pkg)
	}
	b.WriteString("  top functions:\n")
	for _, e := range entries[:min(len(entries), perfTopFunctions)] {
		fmt.Fprintf(&b, "    %5.1f%%  %s\n", e.percent, e.symbol)
	}
	return b.String()
}
