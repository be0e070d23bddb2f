// Package store is amsg's persistence: the secrets, the subscriptions, the
// delivery log, tasks, outbox, client state and transcripts, in one SQLite
// file (the default) or one PostgreSQL database shared by several
// instances. The domain logic (sealing, validation, slicing, error mapping)
// and the SQL both dialects share live here, one file per feature; a driver
// (store/driver/sqlite, store/driver/postgres) opens the database, runs the
// transactions and holds the SQL the dialects disagree on.
//
// On SQLite, one goroutine owns the driver's one writer connection: it
// commits the writes waiting at the time together in one transaction (group
// commit, a savepoint per write so one failing write does not undo the
// others), runs the hot statements prepared once, and the WAL is
// checkpointed by a timer on a connection of its own rather than by the
// writer's commits. On PostgreSQL each write is a serializable transaction
// of its own on the pool (driver.Driver.Write).
//
// Times are INTEGER milliseconds UTC. Columns the standard keeps encrypted
// are sealed with the user's key in the standard's at-rest format; callers
// pass and receive plaintext.
package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"amsg/push"
	"amsg/store/driver"
	"amsg/store/driver/postgres"
	"amsg/store/driver/sqlite"
	"amsg/store/usercrypt"
)

// Defaults of Config.
const (
	DefaultDeliveryLogMaxAge  = 7 * 24 * time.Hour
	DefaultDeliveryLogMaxRows = 100_000
	DefaultMaxDevicesPerUser  = 10
	DefaultOutboxAckedMaxAge  = 7 * 24 * time.Hour
	DefaultOutboxMaxAge       = 28 * 24 * time.Hour
	// DefaultOutboxMaxRowsPerUser caps a user's outbox: at about 4.2 KiB a
	// row (README, "Disk"), about 4.2 MiB a user.
	DefaultOutboxMaxRowsPerUser = 1000
)

const (
	// busyTimeout bounds the SQLite checkpoints and Close's last statements.
	busyTimeout = sqlite.BusyTimeout
	// maxGroupWrites bounds the writes one transaction commits together;
	// groupWait how long a busy writer waits for more before committing,
	// and groupGap how long it waits for the next one.
	maxGroupWrites = 128
	groupWait      = time.Millisecond
	groupGap       = 150 * time.Microsecond
	// checkpointInterval is how often the WAL is checkpointed (PASSIVE:
	// never waiting for the writer or the readers).
	checkpointInterval = time.Second
	// maxWALBytes is the WAL size past which the writer waits for a
	// TRUNCATE checkpoint: readers that always hold a snapshot could
	// otherwise keep the WAL from ever starting over.
	maxWALBytes = 64 << 20
)

// errClosed is a write to a closed store.
var errClosed = fmt.Errorf("store: %w", push.ErrStoreClosed)

