package server

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/strata-go/strata/memory/memstore"
)

// One GET of a session of 24 × 900 KiB messages answers at most 16 MiB:
// history pages are cut by bytes as well as by count, and next_after_seq
// gets the rest, every message exactly once.
func TestHistoryPageBoundedInBytes(t *testing.T) {
	for _, pg := range []bool{false, true} {
		t.Run(map[bool]string{false: "memory", true: "postgres"}[pg], func(t *testing.T) {
			mcfg := testMemoryConfig()
			mcfg.Enabled = false // no fold over 21 MiB of text
			ts := stack{mcfg: &mcfg, pg: pg}.start(t)
			id := ts.create(keyAlice, nil)
			const n, size = 24, 900 << 10
			for i := range n {
				content := fmt.Sprintf("%02d", i) + strings.Repeat("x", size-2)
				ts.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice,
					map[string]any{"messages": []map[string]string{{"role": "user", "content": content}}}, nil)
			}
			var got []string
			after, pages := "0", 0
			for {
				r := ts.must(200, "GET", "/v1/sessions/"+id+"?limit=1000&after_seq="+after, keyAlice, nil, nil)
				if len(r.body) > 16<<20 {
					t.Fatalf("page %d: %d bytes, want at most 16 MiB", pages, len(r.body))
				}
				var page struct {
					MessageCount int `json:"message_count"`
					Messages     []struct {
						Seq     int64  `json:"seq"`
						Content string `json:"content"`
					} `json:"messages"`
					NextAfterSeq *int64 `json:"next_after_seq"`
				}
				r.decode(t, &page)
				pages++
				if page.MessageCount != n || len(page.Messages) == 0 {
					t.Fatalf("page %d: message_count %d, %d messages", pages, page.MessageCount, len(page.Messages))
				}
				for _, m := range page.Messages {
					got = append(got, m.Content[:2])
				}
				if page.NextAfterSeq == nil {
					break
				}
				if *page.NextAfterSeq != page.Messages[len(page.Messages)-1].Seq {
					t.Fatalf("next_after_seq %d is not the page's last seq %d", *page.NextAfterSeq, page.Messages[len(page.Messages)-1].Seq)
				}
				after = fmt.Sprint(*page.NextAfterSeq)
			}
			var want []string
			for i := range n {
				want = append(want, fmt.Sprintf("%02d", i))
			}
			if strings.Join(got, ",") != strings.Join(want, ",") || pages < 3 {
				t.Fatalf("%d pages gave %v, want %v", pages, got, want)
			}
		})
	}
}

// The byte cap is a server setting; a page holds at least one message even
// when that message alone is over it.
func TestHistoryPageBytesSetting(t *testing.T) {
	mcfg := testMemoryConfig()
	mcfg.Enabled = false
	ts := stack{mcfg: &mcfg, cfg: Config{MaxHistoryBytes: 4096}}.start(t)
	id := ts.create(keyAlice, nil)
	for i := range 3 {
		ts.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice,
			map[string]any{"messages": []map[string]string{{"role": "user", "content": fmt.Sprint(i) + strings.Repeat("y", 3000)}}}, nil)
	}
	ts.must(200, "POST", "/v1/sessions/"+id+"/messages", keyAlice,
		map[string]any{"messages": []map[string]string{{"role": "user", "content": strings.Repeat("z", 9000)}}}, nil)
	var sizes []int
	after := "0"
	for {
		var page struct {
			Messages []struct {
				Content string `json:"content"`
			} `json:"messages"`
			NextAfterSeq *int64 `json:"next_after_seq"`
		}
		ts.must(200, "GET", "/v1/sessions/"+id+"?after_seq="+after, keyAlice, nil, &page)
		sizes = append(sizes, len(page.Messages))
		if page.NextAfterSeq == nil {
			break
		}
		after = fmt.Sprint(*page.NextAfterSeq)
	}
	if fmt.Sprint(sizes) != "[1 1 1 1]" {
		t.Fatalf("page sizes %v, want one message per page", sizes)
	}
	if err := (Config{APIKeys: testKeys(), MaxHistoryBytes: 100}).withDefaults().validate(); err == nil {
		t.Fatal("a cap below 1024 bytes was accepted")
	}
}

// A full in-memory store refuses a user who holds no session with 507 and
// a JSON error (documented in openapi.json), and evicts no other user's
// session.
func TestCreateInFullStoreIs507(t *testing.T) {
	ts := stack{store: memstore.New(memstore.WithMaxSessions(1))}.start(t)
	id := ts.create(keyAlice, map[string]any{"messages": []map[string]string{{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}}})
	r := ts.do("POST", "/v1/sessions", keyBob, nil)
	if e := r.errorOf(t); r.status != http.StatusInsufficientStorage || e.Code != "store_full" {
		t.Fatalf("bob's create in a full store: %s", r)
	}
	var got struct {
		MessageCount int `json:"message_count"`
	}
	ts.must(200, "GET", "/v1/sessions/"+id, keyAlice, nil, &got)
	if got.MessageCount != 2 {
		t.Fatalf("alice's session after bob's refused create: %d messages", got.MessageCount)
	}
}
