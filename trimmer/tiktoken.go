package trimmer

import (
	"errors"
	"fmt"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/pkoukk/tiktoken-go"
	tiktoken_loader "github.com/pkoukk/tiktoken-go-loader"
)

// Tiktoken encodings supported by NewTiktokenEstimator. Their BPE files are
// embedded in the binary by github.com/pkoukk/tiktoken-go-loader.
const (
	EncodingCL100kBase = "cl100k_base" // GPT-4, GPT-3.5-turbo, text-embedding-3
	EncodingO200kBase  = "o200k_base"  // GPT-4o, GPT-4.1, GPT-5, o-series
)

// ErrUnsupportedEncoding is returned by NewTiktokenEstimator for an encoding
// other than EncodingCL100kBase and EncodingO200kBase.
var ErrUnsupportedEncoding = errors.New("trimmer: unsupported tiktoken encoding")

var (
	loaderOnce sync.Once

	encodersMu sync.Mutex
	encoders   = map[string]*tiktoken.Tiktoken{}
)

// NewTiktokenEstimator returns an exact token counter for encoding
// ("cl100k_base" or "o200k_base"). It never touches the network.
//
// The first call installs tiktoken-go-loader's offline BPE loader with
// tiktoken.SetBpeLoader. That setting is process-global: it also makes
// langchaingo's llms.CountTokens and any other tiktoken-go user in the
// binary read the embedded files instead of downloading them. Because
// tiktoken-go stores the loader without synchronisation, make the first call
// during start-up, before other goroutines use tiktoken-go.
//
// Building an encoding costs tens of milliseconds (more for o200k_base), so
// the encoder is built once per encoding and shared; Estimate only encodes.
// Counts are not memoised: wrap the estimator in NewCachedEstimator (New
// does that for you) when the same texts are counted repeatedly.
func NewTiktokenEstimator(encoding string) (Estimator, error) {
	if encoding != EncodingCL100kBase && encoding != EncodingO200kBase {
		return nil, fmt.Errorf("%w: %q", ErrUnsupportedEncoding, encoding)
	}
	enc, err := sharedEncoder(encoding)
	if err != nil {
		return nil, fmt.Errorf("trimmer: load tiktoken encoding %q: %w", encoding, err)
	}
	return tiktokenEstimator{enc: enc}, nil
}

func sharedEncoder(encoding string) (*tiktoken.Tiktoken, error) {
	loaderOnce.Do(func() { tiktoken.SetBpeLoader(tiktoken_loader.NewOfflineLoader()) })
	encodersMu.Lock()
	defer encodersMu.Unlock()
	if enc, ok := encoders[encoding]; ok {
		return enc, nil
	}
	enc, err := tiktoken.GetEncoding(encoding)
	if err != nil {
		return nil, err
	}
	encoders[encoding] = enc
	return enc, nil
}

type tiktokenEstimator struct {
	enc *tiktoken.Tiktoken
}

// tiktokenChunk bounds the bytes passed to one encode call (see Estimate).
const tiktokenChunk = 1024

// Estimate counts the tokens of text, treating special-token spellings such
// as "<|endoftext|>" as ordinary text (they are user data here).
//
// tiktoken-go's byte-pair merge is quadratic in the length of a
// pre-tokenizer piece (a 20 000-character run without spaces takes seconds),
// so long texts are encoded in slices of about tiktokenChunk bytes. Slices
// end right before a space that follows a non-space character, where the
// cl100k and o200k pre-tokenizers always start a new piece, so the count
// stays exact. Only a run of more than tiktokenChunk bytes without such a
// space (base64, minified data) is cut elsewhere, which can over-count by
// about one token per cut.
//
// Should the encoder ever panic on odd input, the script estimate is
// returned instead: a token count is not worth crashing a chat turn for.
func (e tiktokenEstimator) Estimate(text string) (n int) {
	if text == "" {
		return 0
	}
	defer func() {
		if recover() != nil {
			n = EstimateScript(text)
		}
	}()
	for rest := text; rest != ""; {
		chunk := nextChunk(rest, tiktokenChunk)
		n += len(e.enc.EncodeOrdinary(chunk))
		rest = rest[len(chunk):]
	}
	return n
}

// nextChunk returns the longest prefix of text of at most size bytes that
// ends before a space following a non-space character, or, when there is
// none, a prefix cut at a rune boundary.
func nextChunk(text string, size int) string {
	if len(text) <= size {
		return text
	}
	for i := size; i > 0; i-- {
		if text[i] == ' ' {
			if r, _ := utf8.DecodeLastRuneInString(text[:i]); !isSpace(r) {
				return text[:i]
			}
		}
	}
	i := size
	for i > 1 && !utf8.RuneStart(text[i]) {
		i--
	}
	return text[:i]
}

// isSpace matches the pre-tokenizers' \s (.NET: [\f\n\r\t\v\x85\p{Z}]).
func isSpace(r rune) bool { return unicode.IsSpace(r) || unicode.Is(unicode.Z, r) }

// modelEncodings maps model-name prefixes to encodings. Order matters:
// "gpt-4o" must be tried before "gpt-4".
var modelEncodings = []struct{ prefix, encoding string }{
	{"gpt-5", EncodingO200kBase},
	{"gpt-4.5", EncodingO200kBase},
	{"gpt-4.1", EncodingO200kBase},
	{"gpt-4o", EncodingO200kBase},
	{"chatgpt-4o", EncodingO200kBase},
	{"o1", EncodingO200kBase},
	{"o3", EncodingO200kBase},
	{"o4", EncodingO200kBase},
	{"gpt-4", EncodingCL100kBase},
	{"gpt-3.5", EncodingCL100kBase},
	{"gpt-35", EncodingCL100kBase}, // Azure deployment spelling
	{"text-embedding-3", EncodingCL100kBase},
	{"text-embedding-ada-002", EncodingCL100kBase},
}

// TiktokenEncodingForModel returns the supported encoding an OpenAI model
// uses ("o200k_base" for gpt-4o, gpt-4.1, gpt-5 and the o-series,
// "cl100k_base" for gpt-4 and gpt-3.5), or "" when the model is unknown or
// uses another tokenizer (Gemini, Claude, Llama, …); use NewEstimator then.
// A provider prefix ("openai/gpt-4o") and a fine-tune prefix ("ft:") are
// ignored, and the match is case-insensitive.
func TiktokenEncodingForModel(model string) string {
	m := strings.ToLower(strings.TrimSpace(model))
	if i := strings.LastIndexByte(m, '/'); i >= 0 {
		m = m[i+1:]
	}
	m = strings.TrimPrefix(m, "ft:")
	for _, me := range modelEncodings {
		if hasModelPrefix(m, me.prefix) {
			return me.encoding
		}
	}
	return ""
}

// hasModelPrefix reports whether model is prefix itself or prefix followed by
// a version separator, so "o1-mini" matches "o1" but "o1x" does not.
func hasModelPrefix(model, prefix string) bool {
	rest, ok := strings.CutPrefix(model, prefix)
	return ok && (rest == "" || strings.ContainsRune("-.:@", rune(rest[0])))
}