// Config configures Open. Zero values take the defaults.
type Config struct {
	// Path is the SQLite database file. Its directory must exist.
	Path string
	// DatabaseURL, when set, is a PostgreSQL database (postgres://…) used
	// instead of Path.
	DatabaseURL string
	// DatabaseDirectURL, when set, is the same PostgreSQL database without
	// the transaction pooler (PgBouncer) DatabaseURL goes through: the
	// start lock, leadership and LISTEN use it, and the pool prepares no
	// statements on the server.
	DatabaseDirectURL string

	// MasterKey is 64 hex characters. Empty: the stored key, else a new one
	// (stored). Given: it must pass the stored check value
	// (ErrMasterKeyMismatch), and the database keeps only that check value.
	// Given and different from the stored one: it replaces it, and every
	// value sealed under the old key becomes unreadable.
	MasterKey string
	// StoreMasterKey keeps a given MasterKey in the database, as a generated
	// one is, instead of only its check value: how amsg migrate carries a
	// data directory's generated key to a database the instances share.
	StoreMasterKey bool
	// VAPIDPublicKey (base64url of the 65-byte uncompressed P-256 point) and
	// VAPIDPrivateKey (base64url of the 32-byte scalar) are given together or
	// not at all. Empty: the stored pair, else one from GenerateVAPID. Given
	// and different from the stored pair: it replaces it, which orphans every
	// browser subscription.
	VAPIDPublicKey  string
	VAPIDPrivateKey string
	// GenerateVAPID makes a key pair when none is given or stored.
	GenerateVAPID func() (public, private string, err error)

	// DeliveryLogMaxAge and DeliveryLogMaxRows bound the delivery log;
	// PruneDeliveryLog enforces them.
	DeliveryLogMaxAge  time.Duration
	DeliveryLogMaxRows int
	// MaxDevicesPerUser bounds the subscriptions of one user: registering
	// one more evicts the least recently updated.
	MaxDevicesPerUser int
	// MaxStateValueBytes bounds one client-state value, in UTF-8 bytes
	// (default DefaultMaxStateValueBytes, 5 MiB).
	MaxStateValueBytes int
	// OutboxAckedMaxAge and OutboxMaxAge are the outbox's retention:
	// CleanupOutbox deletes rows acknowledged longer ago than the first and
	// any row created longer ago than the second (default 7 and 28 days).
	OutboxAckedMaxAge time.Duration
	OutboxMaxAge      time.Duration
	// OutboxMaxRowsPerUser caps each user's outbox: CleanupOutbox deletes
	// the rows over it, delivered or acknowledged ones first, oldest first
	// (default DefaultOutboxMaxRowsPerUser).
	OutboxMaxRowsPerUser int
	// MessageEventsMaxRows caps the message events: Prune deletes the
	// oldest beyond it (default DefaultMessageEventsMaxRows).
	MessageEventsMaxRows int

	Logger *slog.Logger     // nil: slog.Default()
	Now    func() time.Time // nil: time.Now
}

// Store is the database. It is safe for concurrent use.
type Store struct {
	db      driver.Driver
	dialect *driver.Dialect
	writer  *sql.DB // the driver's pool for writes (SQLite: one connection)
	reader  *sql.DB // the driver's pool for reads
	// checkpointer (one connection that checkpoints the WAL) and walPath
	// are SQLite's, nil and "" on PostgreSQL.
	checkpointer *sql.DB
	walPath      string
	disk         storageHealth // whether the disk refuses writes (SQLite)
	closed       atomic.Bool   // Close was called
	// stmts are the hot statements (preparedSQL), prepared on the writer;
	// readStmts the hot reads (preparedRead), prepared on the read pool.
	stmts     map[string]*sql.Stmt
	readStmts map[string]*sql.Stmt
	// writes hands a write to the committer (SQLite; nil on PostgreSQL);
	// stopWrites ends it and writesDone is closed once it has.
	writes     chan *writeOp
	stopWrites chan struct{}
	writesDone chan struct{}
	log        *slog.Logger
	now        func() time.Time
	secrets    Secrets
	// masterKeyStored: the database keeps the master key itself, not
	// only its check value.
	masterKeyStored bool
	keyring         *usercrypt.Keyring

	closeOnce sync.Once
	closeErr  error

	deliveryLogMaxAge  time.Duration
	deliveryLogMaxRows int
	maxDevicesPerUser  int
	maxStateValueBytes int
	outboxAckedMaxAge  time.Duration
	outboxMaxAge       time.Duration
	outboxMaxRows      int
	messageEventsCap   int // Config.MessageEventsMaxRows; see messageEventsMaxRows
}

