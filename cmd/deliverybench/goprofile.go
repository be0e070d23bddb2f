package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"sync"
	"time"
)

// goProfileEnv has every amsg serve open its debug listener (--debug-addr)
// when the run takes Go profiles (--go-profile).
func (o options) goProfileEnv() []string {
	if o.GoProfile == "" {
		return nil
	}
	return []string{"AMSG_DEBUG_ADDR=127.0.0.1:0"}
}

// goProfileSpan is how long the Go profiles run from the due time: while
// the trickle's tasks fall due, or the few seconds a burst takes.
func (o options) goProfileSpan() time.Duration {
	if o.Scenario == scenarioLatency {
		return time.Duration(o.Tasks) * time.Second / time.Duration(o.Rate)
	}
	return 2 * time.Second
}

// goProfiles is one round's Go CPU profiles and execution traces of amsg,
// taken through each instance's debug listener while it delivers.
type goProfiles struct {
	wg    sync.WaitGroup
	mu    sync.Mutex
	files []string
	errs  []error
}

// startGoProfiles starts, for each instance, a CPU profile and an execution
// trace of span (whole seconds, at least one), written into dir.
func startGoProfiles(ctx context.Context, dir string, round int, instances []*amsgInstance, span time.Duration) (*goProfiles, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	seconds := strconv.Itoa(max(int(span.Round(time.Second)/time.Second), 1))
	g := &goProfiles{}
	for i, inst := range instances {
		var addr string
		select {
		case addr = <-inst.debugAddr:
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(10 * time.Second):
			return nil, fmt.Errorf("%s logged no debug listener (is it older than --debug-addr?)", inst.name)
		}
		for _, kind := range []struct{ path, ext string }{{"profile", "cpu.pprof"}, {"trace", "trace"}} {
			url := "http://" + addr + "/debug/pprof/" + kind.path + "?seconds=" + seconds
			file := filepath.Join(dir, fmt.Sprintf("amsg-round%d-instance%d.%s", round+1, i+1, kind.ext))
			g.wg.Go(func() { g.done(file, fetchTo(ctx, url, file)) })
		}
	}
	return g, nil
}

func (g *goProfiles) done(file string, err error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if err != nil {
		g.errs = append(g.errs, err)
		return
	}
	g.files = append(g.files, file)
}

// wait waits for every profile and returns the files written.
func (g *goProfiles) wait() ([]string, error) {
	g.wg.Wait()
	if len(g.errs) > 0 {
		return g.files, g.errs[0]
	}
	return g.files, nil
}

// fetchTo writes the body of a GET of url into file.
func fetchTo(ctx context.Context, url, file string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := io.Copy(f, resp.Body); err != nil {
		f.Close()
		return fmt.Errorf("GET %s: %w", url, err)
	}
	return f.Close()
}
