package summary_test

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/strata-go/strata/summary"
)

// traced is a summary whose facts and sentences all carry provenance.
func traced(narrative []string, sentSrc [][]int64, facts []summary.Fact, upTo int64) summary.Summary {
	s := summary.Summary{Narrative: strings.Join(narrative, " "), Facts: facts, UpToSeq: upTo}
	for i, sent := range narrative {
		s.SentenceSources = append(s.SentenceSources, summary.SentenceSource{Digest: summary.SentenceDigest(sent), Seqs: sentSrc[i]})
	}
	return s
}

// Erase removes by provenance what only erased messages support, keeps
// what a surviving message still supports (however the text relates to
// the erased messages), and clears superseded values.
func TestEraseByProvenance(t *testing.T) {
	s := traced(
		[]string{"User: I ordered a kettle.", "User: My email is ann@example.com.", "Assistant: Order ORD-5512 shipped."},
		[][]int64{{2}, {4}, {6, 8}},
		[]summary.Fact{
			{Key: "email", Value: "ann@example.com", Sources: []int64{4}},
			{Key: "order_id", Value: "ORD-5512", Sources: []int64{2, 6}},
			{Key: "phone", Value: "555-0100", Previous: "555-0199", Sources: []int64{3}},
		}, 20)
	out := summary.Erase(s, []int64{4, 6})
	var keys []string
	for _, f := range out.Facts {
		keys = append(keys, f.Key)
	}
	if got := strings.Join(keys, ","); got != "order_id,phone" {
		t.Errorf("facts left %q, want order_id,phone (order_id is still stated by message 2)", got)
	}
	if out.Facts[1].Previous != "" || len(out.Facts[0].Sources) != 1 || out.Facts[0].Sources[0] != 2 {
		t.Errorf("provenance not narrowed or superseded value kept: %+v", out.Facts)
	}
	if want := "User: I ordered a kettle. Assistant: Order ORD-5512 shipped."; out.Narrative != want {
		t.Errorf("narrative %q, want %q", out.Narrative, want)
	}
	if !summary.Traced(&out) || out.UpToSeq != 20 {
		t.Errorf("erased summary untraced or cursor moved: %+v", out)
	}
	if again := summary.Erase(out, []int64{2, 3, 8}); !again.IsEmpty() {
		t.Errorf("erasing the last supporters left %+v", again)
	}
}

// An erasure of messages the summary does not cover changes nothing; one
// that touches an untraced summary (an LLM's) empties it, whatever the
// summarizer wrote, keeping the cursor and the Forgotten list.
func TestEraseUntraced(t *testing.T) {
	s := summary.Summary{Narrative: "The card is 4111111111111111.", UpToSeq: 10,
		Facts:     []summary.Fact{{Key: "card", Value: "4111111111111111"}, {Key: "city", Value: "Oslo", Sources: []int64{1}}},
		Forgotten: []summary.Forgotten{{Key: "x", Digest: strings.Repeat("a", 32), Words: 1}}}
	if out := summary.Erase(s, []int64{11}); out.Narrative != s.Narrative || len(out.Facts) != 2 {
		t.Fatalf("an erasure past the cursor changed the summary: %+v", out)
	}
	out := summary.Erase(s, []int64{3})
	if !out.IsEmpty() || out.UpToSeq != 10 || len(out.Forgotten) != 1 {
		t.Fatalf("untraced summary after erasure: %+v", out)
	}
}

