//go:build unix

package store

import (
	"cmp"
	"context"
	"database/sql"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/webpush"
)

// BenchmarkSQLiteWALPagesPerPush counts the database pages a delivered
// push writes on SQLite (issue 24): the WAL frames of a trickle of
// one-device fixed pushes, claimed a few at a time as the scheduler does
// at 1 000 tasks a second and completed together in one write (a batch of
// completions: one commit, whatever the machine's load), after a history
// of earlier pushes so the indexes are as deep and as spread over users
// as a running server's. A reader holds a snapshot from before the trickle, so no
// checkpoint starts the WAL over and every frame stays to be read; each
// frame's page is named by dbstat right after the commit that wrote it (a
// page freed and taken by another b-tree within one round is named for the
// second). It also reports the process's CPU time a push over the rounds'
// writes alone, and then the pages a task scheduled writes, one a commit
// (pages/scheduled). AMSG_BENCH_SCHEMA_SQL, when set, runs on the database
// before the trickle, so that a variant of the schema (an index added back,
// say) is measured by the same binary in turn with the schema as it is;
// AMSG_BENCH_BACKLOG, when set, is the number of tasks due later (5 000
// unless set; the trickle scenario of cmd/deliverybench schedules 20 000).
// Run it once:
//
//	go test ./store -run '^$' -bench SQLiteWALPagesPerPush -benchtime 1x
func BenchmarkSQLiteWALPagesPerPush(b *testing.B) {
	const (
		users     = 100
		history   = 100 * users // pushes delivered before the trickle
		trickle   = 400         // pushes measured
		perCommit = 5           // pushes a trickle's commit carries
	)
	pending := 5000 // tasks due after the trickle, as a running trickle has
	if n, err := strconv.Atoi(os.Getenv("AMSG_BENCH_BACKLOG")); err == nil {
		pending = n
	}
	clk := &benchClock{now: time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)}
	path := filepath.Join(b.TempDir(), "amsg.db")
	ctx := context.Background()
	st, err := Open(ctx, Config{Path: path, MasterKey: strings.Repeat("a", 64), GenerateVAPID: webpush.GenerateVAPIDKeys, Now: clk.Now})
	if err != nil {
		b.Fatal(err)
	}
	defer st.Close()
	for u := range users {
		sub := fmt.Sprintf(`{"endpoint": "https://push.example/%d", "keys": {"p256dh": "BNcRdreALRFXTkOOUHK1EtK2wtaz5Ry4YfYCA_0QTpQtUbVlUls0VJXg7A8u-Ts1XbjhazAkj7I99e8QcYP7DkM", "auth": "tBHItJI5svbpez7KI4CCXg"}}`, u)
		if _, err := st.PutSubscription(ctx, benchUser(u), []byte(sub), time.Time{}); err != nil {
			b.Fatal(err)
		}
	}
	for n := 0; n < history; n += 100 {
		deliverTrickleRound(b, st, clk, n, 100, users)
	}
	for i := range pending {
		insertBenchTask(b, st, clk.now.Add(time.Hour), history+trickle+i, users)
	}
	raw, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(5000)")
	if err != nil {
		b.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		b.Fatal(err)
	}
	if variant := os.Getenv("AMSG_BENCH_SCHEMA_SQL"); variant != "" {
		if _, err := raw.Exec(variant); err != nil {
			b.Fatal(err)
		}
	}
	for i := range trickle { // a WAL that holds frames, for the pin to read
		insertBenchTask(b, st, clk.now, history+i, users)
	}
	pin, err := raw.Conn(ctx)
	if err != nil {
		b.Fatal(err)
	}
	defer pin.Close()
	if _, err := pin.ExecContext(ctx, `BEGIN`); err != nil {
		b.Fatal(err)
	}
	var outboxRows int // a read, so that the pin holds its snapshot
	if err := pin.QueryRowContext(ctx, `SELECT count(*) FROM message_outbox`).Scan(&outboxRows); err != nil {
		b.Fatal(err)
	}
	wal := openWAL(b, path+"-wal")
	wal.next() // the frames written before the pin
	perTree := map[string]int{}
	frames, commits := 0, 0
	var cpu time.Duration
	b.ResetTimer()
	for n := 0; n < trickle; n += perCommit {
		before := processCPU(b)
		deliverTrickleRound(b, st, clk, history+n, perCommit, users)
		cpu += processCPU(b) - before
		names := pageNames(b, raw)
		got := wal.next()
		for _, page := range got.pages {
			perTree[cmp.Or(names[page], "(free)")]++
		}
		frames += len(got.pages)
		commits += got.commits
	}
	b.StopTimer()
	// Then as many tasks scheduled, one a commit as the API writes them,
	// due later among the others.
	scheduledPerTree, scheduledFrames := map[string]int{}, 0
	for n := 0; n < trickle; n += perCommit {
		for i := n; i < n+perCommit; i++ {
			insertBenchTask(b, st, clk.now.Add(time.Hour), history+trickle+pending+i, users)
		}
		names := pageNames(b, raw)
		for _, page := range wal.next().pages {
			scheduledPerTree[cmp.Or(names[page], "(free)")]++
			scheduledFrames++
		}
	}
	if _, err := pin.ExecContext(ctx, `ROLLBACK`); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(frames)/trickle, "pages/push")
	b.ReportMetric(float64(commits)/trickle, "commits/push")
	b.ReportMetric(float64(cpu.Microseconds())/trickle, "cpu-µs/push")
	b.ReportMetric(float64(scheduledFrames)/trickle, "pages/scheduled")
	for _, name := range slices.Sorted(maps.Keys(perTree)) {
		fmt.Fprintf(os.Stderr, "%-40s %6.2f pages/push %5.1f %%\n", name, float64(perTree[name])/trickle, 100*float64(perTree[name])/float64(frames))
	}
	for _, name := range slices.Sorted(maps.Keys(scheduledPerTree)) {
		fmt.Fprintf(os.Stderr, "scheduling: %-28s %6.2f pages/task\n", name, float64(scheduledPerTree[name])/trickle)
	}
}

