package main

import (
	"bufio"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"amsg/push/pushtest"
	"amsg/store/storetest"
	"amsg/store/usercrypt"

	"github.com/jackc/pgx/v5"
)

// Issue 23's done-when: a fresh machine follows the README's "Scaling out",
// "Backups" and "Running behind a proxy" literally and ends with a working
// deployment. The README marks each block of commands to follow with
// `<!-- walkthrough: NAME -->`; this test runs them with bash as written,
// changing only what an operator fills in for their machine (the database's
// address and name) and, so that the test touches nothing outside its
// directory, the absolute paths (/etc, /usr/local/bin, /var/lib/amsg,
// /var/backups) and port 8080. Three commands are stand-ins: `amsg serve`
// and systemctl start the real binary in the background (systemctl with
// the unit's ExecStart, Environment and EnvironmentFile), and `go build`
// copies the binary the tests built from the same source. Each walk ends
// with a test push delivered to a fake push service.

// walkthroughStubs are the stand-ins, in bash. launch runs a command in
// the background, logging into $WALK, and waits until amsg listens; it
// records "pid address" in $WALK/instances.
const walkthroughLaunch = `launch() {
	local n log
	n=$(ls "$WALK" | grep -c '^instance-.*\.log$' || true)
	log="$WALK/instance-$n.log"
	env | grep '^AMSG_' >"$WALK/instance-$n.env" || true
	# The background job opens its redirections when it gets to run: made
	# here, the log is there for tail (and for the next launch's count).
	: >"$log"
	setsid "$@" >/dev/null 2>"$log" </dev/null &
	local pid=$!
	# grep ends the pipeline at the line; tail's SIGPIPE is no failure.
	# A loaded machine may take long to start it; one that never listens is
	# killed, since only a listening instance is recorded for stopAll.
	if ! (set +o pipefail; timeout 120 tail -n +1 --pid="$pid" -f "$log" | grep -q -m1 '"msg":"amsg listening"'); then
		kill -KILL "$pid" 2>/dev/null
		echo "amsg did not start:" >&2; cat "$log" >&2; return 1
	fi
	local addr
	addr=$(grep -m1 '"msg":"amsg listening"' "$log" | sed 's/.*"addr":"\([^"]*\)".*/\1/')
	echo "$pid $addr $n" >>"$WALK/instances"
	echo "$pid"
}
stop_pid() {
	kill -TERM "$1"
	timeout 60 tail --pid="$1" -f /dev/null
}
`

const walkthroughAmsg = `#!/bin/bash
set -euo pipefail
source "$WALK/launch.sh"
if [ "${1:-}" != serve ]; then exec "$AMSG_REAL" "$@"; fi
args=()
for a in "$@"; do
	case "$a" in :8080) a=127.0.0.1:0 ;; esac
	args+=("$a")
done
launch "$AMSG_REAL" "${args[@]}" >/dev/null
`

const walkthroughSystemctl = `#!/bin/bash
set -euo pipefail
source "$WALK/launch.sh"
unit="$WALK_ROOT/etc/systemd/system/amsg.service"
paths() {
	sed -e "s#/usr/local/bin/#$WALK_ROOT/usr/local/bin/#g" -e "s#/var/lib/amsg#$WALK_ROOT/var/lib/amsg#g" \
		-e "s#/etc/amsg/#$WALK_ROOT/etc/amsg/#g" -e "s#127.0.0.1:8080#127.0.0.1:0#g" "$@"
}
start() {
	[ -f "$unit" ] || { echo "systemctl: $unit is not installed" >&2; exit 5; }
	install -d -m 0700 "$WALK_ROOT/var/lib/amsg" # StateDirectory=amsg
	local vars=() line file
	while IFS= read -r line; do vars+=("$line"); done < <(paths "$unit" | sed -n 's/^Environment=//p')
	file=$(paths "$unit" | sed -n 's/^EnvironmentFile=-\{0,1\}//p')
	if [ -f "$file" ]; then
		while IFS= read -r line; do
			if [[ "$line" =~ ^[A-Z_0-9]+= ]]; then vars+=("$line"); fi
		done <"$file"
	fi
	read -r -a exec_start < <(paths "$unit" | sed -n 's/^ExecStart=//p')
	export "${vars[@]}"
	launch "${exec_start[@]}" >"$WALK/service.pid"
}
stop() {
	if [ -s "$WALK/service.pid" ]; then stop_pid "$(cat "$WALK/service.pid")"; : >"$WALK/service.pid"; fi
}
case "$*" in
daemon-reload) ;;
"reload nginx") nginx -s reload ;;
"enable --now amsg" | "start amsg") start ;;
"stop amsg") stop ;;
"restart amsg") stop; start ;;
*) echo "systemctl stand-in: $* is not part of the walkthrough" >&2; exit 1 ;;
esac
`

