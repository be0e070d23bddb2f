package sqlite

import (
	"database/sql"
	"testing"
	"time"
)

func TestTheWriterYieldsOnlyOnceItsTurnIsOver(t *testing.T) {
	var now time.Duration
	yields := 0
	tr := &turns{clock: func() time.Duration { return now }, yieldCPU: func() { yields++ }}
	tr.start()
	now += writerTurn - time.Microsecond
	tr.yield()
	if yields != 0 {
		t.Fatalf("yielded %d times within a turn", yields)
	}
	now += time.Microsecond
	tr.yield()
	if yields != 1 {
		t.Fatalf("yielded %d times at the end of a turn, want 1", yields)
	}
	// The yield began a new turn.
	now += writerTurn / 2
	tr.yield()
	if yields != 1 {
		t.Fatalf("yielded %d times, want 1: a new turn began at the yield", yields)
	}
	// A batch begins a turn too: the writer was woken, others ran first.
	now += writerTurn
	tr.start()
	tr.yield()
	if yields != 1 {
		t.Fatalf("yielded %d times right after a batch began its turn", yields)
	}
}

// TestStatementsOfAWriteYieldTheCPUAfterATurn checks the wiring: the
// writer's statements (StatementContext) and its commit give the other
// goroutines the CPU once a turn is over.
func TestStatementsOfAWriteYieldTheCPUAfterATurn(t *testing.T) {
	db := openTable(t)
	var now time.Duration
	yields := 0
	db.turn.clock = func() time.Duration { return now }
	db.turn.yieldCPU = func() { yields++ }
	atStatement := 0
	err := db.Write(t.Context(), func(tx *sql.Tx) error {
		now += writerTurn
		_, err := tx.ExecContext(db.StatementContext(t.Context()), `SELECT 1`)
		atStatement = yields
		now += writerTurn // the commit comes after another turn
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if atStatement != 1 {
		t.Errorf("yielded %d times for a statement after a turn, want 1", atStatement)
	}
	if yields != 2 {
		t.Errorf("yielded %d times in all, want 2: the commit after another turn yields too", yields)
	}
}