func benchUser(u int) string { return fmt.Sprintf("user-%03d", u) }

func benchTaskUUID(i int) string { return fmt.Sprintf("00000000-0000-4000-8000-%012d", i) }

// benchClock is the benchmark's time, moved on by each round.
type benchClock struct{ now time.Time }

func (c *benchClock) Now() time.Time { return c.now }

// insertBenchTask inserts the one-off fixed task i, due at due, of user i mod users.
func insertBenchTask(b *testing.B, st *Store, due time.Time, i, users int) {
	insertBenchTaskWithUUID(b, st, due, i, users, benchTaskUUID(i))
}

// insertBenchTaskWithUUID is insertBenchTask with the task's UUID given.
func insertBenchTaskWithUUID(b *testing.B, st *Store, due time.Time, i, users int, uuid string) {
	if _, _, err := st.InsertTask(context.Background(), NewTask{
		UserID: benchUser(i % users), UUID: uuid, MessageType: push.TypeFixed, NextSendAt: due,
		Payload: []byte(`{"contactName":"Rei","userMessage":"time for a glass of water"}`),
	}); err != nil {
		b.Fatal(err)
	}
}

// openTrickleBench opens a SQLite store on a benchmark clock holding what a
// running trickle's database holds: history pushes of users delivered
// before, and pending tasks due in an hour, numbered from firstPending.
func openTrickleBench(b *testing.B, users, history, pending, firstPending int) (*Store, *benchClock) {
	clk := &benchClock{now: time.Date(2026, 3, 1, 8, 0, 0, 0, time.UTC)}
	st, err := Open(context.Background(), Config{Path: filepath.Join(b.TempDir(), "amsg.db"), MasterKey: strings.Repeat("a", 64),
		GenerateVAPID: webpush.GenerateVAPIDKeys, Now: clk.Now})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { st.Close() })
	for n := 0; n < history; n += 100 {
		deliverTrickleRound(b, st, clk, n, 100, users)
	}
	for i := range pending {
		insertBenchTask(b, st, clk.now.Add(time.Hour), firstPending+i, users)
	}
	return st, clk
}