// walkthroughNginx is the machine's nginx: its configuration is the
// sites enabled under $WALK_ROOT/etc/nginx, on the walk's ports and with
// their paths under the root, in front of the service's address. reload
// starts it the first time (Debian's package would have).
const walkthroughNginx = `#!/bin/bash
set -euo pipefail
source "$WALK/launch.sh"
dir="$WALK/nginx"
build() {
	mkdir -p "$dir/sites"
	rm -f "$dir/sites/"*
	local upstream
	upstream=$(awk -v pid="$(cat "$WALK/service.pid")" '$1 == pid {print $2}' "$WALK/instances")
	for f in "$WALK_ROOT"/etc/nginx/sites-enabled/*; do
		sed -e "s#/etc/#$WALK_ROOT/etc/#g" -e "s# 80;# $WALK_HTTP_PORT;#" -e "s#:80;#:$WALK_HTTP_PORT;#" \
			-e "s# 443 # $WALK_HTTPS_PORT #" -e "s#:443 #:$WALK_HTTPS_PORT #" -e "s#127.0.0.1:8080#$upstream#" \
			"$f" >"$dir/sites/$(basename "$f")"
	done
	cat >"$dir/nginx.conf" <<EOF
pid $dir/nginx.pid;
error_log stderr notice;
events {}
http {
	access_log off;
	client_body_temp_path $dir;
	proxy_temp_path $dir;
	fastcgi_temp_path $dir;
	uwsgi_temp_path $dir;
	scgi_temp_path $dir;
	include $dir/sites/*;
}
EOF
}
case "$*" in
-t) build; exec "$NGINX_REAL" -t -p "$dir" -c "$dir/nginx.conf" ;;
"-s reload")
	build
	if [ -s "$dir/nginx.pid" ]; then exec "$NGINX_REAL" -p "$dir" -c "$dir/nginx.conf" -s reload; fi
	setsid "$NGINX_REAL" -p "$dir" -c "$dir/nginx.conf" -g "daemon off;" >/dev/null 2>"$dir/error.log" </dev/null &
	echo $! >"$dir/master.pid"
	if ! (set +o pipefail; timeout 30 tail -n +1 --pid=$! -f "$dir/error.log" | grep -q -m1 'start worker processes'); then
		echo "nginx did not start:" >&2; cat "$dir/error.log" >&2; exit 1
	fi ;;
*) echo "nginx stand-in: $* is not part of the walkthrough" >&2; exit 1 ;;
esac
`

const walkthroughGo = `#!/bin/bash
set -euo pipefail
[ "$*" = "build ./cmd/amsg" ] || { echo "go stand-in: only go build ./cmd/amsg" >&2; exit 1; }
cp "$AMSG_REAL" ./amsg
`

