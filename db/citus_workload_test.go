package db_test

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// TestCitusWorkloadWithShardMove runs a realistic workload on a
// distributed schema through two replicas: 50 sessions × 40 turns (12 × 12
// under -short), chunked folding by the extractive summarizer, each turn
// saved on one replica and loaded on the other, then listings, an erasure
// and an export, delete and import of sessions. Half-way through, the
// shard holding the first session (and every shard colocated with it) is
// moved to the other worker (citus_move_shard_placement) while the
// workload runs. No operation may fail, every load after a save shows the
// saved answer last, and in the end every session's seqs increase, its
// summary's cursor is not ahead of its newest message, and it holds all
// of its turns.
//
// The move runs in both of Citus's modes: block_writes (writes to the
// moving shards wait until it is over) and force_logical (logical
// replication: writes go on during the copy).
func TestCitusWorkloadWithShardMove(t *testing.T) {
	for _, mode := range []string{"block_writes", "force_logical"} {
		t.Run(mode, func(t *testing.T) { testCitusWorkload(t, mode) })
	}
}

func testCitusWorkload(t *testing.T, mode string) {
	s := citusSchema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	sessions, turns := 50, 40
	if testing.Short() {
		sessions, turns = 12, 12
	}
	cfg := hierarchicalConfig(memory.PolicyChunked)
	svc := summary.NewExtractiveService()
	rs := [2]*replica{newReplica(t, s.URL, cfg, svc), newReplica(t, s.URL, cfg, svc)}
	admin := dbtest.Open(t, s.URL)

	var ops, failed atomic.Int64
	check := func(what string, err error) bool {
		ops.Add(1)
		if err != nil {
			if failed.Add(1) <= 10 {
				t.Errorf("%s: %v", what, err)
			}
			return false
		}
		return true
	}
	id := func(i int) string { return fmt.Sprintf("wl-%03d", i) }
	owner := func(i int) string { return fmt.Sprintf("user-%d", i%5) }

	// The move starts once half of the turns are saved (or as many as the
	// workers save before each waits for it), and every session's last
	// turn waits for its end: turns are saved during the move and after
	// it, on every session, the moved ones included.
	const workers = 8
	var saved atomic.Int64
	half := make(chan struct{})
	var halfOnce sync.Once
	moved := make(chan struct{})
	moveDone := make(chan error, 1)
	go func() {
		defer close(moved)
		select {
		case <-half:
		case <-ctx.Done():
			moveDone <- ctx.Err()
			return
		}
		moveDone <- moveShardOf(ctx, admin, id(0), mode)
	}()
	start := int64(min(sessions*turns/2, workers*(turns-1)))

	work := make(chan int)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				for k := range turns {
					if k == turns-1 {
						<-moved
					}
					w, r := rs[k%2], rs[(k+1)%2]
					q, a := fmt.Sprintf("question %d of %s", k, id(i)), fmt.Sprintf("answer %d of %s", k, id(i))
					if !check("SaveTurn", w.mgr.SaveTurn(ctx, id(i), owner(i), q, a)) {
						continue
					}
					if saved.Add(1) == start {
						halfOnce.Do(func() { close(half) })
					}
					h, err := r.mgr.LoadHistory(ctx, id(i), owner(i))
					if check("LoadHistory", err) && (len(h) == 0 || textOf(h[len(h)-1]) != a) {
						check("LoadHistory after SaveTurn", fmt.Errorf("%s turn %d: the load does not end with the saved answer %q", id(i), k, a))
					}
				}
			}
		}()
	}
	for i := range sessions {
		work <- i
	}
	close(work)
	wg.Wait()
	halfOnce.Do(func() { close(half) })
	if err := <-moveDone; err != nil {
		t.Fatalf("shard move: %v", err)
	}
	for _, r := range rs {
		check("Flush", r.mgr.Flush(ctx))
	}

	for i := range sessions {
		msgs, err := rs[i%2].mgr.Messages(ctx, id(i), owner(i), 0, 0)
		if !check("Messages", err) {
			continue
		}
		if len(msgs) != 2*turns {
			check("Messages", fmt.Errorf("%s holds %d messages, want %d", id(i), len(msgs), 2*turns))
		}
		for j := 1; j < len(msgs); j++ {
			if msgs[j].Seq <= msgs[j-1].Seq {
				check("seqs", fmt.Errorf("%s: seq %d after %d", id(i), msgs[j].Seq, msgs[j-1].Seq))
			}
		}
		sm, err := rs[(i+1)%2].mgr.Summary(ctx, id(i), owner(i))
		if check("Summary", err) && sm != nil && len(msgs) > 0 && sm.UpToSeq > msgs[len(msgs)-1].Seq {
			check("cursor", fmt.Errorf("%s: summary cursor %d ahead of the newest message %d", id(i), sm.UpToSeq, msgs[len(msgs)-1].Seq))
		}
	}
	for u := range 5 {
		_, total, err := rs[u%2].mgr.Sessions(ctx, fmt.Sprintf("user-%d", u), 100, 0)
		if check("Sessions", err) && total != sessions/5+boolInt(u < sessions%5) {
			check("Sessions", fmt.Errorf("user-%d lists %d sessions, want %d", u, total, sessions/5+boolInt(u < sessions%5)))
		}
	}
	for i := range min(sessions, 5) {
		msgs, err := rs[0].mgr.Messages(ctx, id(i), owner(i), 0, 1)
		if check("Messages", err) && len(msgs) == 1 {
			check("Forget", rs[1].mgr.Forget(ctx, id(i), owner(i), msgs[0].Seq))
		}
		snap, err := rs[0].mgr.Export(ctx, id(i), owner(i))
		if !check("Export", err) {
			continue
		}
		check("DeleteSession", rs[1].mgr.DeleteSession(ctx, id(i), owner(i)))
		check("Import", rs[0].mgr.Import(ctx, snap))
		back, err := rs[1].mgr.Messages(ctx, id(i), owner(i), 0, 0)
		if check("Messages after Import", err) && len(back) != len(snap.Messages) {
			check("Import", fmt.Errorf("%s: %d messages after import, want %d", id(i), len(back), len(snap.Messages)))
		}
	}
	t.Logf("%d sessions × %d turns, a shard move (%s) half-way: %d operations, %d failed", sessions, turns, mode, ops.Load(), failed.Load())
	if failed.Load() > 0 {
		t.Errorf("%d of %d operations failed", failed.Load(), ops.Load())
	}
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// moveShardOf moves the shard of strata_sessions holding session (with
// every shard colocated with it) to another worker, in the shard transfer
// mode given, and checks that it moved.
func moveShardOf(ctx context.Context, d *sqlx.DB, session, mode string) error {
	var shard int64
	var host string
	var port int
	if err := d.QueryRowContext(ctx, `
SELECT p.shardid, p.nodename, p.nodeport FROM pg_dist_shard_placement p
 WHERE p.shardid = get_shard_id_for_distribution_column('strata_sessions', $1::text)`, session).Scan(&shard, &host, &port); err != nil {
		return fmt.Errorf("placement of %s: %w", session, err)
	}
	var toHost string
	var toPort int
	if err := d.QueryRowContext(ctx, `
SELECT nodename, nodeport FROM pg_dist_node
 WHERE noderole = 'primary' AND isactive AND shouldhaveshards AND (nodename, nodeport) <> ($1::text, $2::int)
 ORDER BY nodeid LIMIT 1`, host, port).Scan(&toHost, &toPort); err != nil {
		return fmt.Errorf("another worker: %w", err)
	}
	if _, err := d.ExecContext(ctx, `SELECT citus_move_shard_placement($1, $2, $3, $4, $5, shard_transfer_mode => $6::citus.shard_transfer_mode)`,
		shard, host, port, toHost, toPort, mode); err != nil {
		return fmt.Errorf("move shard %d from %s:%d to %s:%d: %w", shard, host, port, toHost, toPort, err)
	}
	var nowPort int
	if err := d.QueryRowContext(ctx, `SELECT nodeport FROM pg_dist_shard_placement WHERE shardid = $1`, shard).Scan(&nowPort); err != nil {
		return err
	}
	if nowPort != toPort {
		return fmt.Errorf("shard %d is on port %d after its move to %d", shard, nowPort, toPort)
	}
	return nil
}
