package inspector_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/strata-go/strata/inspector"
	"github.com/strata-go/strata/internal/testutil"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/memstore"
	"github.com/strata-go/strata/summary"
)

func TestExportedAPI(t *testing.T) {
	testutil.CheckExports(t, ".", 3) // Write, Options, ErrNoSuchTurn
}

// newSession plays a conversation of turns user turns with the offline
// summarizer folding, one of them stating a secret order number, and
// returns the manager.
func newSession(t *testing.T, turns int) *memory.Manager {
	t.Helper()
	ms := memstore.New()
	cfg := memory.DefaultConfig()
	cfg.Enabled = true
	cfg.Policy = memory.PolicyChunked
	cfg.SafetyTurns, cfg.BufferMessageCount = 3, 2
	cfg.ContextWindowTokens, cfg.OutputReserveTokens = 1200, 200
	cfg.FailureCooldown, cfg.MaxFailureCooldown = 0, 0
	mgr, err := memory.NewManager(ms, cfg, memory.WithSummaries(ms.Summaries(), summary.NewExtractiveService()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	ctx := context.Background()
	for i := 1; i <= turns; i++ {
		text := fmt.Sprintf("Turn %d: I would like to talk about the blue kettle delivery number %d, please.", i, 100+i)
		switch i {
		case 2:
			text = "My order number is ORD-58213 and my email is jane.doe@example.com."
		case 5:
			text = "<script>alert('x')</script> is what I typed."
		}
		if err := mgr.SaveTurn(ctx, "s", "alice", text, fmt.Sprintf("Of course, turn %d noted.", i)); err != nil {
			t.Fatal(err)
		}
		if err := mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	return mgr
}

// Render writes the page to a string.
func render(t *testing.T, mgr *memory.Manager, turn int) string {
	t.Helper()
	var b bytes.Buffer
	if err := inspector.Write(context.Background(), &b, mgr, "s", "alice", inspector.Options{Turn: turn, Now: time.Unix(0, 0)}); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestPageShowsTheSession(t *testing.T) {
	mgr := newSession(t, 24)
	ctx := context.Background()
	page := render(t, mgr, 0)
	msgs, err := mgr.Messages(ctx, "s", "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if !strings.Contains(page, fmt.Sprintf(`<tr data-seq="%d"`, m.Seq)) {
			t.Errorf("message #%d is not listed", m.Seq)
		}
	}
	if strings.Contains(page, "<script>") || !strings.Contains(page, "&lt;script&gt;") {
		t.Error("a message's markup is not escaped")
	}
	for _, banned := range []string{"http://", "https://", "<script", "src="} {
		if strings.Contains(page, banned) {
			t.Errorf("the page refers to %q: it must need no network and run no script", banned)
		}
	}
	j, err := mgr.Journal(ctx, "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	if j.Totals.Folds < 3 {
		t.Fatalf("only %d folds", j.Totals.Folds)
	}
	if n := strings.Count(page, `<tr data-n="`); n != len(j.Records) {
		t.Errorf("%d journal rows, the journal has %d records", n, len(j.Records))
	}
	sum, err := mgr.Summary(ctx, "s", "alice")
	if err != nil || sum == nil {
		t.Fatal(sum, err)
	}
	for _, f := range sum.Facts {
		if !strings.Contains(page, `<tr data-key="`+f.Key+`">`) {
			t.Errorf("fact %s has no history row", f.Key)
		}
	}
	if !strings.Contains(page, `id="context-chart"`) || !strings.Contains(page, `id="budget-line"`) {
		t.Error("no context chart")
	}

	// An earlier turn shows the window of that turn: the messages after
	// the cursor the journal gives for it, through the turn.
	early := render(t, mgr, 3)
	if !strings.Contains(early, `<span id="turn-number">3</span>`) {
		t.Fatal("turn 3 not shown")
	}
	rows := regexp.MustCompile(`<tr class="(\w+)-row" data-seq="(\d+)" data-fate="\w+" data-kind="message">`).FindAllStringSubmatch(early, -1)
	if len(rows) == 0 {
		t.Fatal("turn 3 shows no message")
	}
	last, _ := strconv.ParseInt(rows[len(rows)-1][2], 10, 64)
	if last != msgs[4].Seq { // the third user message
		t.Errorf("turn 3's window ends at #%d, want #%d", last, msgs[4].Seq)
	}
	if err := inspector.Write(ctx, &bytes.Buffer{}, mgr, "s", "alice", inspector.Options{Turn: 25}); err == nil {
		t.Error("a turn past the newest was accepted")
	}
	if err := inspector.Write(ctx, &bytes.Buffer{}, mgr, "s", "bob", inspector.Options{}); !errors.Is(err, memory.ErrNotOwner) {
		t.Errorf("another user's session: %v, want ErrNotOwner", err)
	}
}

// A tight budget drops old messages: the page says which.
func TestPageShowsWhatWasTrimmed(t *testing.T) {
	mgr := newSession(t, 40)
	page := render(t, mgr, 0)
	if !strings.Contains(page, `data-fate="kept"`) {
		t.Fatal("no message kept")
	}
	m := regexp.MustCompile(`id="turn-dropped">(\d+)<`).FindStringSubmatch(page)
	if m == nil {
		t.Fatal("no dropped count")
	}
	dropped, _ := strconv.Atoi(m[1])
	if got := strings.Count(page, `data-fate="dropped"`); got != dropped {
		t.Errorf("%d rows marked dropped, the report says %d", got, dropped)
	}
}

// After an erasure the page holds no erased value.
func TestPageHoldsNoErasedValue(t *testing.T) {
	mgr := newSession(t, 24)
	ctx := context.Background()
	if !strings.Contains(render(t, mgr, 0), "58213") {
		t.Fatal("the secret is not on the page before the erasure")
	}
	msgs, err := mgr.Messages(ctx, "s", "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range msgs {
		if strings.Contains(m.Content, "ORD-58213") {
			if err := mgr.Forget(ctx, "s", "alice", m.Seq); err != nil {
				t.Fatal(err)
			}
		}
	}
	for turn := 1; turn <= 23; turn++ {
		if page := render(t, mgr, turn); strings.Contains(page, "58213") || strings.Contains(page, "jane.doe") {
			t.Fatalf("turn %d's page holds an erased value", turn)
		}
	}
}

// With summaries off the model gets the newest 2 × MaxConversationTurns
// messages: the turn's view shows those.
func TestPageWithSummariesOff(t *testing.T) {
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), memory.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	ctx := context.Background()
	for i := 1; i <= 15; i++ {
		if err := mgr.SaveTurn(ctx, "s", "alice", fmt.Sprintf("question %d", i), fmt.Sprintf("answer %d", i)); err != nil {
			t.Fatal(err)
		}
	}
	page := render(t, mgr, 14)
	rows := regexp.MustCompile(`data-seq="(\d+)" data-fate="\w+" data-kind="message"`).FindAllStringSubmatch(page, -1)
	want := 2 * mgr.Config().MaxConversationTurns
	if len(rows) != want || rows[len(rows)-1][1] != "27" || rows[0][1] != "8" {
		t.Fatalf("turn 14's view: %d messages %v, want the %d through #27", len(rows), rows, want)
	}
}