// readmeWalkthroughs returns the README's marked blocks by name.
func readmeWalkthroughs(t *testing.T) map[string]string {
	t.Helper()
	f, err := os.Open("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	blocks := map[string]string{}
	marker := regexp.MustCompile(`^<!-- walkthrough: ([a-z-]+) -->$`)
	sc := bufio.NewScanner(f)
	name, inBlock := "", false
	for sc.Scan() {
		line := sc.Text()
		switch {
		case inBlock && line == "```":
			inBlock, name = false, ""
		case inBlock:
			blocks[name] += line + "\n"
		case name != "" && line == "```sh":
			inBlock = true
		case name != "":
			t.Fatalf("README: walkthrough %s is not followed by a ```sh block", name)
		default:
			if m := marker.FindStringSubmatch(line); m != nil {
				name = m[1]
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return blocks
}

// walk is one fresh machine: a root for its absolute paths, a working
// directory (with the checkout's deploy/), the stand-ins, and a PostgreSQL
// database of its own.
type walk struct {
	dir, root, work string
	env             []string
	database        string // its name
	url             string // the README's database URL, filled in
	pooled          string // the README's PgBouncer URL, filled in
}

func newWalk(t *testing.T) *walk {
	t.Helper()
	dir := t.TempDir()
	w := &walk{dir: dir, root: filepath.Join(dir, "root"), work: filepath.Join(dir, "work")}
	bin := filepath.Join(dir, "bin")
	for _, d := range []string{w.root + "/etc/systemd/system", w.root + "/usr/local/bin", w.root + "/var/lib", w.root + "/var/backups", w.work, bin} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	deploy, _ := filepath.Abs("../../deploy")
	if err := os.Symlink(deploy, filepath.Join(w.work, "deploy")); err != nil {
		t.Fatal(err)
	}
	for name, text := range map[string]string{"launch.sh": walkthroughLaunch, "bin/amsg": walkthroughAmsg,
		"bin/systemctl": walkthroughSystemctl, "bin/go": walkthroughGo, "bin/nginx": walkthroughNginx} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	w.env = append(os.Environ(), "WALK="+dir, "WALK_ROOT="+w.root, "AMSG_REAL="+amsgBinary(t),
		"PATH="+bin+":"+os.Getenv("PATH"),
		// The machine's log as the test reads it, and its pushes to the
		// fake push service on loopback.
		"AMSG_LOG_FORMAT=json", "AMSG_ALLOW_PRIVATE_ENDPOINTS=true",
		// Port 8080 templated where no --addr says it; each request's
		// log line, with the client address amsg counts.
		"AMSG_ADDR=127.0.0.1:0", "AMSG_LOG_LEVEL=debug")
	t.Cleanup(func() { w.stopAll() })
	return w
}

// withDatabase gives the walk a database of its own on the test server,
// created by the README's createdb, and fills its name and address in.
func (w *walk) withDatabase(t *testing.T) {
	t.Helper()
	base := storetest.DatabaseURL(t) // skips without a server; fails under CI
	cfg, err := pgx.ParseConfig(base)
	if err != nil {
		t.Fatal(err)
	}
	var random [6]byte
	_, _ = rand.Read(random[:])
	w.database = "amsg_walk_" + hex.EncodeToString(random[:])
	w.url = fmt.Sprintf("postgres://%s@/%s?host=%s&port=%d", cfg.User, w.database, cfg.Host, cfg.Port)
	w.env = append(w.env, "PGHOST="+cfg.Host, fmt.Sprintf("PGPORT=%d", cfg.Port), "PGUSER="+cfg.User)
	t.Cleanup(func() {
		admin, err := sql.Open("pgx", base)
		if err == nil {
			_, _ = admin.Exec("DROP DATABASE IF EXISTS " + w.database + " WITH (FORCE)")
			admin.Close()
		}
	})
}

// run runs a README block in the walk's working directory, with what the
// operator fills in filled in and the absolute paths under the walk's root.
func (w *walk) run(t *testing.T, name, block string) {
	t.Helper()
	if out, err := w.try(t, name, block); err != nil {
		t.Fatal(out)
	}
}

// try is run that returns what went wrong instead of failing the test.
func (w *walk) try(t *testing.T, name, block string) (string, error) {
	t.Helper()
	if block == "" {
		t.Fatalf("README has no walkthrough %s", name)
	}
	r := strings.NewReplacer(
		"postgres://amsg:secret@db.internal/amsg?sslmode=require", w.url,
		"postgres://amsg:secret@db.internal:5432/amsg", w.url,
		"postgres://amsg:secret@pgbouncer.internal:6432/amsg", w.pooled,
		"createdb amsg", "createdb "+w.database,
		"/usr/local/bin/", w.root+"/usr/local/bin/", "/etc/", w.root+"/etc/",
		"/var/lib/amsg", w.root+"/var/lib/amsg", "/var/backups/", w.root+"/var/backups/")
	cmd := exec.Command("bash", "-euo", "pipefail", "-c", r.Replace(block))
	cmd.Dir, cmd.Env = w.work, w.env
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Sprintf("README walkthrough %s: %v\n%s\n--- as run:\n%s", name, err, out, r.Replace(block)), err
	}
	return "", nil
}

// instance is an amsg the walk started: its address and environment.
type instance struct {
	pid, url, n string
	env         map[string]string
}

func (w *walk) instances(t *testing.T) []instance {
	t.Helper()
	list, err := os.ReadFile(filepath.Join(w.dir, "instances"))
	if err != nil {
		t.Fatal(err)
	}
	var out []instance
	for _, line := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		f := strings.Fields(line)
		env := map[string]string{}
		raw, _ := os.ReadFile(filepath.Join(w.dir, "instance-"+f[2]+".env"))
		for _, kv := range strings.Split(string(raw), "\n") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				env[k] = v
			}
		}
		out = append(out, instance{pid: f[0], url: "http://" + f[1], n: f[2], env: env})
	}
	return out
}

