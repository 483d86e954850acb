package db_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/memory/store"
)

// TestAppendBatchSizes: strata_append inserts a batch two messages per
// statement (migration 17); batches of every size from 1 to 7, odd and
// even, with tool calls, tool results, metadata and authors other than the
// owner, are stored whole, in order, with dense seqs, each message as
// given, and the other authors become participants.
func TestAppendBatchSizes(t *testing.T) {
	t.Parallel()
	testAppendBatchSizes(t, newFixture(t).d)
}

// TestCitusAppendBatchSizes is TestAppendBatchSizes on a distributed
// schema, where the call runs on the worker holding the session.
func TestCitusAppendBatchSizes(t *testing.T) {
	testAppendBatchSizes(t, citusPool(t))
}

func testAppendBatchSizes(t *testing.T, d *sqlx.DB) {
	ctx := testCtx(t)
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 17))
	ms := db.NewMessageStore(d)
	const session, owner = "batches", "owner"
	if err := ms.Create(ctx, session, owner); err != nil {
		t.Fatal(err)
	}
	var want []store.Message
	others := []string{}
	for round := range 3 {
		for size := 1; size <= 7; size++ {
			batch := make([]store.Message, size)
			for i := range batch {
				m := store.Message{Role: store.RoleUser, Content: fmt.Sprintf("r%d s%d m%d %x", round, size, i, rng.Uint32())}
				switch rng.IntN(4) {
				case 0:
					m = store.Message{Role: store.RoleAssistant, Content: m.Content,
						ToolCalls: []llms.ToolCall{{ID: fmt.Sprint("call-", i), Type: "function",
							FunctionCall: &llms.FunctionCall{Name: "lookup", Arguments: `{"q":"x"}`}}}}
				case 1:
					m = store.Message{Role: store.RoleTool, Content: m.Content, ToolCallID: fmt.Sprint("call-", i), Name: "lookup"}
				case 2:
					m.Metadata = map[string]string{"k": fmt.Sprint(i)}
				}
				if rng.IntN(3) == 0 {
					m.UserID = fmt.Sprint("guest-", rng.IntN(3))
					if !slices.Contains(others, m.UserID) {
						others = append(others, m.UserID)
					}
				}
				batch[i] = m
			}
			res, err := ms.Append(ctx, session, owner, batch...)
			if err != nil {
				t.Fatalf("round %d, batch of %d: %v", round, size, err)
			}
			want = append(want, batch...)
			if res.Total != len(want) || res.LastSeq != int64(len(want)) {
				t.Fatalf("round %d, batch of %d: Total %d, LastSeq %d, want %d", round, size, res.Total, res.LastSeq, len(want))
			}
		}
	}
	got, err := ms.Range(ctx, session, owner, 0, int64(len(want)), len(want)+1)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("read %d messages, want %d", len(got), len(want))
	}
	for i, g := range got {
		w := want[i]
		author := w.UserID
		if author == "" {
			author = owner
		}
		if g.Seq != int64(i+1) || g.Role != w.Role || g.Content != w.Content || g.ToolCallID != w.ToolCallID ||
			g.Name != w.Name || len(g.ToolCalls) != len(w.ToolCalls) || len(g.Metadata) != len(w.Metadata) || g.UserID != author {
			t.Fatalf("message %d = %+v, want %+v (author %s)", i+1, g, w, author)
		}
		if i > 0 && g.CreatedAt.Before(got[i-1].CreatedAt) {
			t.Fatalf("message %d created before message %d", i+1, i)
		}
	}
	for _, o := range others {
		page, total, err := ms.ParticipantSessions(ctx, owner, o, 10, 0)
		if err != nil || total != 1 || len(page) != 1 || page[0].SessionID != session {
			t.Errorf("ParticipantSessions(%s) = %+v, %d, %v; want the session", o, page, total, err)
		}
	}
}