// ForgetFact keeps keyed digests, never the value, and SuppressForgotten
// keeps the value out of later results — whitespace, case and digit
// separators rewritten, or cut by the ledger — until Restated lets it go.
func TestForgetFactSuppression(t *testing.T) {
	s := summary.Summary{Narrative: "Hi. Mail them at Bo@x.org today. Bye.", Facts: []summary.Fact{{Key: "email", Value: "bo@x.org", Previous: "old@x.org"}, {Key: "city", Value: "Oslo"}}}
	out, ok, err := summary.ForgetFact(s, "Email", 10)
	if err != nil || !ok || len(out.Facts) != 1 || out.Narrative != "Hi. Bye." || len(out.Forgotten) != 2 || len(out.ForgetKey) != 32 {
		t.Fatalf("ForgetFact: %+v, %v, %v", out, ok, err)
	}
	raw, _ := json.Marshal(out.Forgotten)
	if strings.Contains(string(raw), "x.org") || strings.Contains(string(raw), "roll") {
		t.Fatalf("forgotten entries hold the value or a rolling hash: %s", raw)
	}
	for _, f := range out.Forgotten {
		if f.Seq != 10 || !f.Valid() {
			t.Fatalf("forgotten %+v", f)
		}
	}
	if _, ok, _ := summary.ForgetFact(out, "email", 11); ok {
		t.Fatal("a forgotten fact was found again")
	}
	next := out
	next.Facts = append(next.Facts, summary.Fact{Key: "contact", Value: "BO@X.ORG"})
	next.Narrative = "Write to bo@x.org. Or old@x.org. Fine."
	if got := summary.SuppressForgotten(next); len(got.Facts) != 1 || got.Narrative != "Fine." {
		t.Fatalf("SuppressForgotten: %+v", got)
	}
	if left := summary.Restated(out, []string{"my mail is bo@x.org"}, []int64{9}); len(left) != 2 {
		t.Fatalf("a statement before the erasure restated it: %d left", len(left))
	}
	if left := summary.Restated(out, []string{"my mail is bo@x.org"}, []int64{12}); len(left) != 1 {
		t.Fatalf("a statement after the erasure did not restate it: %d left", len(left))
	}
}

// The second line: a forgotten value comes back neither with its digits
// regrouped, nor with its white space or case changed, nor cut by the
// ledger with its narrative sentence whole.
func TestForgetFactRewrittenValues(t *testing.T) {
	long := "prefers deliveries to the side door between nine and eleven in the morning on weekdays because the front porch is being rebuilt all summer"
	cut := long[:100] + "…"
	s := summary.Summary{Narrative: "User: My card is 4111 1111 1111 1111. User: I am allergic to penicillin  and  shellfish. User: " + long + ". Fine.",
		Facts: []summary.Fact{{Key: "card", Value: "4111 1111 1111 1111"}, {Key: "allergy", Value: "allergic to penicillin  and  shellfish"}, {Key: "preference", Value: cut}}}
	var err error
	for _, k := range []string{"card", "allergy", "preference"} {
		if s, _, err = summary.ForgetFact(s, k, 5); err != nil {
			t.Fatal(err)
		}
	}
	if s.Narrative != "Fine." {
		t.Fatalf("narrative %q", s.Narrative)
	}
	later := s
	later.Facts = []summary.Fact{{Key: "card", Value: "4111111111111111"}, {Key: "card2", Value: "4111-1111-1111-1111"},
		{Key: "allergy", Value: "Allergic To Penicillin And Shellfish"}, {Key: "preference", Value: long}, {Key: "city", Value: "Oslo"}}
	later.Narrative = "The card 4111111111111111 is on file. " + long + ". She is allergic to  PENICILLIN and\tshellfish. Oslo."
	got := summary.SuppressForgotten(later)
	if len(got.Facts) != 1 || got.Facts[0].Key != "city" {
		t.Errorf("facts left %+v", got.Facts)
	}
	if got.Narrative != "Oslo." {
		t.Errorf("narrative left %q", got.Narrative)
	}
}

// The Forgotten list is bounded: ForgetFact past DefaultMaxForgotten
// fails and changes nothing.
func TestForgetFactBound(t *testing.T) {
	s := summary.Summary{Facts: []summary.Fact{{Key: "k", Value: "v"}}}
	for range summary.DefaultMaxForgotten {
		s.Forgotten = append(s.Forgotten, summary.Forgotten{Digest: strings.Repeat("b", 32), Words: 1})
	}
	if _, ok, err := summary.ForgetFact(s, "k", 1); ok || err == nil {
		t.Fatalf("ForgetFact past the bound: %v, %v", ok, err)
	}
}

// FuzzErase: erasure never panics, removes every fact only erased
// messages support and keeps the others.
func FuzzErase(f *testing.F) {
	f.Add("Email a@b.co now. Then stop.", "a@b.co", "my a@b.co", int64(3))
	f.Add("…!? ", "", "", int64(0))
	f.Fuzz(func(t *testing.T, narrative, value, erased string, seq int64) {
		s := summary.Summary{Narrative: narrative, UpToSeq: seq + 1, Facts: []summary.Fact{{Key: "k", Value: value, Sources: []int64{seq}}, {Key: "j", Value: "v", Sources: []int64{seq + 1}}}}
		out := summary.Erase(s, []int64{seq})
		for _, fc := range out.Facts {
			if fc.Key == "k" {
				t.Fatalf("kept %+v, which only the erased message supports", fc)
			}
		}
		fg, _, _ := summary.ForgetFact(s, "k", seq)
		_ = summary.SuppressForgotten(fg)
		fg.Narrative = narrative + erased
		_ = summary.SuppressForgotten(fg)
	})
}

