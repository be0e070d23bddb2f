package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"amsg/push"
	"amsg/push/pushtest"
	"amsg/push/webpush"
	"amsg/store/usercrypt"
)

// CPUs the two sides are pinned to when taskset is there.
const (
	pushServiceCPU = 0
	measuredCPU    = 1
)

// nodePayload is what node sends: a copy of the content push amsg sends for
// a fixed task of this benchmark, so both encrypt the same bytes.
const nodePayload = `{"messageKind":"content","messageType":"fixed","source":"scheduled","messageId":"msg_task_50@1795498508335_0","sessionId":"sess_task_50@1795498508335","timestamp":"2026-11-24T05:35:08.389Z","message":"Reminder 1: time for a glass of water, deliverybench-due:1795498508335","title":"From Rei","contactName":"Rei","avatarUrl":null,"messageSubtype":"chat","messageIndex":1,"totalMessages":1,"taskId":50,"taskUuid":"74804762-767a-41d2-9054-6177c4dae399","recurrenceType":"none","occurrenceMs":1795498508335,"metadata":{}}`

// bench is one run in progress.
type bench struct {
	o      options
	out    io.Writer
	dir    string
	sup    *supervisor
	pinned bool

	pushService    *child
	pushServiceURL string // control URL
	certFile       string
	subs           []push.Subscription
	delivered      int // messages the push service has received so far
	vapidPublic    string
	vapidSecret    string
	control        *http.Client
	pg             *postgresProbe // with --database-url
	serverCPUs     string         // the CPUs PostgreSQL may run on; "" when not known
}

// phase is what one side measured.
type phase struct {
	name       string
	pushes     int
	elapsed    time.Duration
	cpu        time.Duration // the sender's CPU time
	serviceCPU time.Duration // the push service's
	peakRSS    int64         // amsg only; 0 when unknown
	profile    string        // amsg only, with --perf: perf's summary
	dbProfile  string        // and PostgreSQL's
	latencies  []time.Duration
	// amsg only: the database's commits (-1 when unknown) and, on
	// PostgreSQL, its processes' CPU (see database.go).
	instances int
	commits   int64
	dbCPU     map[string]kindCPU // by backend_type
	// waited is how long amsg's threads were runnable but not running:
	// the share of the phase the machine's other work took from it.
	waited time.Duration
	// syscalls is amsg's read and write system calls in the phase.
	syscalls syscalls
	// PostgreSQL: sessions its database opened, and the CPU of the
	// server's sessions that ended (any database's).
	sessions   int64
	dbEndedCPU time.Duration
}

func (p phase) rate() float64 { return perSecond(p.pushes, p.elapsed) }

