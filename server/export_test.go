package server

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"

	"github.com/strata-go/strata/memory"
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
// default message limit) is streamed: the server's live heap grows by
// less than 32 MiB while one export sends 96 MiB, and by less than 4 ×
// 32 MiB during four parallel ones (a buffered answer holds the whole
// body, per request). The body is the whole snapshot.
func TestExportStreamedInBoundedMemory(t *testing.T) {
	mcfg := testMemoryConfig()
	mcfg.Enabled = false // no fold over 96 MiB of text
	ts := stack{mcfg: &mcfg, noCatalog: true}.start(t)
	id := ts.create(keyAlice, nil)
	const n, size = 96, 1<<20 - 1024 // within the message and body limits
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
	if p.n < n*size {
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
	if len(snap.Messages) != n || snap.Messages[n-1].Content[:3] != "095" {
		t.Fatalf("%d messages exported", len(snap.Messages))
	}
}
