package memory_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// TestForgetInEveryScript: erasure holds in every script the extractive
// summarizer now keeps values in. The planted-fact probe's opening (six
// values said once, in Korean, Japanese, Chinese, German or French, with
// odd spacing) is folded under 30 turns of filler; then one opening
// message that states values is erased with Forget. Whatever that message
// stated is gone from everything the model is shown and from the summary,
// right away and after 20 more turns and folds, while a value another
// message states and the model was shown before stays shown. Seeded (the
// seed is logged; replay with -strata.seed or STRATA_PROPERTY_SEED).
func TestForgetInEveryScript(t *testing.T) {
	seed := propertySeed(t)
	chunked := hierConfig()
	chunked.Policy = memory.PolicyChunked
	for _, probe := range []scriptProbe{koreanProbe, japaneseProbe, chineseProbe, germanProbe, frenchProbe} {
		for _, policy := range []struct {
			name string
			cfg  memory.Config
		}{{"parity", hierConfig()}, {"chunked", chunked}} {
			t.Run(probe.lang+"/"+policy.name, func(t *testing.T) {
				rng := rand.New(rand.NewPCG(seed, uint64(len(probe.lang))))
				forgetProbe(t, probe, policy.cfg, rng)
			})
		}
	}
}

func forgetProbe(t *testing.T, probe scriptProbe, cfg memory.Config, rng *rand.Rand) {
	ctx := context.Background()
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg,
		memory.WithSummaries(summary.NewInMemoryStore(0), summary.NewExtractiveService()), memory.WithLogger(quiet))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = mgr.Close() }()
	save := func(turn [2]string) {
		t.Helper()
		if err := mgr.SaveTurn(ctx, "s", "alice", turn[0], turn[1]); err != nil {
			t.Fatal(err)
		}
		if err := mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	values, opening := probe.plant(rng)
	for _, turn := range opening {
		save([2]string{oddSpacing(rng, turn[0]), turn[1]})
	}
	for range 30 {
		save(probe.filler(rng))
	}
	before := probeView(t, mgr)
	msgs, err := mgr.Messages(ctx, "s", "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// The opening user message stating the most values is erased.
	var erase int64
	var gone []string
	for _, m := range msgs[:2*len(opening)] {
		var in []string
		for _, v := range values.list() {
			if strings.Contains(m.Content, v[1]) {
				in = append(in, v[1])
			}
		}
		if len(in) > len(gone) {
			erase, gone = m.Seq, in
		}
	}
	if len(gone) == 0 {
		t.Fatalf("no opening message states a planted value: %+v", values)
	}
	var stay []string
	for _, v := range values.list() {
		said := 0
		for _, m := range msgs {
			if m.Seq != erase && strings.Contains(m.Content, v[1]) {
				said++
			}
		}
		if said > 0 && strings.Contains(before, v[1]) && !slices.Contains(gone, v[1]) {
			stay = append(stay, v[1])
		}
	}
	// The erased message was folded: its values are in the summary.
	folded, err := mgr.Summary(ctx, "s", "alice")
	if err != nil || folded == nil || !slices.ContainsFunc(gone, func(v string) bool { return strings.Contains(fmt.Sprint(folded), v) }) {
		t.Fatalf("the opening was not folded before the erasure: %+v, %v", folded, err)
	}
	t.Logf("erasing seq %d, which states %q; still stated elsewhere and shown: %q", erase, gone, stay)
	if err := mgr.Forget(ctx, "s", "alice", erase); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		view := probeView(t, mgr)
		sum, err := mgr.Summary(ctx, "s", "alice")
		if err != nil {
			t.Fatal(err)
		}
		shown := view + "\n" + fmt.Sprint(sum)
		for _, v := range gone {
			if strings.Contains(shown, v) || strings.Contains(strings.Join(strings.Fields(shown), ""), strings.Join(strings.Fields(v), "")) {
				t.Errorf("%s: the erased value %q is still shown:\n%s", when, v, shown)
			}
		}
		if when == "at once" {
			for _, v := range stay {
				if !strings.Contains(view, v) {
					t.Errorf("%s: %q, which another message states, is no longer shown:\n%s", when, v, view)
				}
			}
		}
	}
	check("at once")
	for range 20 {
		save(probe.filler(rng))
	}
	check("after 20 more turns")
}
