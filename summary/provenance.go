package summary

import (
	"crypto/sha256"
	"encoding/hex"
	"slices"
	"strings"
	"unicode"
)

// SentenceDigest names a narrative sentence in SentenceSources: a short
// hex SHA-256 of the sentence with its white space folded.
func SentenceDigest(sentence string) string {
	if !spaceFolded(sentence) {
		sentence = strings.Join(strings.Fields(sentence), " ")
	}
	h := sha256.Sum256([]byte(sentence))
	return hex.EncodeToString(h[:12])
}

// spaceFolded reports whether s is its own white space folded,
// strings.Join(strings.Fields(s), " "): no white space but single
// spaces between non-space characters.
func spaceFolded(s string) bool {
	prev := ' ' // a space at the start is not folded
	for _, r := range s {
		if r == ' ' && prev == ' ' || r != ' ' && unicode.IsSpace(r) {
			return false
		}
		prev = r
	}
	return prev != ' ' || s == ""
}

// unionSources is the provenance of a value two origins state: the union
// of a and b, nil (unknown) when either is unknown.
func unionSources(a, b []int64) []int64 {
	if a == nil || b == nil {
		return nil
	}
	out := append(slices.Clone(a), b...)
	slices.Sort(out)
	return slices.Compact(out)
}

// withoutSeqs is src without the sequence numbers in erased (sorted).
func withoutSeqs(src, erased []int64) []int64 {
	out := make([]int64, 0, len(src))
	for _, q := range src {
		if _, found := slices.BinarySearch(erased, q); !found {
			out = append(out, q)
		}
	}
	return out
}

// sentenceSources returns the entries of src naming a sentence of
// narrative, each once (their Seqs merged), in narrative order.
func sentenceSources(narrative string, src []SentenceSource) []SentenceSource {
	if len(src) == 0 {
		return nil
	}
	by := make(map[string][]int64, len(src))
	for _, s := range src {
		if old, ok := by[s.Digest]; ok {
			by[s.Digest] = unionSources(old, s.Seqs)
		} else {
			by[s.Digest] = s.Seqs
		}
	}
	var out []SentenceSource
	seen := map[string]bool{}
	for _, sent := range sentences(narrative) {
		d := SentenceDigest(sent)
		if seqs, ok := by[d]; ok && !seen[d] && len(seqs) > 0 {
			seen[d] = true
			out = append(out, SentenceSource{Digest: d, Seqs: slices.Clone(seqs)})
		}
	}
	return out
}

// Traced reports whether every fact and narrative sentence of s has exact
// provenance (Fact.Sources, SentenceSources): whether Erase can remove
// what erased messages alone support and keep the rest.
func Traced(s *Summary) bool {
	if s == nil {
		return true
	}
	for _, f := range s.Facts {
		if f.Sources == nil {
			return false
		}
	}
	known := make(map[string]bool, len(s.SentenceSources))
	for _, ss := range s.SentenceSources {
		if len(ss.Seqs) > 0 {
			known[ss.Digest] = true
		}
	}
	for _, sent := range sentences(s.Narrative) {
		if strings.TrimSpace(sent) != "" && !known[SentenceDigest(sent)] {
			return false
		}
	}
	return true
}

// cloneFacts copies facts deeply (their Sources too), as Summary.Clone
// does.
func cloneFacts(facts []Fact) []Fact { return Summary{Facts: facts}.Clone().Facts }
