package main

import (
	"fmt"
	"log/slog"
	"net"
	"net/http"

	"amsg/api"
)

// healthListener serves GET /healthz alone on --health-addr: a listener of
// its own, outside the connection caps of --addr, so a flood from many
// addresses that fills those caps leaves the health check answering (issue
// 22). Its connections are few and short: a small cap of its own bounds
// them.
type healthListener struct {
	listener net.Listener
	http     *http.Server
}

// maxHealthConns bounds the health listener's open connections.
const maxHealthConns = 16

// listenHealth opens the health listener when --health-addr is set.
func (s *server) listenHealth(handler http.Handler) error {
	if s.cfg.Limits.HealthAddr == "" {
		return nil
	}
	l, err := net.Listen("tcp", s.cfg.Limits.HealthAddr)
	if err != nil {
		return &configError{fmt.Errorf("--health-addr %s: %w", s.cfg.Limits.HealthAddr, err)}
	}
	mux := http.NewServeMux()
	mux.Handle("GET /healthz", handler)
	s.healthz = &healthListener{
		listener: api.LimitListener(l, api.ConnLimits{PerAddress: maxHealthConns, Total: maxHealthConns}),
		http: &http.Server{Handler: mux, ReadHeaderTimeout: s.cfg.Limits.ReadHeaderTimeout,
			IdleTimeout: s.cfg.Limits.IdleTimeout, ErrorLog: slog.NewLogLogger(s.log.Handler(), slog.LevelWarn)},
	}
	return nil
}

// serveHealth serves the health listener until close; a no-op without one.
func (s *server) serveHealth() {
	if s.healthz == nil {
		return
	}
	s.log.Info("health checks listening", "addr", s.healthz.listener.Addr().String())
	go func() { _ = s.healthz.http.Serve(s.healthz.listener) }()
}

// closeHealth stops the health listener.
func (s *server) closeHealth() {
	if s.healthz != nil {
		_ = s.healthz.http.Close()
	}
}
