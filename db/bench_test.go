package db_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db"
)

// tailWindow is how many messages the load benchmarks ask for, a typical
// verbatim window plus room for a fold.
const tailWindow = 20

// seedSession stores n alternating user/assistant messages in one session
// with a single INSERT … SELECT generate_series, bypassing Append for speed.
func seedSession(tb testing.TB, ctx context.Context, d *sqlx.DB, session string, n int) {
	tb.Helper()
	const (
		sessionSQL  = `INSERT INTO strata_sessions (session_id, user_id, message_count) VALUES ($1, 'bench', $2)`
		messagesSQL = `
			INSERT INTO strata_messages (session_id, role, content, user_id)
			SELECT $1, CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END,
			       'message ' || g || ': ' || repeat('lorem ipsum dolor sit amet ', 8), 'bench'
			  FROM generate_series(1, $2::int) AS g
			 ORDER BY g`
	)
	if _, err := d.ExecContext(ctx, sessionSQL, session, n); err != nil {
		tb.Fatal(err)
	}
	if _, err := d.ExecContext(ctx, messagesSQL, session, n); err != nil {
		tb.Fatal(err)
	}
	// The session's seq counter, as appends keep it: its greatest seq.
	if _, err := d.ExecContext(ctx, `UPDATE strata_sessions SET seq_counter = (SELECT max(seq) FROM strata_messages WHERE session_id = $1)
		WHERE session_id = $1`, session); err != nil {
		tb.Fatal(err)
	}
	if _, err := d.ExecContext(ctx, `ANALYZE strata_sessions, strata_messages`); err != nil {
		tb.Fatal(err)
	}
}

var historySizes = []int{100, 10_000, 100_000}

// BenchmarkTail measures a load (count + the newest 20 messages) of
// sessions holding 100, 10 000 and 100 000 messages, all in one table, and
// logs the largest/smallest ratio, which should stay near 1.
func BenchmarkTail(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	for _, n := range historySizes {
		seedSession(b, ctx, f.d, fmt.Sprint("bench-", n), n)
	}
	perOp := map[int]time.Duration{}
	for _, n := range historySizes {
		session := fmt.Sprint("bench-", n)
		b.Run(fmt.Sprintf("messages=%d", n), func(b *testing.B) {
			for b.Loop() {
				tail, err := f.messages.Tail(ctx, session, "bench", tailWindow)
				if err != nil || tail.Total != n || len(tail.Messages) != tailWindow {
					b.Fatalf("Tail = %d/%d, %v", tail.Total, len(tail.Messages), err)
				}
			}
			perOp[n] = b.Elapsed() / time.Duration(b.N)
		})
	}
	small, large := perOp[historySizes[0]], perOp[historySizes[len(historySizes)-1]]
	if small > 0 {
		b.Logf("Tail latency: 100 msgs %v, 10 000 msgs %v, 100 000 msgs %v; largest/smallest = %.2f",
			perOp[100], perOp[10_000], perOp[100_000], float64(large)/float64(small))
	}
}

