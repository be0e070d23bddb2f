//go:build unix

package store

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"amsg/push"
	"amsg/push/webpush"
)

// BenchmarkSQLiteClaimPastLeases reads what the scheduler's loop reads for
// a claim of 16 due tasks and the next claimable instant after it, with
// `ahead` tasks leased before the first claimable one in tasks_due's order
// (those in delivery and claimed ahead, whose leases the claim and the
// lookup read from their rows): what keeping the lease out of the index
// costs a claim, without the claim's commit, which would drown it. The
// process's CPU time an op moves less with a busy machine than ns/op.
//
//	go test ./store -run '^$' -bench SQLiteClaimPastLeases
func BenchmarkSQLiteClaimPastLeases(b *testing.B) {
	for _, ahead := range []int{0, 64, 256} {
		b.Run(fmt.Sprintf("ahead=%d", ahead), func(b *testing.B) {
			now := time.Date(2026, 6, 1, 9, 0, 0, 0, time.UTC)
			ctx := context.Background()
			st, err := Open(ctx, Config{Path: filepath.Join(b.TempDir(), "amsg.db"), MasterKey: strings.Repeat("a", 64),
				GenerateVAPID: webpush.GenerateVAPIDKeys, Now: func() time.Time { return now }})
			if err != nil {
				b.Fatal(err)
			}
			defer st.Close()
			for i := range 5000 {
				due := now.Add(time.Hour)
				if i < ahead+16 {
					due = now.Add(-time.Second)
				}
				if _, _, err := st.InsertTask(ctx, NewTask{UserID: fmt.Sprint("user", i%100), UUID: fmt.Sprint(i),
					MessageType: push.TypeFixed, NextSendAt: due, Payload: []byte(`{"contactName":"Rei","userMessage":"hi"}`)}); err != nil {
					b.Fatal(err)
				}
			}
			if leased, err := st.ClaimDueTasks(ctx, now, time.Hour, ahead); err != nil || len(leased) != ahead {
				b.Fatalf("leases ahead: %d, %v", len(leased), err)
			}
			claimable := `SELECT id FROM tasks WHERE status = 'pending' AND ` + st.dialect.ClaimableAt + ` <= +?1
				AND coalesce(lease_until, 0) <= +?1 AND user_id NOT IN (SELECT value FROM json_each('[]'))
				ORDER BY ` + st.dialect.ClaimableAt + `, id LIMIT 16`
			before := processCPU(b)
			for b.Loop() {
				rows, err := st.reader.QueryContext(ctx, claimable, millis(now))
				if err != nil {
					b.Fatal(err)
				}
				n := 0
				for rows.Next() {
					n++
				}
				if err := rows.Close(); err != nil || n != 16 {
					b.Fatalf("claimable: %d tasks, %v", n, err)
				}
				if _, _, err := st.NextClaimableAt(ctx); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64((processCPU(b)-before).Microseconds())/float64(b.N), "cpu-µs/op")
		})
	}
}