// run runs the benchmark o describes and prints its report to out.
func run(ctx context.Context, o options, out io.Writer) (err error) {
	b := &bench{o: o, out: out, sup: &supervisor{}, control: &http.Client{}}
	b.dir, err = os.MkdirTemp("", "deliverybench-")
	if err != nil {
		return err
	}
	defer func() {
		if stopErr := b.sup.stopAll(stopGrace); stopErr != nil {
			b.logf("warning: %v", stopErr)
		}
		if o.Keep {
			b.logf("kept %s", b.dir)
		} else if rmErr := os.RemoveAll(b.dir); rmErr != nil {
			b.logf("warning: removing %s: %v", b.dir, rmErr)
		}
	}()
	b.choosePinning()

	amsgBinary := o.AmsgBinary
	if amsgBinary == "" {
		b.logf("building ./cmd/amsg")
		if amsgBinary, err = buildAmsg(ctx, b.dir); err != nil {
			return err
		}
	}
	var modules string
	runsNode := o.runsNode()
	if runsNode {
		modules, err = installWebPush(ctx, b.logf)
		if errors.Is(err, errNoNode) && o.Short {
			b.logf("skipping node web-push: %v", err)
			runsNode = false
		} else if err != nil {
			return err
		}
	}
	if b.vapidPublic, b.vapidSecret, err = webpush.GenerateVAPIDKeys(); err != nil {
		return err
	}
	if err := b.startPushService(ctx); err != nil {
		return err
	}
	if err := b.subscribe(ctx); err != nil {
		return err
	}

	settings := amsgSettings{
		binary: amsgBinary, dir: b.dir, certFile: b.certFile, masterKey: usercrypt.GenerateMasterKey(),
		vapidPublic: b.vapidPublic, vapidSecret: b.vapidSecret, databaseURL: o.DatabaseURL,
		extraEnv: append(append(quotaEnv(o.Tasks, o.Users), o.goProfileEnv()...), o.AmsgEnv...), cpu: b.cpu(measuredCPU),
	}
	if o.DatabaseURL != "" {
		if b.pg, err = openPostgresProbe(ctx, o.DatabaseURL); err != nil {
			return err
		}
		defer b.pg.close()
		if b.serverCPUs, err = b.pg.serverCPUs(ctx); err != nil {
			b.logf("where PostgreSQL may run is not known: %v", err)
		}
	}
	var rounds []round
	for r := range o.Rounds {
		var rd round
		if runsNode {
			p, err := b.runNodePhase(ctx, modules)
			if err != nil {
				return err
			}
			rd.node = &p
		}
		if o.Coordination {
			p, err := b.runAmsgPhase(ctx, settings, r, 1)
			if err != nil {
				return err
			}
			rd.single = &p
		}
		if rd.amsg, err = b.runAmsgPhase(ctx, settings, r, o.Instances); err != nil {
			return err
		}
		b.reportRound(r, rd)
		rounds = append(rounds, rd)
	}
	b.reportSummary(rounds)
	return nil
}

// round is one node phase (if any) and the amsg phase after it, with
// --coordination after one with a single instance.
type round struct {
	node   *phase
	single *phase
	amsg   phase
}

func (b *bench) logf(format string, args ...any) {
	fmt.Fprintf(b.out, "# "+format+"\n", args...)
}

// choosePinning decides whether the push service and the measured side get
// a CPU each.
func (b *bench) choosePinning() {
	switch {
	case !b.o.Pin:
		b.logf("not pinning (--pin=false)")
	case runtime.NumCPU() < 2:
		b.logf("not pinning: this process may use only %d CPU", runtime.NumCPU())
	default:
		path, err := exec.LookPath("taskset")
		if err != nil {
			b.logf("not pinning: taskset (util-linux) is not installed; the push service and the measured side share the CPUs")
			return
		}
		b.sup.taskset, b.pinned = path, true
	}
}

// cpu is the CPU to pin to, or -1 when not pinning.
func (b *bench) cpu(n int) int {
	if b.pinned {
		return n
	}
	return -1
}

// startPushService runs this binary as the push service and reads its
// ready line.
func (b *bench) startPushService(ctx context.Context) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	stdout, stdoutW := io.Pipe()
	c, _, err := b.sup.start(childSpec{name: "push service", cpu: b.cpu(pushServiceCPU), path: self,
		args: []string{pushServiceCommand, "--vapid-public-key", b.vapidPublic}, stdin: true, stdout: stdoutW})
	if err != nil {
		return err
	}
	b.pushService = c
	lines := make(chan []byte, 1)
	go func() {
		line, _ := bufio.NewReader(stdout).ReadBytes('\n')
		lines <- line
		_, _ = io.Copy(io.Discard, stdout)
	}()
	var ready pushServiceReady
	select {
	case line := <-lines:
		if err := json.Unmarshal(line, &ready); err != nil {
			return fmt.Errorf("push service said %q: %w; its last output:\n%s", line, err, c.Tail())
		}
	case <-ctx.Done():
		return ctx.Err()
	case <-time.After(30 * time.Second):
		return fmt.Errorf("push service did not start within 30 s; its last output:\n%s", c.Tail())
	}
	b.pushServiceURL = ready.ControlURL
	b.certFile = filepath.Join(b.dir, "push-service.pem")
	b.logf("push service at %s (TLS; pid %d)", ready.PushURL, c.Pid())
	return os.WriteFile(b.certFile, []byte(ready.CertPEM), 0o644)
}

