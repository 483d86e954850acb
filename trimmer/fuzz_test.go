package trimmer

import (
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tmc/langchaingo/llms"
)

// fuzzMessages turns bytes into a message list covering every message form:
// value and pointer types, nil, complete tool groups, and loose tool calls
// and results drawn from a small id pool so that they sometimes match.
// Contents are unique so results can be mapped back to the input. A high
// nibble of 15 makes a long text with multi-byte characters, which tight
// budgets cut.
func fuzzMessages(data []byte) []llms.ChatMessage {
	var msgs []llms.ChatMessage
	for i, b := range data {
		hi := int(b >> 4)
		text := fmt.Sprintf("m%d %s", i, strings.Repeat("x", hi*3))
		if hi == 15 {
			text += strings.Repeat("é日x", 60)
		}
		pool := fmt.Sprint("c", hi%4)
		switch b % 12 {
		case 0:
			msgs = append(msgs, sys(text))
		case 1:
			msgs = append(msgs, user(text))
		case 2:
			msgs = append(msgs, ai(text))
		case 3:
			msgs = append(msgs, &llms.HumanChatMessage{Content: text})
		case 4: // complete group, results in reverse order
			ids := make([]string, 1+hi%3)
			for k := range ids {
				ids[k] = fmt.Sprintf("g%d-%d", i, k)
			}
			msgs = append(msgs, calls(text, ids...))
			for k := len(ids) - 1; k >= 0; k-- {
				msgs = append(msgs, result(ids[k], fmt.Sprint(text, "/", k)))
			}
		case 5:
			ids := []string{pool, fmt.Sprint("c", (hi+1)%4)}
			msgs = append(msgs, calls(text, ids[:1+hi%2]...))
		case 6:
			msgs = append(msgs, result(pool, text))
		case 7:
			if hi%2 == 0 {
				msgs = append(msgs, nil)
			} else {
				msgs = append(msgs, (*llms.AIChatMessage)(nil))
			}
		case 8:
			r := []string{"user", "system", "assistant", "tool", "narrator"}[hi%5]
			msgs = append(msgs, llms.GenericChatMessage{Role: r, Content: text})
		case 9:
			msgs = append(msgs, &llms.AIChatMessage{Content: text, ToolCalls: []llms.ToolCall{{ID: pool}}})
		case 10:
			msgs = append(msgs, &llms.ToolChatMessage{ID: pool, Content: text})
		case 11:
			msgs = append(msgs, llms.FunctionChatMessage{Name: "f", Content: text})
		}
	}
	return msgs
}

// fuzzSeed is one entry of the fuzz targets' seed corpus.
type fuzzSeed struct {
	data    []byte
	window  uint16
	reserve uint8
	prompt  string
}

// fuzzSeedCorpus is the seed corpus of FuzzTrim and FuzzValidate: every
// message form under a moderate, a zero and an unlimited window, and long
// questions, memory messages and tool groups under windows that drop them,
// cut them, or cannot even hold their overhead and markers
// (TestFuzzSeedsReachEveryStep checks that the corpus reaches each step).
func fuzzSeedCorpus() []fuzzSeed {
	forms := [][]byte{
		{},
		{1},
		{0, 0, 1, 2, 1},                  // systems, turn, question
		{0, 1, 4, 2, 1, 4, 0x14, 2},      // groups before and after the question
		{6, 1, 5, 6, 0x16, 2},            // orphans and loose calls
		{0x17, 1, 7, 3, 9, 10, 2},        // nil and pointer forms
		{8, 0x18, 0x28, 0x38, 0x48, 1},   // generic roles
		{1, 0, 4, 0x24, 11, 1, 0x44, 2},  // misplaced system
		{2, 2, 4, 0xf4, 2},               // no user message
		{1, 5, 0x15, 6, 0x16, 10, 9, 10}, // pool ids colliding
	}
	var seeds []fuzzSeed
	for i, d := range forms {
		seeds = append(seeds,
			fuzzSeed{d, uint16(40 + i*37), uint8(i * 3), "prompt"},
			fuzzSeed{d, 0, 0, ""},
			fuzzSeed{d, 65535, 0, ""})
	}
	long := [][]byte{
		{0, 1, 2, 0xf1},       // memory, a turn, a long question
		{0, 1, 0xf4},          // memory, a question, a long tool round after it
		{0, 2, 0xf4},          // no user message: a long tool group (results cut, calls kept)
		{2, 0x24, 0xf4},       // no user message: a long three-result group after a short one
		{0xf3},                // a long pointer-form question
		{0xf8, 0xfb},          // a long generic message, a long function result
		{0xf0, 0xf0, 1, 0xf1}, // long memory messages
	}
	for _, d := range long {
		for _, w := range []uint16{30, 60, 100, 150, 250, 400} {
			seeds = append(seeds, fuzzSeed{d, w, 0, ""})
		}
	}
	return seeds
}