// stopAll ends every instance the walk started that still runs, and its
// nginx.
func (w *walk) stopAll() {
	if pid, err := os.ReadFile(filepath.Join(w.dir, "nginx", "master.pid")); err == nil {
		w.stopPid(strings.TrimSpace(string(pid)))
	}
	list, _ := os.ReadFile(filepath.Join(w.dir, "instances"))
	for _, line := range strings.Split(strings.TrimSpace(string(list)), "\n") {
		if f := strings.Fields(line); len(f) == 3 {
			w.stopPid(f[0])
		}
	}
}

// stopPid stops the process pid, if it still runs, with the walk's own
// stop_pid: SIGTERM, then wait for it to end.
func (w *walk) stopPid(pid string) {
	stop := exec.Command("bash", "-c", `source "$WALK/launch.sh"; if kill -0 "$1" 2>/dev/null; then stop_pid "$1"; fi`, "stop", pid)
	stop.Env = w.env
	_ = stop.Run()
}

// device is the test's browser: a subscription at a fake push service that
// checks the instance's VAPID key, and the user key of the deployment.
type device struct {
	rig    *taskRig
	header map[string]string
}

// newDevice subscribes at a fake push service for inst's VAPID key, with
// the user key of the master key `amsg keys export` prints for inst's data.
func (w *walk) newDevice(t *testing.T, inst instance) *device {
	t.Helper()
	header := map[string]string{}
	if token := inst.env["AMSG_CLIENT_TOKEN"]; token != "" {
		header["X-Client-Token"] = token
	}
	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, inst.url+"/api/v1/vapid-public-key", nil)
	for k, v := range header {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var vapid struct{ PublicKey string }
	if err := json.NewDecoder(resp.Body).Decode(&vapid); err != nil || vapid.PublicKey == "" {
		t.Fatalf("vapid-public-key: %v %+v", err, vapid)
	}
	fake := pushtest.NewServer(vapid.PublicKey)
	t.Cleanup(fake.Close)
	export := boundedCommand(t, 2*time.Minute, amsgBinary(t), "keys", "export")
	export.Dir = w.work
	for k, v := range inst.env {
		export.Env = append(export.Env, k+"="+v)
	}
	var stderr strings.Builder
	export.Stderr = &stderr
	out, err := export.Output()
	m := regexp.MustCompile(`(?m)^AMSG_MASTER_KEY=([0-9a-f]{64})$`).FindSubmatch(out)
	if err != nil || m == nil {
		t.Fatalf("amsg keys export: %v\n%s\n%s", err, out, stderr.String())
	}
	ring, err := usercrypt.NewKeyring(string(m[1]))
	if err != nil {
		t.Fatal(err)
	}
	return &device{rig: &taskRig{push: fake, sub: fake.Subscribe(), key: ring.UserKey(taskUser)}, header: header}
}

