package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"amsg/api"
	"amsg/builders"
	"amsg/llm"
	"amsg/loop"
	"amsg/push/courier"
	"amsg/push/webpush"
	"amsg/scheduler"
	"amsg/scheduler/webhook"
	"amsg/store"
	"amsg/sw"
	"amsg/web"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// defaultGCPercent is the garbage collector's target when GOGC is not set.
// amsg's live heap is a few MiB, so Go's default of 100 collects after every
// few MiB allocated, several times a second while deliveries run; 400 takes
// about a tenth off the CPU of a scheduled push for a few MiB more memory
// (docs/performance.md).
const defaultGCPercent = 400

// deadInstanceAge is how long the housekeeping keeps the row of an
// instance whose heartbeat stopped.
const deadInstanceAge = time.Hour

// runServe runs the server until ctx ends (SIGINT or SIGTERM), then shuts
// down gracefully. Configuration problems print one line and return 2.
func runServe(ctx context.Context, args []string, stderr io.Writer, getenv func(string) string) int {
	cfg, err := parseServeConfig(args, getenv, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "amsg serve: %s (amsg serve -h lists the settings)\n", strings.TrimPrefix(err.Error(), errUsage.Error()+": "))
		return 2
	}
	if getenv("GOGC") == "" {
		debug.SetGCPercent(defaultGCPercent)
	}
	log := newLogger(cfg, stderr)
	stopTracing, ok := startTracing(ctx, getenv, log, stderr)
	if !ok {
		return 2
	}
	defer stopTracing()
	srv, err := openServer(ctx, cfg, log)
	if err != nil {
		var cfgErr *configError
		if errors.As(err, &cfgErr) {
			fmt.Fprintf(stderr, "amsg serve: %v\n", err)
			return 2
		}
		log.Error("could not start", "err", err)
		return 1
	}
	if err := srv.run(ctx); err != nil {
		log.Error("server failed", "err", err)
		return 1
	}
	return 0
}

// configError is a start-up failure the operator must fix in the
// configuration or the data directory: exit status 2.
type configError struct{ err error }

func (e *configError) Error() string { return e.err.Error() }
func (e *configError) Unwrap() error { return e.err }

// server is the running process: the store, the HTTP server and the
// background work.
type server struct {
	cfg         config
	log         *slog.Logger
	store       *store.Store
	http        *http.Server
	listener    net.Listener
	healthz     *sideListener // nil without --health-addr
	debug       *sideListener // nil without --debug-addr
	scheduler   *scheduler.Scheduler
	courier     *courier.Courier      // its SSE backup queues stop with the scheduler
	broadcasts  *scheduler.Broadcasts // sent through api, started and stopped with the scheduler
	interrupts  *scheduler.Interrupts // approvals api settled, started and stopped with the scheduler
	llm         *llm.Client
	transcripts *loop.Transcripts
	dataLock    *os.File // nil when the file system cannot lock
	version     string   // buildVersion(), read once
	instance    string   // cluster.go
	// housekeeping is decided by the heartbeat (cluster.go) and read by the
	// scheduler and the broadcasts.
	housekeeping *scheduler.Leadership
	api          *api.Server // the broadcasts' sender
	// webhooks sends while this instance leads webhooksLeadership, which
	// the heartbeat decides (webhooks.go, cluster.go).
	webhooks           *webhook.Dispatcher
	webhooksLeadership *scheduler.Leadership
	// now is the one clock: the store, the sender, the courier, the
	// transcripts, the agent, the scheduler and the API all read it.
	now func() time.Time
}

// errNoDataDirLock means the data directory could not be locked against a
// second amsg: the server runs, unguarded, and says so.
var errNoDataDirLock = errors.New("cannot lock the data directory against a second amsg")

