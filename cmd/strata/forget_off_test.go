package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
)

// strata forget with summaries turned off cleans the stored summary all
// the same: the card number and e-mail address the erased message gave
// are gone from the summary row, which a replica with summaries on shows.
func TestForgetCLIWithSummariesOff(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	schema := dbtest.NewSchema(t)
	m := pgManager(t, schema.URL)
	for i := 1; i <= 20; i++ {
		text := fmt.Sprintf("Question %d about the kettle.", i)
		if i == 2 {
			text = "My card is 4111 1111 1111 1111 and my email is off.secret@example.com, thanks."
		}
		if err := m.SaveTurn(ctx, "s1", "alice", text, "Answer."); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := m.Load(ctx, "s1", "alice"); err != nil {
		t.Fatal(err)
	}
	if err := m.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	sums := db.NewSummaryStore(dbtest.Open(t, schema.URL))
	if s, err := sums.Get(ctx, "s1"); err != nil || !strings.Contains(fmt.Sprint(s), "off.secret") {
		t.Fatalf("the secret was not folded: %+v, %v", s, err)
	}
	msgs, err := m.Messages(ctx, "s1", "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	code, out, errOut := cli(t, "forget", "--set", "arc.reactor.memory.datasource.url="+schema.URL,
		"--set", "arc.reactor.memory.summary.enabled=false", "--user", "alice", "s1", fmt.Sprint(msgs[2].Seq))
	if code != 0 || !strings.Contains(out, "erased 1 message of session s1") {
		t.Fatalf("forget: exit %d %q %q", code, out, errOut)
	}
	s, err := sums.Get(ctx, "s1")
	if err != nil {
		t.Fatal(err)
	}
	if text := fmt.Sprint(s); strings.Contains(text, "off.secret") || strings.Contains(text, "4111") {
		t.Fatalf("the stored summary holds the erased message's content: %s", text)
	}
	if v, err := m.Summary(ctx, "s1", "alice"); err != nil || strings.Contains(fmt.Sprint(v), "off.secret") {
		t.Fatalf("a manager with summaries on shows %+v, %v", v, err)
	}
}
