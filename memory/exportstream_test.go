package memory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// WriteExport streams the document Export's snapshot encodes to: the same
// messages (tool calls, metadata) and summary, byte for byte but for the
// export time; an empty session too. A missing session and another
// user's give their errors with nothing written.
func TestWriteExportIsExport(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, hierConfig())
	f.svc.set(func(_ context.Context, _ int64, req summary.Request) (summary.Result, error) {
		res := countingResult(req)
		res.Facts = append(res.Facts, summary.Fact{Key: "city", Value: "Paris <&>", Category: summary.Entity})
		return res, nil
	})
	if err := f.mgr.SaveMessages(ctx, "s", "alice", toolTurn()...); err != nil {
		t.Fatal(err)
	}
	for i := range 30 {
		if err := f.mgr.SaveTurn(ctx, "s", "alice", fmt.Sprintf("question %d <b>", i), "answer"); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := f.mgr.Append(ctx, "s", "alice", false, store.Message{Role: store.RoleAssistant, Content: "tagged",
		Metadata: map[string]string{store.MetadataModelVariant: "small"}}); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.Create(ctx, "empty", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	for _, id := range []string{"s", "empty"} {
		snap, err := f.mgr.Export(ctx, id, "alice")
		if err != nil {
			t.Fatal(err)
		}
		if id == "s" && (snap.Summary == nil || len(snap.Summary.Facts) == 0) {
			t.Fatalf("no summary to export: %+v", snap.Summary)
		}
		var out bytes.Buffer
		if err := f.mgr.WriteExport(ctx, &out, id, "alice"); err != nil {
			t.Fatal(err)
		}
		var got memory.Snapshot
		if err := json.Unmarshal(out.Bytes(), &got); err != nil {
			t.Fatalf("%s: streamed export is not JSON: %v\n%s", id, err, out.Bytes())
		}
		snap.ExportedAt = got.ExportedAt
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(snap); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), want.Bytes()) {
			t.Fatalf("%s: streamed export differs from Export's:\n got %s\nwant %s", id, out.Bytes(), want.Bytes())
		}
	}
	for _, c := range []struct {
		id, user string
		want     error
	}{{"nope", "alice", store.ErrNotFound}, {"s", "bob", memory.ErrNotOwner}} {
		var out bytes.Buffer
		err := f.mgr.WriteExport(ctx, &out, c.id, c.user)
		if !errors.Is(err, c.want) || out.Len() != 0 {
			t.Errorf("%s as %s: %v with %d bytes written, want %v and nothing", c.id, c.user, err, out.Len(), c.want)
		}
	}
}

// heapProbe is a writer that discards what it is given and samples the
// live heap (after a collection) every few megabytes.
type heapProbe struct {
	n, next int64
	peak    uint64
}

func (p *heapProbe) Write(b []byte) (int, error) {
	p.n += int64(len(b))
	if p.n >= p.next {
		p.next = p.n + 4<<20
		p.peak = max(p.peak, liveHeap())
	}
	return len(b), nil
}

func liveHeap() uint64 {
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// A streamed export of 96 messages of 1 MiB (the default message limit)
// holds a bounded amount of memory: the live heap grows by less than
// 32 MiB while it writes 96 MiB (an encoder given Export's snapshot holds
// the whole document).
func TestWriteExportMemoryBounded(t *testing.T) {
	ctx := context.Background()
	cfg := memory.DefaultConfig()
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer mgr.Close()
	const n, size = 96, 1 << 20
	for i := range n {
		content := fmt.Sprintf("%03d", i) + strings.Repeat("x", size-3)
		if _, err := mgr.Append(ctx, "big", "alice", true, store.Message{Role: store.RoleUser, Content: content}); err != nil {
			t.Fatal(err)
		}
	}
	base := liveHeap()
	p := &heapProbe{}
	if err := mgr.WriteExport(ctx, p, "big", "alice"); err != nil {
		t.Fatal(err)
	}
	if p.n < n*size {
		t.Fatalf("%d bytes written, want at least %d", p.n, n*size)
	}
	if grown := int64(p.peak) - int64(base); grown > 32<<20 {
		t.Fatalf("the live heap grew by %d MiB during a streamed export of %d MiB, want < 32 MiB", grown>>20, p.n>>20)
	}
}

// Streamed exports racing saves that fold and erasures: every document is
// a whole snapshot whose summary's cursor covers no message after its
// last one but for erased ones. Run with -race.
func TestWriteExportRacingFoldsAndErasures(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, hierConfig())
	f.svc.set(func(_ context.Context, _ int64, req summary.Request) (summary.Result, error) {
		return countingResult(req), nil
	})
	for i := range 12 {
		if err := f.mgr.SaveTurn(ctx, "s", "alice", fmt.Sprintf("q%d", i), "a"); err != nil {
			t.Fatal(err)
		}
	}
	erased := map[int64]bool{}
	var mu sync.Mutex
	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := range 60 {
			if err := f.mgr.SaveTurn(ctx, "s", "alice", fmt.Sprintf("q%d", 12+i), "a"); err != nil {
				t.Error(err)
				return
			}
			if i%7 == 3 {
				msgs, err := f.mgr.Messages(ctx, "s", "alice", 0, 1)
				if err != nil || len(msgs) == 0 {
					t.Error(err)
					return
				}
				mu.Lock()
				erased[msgs[0].Seq] = true
				mu.Unlock()
				if err := f.mgr.Forget(ctx, "s", "alice", msgs[0].Seq); err != nil {
					t.Error(err)
					return
				}
			}
		}
	}()
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		var out bytes.Buffer
		if err := f.mgr.WriteExport(ctx, &out, "s", "alice"); err != nil {
			t.Fatal(err)
		}
		var snap memory.Snapshot
		if err := json.Unmarshal(out.Bytes(), &snap); err != nil {
			t.Fatalf("not a whole snapshot: %v", err)
		}
		have := map[int64]bool{}
		var last int64
		for _, m := range snap.Messages {
			have[m.Seq], last = true, m.Seq
		}
		if snap.Summary == nil {
			continue
		}
		mu.Lock()
		for seq := int64(1); seq <= snap.Summary.UpToSeq; seq++ {
			if !have[seq] && !erased[seq] && seq > last {
				t.Errorf("the summary's cursor %d covers message %d, which the snapshot (last %d) lacks", snap.Summary.UpToSeq, seq, last)
			}
		}
		mu.Unlock()
	}
}