// openServer opens the store, builds the components and binds the listen
// address; nothing runs until run.
func openServer(ctx context.Context, cfg config, log *slog.Logger) (*server, error) {
	dataLock, err := lockDatabase(cfg, log)
	if err != nil {
		return nil, err
	}
	now := time.Now
	st, err := store.Open(ctx, store.Config{
		Path:                 filepath.Join(cfg.DataDir, "amsg.db"),
		DatabaseURL:          cfg.DatabaseURL,
		DatabaseDirectURL:    cfg.DatabaseDirectURL,
		DatabasePooler:       cfg.DatabasePooler,
		MasterKey:            cfg.MasterKey,
		VAPIDPublicKey:       cfg.VAPIDPublicKey,
		VAPIDPrivateKey:      cfg.VAPIDPrivateKey,
		GenerateVAPID:        webpush.GenerateVAPIDKeys,
		MaxDevicesPerUser:    cfg.Limits.MaxDevicesPerUser,
		OutboxMaxAge:         cfg.Limits.Outbox.MaxAge,
		OutboxAckedMaxAge:    cfg.Limits.Outbox.AckedMaxAge,
		OutboxMaxRowsPerUser: cfg.Limits.Outbox.MaxRowsPerUser,
		Logger:               log,
		Now:                  now,
	})
	if err != nil {
		closeFile(dataLock)
		if errors.Is(err, store.ErrInvalidSecret) || errors.Is(err, store.ErrSchemaNewer) {
			return nil, &configError{err}
		}
		return nil, err
	}
	logPollOnly(log, cfg, st)
	s := &server{cfg: cfg, log: log, store: st, now: now, dataLock: dataLock, version: buildVersion(),
		instance: newInstanceID(), housekeeping: scheduler.NewLeadership(st.Leader(housekeepingLeader, missedHeartbeats*cfg.Cluster.Heartbeat),
			leadershipHold*cfg.Cluster.Heartbeat, now)}
	if err := errors.Join(s.joinInstances(ctx), s.build()); err != nil {
		st.Close()
		closeFile(dataLock)
		return nil, err
	}
	return s, nil
}

// lockDatabase prepares and locks the SQLite data directory against a
// second amsg; PostgreSQL is shared by design, and needs neither.
func lockDatabase(cfg config, log *slog.Logger) (*os.File, error) {
	if cfg.DatabaseURL != "" {
		return nil, nil
	}
	if err := prepareDataDir(cfg.DataDir); err != nil {
		return nil, &configError{err}
	}
	warnIfDatabaseVanished(cfg.DataDir, log)
	dataLock, err := lockDataDir(cfg.DataDir)
	switch {
	case errors.Is(err, errNoDataDirLock):
		log.Warn("running without a data directory lock: make sure no other amsg uses it", "err", err)
	case err != nil:
		return nil, &configError{err}
	}
	return dataLock, nil
}

