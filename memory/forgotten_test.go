package memory_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/snapshot"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// An export's forgotten entries cannot be reversed: they are keyed with
// the session's secret, which the export does not carry, and hold no
// rolling hash; a guess of the value, hashed without the key (or with
// an empty one), matches none of them.
func TestExportedForgottenDigestsAreKeyed(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, hierConfig())
	const value = "418803311790" // 12 digits: a brute force of 10¹² guesses is cheap without a key
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "hello", "hi"); err != nil {
		t.Fatal(err)
	}
	tail, err := f.store.Tail(ctx, "s", "alice", 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.sums.Save(ctx, summary.Summary{SessionID: "s", Epoch: tail.Epoch, UpToSeq: 1,
		Facts: []summary.Fact{{Key: "account", Value: value}, {Key: "city", Value: "Oslo"}}}); err != nil {
		t.Fatal(err)
	}
	if err := f.mgr.ForgetFact(ctx, "s", "alice", "account"); err != nil {
		t.Fatal(err)
	}
	stored, err := f.sums.Get(ctx, "s")
	if err != nil || len(stored.ForgetKey) == 0 || len(stored.Forgotten) == 0 {
		t.Fatalf("stored %+v, %v", stored, err)
	}
	snap, err := f.mgr.Export(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	raw, err := json.Marshal(snap)
	if err != nil {
		t.Fatal(err)
	}
	out := string(raw)
	if strings.Contains(out, value) || strings.Contains(out, hex.EncodeToString(stored.ForgetKey)) || strings.Contains(out, `"roll"`) {
		t.Fatalf("the export holds the value, the key or a rolling hash: %s", out)
	}
	for _, fg := range snap.Summary.Forgotten {
		for _, key := range [][]byte{nil, []byte("")} {
			for _, form := range []string{"w" + value, "d" + value, value} {
				m := hmac.New(sha256.New, key)
				m.Write([]byte(form))
				guess := hex.EncodeToString(m.Sum(nil))
				sha := sha256.Sum256([]byte(form))
				if strings.HasPrefix(guess, fg.Digest) || strings.HasPrefix(hex.EncodeToString(sha[:]), fg.Digest) ||
					(fg.Digits != "" && strings.HasPrefix(guess, fg.Digits)) {
					t.Fatalf("a guess without the key matches the exported digest %+v", fg)
				}
			}
		}
	}
}

// The forgotten list is bounded: an import listing more than
// summary.DefaultMaxForgotten entries, or malformed ones, is refused at
// once (150 000 crafted entries cost no seconds per append later).
func TestImportBoundsForgotten(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, hierConfig())
	good := summary.Forgotten{Key: "k", Digest: strings.Repeat("a", 32), Words: 1}
	for name, n := range map[string]int{"150000": 150_000, "max+1": summary.DefaultMaxForgotten + 1} {
		list := make([]summary.Forgotten, n)
		for i := range list {
			list[i] = good
			list[i].Digest = fmt.Sprintf("%032x", i)
		}
		s := &memory.Snapshot{Version: snapshot.Version, SessionID: "s-" + name, UserID: "alice",
			Messages: []snapshot.Message{{Seq: 1, Role: "user", Content: "hi"}},
			Summary:  &snapshot.Summary{Narrative: "n", UpToSeq: 1, Forgotten: list}}
		if err := f.mgr.Import(ctx, s); !errors.Is(err, store.ErrInvalidMessage) {
			t.Errorf("%s forgotten entries: %v, want ErrInvalidMessage", name, err)
		}
	}
	for name, fg := range map[string]summary.Forgotten{
		"short digest":   {Digest: "abc", Words: 1},
		"too many words": {Digest: strings.Repeat("a", 32), Words: 33},
		"few digits":     {Digest: strings.Repeat("a", 32), Words: 1, Digits: strings.Repeat("b", 32), DigitCount: 3},
		"legacy no roll": {Digest: strings.Repeat("a", 64)},
	} {
		s := &memory.Snapshot{Version: snapshot.Version, SessionID: "bad", UserID: "alice",
			Messages: []snapshot.Message{{Seq: 1, Role: "user", Content: "hi"}},
			Summary:  &snapshot.Summary{Narrative: "n", UpToSeq: 1, Forgotten: []summary.Forgotten{fg}}}
		if err := f.mgr.Import(ctx, s); !errors.Is(err, store.ErrInvalidMessage) {
			t.Errorf("%s: %v, want ErrInvalidMessage", name, err)
		}
	}
	s := &memory.Snapshot{Version: snapshot.Version, SessionID: "ok", UserID: "alice",
		Messages: []snapshot.Message{{Seq: 1, Role: "user", Content: "hi"}},
		Summary:  &snapshot.Summary{Narrative: "n", UpToSeq: 1, Forgotten: []summary.Forgotten{good}}}
	if err := f.mgr.Import(ctx, s); err != nil {
		t.Fatalf("a valid forgotten list was refused: %v", err)
	}
	// Keyed entries cannot be matched without the exporter's key, which
	// stays behind: the import leaves them out, so they cost nothing.
	if got, err := f.sums.Get(ctx, "ok"); err != nil || (got != nil && len(got.Forgotten) != 0) {
		t.Fatalf("imported summary %+v, %v: keyed entries kept", got, err)
	}
}

// Entries made before keyed digests (an unkeyed SHA-256 and a rolling
// hash) stay in the store, where they still keep their values out, but
// never reach an export.
func TestExportLeavesLegacyForgottenOut(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t, hierConfig())
	if err := f.mgr.SaveTurn(ctx, "s", "alice", "hello", "hi"); err != nil {
		t.Fatal(err)
	}
	tail, err := f.store.Tail(ctx, "s", "alice", 0)
	if err != nil {
		t.Fatal(err)
	}
	sha := sha256.Sum256([]byte("418803311790"))
	legacy := summary.Forgotten{Key: "account", Digest: hex.EncodeToString(sha[:]), Runes: 12, Roll: 12345, Seq: 1}
	if err := f.sums.Save(ctx, summary.Summary{SessionID: "s", Epoch: tail.Epoch, UpToSeq: 1, Narrative: "Hello.",
		Forgotten: []summary.Forgotten{legacy}}); err != nil {
		t.Fatal(err)
	}
	snap, err := f.mgr.Export(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := json.Marshal(snap)
	if strings.Contains(string(raw), legacy.Digest) || strings.Contains(string(raw), `"roll"`) {
		t.Fatalf("the export holds a legacy, reversible entry: %s", raw)
	}
}
