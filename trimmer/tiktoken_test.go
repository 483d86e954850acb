package trimmer

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

// networkAttempts counts HTTP requests made through the default transport
// during the tests; the tiktoken estimator must make none.
var networkAttempts atomic.Int64

type noNetwork struct{}

func (noNetwork) RoundTrip(r *http.Request) (*http.Response, error) {
	networkAttempts.Add(1)
	return nil, fmt.Errorf("network disabled in tests: %s", r.URL)
}

func TestMain(m *testing.M) {
	// tiktoken-go's default loader downloads BPE files with http.Get and
	// caches them on disk; point both at dead ends so only the embedded
	// offline files can work.
	http.DefaultTransport = noNetwork{}
	dir, err := os.MkdirTemp("", "tiktoken-cache")
	if err != nil {
		panic(err)
	}
	os.Setenv("TIKTOKEN_CACHE_DIR", dir)
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestTiktokenEstimatorExactCounts(t *testing.T) {
	tests := []struct {
		encoding string
		text     string
		want     int
	}{
		{EncodingCL100kBase, "", 0},
		{EncodingCL100kBase, "hello world", 2},
		{EncodingCL100kBase, "Hello, world!", 4},
		{EncodingCL100kBase, "<|endoftext|>", 7}, // special token spelled in user text counts as text
		{EncodingO200kBase, "hello world", 2},
		{EncodingO200kBase, "", 0},
	}
	for _, tc := range tests {
		t.Run(tc.encoding+"/"+tc.text, func(t *testing.T) {
			est, err := NewTiktokenEstimator(tc.encoding)
			if err != nil {
				t.Fatal(err)
			}
			if got := est.Estimate(tc.text); got != tc.want {
				t.Fatalf("Estimate(%q) = %d, want %d", tc.text, got, tc.want)
			}
		})
	}
	if n := networkAttempts.Load(); n != 0 {
		t.Fatalf("%d network requests", n)
	}
}

func TestTiktokenEstimatorUnsupported(t *testing.T) {
	for _, enc := range []string{"", "gpt2", "p50k_base", "CL100K_BASE"} {
		if _, err := NewTiktokenEstimator(enc); !errors.Is(err, ErrUnsupportedEncoding) {
			t.Errorf("NewTiktokenEstimator(%q) error = %v, want ErrUnsupportedEncoding", enc, err)
		}
	}
}

func TestTiktokenEstimatorSharedAndConcurrent(t *testing.T) {
	a, err := NewTiktokenEstimator(EncodingCL100kBase)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := NewTiktokenEstimator(EncodingCL100kBase)
	if a.(tiktokenEstimator).enc != b.(tiktokenEstimator).enc {
		t.Fatal("encoder rebuilt for the same encoding")
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 200 {
				if got := a.Estimate("hello world"); got != 2 {
					t.Errorf("Estimate = %d", got)
					return
				}
			}
		})
	}
	wg.Wait()
}

func TestTiktokenWithTrimmer(t *testing.T) {
	est, err := NewTiktokenEstimator(EncodingCL100kBase)
	if err != nil {
		t.Fatal(err)
	}
	tr := New(1000, 0, est)
	if got, want := tr.Cost([]llms.ChatMessage{user("hello world")}), 2+MessageOverheadTokens; got != want {
		t.Fatalf("Cost = %d, want %d", got, want)
	}
}

func TestTiktokenEncodingForModel(t *testing.T) {
	tests := map[string]string{
		"gpt-4o":                 EncodingO200kBase,
		"gpt-4o-mini":            EncodingO200kBase,
		"GPT-4o-2024-05-13":      EncodingO200kBase,
		"openai/gpt-4.1-mini":    EncodingO200kBase,
		"gpt-4.5-preview":        EncodingO200kBase,
		"gpt-5":                  EncodingO200kBase,
		"o1-mini":                EncodingO200kBase,
		"o3":                     EncodingO200kBase,
		"ft:gpt-4o-mini:org::id": EncodingO200kBase,
		"gpt-4":                  EncodingCL100kBase,
		"gpt-4-turbo":            EncodingCL100kBase,
		"gpt-4-32k":              EncodingCL100kBase,
		"gpt-3.5-turbo":          EncodingCL100kBase,
		"gpt-35-turbo":           EncodingCL100kBase,
		"text-embedding-3-small": EncodingCL100kBase,
		"text-embedding-ada-002": EncodingCL100kBase,
		"gemini-2.5-flash":       "",
		"claude-sonnet-4":        "",
		"text-davinci-003":       "", // p50k: not supported
		"o1x":                    "",
		"":                       "",
	}
	for model, want := range tests {
		if got := TiktokenEncodingForModel(model); got != want {
			t.Errorf("TiktokenEncodingForModel(%q) = %q, want %q", model, got, want)
		}
	}
}

// Long texts are encoded in slices cut where a new pre-tokenizer piece starts
// anyway, so the count equals a single encode of the whole text.
func TestTiktokenEstimatorChunkingIsExact(t *testing.T) {
	var b strings.Builder
	words := []string{"The", "quick", "brown", "fox", "jumps", "over", "the", "lazy", "dog", "naïve", "café", "日本語", "😀", "1234567", "it's", "don't", "a\tb", "x\u00a0y", "(yes)", "end.", "\n", "\r\n", "  ", "!!!", "{\"k\": [1, 2]}"}
	for i := 0; b.Len() < 40_000; i++ {
		b.WriteString(words[(i*7+i/3)%len(words)])
		if i%5 != 4 {
			b.WriteByte(' ')
		}
	}
	text := b.String()
	for _, name := range []string{EncodingCL100kBase, EncodingO200kBase} {
		est, err := NewTiktokenEstimator(name)
		if err != nil {
			t.Fatal(err)
		}
		want := len(est.(tiktokenEstimator).enc.EncodeOrdinary(text))
		if got := est.Estimate(text); got != want {
			t.Errorf("%s: chunked count %d, whole-text count %d", name, got, want)
		}
	}
}

// A long run without spaces is cut into slices: the cost stays linear and
// the count close to exact.
func TestTiktokenEstimatorLongRun(t *testing.T) {
	est, err := NewTiktokenEstimator(EncodingCL100kBase)
	if err != nil {
		t.Fatal(err)
	}
	run := strings.Repeat("z", 5000)
	want := len(est.(tiktokenEstimator).enc.EncodeOrdinary(run))
	if got := est.Estimate(run); got < want || got > want+want/50 {
		t.Errorf("Estimate = %d, whole-run count %d", got, want)
	}
	// Slicing keeps this linear (unsliced it takes minutes); the cost is
	// measured in BenchmarkEstimator, not asserted here.
	if n := est.Estimate(strings.Repeat("\xff", 50_000)); n <= 0 {
		t.Errorf("Estimate = %d", n)
	}
}

func TestNextChunk(t *testing.T) {
	tests := []struct {
		text string
		size int
		want string
	}{
		{"short", 10, "short"},
		{"hello world again", 12, "hello world"},
		{"hello  world", 8, "hello"},    // not inside a run of spaces
		{"ab\u00a0 cd", 5, "ab\u00a0 "}, // NBSP is a space: no piece start, so a plain cut
		{"zzzzzzzzzz", 4, "zzzz"},
		{"ééééé", 5, "éé"}, // rune boundary
	}
	for _, tc := range tests {
		if got := nextChunk(tc.text, tc.size); got != tc.want {
			t.Errorf("nextChunk(%q, %d) = %q, want %q", tc.text, tc.size, got, tc.want)
		}
	}
}
