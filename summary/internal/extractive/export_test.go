package extractive

import (
	"fmt"
	"reflect"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// Hooks for the external tests (package extractive_test): they import
// package summary, which imports this package, so they cannot be part of
// it.

// ResolveRelative exposes resolveRelative.
var ResolveRelative = resolveRelative

// HasCJK exposes hasCJK.
var HasCJK = hasCJK

// WordScore exposes wordScore.
var WordScore = wordScore

// PrefilterMismatch returns how the prefilters, which must be necessary
// conditions only, change what is found in text ("" when they do not):
// scanning with and without them finds the same, and no pattern matches a
// text its prefilter rejects.
func PrefilterMismatch(text string) string {
	for _, role := range []llms.ChatMessageType{llms.ChatMessageTypeHuman, llms.ChatMessageTypeAI} {
		if got, want := scanText(text, role, true), scanText(text, role, false); !reflect.DeepEqual(got, want) {
			return fmt.Sprintf("%s: with prefilters %+v, without %+v", role, got, want)
		}
	}
	lower := strings.ToLower(text)
	for _, c := range dateCues {
		if !mayHold(lower, c.stems) && c.re.MatchString(lower) {
			return fmt.Sprintf("date cue %s matches %q, which its stems reject", c.key, lower)
		}
	}
	if ft := fold(text); !ft.has(caseStems...) && caseWords.MatchString(text) {
		return fmt.Sprintf("caseWords matches %q, which its prefilter rejects", text)
	} else if !ft.has(decisionStems...) && decisionWords.MatchString(text) {
		return fmt.Sprintf("decisionWords matches %q, which its prefilter rejects", text)
	}
	return ""
}

// MemoLen returns how many texts s has scanned and how many messages it
// has split into sentences (what its memo holds).
func (s *Summarizer) MemoLen() (scanned, split int) { return s.memo.lru.Len(), s.memo.sents.Len() }