// Open opens the PostgreSQL database at cfg.DatabaseURL, or else (creating
// it if needed) the SQLite file at cfg.Path, runs the migrations, prepares
// the hot statements and loads or generates the secrets.
func Open(ctx context.Context, cfg Config) (*Store, error) {
	where := cfg.Path
	switch {
	case cfg.DatabaseURL != "":
		if !postgres.IsURL(cfg.DatabaseURL) {
			return nil, errors.New("store: the database URL must start postgres:// or postgresql://")
		}
		where = "the PostgreSQL database"
	case cfg.Path == "":
		return nil, errors.New("store: no database path")
	}
	if err := validateGivenSecrets(cfg); err != nil {
		return nil, fmt.Errorf("store: %w", err)
	}
	s := &Store{
		log:                cfg.Logger,
		now:                cfg.Now,
		deliveryLogMaxAge:  cfg.DeliveryLogMaxAge,
		deliveryLogMaxRows: cfg.DeliveryLogMaxRows,
		maxDevicesPerUser:  cfg.MaxDevicesPerUser,
		maxStateValueBytes: cfg.MaxStateValueBytes,
		outboxAckedMaxAge:  cfg.OutboxAckedMaxAge,
		outboxMaxAge:       cfg.OutboxMaxAge,
		outboxMaxRows:      cfg.OutboxMaxRowsPerUser,
		messageEventsCap:   cfg.MessageEventsMaxRows,
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.now == nil {
		s.now = time.Now
	}
	if s.deliveryLogMaxAge <= 0 {
		s.deliveryLogMaxAge = DefaultDeliveryLogMaxAge
	}
	if s.deliveryLogMaxRows <= 0 {
		s.deliveryLogMaxRows = DefaultDeliveryLogMaxRows
	}
	if s.maxDevicesPerUser <= 0 {
		s.maxDevicesPerUser = DefaultMaxDevicesPerUser
	}
	if s.maxStateValueBytes <= 0 {
		s.maxStateValueBytes = DefaultMaxStateValueBytes
	}
	if s.outboxAckedMaxAge <= 0 {
		s.outboxAckedMaxAge = DefaultOutboxAckedMaxAge
	}
	if s.outboxMaxAge <= 0 {
		s.outboxMaxAge = DefaultOutboxMaxAge
	}
	if s.outboxMaxRows <= 0 {
		s.outboxMaxRows = DefaultOutboxMaxRowsPerUser
	}
	if err := s.open(ctx, cfg); err != nil {
		return nil, fmt.Errorf("store: open %s: %w", where, err)
	}
	// Instances that start at once on one database take turns: the first
	// migrates and stores the secrets, the others find them.
	err := s.db.Exclusive(ctx, "start", func() error {
		if err := s.migrate(ctx); err != nil {
			return fmt.Errorf("store: migrate %s: %w", where, err)
		}
		if err := s.prepareStatements(ctx); err != nil {
			return fmt.Errorf("store: prepare statements in %s: %w", where, err)
		}
		if err := s.loadSecrets(ctx, cfg); err != nil {
			return fmt.Errorf("store: secrets in %s: %w", where, err)
		}
		return nil
	})
	if err != nil {
		s.stopWriter()
		return nil, errors.Join(err, s.db.Close())
	}
	return s, nil
}

// open opens the driver cfg names; on SQLite it starts the committer.
func (s *Store) open(ctx context.Context, cfg Config) error {
	if cfg.DatabaseURL != "" {
		db, err := postgres.Open(ctx, cfg.DatabaseURL, cfg.DatabaseDirectURL)
		if err != nil {
			return err
		}
		s.db = db
	} else {
		db, err := sqlite.Open(ctx, cfg.Path)
		if err != nil {
			return err
		}
		s.db, s.checkpointer, s.walPath = db, db.Checkpointer(), db.Path()+"-wal"
	}
	s.dialect, s.writer, s.reader = s.db.Dialect(), s.db.Writer(), s.db.Reader()
	if s.checkpointer != nil {
		s.startWriter()
	}
	return nil
}

// Ping reports whether the database answers a query.
func (s *Store) Ping(ctx context.Context) error {
	var one int
	if err := s.reader.QueryRowContext(ctx, "SELECT 1").Scan(&one); err != nil {
		return fmt.Errorf("store: ping: %w", err)
	}
	return nil
}

// Close stops the writer, runs the dialect's closing statements (SQLite:
// PRAGMA optimize, a TRUNCATE checkpoint of the WAL) and closes the
// database. Writes after Close fail. Later calls return the first call's
// result.
func (s *Store) Close() error {
	s.closeOnce.Do(func() {
		s.closed.Store(true)
		s.stopWriter()
		ctx, cancel := context.WithTimeout(context.Background(), busyTimeout)
		defer cancel()
		var errs []error
		for _, statement := range s.dialect.Closing {
			if _, err := s.writer.ExecContext(ctx, statement); err != nil {
				errs = append(errs, fmt.Errorf("store: %s: %w", statement, err))
			}
		}
		s.closeErr = errors.Join(append(errs, s.db.Close())...)
	})
	return s.closeErr
}

// write runs fn in a transaction and returns fn's error or the commit's.
// On SQLite the transaction is on the writer connection, usually together
// with other writes waiting at the same time (see commitGroup); it begins
// IMMEDIATE, so it holds the write lock from its first statement and never
// fails to upgrade a read lock; fn must read every *sql.Rows to the end
// before issuing another statement (the writer has one connection), and
// must not call write. On PostgreSQL it is the driver's serializable
// transaction, which may run fn more than once (driver.Driver.Write).
func (s *Store) write(ctx context.Context, fn func(*sql.Tx) error) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if s.writes == nil {
		if s.closed.Load() {
			return errClosed
		}
		return s.db.Write(ctx, fn)
	}
	op := &writeOp{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case s.writes <- op:
	case <-s.writesDone:
		return errClosed
	}
	return <-op.done
}

