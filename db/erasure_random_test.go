package db_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/strata-go/strata/catalog"
	"github.com/strata-go/strata/catalog/catalogtest"
	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// TestErasureRandom runs the randomized erasure test on two replicas —
// two pools, each with its stores and catalogue index — of one database.
func TestErasureRandom(t *testing.T) {
	t.Parallel()
	schema := dbtest.NewSchema(t)
	var r [2]catalogtest.Env
	for i := range r {
		d := dbtest.Open(t, schema.URL)
		r[i] = catalogtest.Env{Store: db.NewMessageStore(d), Summaries: db.NewSummaryStore(d), Index: db.NewCatalogIndex(d)}
	}
	catalogtest.RunErasureRandom(t, r)
}

// TestToolErasure: provenance is each message's own, on PostgreSQL.
func TestToolErasure(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	catalogtest.RunToolErasure(t, func(*testing.T) catalogtest.Env {
		return catalogtest.Env{Store: db.NewMessageStore(d), Summaries: db.NewSummaryStore(d), Index: db.NewCatalogIndex(d)}
	})
}

// TestToolCallErasure: the results answering an erased call go with it,
// on PostgreSQL.
func TestToolCallErasure(t *testing.T) {
	t.Parallel()
	d := dbtest.New(t)
	catalogtest.RunToolCallErasure(t, func(*testing.T) catalogtest.Env {
		return catalogtest.Env{Store: db.NewMessageStore(d), Summaries: db.NewSummaryStore(d), Index: db.NewCatalogIndex(d)}
	})
}

// A Forget run by a process with summaries off (strata forget, or serve
// configured so) cleans the stored summary all the same: a replica with
// summaries on never shows what it held.
func TestForgetWithSummariesOffCleansTheSummary(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	schema := dbtest.NewSchema(t)
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.RecentMessageCount, cfg.BufferMessageCount, cfg.TriggerMessageCount = 4, 4, 6
	cfg.FailureCooldown, cfg.MaxFailureCooldown = 0, 0
	for _, kind := range []string{"extractive", "copying"} {
		t.Run(kind, func(t *testing.T) {
			svc := summary.NewExtractiveService()
			if kind == "copying" {
				svc = copyingSummarizer()
			}
			d := dbtest.Open(t, schema.URL)
			on, err := memory.NewManager(db.NewMessageStore(d), cfg, memory.WithSummaries(db.NewSummaryStore(d), svc))
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = on.Close() })
			offCfg := cfg
			offCfg.Enabled = false
			d2 := dbtest.Open(t, schema.URL)
			off, err := memory.NewManager(db.NewMessageStore(d2), offCfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { _ = off.Close() })
			session := "off-" + kind
			const card, email = "4111 1111 1111 1111", "code-777x.jane@example.org"
			if err := on.SaveTurn(ctx, session, "alice", "My card is "+card+" and my email is "+email+", code-777x.", "Noted."); err != nil {
				t.Fatal(err)
			}
			for i := range 8 {
				if err := on.SaveTurn(ctx, session, "alice", fmt.Sprintf("Question %d about code-%03dy the parcel.", i, i), "Answer."); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := on.Load(ctx, session, "alice"); err != nil {
				t.Fatal(err)
			}
			if err := on.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			sum, err := db.NewSummaryStore(d).Get(ctx, session)
			if err != nil || sum == nil || !strings.Contains(summaryText(sum), "777") {
				t.Fatalf("the secret was not folded: %+v, %v", sum, err)
			}
			msgs, err := off.Messages(ctx, session, "alice", 0, 1)
			if err != nil {
				t.Fatal(err)
			}
			if err := off.Forget(ctx, session, "alice", msgs[0].Seq); err != nil {
				t.Fatal(err)
			}
			stored, err := db.NewSummaryStore(d).Get(ctx, session)
			if err != nil {
				t.Fatal(err)
			}
			if s := summaryText(stored); strings.Contains(s, "777") || strings.Contains(s, "4111") {
				t.Fatalf("the stored summary holds the erased message's content: %s", s)
			}
			if s, err := on.Summary(ctx, session, "alice"); err != nil || strings.Contains(summaryText(s), "777") {
				t.Fatalf("the replica with summaries on shows %+v, %v", s, err)
			}
		})
	}
}

