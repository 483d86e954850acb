package calib

import (
	"fmt"
	"hash/maphash"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/hashicorp/golang-lru/v2/simplelru"

	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/trimmer"
)

// bpeClasses are the classes whose BPE tokens are features of their own,
// in the order of the features from FeatBPE on: the scripts where a
// character's cost varies most from one character to the next (a Hangul
// syllable costs a tokenizer between two thirds of a token and two), so
// that counting characters cannot tell a cheap text from a dear one. The
// last BPE feature is the tokens of the rest of the text.
var bpeClasses = [...]text.Class{text.ClassHangul, text.ClassKana, text.ClassHan}

const numBPE = len(bpeClasses) + 1

// BPEMemo bounds the texts a BPE remembers the counts of; the least
// recently used is forgotten beyond it.
const BPEMemo = 1 << 15

// BPE counts, for the calibration's BPE features, the tokens a real
// byte-pair encoding (o200k_base, offline) spends on the Hangul, kana and
// Han of a text and on the rest of it: each class's runs, each with the
// space before it when there is one, are encoded together, a line break
// between two runs (its one token taken off again), so that the
// encoder's pieces stay as short as the runs; the rest is what encoding
// the whole text costs beyond them. A provider's tokenizer that is not
// o200k_base still finds a cheap syllable cheap more often than not, so
// the fit weighs these counts by how well they predict the provider's
// (their prior weight is 0). A text is encoded the first time it is
// priced (once more for its runs when it holds those scripts): the counts
// are memoised per text (by a 64-bit hash), at most BPEMemo of them. Safe for concurrent use;
// a nil *BPE gives no BPE features.
type BPE struct {
	est  trimmer.Estimator
	seed maphash.Seed

	mu   sync.Mutex
	memo *simplelru.LRU[uint64, [numBPE]int32]
}

// NewBPE returns a BPE counting with o200k_base (see
// trimmer.NewTiktokenEstimator for what loading it sets up).
func NewBPE() (*BPE, error) {
	est, err := trimmer.NewTiktokenEstimator(trimmer.EncodingO200kBase)
	if err != nil {
		return nil, fmt.Errorf("calib: BPE features: %w", err)
	}
	memo, err := simplelru.NewLRU[uint64, [numBPE]int32](BPEMemo, nil)
	if err != nil {
		return nil, fmt.Errorf("calib: BPE features: %w", err)
	}
	return &BPE{est: est, seed: maphash.MakeSeed(), memo: memo}, nil
}

// add adds the BPE features of s, whose tally is t, to x.
func (b *BPE) add(x *Vector, s string, t text.Tally) {
	if b == nil || s == "" {
		return
	}
	k := maphash.String(b.seed, s)
	b.mu.Lock()
	n, ok := b.memo.Get(k)
	b.mu.Unlock()
	if !ok {
		n = b.count(s, t)
		b.mu.Lock()
		b.memo.Add(k, n)
		b.mu.Unlock()
	}
	for i := range numBPE {
		x[FeatBPE+i] += float64(n[i])
	}
}

// count encodes s, and the runs of s of each of bpeClasses; the rest's
// tokens are the difference (at least 0).
func (b *BPE) count(s string, t text.Tally) [numBPE]int32 {
	var n [numBPE]int32
	whole := b.est.Estimate(s)
	cjk := false
	for _, c := range bpeClasses {
		cjk = cjk || t.Chars[c] > 0
	}
	if !cjk {
		n[numBPE-1] = int32(whole)
		return n
	}
	var runs [numBPE - 1]strings.Builder
	var seps [numBPE - 1]int
	cur, start := -1, 0 // the bpeClasses index of the run being read, and where it starts
	flush := func(end int) {
		if cur < 0 {
			return
		}
		if runs[cur].Len() > 0 {
			runs[cur].WriteByte('\n')
			seps[cur]++
		}
		if start > 0 && s[start-1] == ' ' {
			runs[cur].WriteByte(' ')
		}
		runs[cur].WriteString(s[start:end])
		cur = -1
	}
	for i := 0; i < len(s); {
		r, w := rune(s[i]), 1
		if r >= utf8.RuneSelf {
			r, w = utf8.DecodeRuneInString(s[i:])
		}
		idx := -1
		if r >= utf8.RuneSelf {
			c := text.ClassOf(r)
			for j, bc := range bpeClasses {
				if c == bc {
					idx = j
				}
			}
		}
		if idx != cur {
			flush(i)
			cur, start = idx, i
		}
		i += w
	}
	flush(len(s))
	rest := whole
	for i := range runs {
		n[i] = int32(max(0, b.est.Estimate(runs[i].String())-seps[i]))
		rest -= int(n[i])
	}
	n[numBPE-1] = int32(max(0, rest))
	return n
}