// writeOp is one write waiting for the committer.
type writeOp struct {
	ctx  context.Context
	fn   func(*sql.Tx) error
	done chan error
}

func (s *Store) startWriter() {
	s.writes = make(chan *writeOp) // unbuffered: a write handed over is a write the committer runs
	s.stopWrites = make(chan struct{})
	s.writesDone = make(chan struct{})
	go s.commitLoop()
}

func (s *Store) stopWriter() {
	if s.writes == nil {
		return
	}
	close(s.stopWrites)
	<-s.writesDone
}

// commitLoop runs the writes: it takes one, gathers those already waiting
// (up to maxGroupWrites), and commits them in one transaction. The WAL is
// checkpointed in two steps: on a timer, a PASSIVE checkpoint on the
// checkpointer's own connection copies the WAL into the database while
// writes go on; once it is done, the loop checkpoints the few frames written
// meanwhile between two transactions, so the next write starts the WAL over
// instead of letting it grow.
func (s *Store) commitLoop() {
	defer close(s.writesDone)
	ticker := time.NewTicker(checkpointInterval)
	defer ticker.Stop()
	checkpoints, copied := make(chan struct{}, 1), make(chan struct{}, 1)
	checkpointerDone := make(chan struct{})
	go func() {
		defer close(checkpointerDone)
		for range checkpoints {
			s.checkpoint()
			copied <- struct{}{}
		}
	}()
	defer func() {
		close(checkpoints)
		<-checkpointerDone
	}()
	var lastCommit time.Time // a write soon after it means deliveries keep writing: wait a moment for more
	for {
		var group []*writeOp
		select {
		case <-s.stopWrites:
			return
		case <-ticker.C:
			select {
			case checkpoints <- struct{}{}:
			default: // one is under way
			}
			continue
		case <-copied:
			s.checkpoint()
			if info, err := os.Stat(s.walPath); err == nil && info.Size() > s.walCeiling() {
				s.truncateWAL()
			}
			continue
		case op := <-s.writes:
			group = append(group, op)
		}
		group = s.gather(group, time.Since(lastCommit) < groupWait)
		if s.disk.failing() != nil {
			s.truncateWAL() // a checkpoint may free what the writes need
		}
		s.commitGroup(group)
		lastCommit = time.Now()
	}
}

// truncateWAL checkpoints the whole WAL and empties it, waiting (up to the
// busy timeout) for the readers.
func (s *Store) truncateWAL() {
	ctx, cancel := context.WithTimeout(context.Background(), busyTimeout)
	defer cancel()
	if _, err := s.checkpointer.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
		s.log.Warn("store: WAL truncation failed", "err", err)
	}
}

// gather adds to group the writes waiting now and, when busy, those that
// keep arriving, each within groupGap of the last, for up to groupWait in
// all, up to maxGroupWrites. A lone write never waits: the wait pays off
// only when deliveries keep writing, and it ends as soon as they stop (all
// of them waiting on this commit or on push services), so the one core a
// small server has never idles in it.
func (s *Store) gather(group []*writeOp, busy bool) []*writeOp {
	if !busy {
		return s.gatherWaiting(group)
	}
	end := time.Now().Add(groupWait)
	gap := time.NewTimer(groupGap)
	defer gap.Stop()
	for len(group) < maxGroupWrites {
		select {
		case op := <-s.writes:
			group = append(group, op)
			gap.Reset(min(groupGap, time.Until(end)))
		case <-gap.C:
			return s.gatherWaiting(group)
		}
	}
	return group
}