// controlCall makes a request to the push service's control server and
// decodes its JSON answer into v.
func (b *bench) controlCall(ctx context.Context, method, path string, query url.Values, v any) error {
	req, err := http.NewRequestWithContext(ctx, method, b.pushServiceURL+path+"?"+query.Encode(), nil)
	if err != nil {
		return err
	}
	resp, err := b.control.Do(req)
	if err != nil {
		if exited := b.pushService.Exited(); exited != nil {
			return exited
		}
		return fmt.Errorf("push service %s: %w", path, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
		return fmt.Errorf("push service %s: %s: %s", path, resp.Status, msg)
	}
	return json.NewDecoder(resp.Body).Decode(v)
}

func (b *bench) subscribe(ctx context.Context) error {
	return b.controlCall(ctx, http.MethodPost, "/subscribe", url.Values{"n": {fmt.Sprint(b.o.Users)}}, &b.subs)
}

// waitDelivered waits until the push service has received n more messages,
// and checks that every one verified and decrypted.
func (b *bench) waitDelivered(ctx context.Context, n int, latencies bool) (waitResult, error) {
	q := url.Values{"from": {fmt.Sprint(b.delivered)}, "n": {fmt.Sprint(n)}, "timeout": {b.o.Timeout.String()}}
	if latencies {
		q.Set("due", "1")
	}
	progressDone := make(chan struct{})
	defer close(progressDone)
	go b.reportProgress(ctx, progressDone, b.delivered, n)
	var res waitResult
	if err := b.controlCall(ctx, http.MethodGet, "/wait", q, &res); err != nil {
		return res, err
	}
	b.delivered += n
	if res.ErrorCount > 0 {
		return res, fmt.Errorf("the push service rejected %d requests, the first: %v", res.ErrorCount, res.Errors)
	}
	return res, nil
}

// progressEvery is how often a long wait says how far it got.
const progressEvery = 15 * time.Second

// reportProgress logs how many of the n pushes of the phase, which began
// after the first from, have arrived, every progressEvery, until done closes.
func (b *bench) reportProgress(ctx context.Context, done <-chan struct{}, from, n int) {
	tick := time.NewTicker(progressEvery)
	defer tick.Stop()
	for {
		select {
		case <-done:
			return
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var c pushtest.Counts
		if err := b.controlCall(ctx, http.MethodGet, "/counts", nil, &c); err != nil {
			return
		}
		b.logf("%d of %d pushes arrived (%d rejected)", c.Delivered-from, n, c.Errors)
	}
}

// cpuOf sums the CPU time of processes so far.
func cpuOf(pids ...int) (time.Duration, error) {
	var total time.Duration
	for _, pid := range pids {
		t, err := processCPU(pid)
		if err != nil {
			return 0, err
		}
		total += t
	}
	return total, nil
}

func (b *bench) runNodePhase(ctx context.Context, modules string) (phase, error) {
	b.logf("node web-push@%s: %d pushes at concurrency %d", webPushVersion, b.o.Tasks, nodeConcurrency)
	before, err := cpuOf(b.pushService.Pid())
	if err != nil {
		return phase{}, err
	}
	res, err := runNode(ctx, b.sup, b.dir, modules, b.certFile, b.cpu(measuredCPU), nodeConfig{
		Subscriptions: b.subs, N: b.o.Tasks, Concurrency: nodeConcurrency,
		PublicKey: b.vapidPublic, PrivateKey: b.vapidSecret, Subject: vapidSubject, Payload: nodePayload,
	})
	if err != nil {
		return phase{}, err
	}
	if _, err := b.waitDelivered(ctx, b.o.Tasks, false); err != nil {
		return phase{}, err
	}
	after, err := cpuOf(b.pushService.Pid())
	if err != nil {
		return phase{}, err
	}
	return phase{name: "node web-push " + res.Version, pushes: res.Sent, elapsed: time.Duration(res.ElapsedNs),
		cpu: time.Duration(res.CPUMicros) * time.Microsecond, serviceCPU: after - before}, nil
}

// stopGrace is how long a child has to exit after SIGTERM before it is
// killed.
const stopGrace = 15 * time.Second

// minLead is the shortest wait between the inserts and the due time.
const minLead = 2 * time.Second

func (b *bench) runAmsgPhase(ctx context.Context, s amsgSettings, round, count int) (phase, error) {
	if b.pg != nil {
		s.databaseURL = b.pg.freshDatabase(ctx, b.o.DatabaseURL, b.logf)
	}
	instances := make([]*amsgInstance, count)
	defer func() {
		for _, inst := range instances {
			if inst == nil {
				continue
			}
			if err := b.sup.stop(inst.child, stopGrace); err != nil {
				b.logf("warning: %v", err)
			}
		}
	}()
	for i := range instances {
		inst, err := startAmsg(ctx, b.sup, s, fmt.Sprintf("%d-%d-%d", round+1, count, i+1))
		if err != nil {
			return phase{}, err
		}
		instances[i] = inst
		b.logf("%s at %s (pid %d)", inst.name, inst.URL, inst.Pid())
	}
	// A crashed amsg ends the phase at once, with its last words.
	watched, stopWatching := whileRunning(ctx, instances)
	defer stopWatching()
	p, commitsBefore, err := b.deliverThroughAmsg(watched, instances, s.masterKey, round)
	if err != nil {
		for _, inst := range instances {
			if exited := inst.Exited(); exited != nil {
				return phase{}, exited
			}
		}
		return p, err
	}
	if b.pg != nil {
		// A backend reports its counts to pg_stat_database at the latest
		// when it exits: the instances stop before they are read.
		for _, inst := range instances {
			if err := b.sup.stop(inst.child, stopGrace); err != nil {
				b.logf("warning: %v", err)
			}
		}
		after, _, err := b.pg.counts(ctx)
		if err != nil {
			return phase{}, err
		}
		p.commits = after - commitsBefore
	}
	return p, nil
}

// deliverThroughAmsg registers the devices, schedules the tasks and
// measures their delivery. On PostgreSQL the commits are counted once the
// instances have stopped: it returns the count before the phase.
func (b *bench) deliverThroughAmsg(ctx context.Context, instances []*amsgInstance, masterKey string, round int) (p phase, commitsBefore int64, err error) {
	pids := make([]int, len(instances))
	for i, inst := range instances {
		pids[i] = inst.Pid()
	}
	start, err := b.scheduleThroughAmsg(ctx, instances, masterKey)
	if err != nil {
		return p, 0, err
	}
	// perf starts half a second ahead, so it is sampling by the due time;
	// CPU is measured from just before it: inserting is not delivering.
	// PostgreSQL's processes are those at that instant: a session opened
	// during delivery is not sampled.
	var prof, dbProf *profiler
	if b.o.Perf {
		if err := sleepUntil(ctx, start.Add(-perfHeadStart)); err != nil {
			return p, 0, err
		}
		name := fmt.Sprintf("round%d-%dinstances", round+1, len(instances))
		if prof, err = startProfile(b.sup, b.dir, name, pids); err != nil {
			return p, 0, err
		}
		if b.pg != nil {
			procs, _, err := b.pg.processCPU(ctx)
			if err != nil {
				return p, 0, err
			}
			if dbProf, err = startProfile(b.sup, b.dir, name+"-postgres", slices.Collect(maps.Keys(procs))); err != nil {
				return p, 0, err
			}
		}
	}
	if err := sleepUntil(ctx, start.Add(-20*time.Millisecond)); err != nil {
		return p, 0, err
	}
	before, err := b.mark(ctx, instances, pids)
	if err != nil {
		return p, 0, err
	}
	var goProf *goProfiles
	if b.o.GoProfile != "" {
		if goProf, err = startGoProfiles(ctx, b.o.GoProfile, round, instances, b.o.goProfileSpan()); err != nil {
			return p, 0, err
		}
	}
	b.logf("amsg: due at %s; waiting for %d pushes", start.UTC().Format(time.TimeOnly+".000"), b.o.Tasks)
	res, err := b.waitDelivered(ctx, b.o.Tasks, true)
	if err != nil {
		return p, 0, err
	}
	after, err := b.mark(ctx, instances, pids)
	if err != nil {
		return p, 0, err
	}
	if goProf != nil {
		files, err := goProf.wait()
		if err != nil {
			return p, 0, err
		}
		for _, f := range files {
			b.logf("amsg: Go profile %s (go tool pprof or go tool trace)", f)
		}
	}
	p = phase{name: "amsg (scheduled)", pushes: res.Delivered, elapsed: time.Unix(0, res.Last).Sub(start),
		cpu: after.amsgCPU - before.amsgCPU, serviceCPU: after.serviceCPU - before.serviceCPU, waited: after.amsgWaited - before.amsgWaited,
		syscalls:  after.amsgSyscalls.minus(before.amsgSyscalls),
		instances: len(instances), commits: after.commits - before.commits, dbCPU: cpuBetween(before.dbCPU, after.dbCPU),
		sessions: after.sessions - before.sessions, dbEndedCPU: after.dbEndedCPU - before.dbEndedCPU}
	if before.commits < 0 || after.commits < 0 {
		p.commits = -1
	}
	for _, pid := range pids {
		rss, err := peakRSS(pid)
		if err != nil {
			return p, 0, err
		}
		p.peakRSS = max(p.peakRSS, rss)
	}
	if prof != nil {
		if p.profile, err = prof.stop(ctx, b.sup); err != nil {
			return p, 0, err
		}
	}
	if dbProf != nil {
		if p.dbProfile, err = dbProf.stop(ctx, b.sup); err != nil {
			return p, 0, err
		}
	}
	for _, us := range res.LatenciesMicros {
		p.latencies = append(p.latencies, time.Duration(us)*time.Microsecond)
	}
	return p, before.commits, nil
}

// scheduleThroughAmsg registers a device per user and schedules the tasks
// through the API, and returns when the first is due.
func (b *bench) scheduleThroughAmsg(ctx context.Context, instances []*amsgInstance, masterKey string) (time.Time, error) {
	o := b.o
	keyring, err := usercrypt.NewKeyring(masterKey)
	if err != nil {
		return time.Time{}, err
	}
	api := apiClient{http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: o.Inserters}}, keyring: keyring}
	users := make([]string, o.Users)
	for i := range users {
		users[i] = newUserID()
	}
	base := func(i int) string { return instances[i%len(instances)].URL }

	// The first requests warm amsg up; the lead is estimated from the rest.
	register := func(from, to int) (time.Duration, error) {
		started := time.Now()
		err := forEach(ctx, to-from, o.Inserters, func(ctx context.Context, i int) error {
			return api.registerDevice(ctx, base(from+i), users[from+i], b.subs[from+i])
		})
		if err != nil {
			return 0, fmt.Errorf("registering devices: %w", err)
		}
		return time.Since(started), nil
	}
	warm := o.Users / 2
	if _, err := register(0, warm); err != nil {
		return time.Time{}, err
	}
	took, err := register(warm, o.Users)
	if err != nil {
		return time.Time{}, err
	}
	lead := o.Lead
	if lead == 0 {
		lead = estimateLead(took, o.Users-warm, o.Tasks)
	}
	if b.pg != nil {
		lead += statsSettle // the scheduling's commits reach pg_stat_database before the due time
	}
	start := time.Now().Add(lead).Truncate(time.Millisecond)
	due := dueTimes(start, o)
	b.logf("amsg: scheduling %d fixed tasks for %d users through the API; the first is due in %s", o.Tasks, o.Users, lead.Round(time.Millisecond))
	scheduling, cost := time.Now(), b.schedulingCost(ctx, instances)
	err = forEach(ctx, o.Tasks, o.Inserters, func(ctx context.Context, i int) error {
		return api.scheduleFixed(ctx, base(i), users[i%o.Users], i, due(i))
	})
	if err != nil {
		return time.Time{}, fmt.Errorf("scheduling tasks: %w", err)
	}
	cost(o.Tasks)
	b.logf("amsg: scheduled in %s", time.Since(scheduling).Round(time.Millisecond))
	if late := time.Since(start); late > -50*time.Millisecond {
		return time.Time{}, fmt.Errorf("scheduling took past the due time (by %s): pass a larger --lead than %s", late.Round(time.Millisecond), lead)
	}
	return start, nil
}

