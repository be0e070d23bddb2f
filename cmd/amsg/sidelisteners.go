package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/http/pprof"
	"strconv"
	"time"

	"amsg/api"
)

// sideListener serves a few operator's routes on an address of its own,
// outside the connection caps of --addr, with a small cap of its own: the
// health check (--health-addr), and Go's profiler (--debug-addr).
type sideListener struct {
	listener net.Listener
	http     *http.Server
}

// maxSideConns bounds a side listener's open connections.
const maxSideConns = 16

// listenSide opens a side listener on addr serving mux; flagName names the
// flag in errors.
func (s *server) listenSide(addr, flagName string, mux *http.ServeMux) (*sideListener, error) {
	l, err := net.Listen("tcp", addr)
	if err != nil {
		return nil, &configError{fmt.Errorf("--%s %s: %w", flagName, addr, err)}
	}
	return &sideListener{
		listener: api.LimitListener(l, api.ConnLimits{PerAddress: maxSideConns, Total: maxSideConns}),
		http: &http.Server{Handler: mux, ReadHeaderTimeout: s.cfg.Limits.ReadHeaderTimeout,
			IdleTimeout: s.cfg.Limits.IdleTimeout,
			ErrorLog:    slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)},
	}, nil
}

// serve serves l until it is closed, logging msg with its address; a
// no-op on nil.
func (l *sideListener) serve(log *slog.Logger, msg string) {
	if l == nil {
		return
	}
	log.Info(msg, "addr", l.listener.Addr().String())
	go func() { _ = l.http.Serve(l.listener) }()
}

// close stops l; a no-op on nil.
func (l *sideListener) close() {
	if l != nil {
		_ = l.http.Close()
	}
}

// listenHealth opens the health listener when --health-addr is set: GET
// /healthz alone, so a flood from many addresses that fills the caps of
// --addr leaves the health check answering (issue 22).
func (s *server) listenHealth(handler http.Handler) (err error) {
	if s.cfg.Limits.HealthAddr == "" {
		return nil
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", handler)
	s.healthz, err = s.listenSide(s.cfg.Limits.HealthAddr, "health-addr", mux)
	return err
}

// maxProfileDuration bounds a CPU profile or an execution trace the debug
// listener takes.
const maxProfileDuration = 2 * time.Minute

// boundedSeconds refuses a profile or trace longer than maxProfileDuration
// (net/http/pprof extends the write deadline for any length) and hands the
// others to profile.
func boundedSeconds(profile http.HandlerFunc) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if sec, err := strconv.ParseFloat(r.FormValue("seconds"), 64); err == nil && sec > maxProfileDuration.Seconds() {
			http.Error(w, fmt.Sprintf("seconds must be at most %v", maxProfileDuration.Seconds()), http.StatusBadRequest)
			return
		}
		profile(w, r)
	}
}

// listenDebug opens the debug listener when --debug-addr is set: Go's
// profiler (net/http/pprof) under /debug/pprof/, for the operator and the
// delivery benchmark. Not the command line (/debug/pprof/cmdline), which
// may carry secrets given as flags.
func (s *server) listenDebug() (err error) {
	if s.cfg.Limits.DebugAddr == "" {
		return nil
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /debug/pprof/{$}", pprof.Index)
	mux.HandleFunc("GET /debug/pprof/profile", boundedSeconds(pprof.Profile))
	mux.HandleFunc("GET /debug/pprof/trace", boundedSeconds(pprof.Trace))
	mux.HandleFunc("GET /debug/pprof/symbol", pprof.Symbol)
	for _, name := range []string{"heap", "allocs", "goroutine", "block", "mutex", "threadcreate"} {
		mux.Handle("GET /debug/pprof/"+name, pprof.Handler(name))
	}
	s.debug, err = s.listenSide(s.cfg.Limits.DebugAddr, "debug-addr", mux)
	return err
}
