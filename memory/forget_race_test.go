package memory_test

import (
	"context"
	"fmt"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/snapshot"
	"github.com/strata-go/strata/summary"
)

// codeRE finds the distinctive token of each message of the race test.
var codeRE = regexp.MustCompile(`code-[0-9]+x`)

// Erasures racing saves, loads, folds (slow ones included) and imports:
// whatever the interleaving, no fold brings an erased message's content
// back into the summary, for either policy. Run with -race; the package's
// TestMain checks for leaked goroutines after Close.
func TestForgetRace(t *testing.T) {
	for _, pol := range []memory.Policy{memory.PolicyParity, memory.PolicyChunked} {
		t.Run(string(pol), func(t *testing.T) {
			ctx := context.Background()
			cfg := hierConfig()
			cfg.Policy = pol
			cfg.LoadGrace = time.Millisecond
			cfg.SupersedeDelay = time.Millisecond
			cfg.RecentMessageCount, cfg.BufferMessageCount, cfg.TriggerMessageCount = 4, 4, 6
			f := newFixture(t, cfg)
			// The summarizer copies every code it is shown — messages and
			// the summary so far — into facts and narrative, slowly.
			f.svc.set(func(ctx context.Context, _ int64, req summary.Request) (summary.Result, error) {
				var text strings.Builder
				for _, m := range req.Messages {
					text.WriteString(m.GetContent() + "\n")
				}
				if req.Existing != nil {
					text.WriteString(req.Existing.Narrative + "\n")
					for _, fc := range req.Existing.Facts {
						text.WriteString(fc.Value + "\n")
					}
				}
				time.Sleep(time.Millisecond) // latency, not synchronisation: the slow summarizer
				var res summary.Result
				var sentences []string
				for i, c := range codeRE.FindAllString(text.String(), -1) {
					res.Facts = append(res.Facts, summary.Fact{Key: fmt.Sprintf("code_%d", i), Value: c})
					sentences = append(sentences, "They mentioned "+c+".")
				}
				res.Narrative = strings.Join(append(sentences, "They talked."), " ")
				return res, nil
			})
			var erasedMu sync.Mutex
			erased := map[string]bool{}
			const writers, turns = 3, 40
			var wg sync.WaitGroup
			for w := range writers {
				session := fmt.Sprintf("s%d", w)
				wg.Add(2)
				go func() { // the conversation
					defer wg.Done()
					for i := range turns {
						if err := f.mgr.SaveTurn(ctx, session, "alice", fmt.Sprintf("code-%d%03dx here", w, i), "ok"); err != nil {
							t.Error(err)
							return
						}
						if i%5 == 0 {
							if _, err := f.mgr.Load(ctx, session, "alice"); err != nil {
								t.Error(err)
							}
						}
					}
				}()
				go func() { // the erasures
					defer wg.Done()
					for range turns / 4 {
						time.Sleep(2 * time.Millisecond) // spaces the erasures out between the turns (latency, not synchronisation)
						msgs, err := f.mgr.Messages(ctx, session, "alice", 0, 0)
						if err != nil || len(msgs) < 4 {
							continue
						}
						i := len(msgs) / 3
						for i < len(msgs) && !strings.HasPrefix(msgs[i].Content, "code-") {
							i++
						}
						if i == len(msgs) {
							continue
						}
						m := msgs[i]
						if err := f.mgr.Forget(ctx, session, "alice", m.Seq); err != nil {
							t.Error(err)
							continue
						}
						erasedMu.Lock()
						erased[codeRE.FindString(m.Content)] = true
						erasedMu.Unlock()
					}
				}()
			}
			wg.Add(1)
			go func() { // imports beside them
				defer wg.Done()
				for i := range 10 {
					snap := &memory.Snapshot{Version: snapshot.Version, SessionID: fmt.Sprintf("imp%d", i), UserID: "bob",
						Messages: []snapshot.Message{{Seq: 1, Role: "user", Content: "hi"}}}
					if err := f.mgr.Import(ctx, snap); err != nil {
						t.Error(err)
					}
				}
			}()
			wg.Wait()
			for w := range writers {
				session := fmt.Sprintf("s%d", w)
				if err := f.mgr.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				if _, err := f.mgr.Load(ctx, session, "alice"); err != nil {
					t.Fatal(err)
				}
				if err := f.mgr.Flush(ctx); err != nil {
					t.Fatal(err)
				}
				s, err := f.mgr.Summary(ctx, session, "alice")
				if err != nil {
					t.Fatal(err)
				}
				if s == nil {
					t.Fatalf("%s: no summary", session)
				}
				text := summaryText(*s) + fmt.Sprint(s.Facts)
				for c := range erased {
					if strings.Contains(text, c) {
						t.Errorf("%s: the erased %s came back: %s", session, c, text)
					}
				}
			}
			if len(erased) == 0 {
				t.Fatal("nothing was erased")
			}
			if err := f.mgr.Close(); err != nil {
				t.Fatal(err)
			}
		})
	}
}