func fuzzSeeds(f *testing.F) {
	for _, s := range fuzzSeedCorpus() {
		f.Add(s.data, s.window, s.reserve, s.prompt)
	}
}

// TestFuzzSeedsReachEveryStep: the seed corpus alone drives Trim through
// every step of its contract — a list kept whole, groups dropped, memory
// given up for fresh tool context, contents cut, and nothing fitting — so
// `go test -run Fuzz` covers them without fuzzing.
func TestFuzzSeedsReachEveryStep(t *testing.T) {
	var whole, dropped, memory, cut, over int
	for _, s := range fuzzSeedCorpus() {
		in := fuzzMessages(s.data)
		tr := New(int(s.window), int(s.reserve), lenEst)
		out, rep := tr.TrimReport(in, s.prompt, 0)
		checkInvariants(t, tr, in, out, rep)
		if rep.SystemRemoved > 0 && rep.Truncated == 0 && !rep.OverBudget {
			memory++
		}
		switch {
		case rep.OverBudget:
			over++
		case rep.Truncated > 0:
			cut++
		case rep.Removed > rep.Repaired:
			dropped++
		default:
			whole++
		}
	}
	if whole == 0 || dropped == 0 || memory == 0 || cut == 0 || over == 0 {
		t.Fatalf("seeds kept whole %d, dropped %d, gave up memory %d, cut %d, over budget %d: each must be reached",
			whole, dropped, memory, cut, over)
	}
}

// FuzzTrim checks the whole contract of TrimReport (checkInvariants) on
// any list and window, and that trimming neither modifies its input nor
// changes its own result when run again.
func FuzzTrim(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, window uint16, reserve uint8, prompt string) {
		if len(data) > 512 {
			return
		}
		in := fuzzMessages(data)
		tr := New(int(window), int(reserve), lenEst)
		out, rep := tr.TrimReport(in, prompt, 0)

		if !reflect.DeepEqual(in, fuzzMessages(data)) {
			t.Fatal("Trim modified its input")
		}
		checkInvariants(t, tr, in, out, rep)
		if Validate(in) == nil && rep.TokensBefore <= rep.Budget && !sameMessages(out, in) {
			t.Fatalf("valid list within budget changed: %q → %q", render(in), render(out))
		}
		// Trimming is idempotent: a second pass over the result changes nothing.
		if again := tr.Trim(out, prompt, 0); !sameMessages(again, out) {
			t.Fatalf("second trim changed the result: %q → %q", render(out), render(again))
		}
	})
}

func FuzzValidate(f *testing.F) {
	fuzzSeeds(f)
	f.Fuzz(func(t *testing.T, data []byte, _ uint16, _ uint8, _ string) {
		if len(data) > 512 {
			return
		}
		in := fuzzMessages(data)
		err := Validate(in)
		if err == nil {
			// A valid list survives an unlimited trim untouched.
			if out := New(1<<30, 0, lenEst).Trim(in, "", 0); !sameMessages(out, in) {
				t.Fatalf("valid list changed: %q → %q", render(in), render(out))
			}
			return
		}
		var ve *ValidationError
		if !errors.As(err, &ve) || ve.Index < 0 || ve.Index >= len(in) {
			t.Fatalf("Validate = %v", err)
		}
		if !errors.Is(err, ErrOrphanToolResult) && !errors.Is(err, ErrMissingToolResult) &&
			!errors.Is(err, ErrMisplacedSystem) && !errors.Is(err, ErrNilMessage) {
			t.Fatalf("Validate = %v: not a sentinel", err)
		}
		// Everything before the violation is a valid prefix, unless the
		// violation is a tool call whose results come after it.
		if !errors.Is(err, ErrMissingToolResult) {
			if perr := Validate(in[:ve.Index]); perr != nil {
				t.Fatalf("prefix before violation %v is invalid: %v", err, perr)
			}
		}
	})
}

func FuzzEstimator(f *testing.F) {
	for _, s := range []string{
		"", "a", "hello world", "你好世界", "😀🚀", "привет", "\xff\xfe", "\u200d",
		"abcd ДОМ 日本 👍", "<|endoftext|>", strings.Repeat("z", 2001), "\U00020000\uFF21\u3000",
	} {
		f.Add(s)
	}
	cached := NewEstimator()
	exact, err := NewTiktokenEstimator(EncodingCL100kBase)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string) {
		want := EstimateScript(text)
		switch {
		case text == "" && want != 0:
			t.Fatalf(`EstimateScript("") = %d`, want)
		case text != "" && (want < 1 || want > max(1, utf8.RuneCountInString(text))):
			t.Fatalf("EstimateScript(%q) = %d out of range", text, want)
		}
		for range 2 {
			if got := cached.Estimate(text); got != want {
				t.Fatalf("cached %d != uncached %d for %q", got, want, text)
			}
		}
		if n := exact.Estimate(text); n < 0 || (text == "") != (n == 0) {
			t.Fatalf("tiktoken Estimate(%q) = %d", text, n)
		}
	})
}