func (s *server) build() error {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	sec := s.store.Secrets()
	sender, err := webpush.NewSender(webpush.Config{
		VAPIDPublicKey:        sec.VAPIDPublicKey,
		VAPIDPrivateKey:       sec.VAPIDPrivateKey,
		Subject:               s.cfg.VAPIDSubject,
		AllowPrivateEndpoints: s.cfg.AllowPrivateEndpoints,
		HungAfter:             s.cfg.Limits.PushHungAfter,
		HungTimeout:           s.cfg.Limits.PushHungTimeout,
		NetHTTPOnly:           s.cfg.Limits.PushNetHTTP,
		Registerer:            reg,
		Logger:                s.log,
		Now:                   s.now,
	})
	if err != nil {
		return &configError{fmt.Errorf("--vapid-subject / VAPID keys: %w", err)}
	}
	deliveries := courier.New(sender, s.store, courier.Config{Policy: s.cfg.PushPolicy, Localize: builders.Localize,
		Receipts: s.store.ReceiptSigner(), Logger: s.log, Now: s.now})
	reg.MustRegister(deliveries.Collectors()...)
	s.courier = deliveries
	// One LLM client and one transcript writer serve /instant, /continue and
	// the scheduler's prompted and auto tasks.
	observeLLM, err := newLLMMetrics(reg)
	if err != nil {
		return err
	}
	reg.MustRegister(dueTasksGauge(s.store, s.now, s.log), storeCommitsCounter(s.store))
	policy := llm.URLPolicy{AllowPrivate: s.cfg.Limits.AllowPrivateLLM}
	s.llm = llm.NewClient(llm.Config{Timeout: s.cfg.Instant.LLMTimeout, Logger: s.log, Observe: observeLLM,
		Policy: policy, Default: s.cfg.Limits.defaultModel()})
	s.transcripts = loop.NewTranscripts(s.store, s.now)
	observeLateness, err := newLatenessMetric(reg)
	if err != nil {
		return err
	}
	if err := s.newScheduler(deliveries, observeLateness); err != nil {
		return err
	}
	if err := s.newWebhooks(context.Background()); err != nil {
		return err
	}
	reg.MustRegister(s.webhooks.Collectors()...)
	// The worker's version hashes the page's files, so a build with a new
	// page is a byte-different worker: browsers update it and it re-caches
	// the offline shell.
	assets, err := sw.AssetVersion(web.FS())
	if err != nil {
		return err
	}
	handler, err := api.New(api.Config{
		ServerVersion:         s.version,
		ClientToken:           s.cfg.ClientToken,
		TokenSigningKey:       s.cfg.TokenSigningKey,
		CORSOrigin:            s.cfg.CORSOrigin,
		AllowPrivateEndpoints: s.cfg.AllowPrivateEndpoints,
		ApplePushRefused:      !sender.AppleSubjectOK(),
		AdminToken:            s.cfg.AdminToken,
		Limits:                s.cfg.Limits.api(),
		LLMPolicy:             policy,
		WebhookPolicy:         webhook.URLPolicy{AllowPrivate: s.cfg.Webhooks.AllowPrivate},
		Logger:                s.log,
		PageURL:               s.cfg.Notifications.PublicURL,
		Now:                   s.now,
	}, api.Deps{
		Store:         s.store,
		Courier:       deliveries,
		Scheduler:     s.scheduler,
		Broadcasts:    s.broadcasts,
		Metrics:       reg,
		ServiceWorker: sw.Handler(s.version + "-" + assets),
		Web:           web.Handler(),
		AdminPage:     web.AdminHandler(),
		Instant:       s.instant(),
	})
	if err != nil {
		return err
	}
	s.api = handler
	s.listener, err = net.Listen("tcp", s.cfg.Addr)
	if err != nil {
		return &configError{fmt.Errorf("--addr %s: %w", s.cfg.Addr, err)}
	}
	s.listener = api.LimitListener(s.listener, s.cfg.Limits.conns())
	s.http = &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: s.cfg.Limits.ReadHeaderTimeout,
		IdleTimeout:       s.cfg.Limits.IdleTimeout,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	if err := s.listenHealth(handler); err != nil {
		return err
	}
	return s.listenDebug()
}

