package catalog

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/tmc/langchaingo/embeddings"
)

// Embedder turns texts into vectors. Its method set is langchaingo's
// embeddings.Embedder, so any langchaingo embedder plugs in (see
// NewEmbedder and WithEmbedder).
type Embedder interface {
	// EmbedDocuments returns one vector per text, in order.
	EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error)
	// EmbedQuery returns the vector of a search query.
	EmbedQuery(ctx context.Context, text string) ([]float32, error)
}

// NewEmbedder adapts a langchaingo embedding client (llms/openai,
// llms/googleai, llms/ollama, …, configured with its embedding model) to an
// Embedder that embeds every text byte for byte as the catalogue stores it:
// langchaingo's embeddings.NewEmbedder with new lines kept. Pass it to
// WithEmbedder with the model's name.
func NewEmbedder(client embeddings.EmbedderClient) (Embedder, error) {
	if client == nil {
		return nil, errors.New("catalog: nil embedding client")
	}
	e, err := embeddings.NewEmbedder(client, embeddings.WithStripNewLines(false))
	if err != nil {
		return nil, fmt.Errorf("catalog: embedder: %w", err)
	}
	return e, nil
}

// lexicalDims is the default dimension of the lexical embedder's vectors.
// On the LoCoMo search test, 512 dimensions lost several points of accuracy
// to hash collisions; 1024 is where the gain flattens.
const lexicalDims = 1024

// lexicalEmbedder is the offline default Embedder (see NewLexicalEmbedder).
type lexicalEmbedder struct {
	dims int
}

// NewLexicalEmbedder returns the offline default Embedder, with dims
// dimensions (1024 when dims <= 0). It is lexical, not semantic: it needs
// no model and no network, and finds a conversation only through the words
// it shares with the query — "refund" matches "refund" and "refunds", never
// "money back". Configure a model-backed embedder (NewEmbedder) for
// semantic search.
//
// A text becomes a bag of words (lower-cased, without English stop words
// and chat fillers, reduced by a light stemmer so that "paintings",
// "painted" and "painting" are one word), each weighted 1 + ln(count),
// hashed with FNV-1a into dims signed buckets and scaled to unit length.
// There is no corpus statistic: the same text always gives the same
// vector, on every machine, whatever else is indexed. Its model name,
// stored with each vector, is "strata-lexical-v1-<dims>". Search re-scores
// its candidates exactly from their stored texts, so hash collisions never
// make or reorder a match.
func NewLexicalEmbedder(dims int) Embedder {
	if dims <= 0 {
		dims = lexicalDims
	}
	return &lexicalEmbedder{dims: dims}
}

// model names the embedder and its parameters. Vectors of different models
// are never compared.
func (e *lexicalEmbedder) model() string { return fmt.Sprintf("strata-lexical-v1-%d", e.dims) }

func (e *lexicalEmbedder) EmbedDocuments(ctx context.Context, texts []string) ([][]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	out := make([][]float32, len(texts))
	for i, t := range texts {
		out[i] = e.embed(t)
	}
	return out, nil
}

func (e *lexicalEmbedder) EmbedQuery(ctx context.Context, text string) ([]float32, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return e.embed(text), nil
}

func (e *lexicalEmbedder) embed(text string) []float32 {
	vec := make([]float64, e.dims)
	for f, w := range termWeights(text) {
		h := fnv.New64a()
		_, _ = h.Write([]byte(f))
		sum := h.Sum64()
		idx := int(sum % uint64(e.dims))
		if sum>>63 == 1 {
			w = -w
		}
		vec[idx] += w
	}
	var norm float64
	for _, v := range vec {
		norm += v * v
	}
	out := make([]float32, e.dims)
	if norm == 0 {
		return out
	}
	norm = math.Sqrt(norm)
	for i, v := range vec {
		out[i] = float32(v / norm)
	}
	return out
}

// similarity returns the exact cosine similarity of the bags of words of
// query and text, weighted as in the vectors but without hashing: the
// similarity the vectors approximate, free of hash collisions.
func (e *lexicalEmbedder) similarity(query, text string) float64 {
	a, b := termWeights(query), termWeights(text)
	var dot, na, nb float64
	for t, w := range a {
		na += w * w
		dot += w * b[t]
	}
	for _, w := range b {
		nb += w * w
	}
	if na == 0 || nb == 0 {
		return 0
	}
	return dot / math.Sqrt(na*nb)
}

// textScorer is implemented by embedders whose similarity can be computed
// exactly from the texts, as the lexical embedder's can: Search re-scores
// the index's candidates with similarity(query, stored text).
type textScorer interface {
	similarity(query, text string) float64
}

func termWeights(text string) map[string]float64 {
	counts := map[string]float64{}
	for _, t := range terms(text) {
		counts[t]++
	}
	for t, n := range counts {
		counts[t] = 1 + math.Log(n)
	}
	return counts
}