// deliverTrickleRound delivers tasks first to first+n-1 as the scheduler
// does: inserted when not yet, claimed together, and completed in one
// batch with what the courier leaves of a push one device accepted (the
// outbox row, delivered, and the attempt).
func deliverTrickleRound(b *testing.B, st *Store, clk *benchClock, first, n, users int) {
	writeCompletions(b, st, trickleCompletions(b, st, clk, first, n, users))
}

// writeCompletions commits cs in one write, one batch of the completions'
// kind, as the writer commits what lingered together.
func writeCompletions(b *testing.B, st *Store, cs []completion) {
	ctx := context.Background()
	err := st.write(ctx, func(tx *sql.Tx) error {
		outcomes, err := st.completeMany(ctx, tx, cs)
		return errors.Join(append(outcomes, err)...)
	})
	if err != nil {
		b.Fatal(err)
	}
}

// trickleCompletions claims tasks first to first+n-1 (inserted when not
// yet) and returns their completions, as deliverTrickleRound writes them.
func trickleCompletions(b *testing.B, st *Store, clk *benchClock, first, n, users int) []completion {
	ctx := context.Background()
	if _, err := st.Task(ctx, benchUser(first%users), benchTaskUUID(first)); err != nil {
		for i := first; i < first+n; i++ {
			insertBenchTask(b, st, clk.now, i, users)
		}
	}
	clk.now = clk.now.Add(time.Millisecond)
	tasks, err := st.ClaimDueTasks(ctx, clk.now, 90*time.Second, n)
	if err != nil || len(tasks) != n {
		b.Fatalf("claim: %d tasks, %v", len(tasks), err)
	}
	return benchCompletions(b, st, clk, tasks)
}

// processCPU is the CPU time the process has used, user and system.
func processCPU(b *testing.B) time.Duration {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		b.Fatal(err)
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano())
}

// pageNames maps each page of the database, as of now, to its b-tree.
func pageNames(b *testing.B, db *sql.DB) map[uint32]string {
	rows, err := db.Query(`SELECT pageno, name FROM dbstat`)
	if err != nil {
		b.Fatal(err)
	}
	defer rows.Close()
	names := map[uint32]string{}
	for rows.Next() {
		var page uint32
		var name string
		if err := rows.Scan(&page, &name); err != nil {
			b.Fatal(err)
		}
		names[page] = name
	}
	if err := rows.Err(); err != nil {
		b.Fatal(err)
	}
	return names
}

// walReader reads a WAL file's frames as they are appended.
type walReader struct {
	b        *testing.B
	f        *os.File
	pageSize int64
	salt     uint64
	offset   int64
}

// walFrames are the frames one next read: their pages, and how many of
// them ended a transaction.
type walFrames struct {
	pages   []uint32
	commits int
}

func openWAL(b *testing.B, path string) *walReader {
	f, err := os.Open(path)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { f.Close() })
	var header [32]byte
	if _, err := io.ReadFull(f, header[:]); err != nil {
		b.Fatal(err)
	}
	return &walReader{b: b, f: f, pageSize: int64(binary.BigEndian.Uint32(header[8:])),
		salt: binary.BigEndian.Uint64(header[16:]), offset: 32}
}

// next reads the frames appended since the last call.
func (w *walReader) next() walFrames {
	var got walFrames
	var header [24]byte
	if _, err := w.f.ReadAt(header[:], 16); err != nil || binary.BigEndian.Uint64(header[:]) != w.salt {
		w.b.Fatalf("the WAL started over during the measurement (%v)", err)
	}
	for {
		if _, err := w.f.ReadAt(header[:], w.offset); err != nil {
			return got
		}
		if binary.BigEndian.Uint64(header[8:]) != w.salt {
			return got // a frame of the WAL's previous generation
		}
		got.pages = append(got.pages, binary.BigEndian.Uint32(header[0:]))
		if binary.BigEndian.Uint32(header[4:]) != 0 {
			got.commits++
		}
		w.offset += 24 + w.pageSize
	}
}
