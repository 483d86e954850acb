package summary_test

import (
	"strings"
	"testing"

	"github.com/strata-go/strata/summary"
)

// Erase removes the facts and sentences carrying an erased message's
// content, and nothing else.
func TestErase(t *testing.T) {
	s := summary.Summary{
		Narrative: "The user asked about a kettle. Their email is ann@example.com. They prefer blue. The order ORD-5512 shipped.",
		Facts: []summary.Fact{
			{Key: "email", Value: "ann@example.com", FirstSeq: 20, LastSeq: 20},
			{Key: "order_id", Value: "ORD-5512", FirstSeq: 20, LastSeq: 20},
			{Key: "colour", Value: "blue", FirstSeq: 20, LastSeq: 20},
			{Key: "nickname", Value: "Annie", FirstSeq: 4, LastSeq: 4},
			{Key: "phone", Value: "555-0100", Previous: "555-0199"},
		},
		UpToSeq: 20,
	}
	out := summary.Erase(s, []string{"My email is Ann@Example.com and my order is ORD-5512.", "old phone 555-0199"}, []int64{4, 7})
	var keys []string
	for _, f := range out.Facts {
		keys = append(keys, f.Key)
	}
	if got := strings.Join(keys, ","); got != "colour,phone" {
		t.Errorf("facts left %q, want colour,phone (nickname came only from message 4)", got)
	}
	if out.Facts[1].Previous != "" {
		t.Errorf("the erased superseded value stays: %+v", out.Facts[1])
	}
	if want := "The user asked about a kettle. They prefer blue."; out.Narrative != want {
		t.Errorf("narrative %q, want %q", out.Narrative, want)
	}
	if out.UpToSeq != 20 {
		t.Errorf("cursor %d", out.UpToSeq)
	}
}

// ForgetFact keeps a digest, never the value, and SuppressForgotten keeps
// the value out of later results until Restated lets it go.
func TestForgetFactSuppression(t *testing.T) {
	s := summary.Summary{Narrative: "Hi. Mail them at Bo@x.org today. Bye.", Facts: []summary.Fact{{Key: "email", Value: "bo@x.org", Previous: "old@x.org"}, {Key: "city", Value: "Oslo"}}}
	out, ok := summary.ForgetFact(s, "Email", 10)
	if !ok || len(out.Facts) != 1 || out.Narrative != "Hi. Bye." || len(out.Forgotten) != 2 {
		t.Fatalf("ForgetFact: %+v, %v", out, ok)
	}
	for _, f := range out.Forgotten {
		if strings.Contains(f.Digest, "x.org") || f.Seq != 10 {
			t.Fatalf("forgotten %+v", f)
		}
	}
	if _, ok := summary.ForgetFact(out, "email", 11); ok {
		t.Fatal("a forgotten fact was found again")
	}
	next := out
	next.Facts = append(next.Facts, summary.Fact{Key: "contact", Value: "BO@X.ORG"})
	next.Narrative = "Write to bo@x.org. Or old@x.org. Fine."
	if got := summary.SuppressForgotten(next); len(got.Facts) != 1 || got.Narrative != "Fine." {
		t.Fatalf("SuppressForgotten: %+v", got)
	}
	if left := summary.Restated(out.Forgotten, []string{"my mail is bo@x.org"}, []int64{9}); len(left) != 2 {
		t.Fatalf("a statement before the erasure restated it: %d left", len(left))
	}
	if left := summary.Restated(out.Forgotten, []string{"my mail is bo@x.org"}, []int64{12}); len(left) != 1 {
		t.Fatalf("a statement after the erasure did not restate it: %d left", len(left))
	}
}

// FuzzErase: erasure never panics, and no fact it keeps holds an erased
// text as its value.
func FuzzErase(f *testing.F) {
	f.Add("Email a@b.co now. Then stop.", "a@b.co", "my a@b.co", int64(3))
	f.Add("…!? ", "", "", int64(0))
	f.Fuzz(func(t *testing.T, narrative, value, erased string, seq int64) {
		s := summary.Summary{Narrative: narrative, Facts: []summary.Fact{{Key: "k", Value: value, FirstSeq: seq, LastSeq: seq}}}
		out := summary.Erase(s, []string{erased}, []int64{seq})
		for _, fc := range out.Facts {
			if v := strings.ToLower(strings.TrimSpace(fc.Value)); v != "" && strings.Contains(strings.ToLower(erased), v) {
				t.Fatalf("kept %q, which the erased text holds", fc.Value)
			}
		}
		fg, _ := summary.ForgetFact(s, "k", seq)
		_ = summary.SuppressForgotten(fg)
		for _, x := range fg.Forgotten {
			_ = x.In(narrative + erased)
		}
	})
}