// run serves until ctx ends, then stops accepting requests, lets open ones
// finish (up to the shutdown timeout), stops the background work and closes
// the store.
func (s *server) run(ctx context.Context) error {
	s.log.Info("amsg listening", "addr", s.listener.Addr().String(), "version", s.version,
		"database", s.databaseName(), "instance", s.instance, "vapid_public_key", s.store.Secrets().VAPIDPublicKey)
	if s.cfg.AllowPrivateEndpoints {
		s.log.Warn("private push endpoints are allowed: development and tests only")
	}
	if s.cfg.Webhooks.AllowPrivate {
		s.log.Warn("webhook endpoints may be loopback and private hosts (--webhook-allow-private)")
	}
	if s.cfg.Limits.AllowPrivateLLM {
		s.log.Warn("requests may name loopback and private LLM endpoints (--allow-private-llm): any caller can reach this machine's network through apiUrl")
	}
	if s.cfg.ClientToken == "" && !isLoopback(s.listener.Addr().String()) {
		s.log.Warn("SECURITY: listening on a non-loopback address without AMSG_CLIENT_TOKEN: anyone who can reach it can use every endpoint, read any user's key and run LLM calls",
			"addr", s.listener.Addr().String())
	}
	if s.cfg.Notifications.PublicURL == "" {
		s.log.Info("--public-url is not set: pushes are not Declarative Web Push messages, which iOS shows even without the service worker")
	}

	s.scheduler.Start()
	s.interrupts.Start()
	if err := s.broadcasts.Start(s.api); err != nil {
		s.log.Warn("resuming the broadcasts of a previous process failed", "err", err)
	}
	background, stopBackground := context.WithCancel(context.WithoutCancel(ctx))
	var wg sync.WaitGroup
	wg.Go(func() { s.runInstance(background) }) // after Broadcasts.Start: it tells them to lead
	wg.Go(func() { s.watchTasks(background) })
	wg.Go(func() { s.runWebhooks(background) })
	serveErr := make(chan error, 1)
	go func() { serveErr <- s.http.Serve(s.listener) }()
	s.healthz.serve(s.log, "health checks listening")
	defer s.healthz.close()
	if s.debug != nil && !isLoopback(s.debug.listener.Addr().String()) {
		s.log.Warn("SECURITY: --debug-addr is not a loopback address: anyone who can reach it can read the process's profiles and goroutine stacks",
			"addr", s.debug.listener.Addr().String())
	}
	s.debug.serve(s.log, "debug listening")
	defer s.debug.close()

	var err error
	select {
	case err = <-serveErr:
	case <-ctx.Done():
		s.log.Info("shutting down", "timeout", s.cfg.ShutdownTimeout)
		shutdownCtx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.cfg.ShutdownTimeout)
		err = s.http.Shutdown(shutdownCtx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			s.log.Warn("open requests did not finish in time; closing them")
			err = s.http.Close()
		}
	}
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	s.stopScheduler(ctx)
	stopBackground()
	wg.Wait()
	err = errors.Join(err, s.store.Close())
	closeFile(s.dataLock)
	return err
}

// closeFile closes f if there is one; closing the lock file releases it.
func closeFile(f *os.File) {
	if f != nil {
		f.Close()
	}
}

// databaseName says which database serves, without the URL's credentials.
func (s *server) databaseName() string {
	if s.cfg.DatabaseURL != "" {
		return "postgresql"
	}
	return s.cfg.DataDir
}

// prepareDataDir creates the data directory (readable by its owner only:
// it holds the keys) and checks it is writable, so a bad --data-dir fails
// at once with a clear message.
func prepareDataDir(dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return fmt.Errorf("data directory %s: %w", dir, err)
	}
	probe, err := os.CreateTemp(dir, ".amsg-write-test-*")
	if err != nil {
		return fmt.Errorf("data directory %s is not writable: %w", dir, err)
	}
	name := probe.Name()
	probe.Close()
	return os.Remove(name)
}

// warnIfDatabaseVanished says loudly that a data directory an amsg has run
// in (its lock file is there) has lost its database: the start that follows
// creates an empty one, with new keys unless they are given, and every
// browser must subscribe again.
func warnIfDatabaseVanished(dir string, log *slog.Logger) {
	_, lockErr := os.Stat(filepath.Join(dir, "amsg.lock"))
	_, dbErr := os.Stat(filepath.Join(dir, "amsg.db"))
	if lockErr == nil && errors.Is(dbErr, os.ErrNotExist) {
		log.Error("the data directory has run amsg but holds no database: starting with an empty one and, unless given, new master and VAPID keys; every browser must subscribe again",
			"data_dir", dir)
	}
}