// terms returns the content words of text in order, as the lexical
// embedder and the title fingerprint see them: lower-cased runs of letters
// and digits, possessive "'s" removed, stop words, chat fillers,
// contractions and one-letter words dropped, each reduced by a light
// English stemmer.
func terms(text string) []string {
	var out []string
	eachTerm(text, func(_, term string) { out = append(out, term) })
	return out
}

// eachTerm calls fn with every content word of text: its lower-cased
// surface form and its term (stem).
func eachTerm(text string, fn func(surface, term string)) {
	for _, w := range strings.FieldsFunc(strings.ToLower(text), func(r rune) bool {
		return !unicode.IsLetter(r) && !unicode.IsDigit(r) && r != '\'' && r != '’'
	}) {
		w = strings.Trim(w, "'’")
		w = strings.TrimSuffix(strings.TrimSuffix(w, "'s"), "’s")
		if strings.ContainsAny(w, "'’") { // don't, I'm, we've: contractions are fillers
			continue
		}
		if utf8.RuneCountInString(w) < 2 || stopWords[w] {
			continue
		}
		t := stem(w)
		if utf8.RuneCountInString(t) < 2 || stopWords[t] {
			continue
		}
		fn(w, t)
	}
}

// stem is a deliberately light suffix stripper: plurals first, then -ing
// and -ed (undoubling a final consonant left behind: "stopped" →
// "stop"), then a final silent "e", so that "love", "loves", "loved" and
// "loving" all become "lov".
func stem(w string) string {
	if !isASCII(w) {
		return w
	}
	n := len(w)
	switch {
	case n > 4 && strings.HasSuffix(w, "ies"):
		w = w[:n-3] + "y"
	case n > 4 && strings.HasSuffix(w, "sses"):
		w = w[:n-2]
	case n > 4 && strings.HasSuffix(w, "es") && strings.ContainsRune("sxz", rune(w[n-3])):
		w = w[:n-2]
	case n > 3 && strings.HasSuffix(w, "s") && !strings.HasSuffix(w, "ss") &&
		!strings.HasSuffix(w, "us") && !strings.HasSuffix(w, "is"):
		w = w[:n-1]
	}
	n = len(w)
	switch {
	case n > 5 && strings.HasSuffix(w, "ing"):
		w = undouble(w[:n-3])
	case n > 4 && strings.HasSuffix(w, "ied"):
		w = w[:n-3] + "y"
	case n > 4 && strings.HasSuffix(w, "ed") && !strings.HasSuffix(w, "eed"):
		w = undouble(w[:n-2])
	}
	if n = len(w); n > 3 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	return w
}

func undouble(w string) string {
	n := len(w)
	if n >= 3 && w[n-1] == w[n-2] && !strings.ContainsRune("aeiouslz", rune(w[n-1])) {
		return w[:n-1]
	}
	return w
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return false
		}
	}
	return true
}

// stopWords are English function words, chat fillers and the words every
// catalog text or search request carries ("conversation", "chat", "talk",
// "user", "summary", …): none says what a conversation is about.
var stopWords = func() map[string]bool {
	const list = `a about above after again against ago all almost along already also although always am among an and
another any anybody anyone anything anyway anyways are aren around as at away back be became because become been before
being below beside besides best better between both but by can cannot could did do does doing done down during each
either else enough especially even ever every everybody everyone everything few first for from further get gets getting
got gotten had has have having he her here hers herself him himself his how however i if in into is it its itself just
last least less let lets like likely lot lots made make makes making many may maybe me might mine more most much must my
myself near need needs neither never new next no nobody none nor not nothing now of off often oh ok okay on once one ones
only onto or other others otherwise our ours ourselves out over own per perhaps please quite rather really same say says
said see seem seems seen several shall she should since so some somebody someone something sometimes somewhat soon still
such sure than thank thanks that the their theirs them themselves then there these they thing things this those though
through thus to too toward towards under until up upon us use used using very via was way ways we well were what whatever
when whenever where wherever whether which while who whoever whole whom whose why will with within without would yeah yes
yet you your yours yourself yourselves hi hello hey hmm um uh wow lol haha yep nope cool great awesome amazing nice good
glad totally definitely absolutely super pretty kinda sorta gonna wanna gotta ya ye yup alright right sounds sound know
think thought feel felt want wanted go going went gone come came take took tell told keep kept give gave look looks
looking goes let's stuff truly actually literally able conversation chat talk discuss discussion title fact summary
mention remember switch user assistant keyword`
	m := make(map[string]bool)
	for _, w := range strings.Fields(list) {
		m[w] = true
		m[stem(w)] = true // so that inflected forms ("titles") are caught after stemming
	}
	return m
}()