// BenchmarkSuppressForgottenFull: a fold's suppression with a full
// Forgotten list (DefaultMaxForgotten entries) over a ledger and a
// narrative of the default sizes.
func BenchmarkSuppressForgottenFull(b *testing.B) {
	s := summary.Summary{ForgetKey: []byte("0123456789abcdef0123456789abcdef")}
	for i := range summary.DefaultMaxForgotten {
		s.Forgotten = append(s.Forgotten, summary.Forgotten{Digest: strings.Repeat("c", 31) + string("0123456789abcdef"[i%16]), Words: 1 + i%32,
			Digits: strings.Repeat("d", 32), DigitCount: 6 + i%10})
	}
	var narr []string
	for i := range 60 {
		s.Facts = append(s.Facts, summary.Fact{Key: "k", Value: "value number 4111 1111 " + strings.Repeat("x", i%9)})
		narr = append(narr, "User: the parcel 5521 arrived damaged on Tuesday and I would like a refund please.")
	}
	s.Narrative = strings.Join(narr, " ")
	b.ResetTimer()
	for range b.N {
		_ = summary.SuppressForgotten(s)
	}
}

// FuzzForgotten: a forgotten value never panics the matcher, is always
// recognised again in a later fact and sentence however its white space
// and case change, and its entry is well formed.
func FuzzForgotten(f *testing.F) {
	f.Add("4111 1111 1111 1111", "card 4111111111111111 on file")
	f.Add("allergic to penicillin  and  shellfish", "…")
	f.Add("prefers the side door between nine and…", "x")
	f.Fuzz(func(t *testing.T, value, text string) {
		s := summary.Summary{Facts: []summary.Fact{{Key: "k", Value: value}}, Narrative: text}
		out, ok, err := summary.ForgetFact(s, "k", 1)
		if err != nil || !ok {
			t.Fatalf("ForgetFact: %v, %v", ok, err)
		}
		for _, fg := range out.Forgotten {
			if !fg.Valid() {
				t.Fatalf("invalid entry %+v", fg)
			}
		}
		if len(out.Forgotten) == 0 {
			return // a value without words
		}
		again := out
		again.Facts = []summary.Fact{{Key: "j", Value: strings.ToUpper(strings.Join(strings.Fields(value), "\t "))}}
		again.Narrative = "It was " + value + " then. " + text
		got := summary.SuppressForgotten(again)
		// The matcher compares lower-cased text, so this is the exact test of
		// a value that survives upper-casing (strings.EqualFold folds differently).
		//lint:ignore SA6005 the comparison is the matcher's own, not a case-insensitive equality
		if strings.ToLower(value) == strings.ToLower(strings.ToUpper(value)) && len(got.Facts) != 0 {
			t.Fatalf("the forgotten %q came back as %+v", value, got.Facts)
		}
		// A value holding a sentence's end is split with its sentence.
		if !strings.ContainsAny(value, ".!?…。！？") && strings.Contains(got.Narrative, "It was "+value) {
			t.Fatalf("the forgotten %q came back in %q", value, got.Narrative)
		}
	})
}

// BenchmarkRestatedCrafted: a fold's check of a 32 KB user message
// against DefaultMaxForgotten crafted entries of every word and digit
// length (the worst a list can cost).
func BenchmarkRestatedCrafted(b *testing.B) {
	s := summary.Summary{ForgetKey: []byte("0123456789abcdef0123456789abcdef")}
	for i := range summary.DefaultMaxForgotten {
		s.Forgotten = append(s.Forgotten, summary.Forgotten{Digest: fmt.Sprintf("%032x", i), Words: 1 + i%32,
			Digits: fmt.Sprintf("%032x", i+1), DigitCount: 6 + i%27})
	}
	msg := strings.Repeat("order 4111 1111 1111 1111 arrived ", 1000)[:32<<10]
	b.ResetTimer()
	for range b.N {
		_ = summary.Restated(s, []string{msg}, []int64{2})
	}
}