// boundedCommand is exec.Command for a program that should end by itself
// within limit: past it the program gets SIGQUIT, on which a Go program
// prints every goroutine's stack to its stderr (for the failure message),
// and is killed if it lingers on.
func boundedCommand(t *testing.T, limit time.Duration, name string, args ...string) *exec.Cmd {
	ctx, cancel := context.WithTimeout(t.Context(), limit)
	t.Cleanup(cancel)
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Cancel = func() error { return cmd.Process.Signal(syscall.SIGQUIT) }
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

func (d *device) register(t *testing.T, inst instance) {
	t.Helper()
	status, body, _ := d.rig.callWith(t, &amsgProcess{URL: inst.url}, http.MethodPut, "push-subscription",
		map[string]any{"subscription": d.rig.sub}, d.header)
	if status != http.StatusOK {
		t.Fatalf("push-subscription: %d %s", status, body)
	}
}

// testPush asks inst for a test push and waits until the device has it.
func (d *device) testPush(t *testing.T, inst instance) {
	t.Helper()
	before := len(d.rig.push.Pushes())
	status, body, _ := d.rig.callWith(t, &amsgProcess{URL: inst.url}, http.MethodPost, "test-push", nil, d.header)
	if status != http.StatusOK {
		t.Fatalf("test-push: %d %s", status, body)
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if _, err := d.rig.push.WaitPushes(ctx, before+1); err != nil {
		t.Fatalf("no push delivered: %v (test-push answered %s)", err, body)
	}
}

// Scaling out: a new database, two instances on it; a device registered
// through one gets a push sent through the other.
func TestReadmeWalkthroughScalingOut(t *testing.T) {
	w := newWalk(t)
	w.withDatabase(t)
	w.scaleOut(t, readmeWalkthroughs(t), "")
}

// Scaling out through PgBouncer in transaction mode, as each of the
// README's two ways says: the scaling-out block with the pooler's addresses
// in place of the database's.
func TestReadmeWalkthroughThroughPgBouncer(t *testing.T) {
	blocks := readmeWalkthroughs(t)
	for _, way := range []string{"pgbouncer-direct", "pgbouncer-poll-only"} {
		t.Run(way, func(t *testing.T) {
			w := newWalk(t)
			w.withDatabase(t)
			w.pooled = startPgBouncer(t, w.url)
			w.scaleOut(t, blocks, way)
		})
	}
}

// scaleOut runs the scaling-out block with the block called also (if any)
// before its last line, amsg serve, which it runs twice ("on each machine,
// as many as you like"), and checks that a device registered through the
// first instance gets a push sent through the second.
func (w *walk) scaleOut(t *testing.T, blocks map[string]string, also string) {
	t.Helper()
	lines := strings.Split(strings.TrimSpace(blocks["scaling-out"]), "\n")
	serve := lines[len(lines)-1]
	script := strings.Join(lines[:len(lines)-1], "\n") + "\n" + blocks[also] + serve + "\n" + serve + "\n"
	if also != "" && blocks[also] == "" {
		t.Fatalf("README has no walkthrough %s", also)
	}
	w.run(t, strings.TrimSpace("scaling-out "+also), script)
	insts := w.instances(t)
	if len(insts) != 2 {
		t.Fatalf("%d instances running, want 2", len(insts))
	}
	d := w.newDevice(t, insts[0])
	d.register(t, insts[0])
	d.testPush(t, insts[1])
}

// Moving a SQLite deployment up: a quick-start directory with a device,
// migrated; the instance on the database, given nothing but its address,
// pushes to that device.
func TestReadmeWalkthroughMigrate(t *testing.T) {
	blocks := readmeWalkthroughs(t)
	w := newWalk(t)
	w.withDatabase(t)
	w.run(t, "quick start", "amsg serve\n")
	quick := w.instances(t)[0]
	d := w.newDevice(t, quick)
	d.register(t, quick)
	w.stopAll() // "stop amsg"
	w.run(t, "migrate", blocks["migrate"])
	insts := w.instances(t)
	d.testPush(t, insts[len(insts)-1])
}

// The systemd unit with the proxy's settings, then a backup while it runs,
// and a restore: the device registered before the backup gets a push from
// the restored server.
func TestReadmeWalkthroughSystemdProxyAndBackups(t *testing.T) {
	blocks := readmeWalkthroughs(t)
	w := newWalk(t)
	w.run(t, "systemd", blocks["systemd"])
	w.run(t, "proxy-env", blocks["proxy-env"])
	inst := w.instances(t)[1] // restarted with the settings
	if inst.env["AMSG_TRUSTED_PROXIES"] != "127.0.0.1,::1" || len(inst.env["AMSG_CLIENT_TOKEN"]) != 64 {
		t.Fatalf("the service runs without the proxy's settings: %v", inst.env)
	}
	w.behindNginx(t, blocks["nginx"], inst)
	d := w.newDevice(t, inst)
	d.register(t, inst)
	w.run(t, "backups", blocks["backups"])
	insts := w.instances(t)
	restored := insts[len(insts)-1]
	d.testPush(t, restored)
	if moved, _ := filepath.Glob(filepath.Join(w.root, "var/lib/amsg/before-restore-*/amsg.db")); len(moved) != 1 {
		t.Errorf("the database before the restore was not kept aside: %v", moved)
	}
}

// behindNginx puts nginx in front of the service as the README says, with
// certbot's certificate for the host name the README's block names, and
// checks that amsg counts a client through it by its real address.
func (w *walk) behindNginx(t *testing.T, block string, inst instance) {
	t.Helper()
	nginx := requireTool(t, "nginx")
	m := regexp.MustCompile(`(?m)^host=(\S+)$`).FindStringSubmatch(block)
	if m == nil {
		t.Fatal("README's nginx walkthrough names no host")
	}
	host := m[1]
	certs := filepath.Join(w.root, "etc/letsencrypt/live", host)
	if err := os.MkdirAll(certs, 0o755); err != nil {
		t.Fatal(err)
	}
	writeCertificate(t, certs)
	if err := os.MkdirAll(filepath.Join(w.root, "etc/nginx/sites-enabled"), 0o755); err != nil {
		t.Fatal(err)
	}
	// A later WALK_ variable in the environment overrides an earlier one.
	w.env = append(w.env, "NGINX_REAL="+nginx)
	httpsPort := onFreePorts(t, func(httpPort, httpsPort int) (string, bool) {
		w.env = append(w.env, fmt.Sprintf("WALK_HTTP_PORT=%d", httpPort), fmt.Sprintf("WALK_HTTPS_PORT=%d", httpsPort))
		out, err := w.try(t, "nginx", block)
		return out, err == nil
	})

	req, _ := http.NewRequestWithContext(t.Context(), http.MethodGet, fmt.Sprintf("https://%s:%d/api/v1/vapid-public-key", host, httpsPort), nil)
	req.Header.Set("X-Forwarded-For", spoofedAddress)
	req.Header.Set("X-Client-Token", inst.env["AMSG_CLIENT_TOKEN"])
	client := clientFrom("127.0.0.2", httpsPort)
	client.Transport.(*http.Transport).TLSClientConfig.ServerName = host
	resp, err := client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("through nginx: %d", resp.StatusCode)
	}
	// The line is written once the answer has left: read the log until
	// it is there.
	var clients []string
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	deadline := time.After(10 * time.Second)
	for len(clients) == 0 {
		log, err := os.ReadFile(filepath.Join(w.dir, "instance-"+inst.n+".log"))
		if err != nil {
			t.Fatal(err)
		}
		for _, line := range strings.Split(string(log), "\n") {
			var l map[string]any
			if json.Unmarshal([]byte(line), &l) == nil && l["msg"] == "request" && l["route"] == "/api/v1/vapid-public-key" {
				clients = append(clients, fmt.Sprint(l["client"]))
			}
		}
		if len(clients) > 0 {
			break
		}
		select {
		case <-tick.C:
		case <-deadline:
			t.Fatal("amsg logged no request through nginx within 10 s")
		}
	}
	if !slices.Contains(clients, "127.0.0.2") || slices.Contains(clients, spoofedAddress) {
		t.Errorf("amsg counted the client through nginx as %v, want 127.0.0.2", clients)
	}
}