// A catalogue document built before an erasure is never written after
// it: the index refuses a document whose erasure count or summary
// version is no longer the session's (one replica read the session, the
// other forgot, then the first wrote).
func TestCatalogRefusesDocumentsReadBeforeAnErasure(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dbtest.New(t)
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.RecentMessageCount, cfg.BufferMessageCount, cfg.TriggerMessageCount = 4, 4, 6
	mgr, err := memory.NewManager(db.NewMessageStore(d), cfg, memory.WithSummaries(db.NewSummaryStore(d), summary.NewExtractiveService()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	idx := db.NewCatalogIndex(d)
	if err := mgr.SaveTurn(ctx, "cat", "alice", "My order is ORD-31337 and my email is zed.31337@example.org.", "Noted."); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if err := mgr.SaveTurn(ctx, "cat", "alice", fmt.Sprintf("Question %d about the parcel.", i), "Answer."); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := mgr.Load(ctx, "cat", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := mgr.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sum, err := mgr.Summary(ctx, "cat", "alice")
	if err != nil || sum == nil {
		t.Fatalf("no summary: %v", err)
	}
	erasures, err := idx.Erasures(ctx, "cat")
	if err != nil {
		t.Fatal(err)
	}
	stale := catalog.Doc{SessionID: "cat", UserID: "alice", Epoch: sum.Epoch, Title: "ORD-31337", Source: catalog.SourceSummary,
		SourceSeq: sum.UpToSeq, MessageCount: 18, Erasures: erasures, SummaryVersion: sum.Version}
	msgs, err := mgr.Messages(ctx, "cat", "alice", 0, 1)
	if err != nil {
		t.Fatal(err)
	}
	if err := mgr.Forget(ctx, "cat", "alice", msgs[0].Seq); err != nil {
		t.Fatal(err)
	}
	if err := idx.Upsert(ctx, stale); err != nil {
		t.Fatal(err)
	}
	if doc, err := idx.Get(ctx, "cat", "alice"); err != nil || (doc != nil && strings.Contains(doc.Title, "31337")) {
		t.Fatalf("a document read before the erasure was written after it: %+v, %v", doc, err)
	}
	// A ForgetFact saves a new summary version: a document of the old one
	// is refused too.
	sum, err = mgr.Summary(ctx, "cat", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if erasures, err = idx.Erasures(ctx, "cat"); err != nil {
		t.Fatal(err)
	}
	if sum != nil && len(sum.Facts) > 0 {
		stale = catalog.Doc{SessionID: "cat", UserID: "alice", Epoch: sum.Epoch, Title: "old " + sum.Facts[0].Value, Source: catalog.SourceSummary,
			SourceSeq: sum.UpToSeq + 1000, MessageCount: 17, Erasures: erasures, SummaryVersion: sum.Version}
		if err := mgr.ForgetFact(ctx, "cat", "alice", sum.Facts[0].Key); err != nil {
			t.Fatal(err)
		}
		if err := idx.Upsert(ctx, stale); err != nil {
			t.Fatal(err)
		}
		if doc, err := idx.Get(ctx, "cat", "alice"); err != nil || (doc != nil && strings.HasPrefix(doc.Title, "old ")) {
			t.Fatalf("a document of the summary before ForgetFact was written after it: %+v, %v", doc, err)
		}
	}
	// A current document is written.
	fresh := stale
	fresh.Title, fresh.SummaryVersion = "Current", 0
	if fresh.Erasures, err = idx.Erasures(ctx, "cat"); err != nil {
		t.Fatal(err)
	}
	if err := idx.Upsert(ctx, fresh); err != nil {
		t.Fatal(err)
	}
	if doc, err := idx.Get(ctx, "cat", "alice"); err != nil || doc == nil || doc.Title != "Current" {
		t.Fatalf("a current document was not written: %+v, %v", doc, err)
	}
}

// The PostgreSQL stores keep a summary's provenance and forget key: what
// a save wrote, Get and the one-statement snapshot read back.
func TestSummaryProvenanceRoundTrip(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	d := dbtest.New(t)
	ms, sums := db.NewMessageStore(d), db.NewSummaryStore(d)
	res := mustAppend(t, ctx, ms, "prov", "alice", user("My order is ORD-5512."), assistant("Noted."))
	in := summary.Summary{SessionID: "prov", Epoch: res.Epoch, UpToSeq: res.LastSeq, Narrative: "User: My order is ORD-5512.",
		Facts:           []summary.Fact{{Key: "order_id", Value: "ORD-5512", Category: summary.Entity, Sources: []int64{res.LastSeq - 1}}},
		SentenceSources: []summary.SentenceSource{{Digest: summary.SentenceDigest("User: My order is ORD-5512."), Seqs: []int64{res.LastSeq - 1}}},
		Forgotten:       []summary.Forgotten{{Key: "email", Digest: strings.Repeat("ab", 16), Words: 1, Seq: 1}},
		ForgetKey:       []byte("0123456789abcdef0123456789abcdef")}
	if err := sums.Save(ctx, in); err != nil {
		t.Fatal(err)
	}
	got, err := sums.Get(ctx, "prov")
	if err != nil || got == nil {
		t.Fatalf("get %+v, %v", got, err)
	}
	_, snap, err := ms.Snapshot(ctx, "prov", "alice", 10)
	if err != nil || snap == nil {
		t.Fatalf("snapshot %+v, %v", snap, err)
	}
	for name, s := range map[string]*summary.Summary{"Get": got, "Snapshot": snap} {
		if !summary.Traced(s) || fmt.Sprint(s.Facts[0].Sources) != fmt.Sprint(in.Facts[0].Sources) ||
			fmt.Sprint(s.SentenceSources) != fmt.Sprint(in.SentenceSources) || string(s.ForgetKey) != string(in.ForgetKey) ||
			len(s.Forgotten) != 1 || s.Forgotten[0] != in.Forgotten[0] {
			t.Errorf("%s read back %+v", name, s)
		}
	}
}

// summaryText is what a summary says: its narrative and its facts' keys,
// values and previous values — not its timestamps and numbers, whose
// digits could match a secret's by chance.
func summaryText(s *summary.Summary) string {
	if s == nil {
		return ""
	}
	var b strings.Builder
	b.WriteString(s.Narrative)
	for _, f := range s.Facts {
		b.WriteString("\n" + f.Key + ": " + f.Value + " (" + f.Previous + ")")
	}
	return b.String()
}