// BenchmarkAppend measures saving one user+assistant pair (one transaction)
// to a session.
func BenchmarkAppend(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	q, a := user("what is the status of order #1234?"), assistant("It shipped yesterday and arrives on Friday.")
	for b.Loop() {
		if _, err := f.messages.Append(ctx, "bench", "alice", q, a); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkAppendLargeHistory is BenchmarkAppend on a session that already
// holds 100 000 messages: saving must not slow down with history.
func BenchmarkAppendLargeHistory(b *testing.B) {
	f := newFixture(b)
	ctx := context.Background()
	seedSession(b, ctx, f.d, "bench", 100_000)
	q, a := user("what is the status of order #1234?"), assistant("It shipped yesterday and arrives on Friday.")
	b.ResetTimer()
	for b.Loop() {
		if _, err := f.messages.Append(ctx, "bench", "bench", q, a); err != nil {
			b.Fatal(err)
		}
	}
}

// tailBuffers runs the Tail query under EXPLAIN (ANALYZE, BUFFERS) and
// returns how many 8 kB pages it touched: a measure of work that, unlike
// time, does not depend on the machine's load.
func tailBuffers(t *testing.T, ctx context.Context, d *sqlx.DB, session string) int {
	t.Helper()
	return queryBuffers(t, ctx, d, db.TailSQL(tailWindow), session)
}

// queryBuffers is tailBuffers for any query taking (session, user).
func queryBuffers(t *testing.T, ctx context.Context, d *sqlx.DB, query, session string) int {
	t.Helper()
	var raw []byte
	if err := d.GetContext(ctx, &raw, `EXPLAIN (ANALYZE, BUFFERS, FORMAT JSON) `+query, snapshotArgs(query, session)...); err != nil {
		t.Fatal(err)
	}
	var plans []struct {
		Plan struct {
			Hit  int `json:"Shared Hit Blocks"`
			Read int `json:"Shared Read Blocks"`
		}
	}
	if err := json.Unmarshal(raw, &plans); err != nil || len(plans) != 1 {
		t.Fatalf("EXPLAIN output %s: %v", raw, err)
	}
	return plans[0].Plan.Hit + plans[0].Plan.Read
}

// snapshotArgs are the arguments of a load statement for session as the
// user "bench": a Snapshot statement also takes the identity of the summary
// the caller holds ($3..$5), none here.
func snapshotArgs(query, session string) []any {
	if strings.Contains(query, "$5") {
		return []any{session, "bench", nil, nil, nil}
	}
	return []any{session, "bench"}
}

// TestTailReadsOnlyTheWindow pins that a load reads the window, never the
// history: the Tail query touches about as many pages for a 100 000-message
// session as for a 100-message one, and takes about as long.
func TestTailReadsOnlyTheWindow(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("seeding 100 000 messages skipped in -short mode")
	}
	f := newFixture(t)
	ctx := testCtx(t)
	seedSession(t, ctx, f.d, "small", 100)
	seedSession(t, ctx, f.d, "large", 100_000)

	small, large := tailBuffers(t, ctx, f.d, "small"), tailBuffers(t, ctx, f.d, "large")
	t.Logf("pages touched by Tail(%d): 100 messages %d, 100 000 messages %d", tailWindow, small, large)
	if large > small+10 {
		t.Errorf("Tail touched %d pages for 100 000 messages vs %d for 100: it reads history, not the window", large, small)
	}
	// The load's one statement (tail and summary) reads the window too,
	// plus a few pages of the session and summary rows.
	ss, sl := queryBuffers(t, ctx, f.d, db.SnapshotSQL(tailWindow), "small"), queryBuffers(t, ctx, f.d, db.SnapshotSQL(tailWindow), "large")
	t.Logf("pages touched by Snapshot(%d): 100 messages %d, 100 000 messages %d", tailWindow, ss, sl)
	if sl > ss+10 || ss > small+10 {
		t.Errorf("Snapshot touched %d pages for 100 000 messages, %d for 100 (Tail: %d): it reads history, not the window", sl, ss, small)
	}
	as, al := queryBuffers(t, ctx, f.d, db.SnapshotAfterSQL(tailWindow), "small"), queryBuffers(t, ctx, f.d, db.SnapshotAfterSQL(tailWindow), "large")
	t.Logf("pages touched by SnapshotAfterSummary(%d): 100 messages %d, 100 000 messages %d", tailWindow, as, al)
	if al > as+10 || as > small+10 {
		t.Errorf("SnapshotAfterSummary touched %d pages for 100 000 messages, %d for 100 (Tail: %d): it reads history, not the window", al, as, small)
	}

	// Wall time, interleaved so that machine load hits both alike.
	var ds, dl []time.Duration
	for range 60 {
		for _, c := range []struct {
			session string
			into    *[]time.Duration
		}{{"small", &ds}, {"large", &dl}} {
			start := time.Now()
			if _, err := f.messages.Tail(ctx, c.session, "bench", tailWindow); err != nil {
				t.Fatal(err)
			}
			*c.into = append(*c.into, time.Since(start))
		}
	}
	slices.Sort(ds)
	slices.Sort(dl)
	ms, ml := ds[len(ds)/2], dl[len(dl)/2]
	ratio := float64(ml) / float64(ms)
	t.Logf("median Tail latency: 100 messages %v, 100 000 messages %v, ratio %.2f", ms, ml, ratio)
	if ratio > 4 {
		t.Errorf("loading 100 000 messages' tail is %.1f× slower than 100's", ratio)
	}
}