// mark is what the processes of an amsg phase have used at one instant.
type mark struct {
	amsgCPU, serviceCPU time.Duration
	amsgWaited          time.Duration // runnable, waiting for a CPU
	amsgSyscalls        syscalls
	commits             int64                 // -1 when unknown
	dbCPU               map[int]serverProcess // PostgreSQL's processes, by pid
	dbEndedCPU          time.Duration         // its ended sessions'
	sessions            int64
}

// mark reads the CPU of amsg's processes and the push service's, and the
// database's commits (SQLite) or its processes' CPU (PostgreSQL).
func (b *bench) mark(ctx context.Context, instances []*amsgInstance, pids []int) (m mark, err error) {
	if m.amsgCPU, err = cpuOf(pids...); err != nil {
		return m, err
	}
	for _, pid := range pids {
		wait, err := runQueueWait(pid)
		if err != nil {
			return m, err
		}
		m.amsgWaited += wait
	}
	m.amsgSyscalls = syscallsOf(pids...)
	if m.serviceCPU, err = cpuOf(b.pushService.Pid()); err != nil {
		return m, err
	}
	if b.pg != nil {
		if m.dbCPU, m.dbEndedCPU, err = b.pg.processCPU(ctx); err != nil {
			return m, err
		}
		m.commits, m.sessions, err = b.pg.counts(ctx)
		return m, err
	}
	if m.commits, err = scrapeCommits(ctx, b.control, instances); err != nil {
		b.logf("warning: commits not counted: %v", err)
		m.commits = -1
	}
	return m, nil
}