// gatherWaiting adds to group the writes waiting now, up to maxGroupWrites.
func (s *Store) gatherWaiting(group []*writeOp) []*writeOp {
	for len(group) < maxGroupWrites {
		select {
		case op := <-s.writes:
			group = append(group, op)
		default:
			return group
		}
	}
	return group
}

// checkpoint runs a PASSIVE checkpoint: it copies what it can of the WAL
// into the database without waiting for the writer or the readers.
func (s *Store) checkpoint() {
	ctx, cancel := context.WithTimeout(context.Background(), busyTimeout)
	defer cancel()
	if _, err := s.checkpointer.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)"); err != nil {
		s.log.Warn("store: WAL checkpoint failed", "err", err)
	}
}

// commitGroup commits a group of writes in one transaction. Each write of a
// group of several runs inside a savepoint, so one that fails is rolled back
// alone; a failed commit fails them all. The transaction has no context of
// its own: a caller that gives up only loses its own write. A write whose
// failure ended the whole transaction (SQLite rolls a transaction back when
// a statement in it is interrupted, as a cancelled context does) fails
// alone, and the others run again in a new transaction.
func (s *Store) commitGroup(group []*writeOp) {
	live := make([]*writeOp, 0, len(group))
	for _, op := range group {
		if err := op.ctx.Err(); err != nil {
			op.done <- err
			continue
		}
		live = append(live, op)
	}
	for len(live) > 0 {
		live = s.tryGroup(live)
	}
}

// errTxAborted marks a write whose failure rolled back the whole
// transaction of its group.
var errTxAborted = errors.New("store: the transaction was rolled back")

// tryGroup runs group in one transaction and answers every write, unless
// one write aborted the transaction: that one is answered, and the others
// are returned to run again.
func (s *Store) tryGroup(group []*writeOp) (again []*writeOp) {
	tx, err := s.writer.BeginTx(context.Background(), nil)
	if err != nil {
		for _, op := range group {
			op.done <- err
		}
		return nil
	}
	errs := make([]error, len(group))
	if len(group) == 1 {
		if errs[0] = group[0].fn(tx); errs[0] != nil {
			if diskRefused(errs[0]) {
				s.disk.note(errs[0])
			}
			group[0].done <- errors.Join(errs[0], ignoreDone(tx.Rollback()))
			return nil
		}
	} else {
		for i, op := range group {
			errs[i] = s.inSavepoint(tx, op)
			if errors.Is(errs[i], errTxAborted) {
				_ = tx.Rollback() // the connection rolled it back already; this ends the Tx
				op.done <- errs[i]
				return slices.Delete(slices.Clone(group), i, i+1)
			}
		}
	}
	commitErr := tx.Commit()
	s.disk.note(commitOutcome(commitErr, errs...))
	for i, op := range group {
		if errs[i] == nil {
			errs[i] = commitErr
		}
		op.done <- errs[i]
	}
	return nil
}

// commitOutcome is what the disk made of a commit: its error, else the
// first write the disk refused, else nil.
func commitOutcome(commitErr error, errs ...error) error {
	if commitErr != nil {
		return commitErr
	}
	for _, err := range errs {
		if diskRefused(err) {
			return err
		}
	}
	return nil
}

// inSavepoint runs one write of a group, undoing it alone if it fails. When
// the savepoint is gone after a failure, the failure ended the whole
// transaction, and the error says so (errTxAborted).
func (s *Store) inSavepoint(tx *sql.Tx, op *writeOp) error {
	ctx := context.Background()
	if _, err := s.txExec(ctx, tx, savepointSQL); err != nil {
		return errors.Join(err, errTxAborted)
	}
	err := op.fn(tx)
	if err != nil {
		if _, rerr := s.txExec(ctx, tx, rollbackToSavepointSQL); rerr != nil {
			return errors.Join(err, rerr, errTxAborted)
		}
	}
	if _, rerr := s.txExec(ctx, tx, releaseSavepointSQL); rerr != nil {
		return errors.Join(err, rerr, errTxAborted)
	}
	return err
}

// The group commit's savepoint statements, prepared once on SQLite's writer
// (prepareStatements) since every write of a group runs two of them.
const (
	savepointSQL           = "SAVEPOINT write"
	rollbackToSavepointSQL = "ROLLBACK TO write"
	releaseSavepointSQL    = "RELEASE write"
)

