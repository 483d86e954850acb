package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// This file is the planted-fact probe in Korean, Japanese and Chinese (and
// German and French): six values said once by the user (an order id, an
// amount with its unit, an e-mail, a phone number, a street address and a
// person's name), then 50 and 200 turns of unrelated talk in the same
// language, through the Manager with the in-memory stores and the offline
// extractive summarizer, under both policies. What counts is what the model
// is shown (LoadHistory): at least five of the six values must be in it, as
// written. Values, their phrasing, the spacing around them and the filler
// are drawn from a seeded generator (the seed is logged; replay with
// -strata.seed or STRATA_PROPERTY_SEED); the languages are in
// planted_scripts_langs_test.go.

// oddSpacing returns s with, at random, its sentences on separate lines
// or separated by two spaces, and a trailing space or line break: as
// users paste and type. Values themselves are left as said.
func oddSpacing(rng *rand.Rand, s string) string {
	switch rng.IntN(4) {
	case 0:
		s = strings.ReplaceAll(s, ". ", ".\n")
		s = strings.ReplaceAll(s, "。", "。\n")
	case 1:
		s = strings.ReplaceAll(s, ". ", ".  ")
		s = strings.ReplaceAll(s, "。", "。 ")
	case 2:
		s = "  " + s + "\n"
	}
	return s
}

// probeView is the text of everything the model is shown for the
// session: every message LoadHistory returns (facts block, narrative,
// verbatim messages).
func probeView(t *testing.T, mgr *memory.Manager) string {
	t.Helper()
	msgs, err := mgr.LoadHistory(context.Background(), "s", "alice")
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, m := range msgs {
		b.WriteString(m.GetContent())
		b.WriteByte('\n')
	}
	return b.String()
}

// TestPlantedFactsInEveryScript: in Korean, Japanese and Chinese (and in
// German and French, with their diacritics), at least five of six values
// said once are shown to the model after 50 and after 200 further turns
// of unrelated talk, under the parity and the chunked policy, with the
// extractive summarizer; several seeded runs per language, and a re-run
// of the first shows the model the same.
func TestPlantedFactsInEveryScript(t *testing.T) {
	seed := propertySeed(t)
	runs, checkpoints := 3, []int{50, 200}
	if testing.Short() {
		runs = 1
	}
	chunked := hierConfig()
	chunked.Policy = memory.PolicyChunked
	for _, probe := range []scriptProbe{koreanProbe, japaneseProbe, chineseProbe, germanProbe, frenchProbe} {
		for _, policy := range []struct {
			name string
			cfg  memory.Config
		}{{"parity", hierConfig()}, {"chunked", chunked}} {
			for run := range runs {
				name := fmt.Sprintf("%s/%s/run%d", probe.lang, policy.name, run)
				t.Run(name, func(t *testing.T) {
					values, views := replayProbe(t, probe, policy.cfg, rand.New(rand.NewPCG(seed, uint64(run))), checkpoints)
					for i, view := range views {
						var missing []string
						for _, v := range values.list() {
							if !strings.Contains(view, v[1]) {
								missing = append(missing, v[0]+" "+v[1])
							}
						}
						kept := 6 - len(missing)
						t.Logf("seed %d, +%d turns: %d/6 kept, missing %v", seed, checkpoints[i], kept, missing)
						if kept < 5 {
							t.Errorf("+%d turns: only %d of 6 planted values shown (missing %v); the view:\n%s", checkpoints[i], kept, missing, view)
						}
					}
					if run == 0 {
						_, again := replayProbe(t, probe, policy.cfg, rand.New(rand.NewPCG(seed, uint64(run))), checkpoints)
						for i := range views {
							if again[i] != views[i] {
								t.Errorf("+%d turns: a re-run shows the model another view:\n%s\nthen:\n%s", checkpoints[i], views[i], again[i])
							}
						}
					}
				})
			}
		}
	}
}

// replayProbe saves the probe's opening and its filler turn by turn
// (values and filler drawn from rng) through a new Manager with cfg, the
// in-memory stores and the extractive summarizer, and returns the values
// planted and what the model is shown at each checkpoint (turns of filler
// after the opening). At every checkpoint the opening must be folded: the
// view is hierarchical and shows none of its messages verbatim.
func replayProbe(t *testing.T, probe scriptProbe, cfg memory.Config, rng *rand.Rand, checkpoints []int) (plantedValues, []string) {
	t.Helper()
	values, opening := probe.plant(rng)
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg,
		memory.WithSummaries(summary.NewInMemoryStore(0), summary.NewExtractiveService()), memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mgr.Close() }()
	ctx := context.Background()
	save := func(turn [2]string) {
		if err := mgr.SaveTurn(ctx, "s", "alice", turn[0], turn[1]); err != nil {
			t.Fatal(err)
		}
		if err := mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var said []string // the opening's user messages as saved
	for _, turn := range opening {
		u := oddSpacing(rng, turn[0])
		said = append(said, u)
		save([2]string{u, turn[1]})
	}
	var views []string
	filler := 0
	for _, at := range checkpoints {
		for ; filler < at; filler++ {
			save(probe.filler(rng))
		}
		h, err := mgr.Load(ctx, "s", "alice")
		if err != nil {
			t.Fatal(err)
		}
		if h.Mode != "hierarchical" || h.Summary == nil {
			t.Fatalf("+%d turns: view mode %q, want hierarchical with a summary", at, h.Mode)
		}
		for _, m := range h.Recent {
			for _, u := range said {
				if m.Content == u {
					t.Fatalf("+%d turns: the opening is still shown verbatim: %q", at, m.Content)
				}
			}
		}
		views = append(views, probeView(t, mgr))
	}
	return values, views
}
