package server

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

// heapProbe discards what it is given and samples the process's live heap
// (after a collection) every few megabytes.
type heapProbe struct {
	mu      sync.Mutex
	n, next int64
	peak    uint64
}

func (p *heapProbe) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n += int64(len(b))
	if p.n >= p.next {
		p.next = p.n + 8<<20
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

// GET /v1/sessions/{id}/export of a session of 96 messages of 1 MiB (the
// default message limit; 48 with -short) is streamed: the server's live
// heap grows by less than 32 MiB while one export sends 96 MiB, and by
// less than 4 × 32 MiB during four parallel ones (a buffered answer holds
// the whole body, per request). The body is the whole snapshot.
func TestExportStreamedInBoundedMemory(t *testing.T) {
	mcfg := testMemoryConfig()
	mcfg.Enabled = false // no fold over 96 MiB of text
	ts := stack{mcfg: &mcfg, noCatalog: true}.start(t)
	id := ts.create(keyAlice, nil)
	const size = 1<<20 - 1024 // within the message and body limits
	n := 96
	if testing.Short() {
		// Still well over the bound: an export held whole would exceed it.
		n = 48
	}
	for i := range n {
		content := fmt.Sprintf("%03d", i) + strings.Repeat("x", size-3)
		ts.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice,
			map[string]any{"messages": []map[string]string{{"role": "user", "content": content}}}, nil)
	}
	export := func(p io.Writer) error {
		req, err := http.NewRequest("GET", ts.url+"/v1/sessions/"+id+"/export", nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+keyAlice)
		resp, err := ts.client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != 200 {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		_, err = io.Copy(p, resp.Body)
		return err
	}
	base := liveHeap()
	p := &heapProbe{}
	if err := export(p); err != nil {
		t.Fatal(err)
	}
	if p.n < int64(n*size) {
		t.Fatalf("%d bytes received, want at least %d", p.n, n*size)
	}
	if grown := int64(p.peak) - int64(base); grown > 32<<20 {
		t.Fatalf("the live heap grew by %d MiB during an export of %d MiB, want < 32 MiB", grown>>20, p.n>>20)
	}

	p = &heapProbe{}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Go(func() { errs[i] = export(p) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if grown := int64(p.peak) - int64(base); grown > 4*32<<20 {
		t.Fatalf("the live heap grew by %d MiB during 4 parallel exports, want < 128 MiB", grown>>20)
	}

	// What was streamed is the whole, valid snapshot.
	var snap memory.Snapshot
	r := ts.must(200, "GET", "/v1/sessions/"+id+"/export", keyAlice, nil, nil)
	if err := json.Unmarshal(r.body, &snap); err != nil {
		t.Fatal(err)
	}
	if len(snap.Messages) != n || snap.Messages[n-1].Content[:3] != fmt.Sprintf("%03d", n-1) {
		t.Fatalf("%d messages exported", len(snap.Messages))
	}
}

// GET /v1/sessions/{id} keeps to the page's byte cap whatever the
// summary's size: a summary counts against the cap (the messages get what
// it leaves, at least one), and one larger than half the cap is left out
// with summary_omitted (the export has it). Summaries that large come
// from imports.
func TestSessionPageCapIncludesSummary(t *testing.T) {
	t.Parallel()
	const pageCap = 64 << 10
	for _, pg := range []bool{false, true} {
		t.Run(fmt.Sprintf("postgres=%v", pg), func(t *testing.T) {
			t.Parallel()
			ts := stack{pg: pg, cfg: Config{MaxHistoryBytes: pageCap}}.start(t)
			for _, c := range []struct {
				id      string
				facts   int
				omitted bool
			}{{"small-summary", 3, false}, {"mid-summary", 60, false}, {"huge-summary", 400, true}} {
				snap := importSnapshot(c.id)
				var msgs []map[string]any
				for i := range 40 {
					msgs = append(msgs, map[string]any{"seq": i + 1, "role": "user", "created_at": "2026-01-02T03:04:05Z",
						"content": fmt.Sprintf("%02d ", i) + strings.Repeat("m", 4<<10)})
				}
				var facts []map[string]any
				for i := range c.facts {
					facts = append(facts, map[string]any{"key": fmt.Sprintf("fact_%03d", i), "value": strings.Repeat("v", 400), "category": "ENTITY"})
				}
				snap["messages"] = msgs
				snap["summary"] = map[string]any{"narrative": "A long talk.", "facts": facts, "up_to_seq": 20}
				ts.must(201, "POST", "/v1/sessions/import", keyAlice, snap, nil)

				seen, after := 0, "0"
				for {
					r := ts.must(200, "GET", "/v1/sessions/"+c.id+"?limit=1000&after_seq="+after, keyAlice, nil, nil)
					if len(r.body) > pageCap+1<<10 {
						t.Fatalf("%s: a page of %d bytes, cap %d", c.id, len(r.body), pageCap)
					}
					var page struct {
						Messages []struct {
							Seq int64 `json:"seq"`
						} `json:"messages"`
						NextAfterSeq   *int64                 `json:"next_after_seq"`
						Summary        *struct{ Facts []any } `json:"summary"`
						SummaryOmitted bool                   `json:"summary_omitted"`
					}
					r.decode(t, &page)
					if page.SummaryOmitted != c.omitted || (page.Summary == nil) != c.omitted {
						t.Fatalf("%s: summary_omitted %v, summary %v", c.id, page.SummaryOmitted, page.Summary != nil)
					}
					if !c.omitted && len(page.Summary.Facts) != c.facts {
						t.Fatalf("%s: %d facts, want %d", c.id, len(page.Summary.Facts), c.facts)
					}
					if len(page.Messages) == 0 {
						t.Fatalf("%s: an empty page", c.id)
					}
					seen += len(page.Messages)
					if page.NextAfterSeq == nil {
						break
					}
					after = fmt.Sprint(*page.NextAfterSeq)
				}
				if seen != 40 {
					t.Fatalf("%s: %d messages over the pages, want 40", c.id, seen)
				}
				var full memory.Snapshot
				ts.must(200, "GET", "/v1/sessions/"+c.id+"/export", keyAlice, nil, &full)
				if full.Summary == nil || len(full.Summary.Facts) != c.facts {
					t.Fatalf("%s: the export lacks the summary", c.id)
				}
			}
		})
	}
}

// failingRange fails every read of messages after the first chunk.
type failingRange struct{ memory.MessageStore }

func (f failingRange) Range(ctx context.Context, id, user string, after, through int64, limit int) ([]store.Message, error) {
	if after > 0 {
		return nil, fmt.Errorf("range after %d: %w", after, store.ErrUnavailable)
	}
	return f.MessageStore.Range(ctx, id, user, after, through, limit)
}

// An export that fails after its first bytes are written cuts the
// response: the client gets an error (EOF), never a complete document
// missing messages. One failing before any byte is an ordinary
// error answer.
func TestExportFailureMidwayCutsTheResponse(t *testing.T) {
	t.Parallel()
	mcfg := testMemoryConfig()
	mcfg.Enabled = false
	mcfg.MaxMessageBytes = 8 << 20 // one message per chunk
	ts := stack{mcfg: &mcfg, store: failingRange{memory.NewInMemoryStore()}, noCatalog: true, quiet: true}.start(t)
	id := ts.create(keyAlice, nil)
	for i := range 3 {
		ts.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice, turn(fmt.Sprintf("Question %d? ", i)+strings.Repeat("q", 8<<10), "Answer."), nil)
	}
	// The cut comes before or after the headers leave the server's buffer:
	// either way the client gets an error, not a document.
	r, err := ts.try(context.Background(), "GET", "/v1/sessions/"+id+"/export", keyAlice, nil)
	if err == nil || !strings.Contains(err.Error(), "EOF") {
		t.Fatalf("an export failing mid-way: %s, %v; want the response cut (EOF)", r, err)
	}
	ts.must(404, "GET", "/v1/sessions/nope/export", keyAlice, nil, nil)
}