// amsgTaskQuota is amsg's default bound on one user's pending tasks.
const amsgTaskQuota = 1000

// quotaEnv raises amsg's task quota when a user gets more tasks than it
// allows; --amsg-env, later in the environment, still wins.
func quotaEnv(tasks, users int) []string {
	perUser := (tasks + users - 1) / users
	if perUser <= amsgTaskQuota {
		return nil
	}
	return []string{fmt.Sprintf("AMSG_MAX_TASKS_PER_USER=%d", perUser)}
}

// perfHeadStart is how long before the due time perf is started.
const perfHeadStart = 500 * time.Millisecond

// sleepUntil waits until t or the end of ctx.
func sleepUntil(ctx context.Context, t time.Time) error {
	timer := time.NewTimer(time.Until(t))
	defer timer.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-timer.C:
		return nil
	}
}

// whileRunning returns a context that ends when any of instances exits.
func whileRunning(ctx context.Context, instances []*amsgInstance) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(ctx)
	for _, inst := range instances {
		go func() {
			select {
			case <-inst.done:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	return ctx, cancel
}

// estimateLead guesses how long scheduling tasks takes from how long
// registering users took, with room to spare: a task costs about what a
// device registration does.
func estimateLead(registering time.Duration, users, tasks int) time.Duration {
	perRequest := max(registering/time.Duration(users), 500*time.Microsecond)
	return max(minLead, minLead+2*perRequest*time.Duration(tasks))
}

// dueTimes returns when task i is due: all at start, or for the latency
// scenario spread at o.Rate a second from start.
func dueTimes(start time.Time, o options) func(i int) time.Time {
	if o.Scenario != scenarioLatency {
		return func(int) time.Time { return start }
	}
	return func(i int) time.Time {
		return start.Add(time.Duration(int64(i) * int64(time.Second) / int64(o.Rate)))
	}
}

// reportRound prints one round's results.
func (b *bench) reportRound(r int, rd round) {
	o := b.o
	if r == 0 {
		pin := "unpinned"
		if b.pinned {
			pin = fmt.Sprintf("push service on CPU %d, sender on CPU %d", pushServiceCPU, measuredCPU)
		}
		if b.serverCPUs != "" {
			pin += ", PostgreSQL on CPUs " + b.serverCPUs
		}
		fmt.Fprintf(b.out, "scenario %s: %d pushes, %d users, %d amsg instance(s), %d CPUs, %s\n",
			o.Scenario, o.Tasks, o.Users, o.Instances, runtime.NumCPU(), pin)
	}
	if o.Rounds > 1 {
		fmt.Fprintf(b.out, "round %d of %d:\n", r+1, o.Rounds)
	}
	line := func(p phase, from string) {
		fmt.Fprintf(b.out, "%-22s %6d pushes in %7.3f s %s = %7.0f pushes/s; CPU %6.2f s (%3.0f%% of a core) = %5.0f µs/push; push service CPU %5.0f µs/push\n",
			p.name, p.pushes, p.elapsed.Seconds(), from, p.rate(), p.cpu.Seconds(), 100*p.cpu.Seconds()/p.elapsed.Seconds(),
			perPush(p.cpu, p.pushes), perPush(p.serviceCPU, p.pushes))
	}
	if rd.node != nil {
		line(*rd.node, "(first send to last answer)")
	}
	for _, p := range []*phase{rd.single, &rd.amsg} {
		if p != nil {
			line(*p, "(due time to last arrival) ")
			b.reportDatabase(*p)
		}
	}
	fmt.Fprintf(b.out, "amsg peak RSS: %.0f MiB\n", float64(rd.amsg.peakRSS)/(1<<20))
	if rd.node != nil {
		fmt.Fprintf(b.out, "ratio amsg/node: %.2fx (goal >= 5x); by CPU per push: %.2fx\n", rd.rateRatio(), rd.cpuRatio())
	}
	if rd.single != nil {
		b.reportCoordination(*rd.single, rd.amsg)
	}
	for _, p := range []*phase{rd.single, &rd.amsg} {
		if p == nil {
			continue
		}
		if p.profile != "" {
			fmt.Fprintf(b.out, "amsg's CPU, %d instance(s) (perf, self time, from just before the due time to the last arrival):\n%s", p.instances, p.profile)
		}
		if p.dbProfile != "" {
			fmt.Fprintf(b.out, "PostgreSQL's CPU, %d instance(s) (%.0f µs/push; perf, self time, its processes at the due time):\n%s",
				p.instances, perPush(total(p.dbCPU), p.pushes), p.dbProfile)
		}
	}
	for _, p := range []*phase{rd.node, rd.single, &rd.amsg} {
		if p != nil && b.pinned && p.serviceCPU > p.elapsed*9/10 {
			fmt.Fprintf(b.out, "warning: the push service was busy %.0f%% of the %s phase: its CPU, not the sender, may have set the rate\n",
				100*p.serviceCPU.Seconds()/p.elapsed.Seconds(), p.name)
		}
	}
}

// reportDatabase prints an amsg phase's latency and database figures.
func (b *bench) reportDatabase(p phase) {
	what := "burst"
	if b.o.Scenario == scenarioLatency {
		what = fmt.Sprintf("%d tasks/s", b.o.Rate)
	}
	at := func(pct float64) time.Duration { return percentile(p.latencies, pct).Round(100 * time.Microsecond) }
	fmt.Fprintf(b.out, "  %d instance(s): due-to-delivered (%s): first %s, p50 %s, p99 %s, max %s; runnable but waiting for a CPU %.0f%% of a core",
		p.instances, what, at(0), at(50), at(99), at(100), 100*p.waited.Seconds()/p.elapsed.Seconds())
	if p.commits >= 0 {
		fmt.Fprintf(b.out, "; %.3f commits/push", float64(p.commits)/float64(max(p.pushes, 1)))
	}
	if p.syscalls != (syscalls{}) {
		fmt.Fprintf(b.out, "; %.1f read and %.1f write syscalls/push",
			float64(p.syscalls.reads)/float64(max(p.pushes, 1)), float64(p.syscalls.writes)/float64(max(p.pushes, 1)))
	}
	if b.pg != nil {
		dbCPU := total(p.dbCPU)
		kinds := byKind(p.dbCPU, p.pushes)
		if kinds != "" {
			kinds = " (" + kinds + ")"
		}
		fmt.Fprintf(b.out, "; PostgreSQL CPU %.2f s = %.0f µs/push%s, and %.0f µs/push in ended sessions (%d of them this database's)",
			dbCPU.Seconds(), perPush(dbCPU, p.pushes), kinds, perPush(p.dbEndedCPU, p.pushes), p.sessions)
	}
	fmt.Fprintln(b.out)
}

// reportCoordination prints what the instances beyond the first add per
// push: the cost of coordinating them through the database.
func (b *bench) reportCoordination(one, many phase) {
	add := func(cpu func(phase) time.Duration) float64 {
		return perPush(cpu(many), many.pushes) - perPush(cpu(one), one.pushes)
	}
	fmt.Fprintf(b.out, "coordination: %d instances against 1: %+.0f µs amsg CPU/push, %+.0f µs database CPU/push, %+.3f commits/push, %.2fx the rate\n",
		many.instances, add(func(p phase) time.Duration { return p.cpu }), add(func(p phase) time.Duration { return total(p.dbCPU) }),
		float64(many.commits)/float64(max(many.pushes, 1))-float64(one.commits)/float64(max(one.pushes, 1)), many.rate()/one.rate())
}

// rateRatio is amsg's rate over node's.
func (rd round) rateRatio() float64 { return rd.amsg.rate() / rd.node.rate() }

// cpuRatio is node's CPU per push over amsg's.
func (rd round) cpuRatio() float64 {
	return perPush(rd.node.cpu, rd.node.pushes) / perPush(rd.amsg.cpu, rd.amsg.pushes)
}

// reportSummary prints the medians and ranges over several rounds.
func (b *bench) reportSummary(rounds []round) {
	if len(rounds) < 2 {
		return
	}
	var amsgRates, nodeRates, ratios, cpuRatios []float64
	for _, rd := range rounds {
		amsgRates = append(amsgRates, rd.amsg.rate())
		if rd.node != nil {
			nodeRates = append(nodeRates, rd.node.rate())
			ratios = append(ratios, rd.rateRatio())
			cpuRatios = append(cpuRatios, rd.cpuRatio())
		}
	}
	summary := func(name, unit string, vs []float64) {
		if len(vs) > 0 {
			lo, mid, hi := spread(vs)
			fmt.Fprintf(b.out, "%-26s median %8.2f%s  (range %.2f–%.2f)\n", name, mid, unit, lo, hi)
		}
	}
	fmt.Fprintf(b.out, "over %d rounds:\n", len(rounds))
	summary("node pushes/s", "", nodeRates)
	summary("amsg pushes/s", "", amsgRates)
	summary("ratio amsg/node", "x", ratios)
	summary("ratio by CPU per push", "x", cpuRatios)
}