// execCount runs query in a write of its own and returns the number of
// rows it changed. A failed statement is wrapped as "store: what: …", or
// returned as it is when what is "" (the caller wraps).
func (s *Store) execCount(ctx context.Context, what, query string, args ...any) (int, error) {
	var n int64
	err := s.write(ctx, func(tx *sql.Tx) error {
		res, err := s.txExec(ctx, tx, query, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil && what != "" {
		return 0, fmt.Errorf("store: %s: %w", what, err)
	}
	return int(n), err
}

// preparedQueries are the statements every delivery runs, registered by
// preparedSQL and prepared once on the writer at Open.
var preparedQueries []string

// preparedSQL registers query as a hot statement and returns it. Call it in
// a package-level var declaration.
func preparedSQL(query string) string {
	preparedQueries = append(preparedQueries, query)
	return query
}

// preparedReads are the reads every delivery runs, registered by
// preparedRead and prepared once on the read pool at Open (database/sql
// then prepares each on every pooled connection once).
var preparedReads []string

// preparedRead registers query as a hot read and returns it. Call it in a
// package-level var declaration.
func preparedRead(query string) string {
	preparedReads = append(preparedReads, query)
	return query
}

func (s *Store) prepareStatements(ctx context.Context) error {
	writes := append(slices.Clone(preparedQueries), s.claimDueSQL())
	if s.writes != nil {
		writes = append(writes, savepointSQL, rollbackToSavepointSQL, releaseSavepointSQL)
	}
	var err error
	if s.stmts, err = prepareAll(ctx, s.writer, writes); err != nil {
		return err
	}
	s.readStmts, err = prepareAll(ctx, s.reader, append(slices.Clone(preparedReads), s.nextClaimableSQL()))
	return err
}

func prepareAll(ctx context.Context, db *sql.DB, queries []string) (map[string]*sql.Stmt, error) {
	stmts := make(map[string]*sql.Stmt, len(queries))
	for _, q := range queries {
		st, err := db.PrepareContext(ctx, q)
		if err != nil {
			return nil, fmt.Errorf("%w: %s", err, q)
		}
		stmts[q] = st
	}
	return stmts, nil
}

// readRow is readQuery for one row.
func (s *Store) readRow(ctx context.Context, query string, args ...any) *sql.Row {
	if st := s.readStmts[query]; st != nil {
		return st.QueryRowContext(ctx, args...)
	}
	return s.reader.QueryRowContext(ctx, query, args...)
}

// readQuery runs query on the read pool, on its prepared statement when it
// has one.
func (s *Store) readQuery(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	if st := s.readStmts[query]; st != nil {
		return st.QueryContext(ctx, args...)
	}
	return s.reader.QueryContext(ctx, query, args...)
}

// txExec runs query in tx, on its prepared statement when it has one
// (Tx.StmtContext reuses a statement prepared on the transaction's
// connection rather than preparing it again).
func (s *Store) txExec(ctx context.Context, tx *sql.Tx, query string, args ...any) (sql.Result, error) {
	if st := s.stmts[query]; st != nil {
		return tx.StmtContext(ctx, st).ExecContext(ctx, args...)
	}
	return tx.ExecContext(ctx, query, args...)
}

// txQuery is txExec for a statement that returns rows.
func (s *Store) txQuery(ctx context.Context, tx *sql.Tx, query string, args ...any) (*sql.Rows, error) {
	if st := s.stmts[query]; st != nil {
		return tx.StmtContext(ctx, st).QueryContext(ctx, args...)
	}
	return tx.QueryContext(ctx, query, args...)
}

func ignoreDone(err error) error {
	if errors.Is(err, sql.ErrTxDone) {
		return nil
	}
	return err
}

// millis is how times are stored: INTEGER milliseconds UTC.
func millis(t time.Time) int64 { return t.UnixMilli() }

// fromMillis is the inverse of millis.
func fromMillis(ms int64) time.Time { return time.UnixMilli(ms).UTC() }

// userKey is the key that seals userID's columns.
func (s *Store) userKey(userID string) usercrypt.Key { return s.keyring.UserKey(userID) }
