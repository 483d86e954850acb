// Package calib learns, per model and script, how a provider's own count of
// a prompt relates to Strata's estimate of it, so that the memory manager
// can price the next prompt as the provider will count it.
//
// The model of a prompt's count is
//
//	reported ≈ ratio × content + PerMessage × messages + ReplyPriming
//
// where content is the estimator's count of every text the request carries
// (message contents, tool-call names and arguments, tool definitions) and
// the constants are OpenAI's chat framing (3 tokens per message plus its
// role, 3 more priming the reply). Each report gives one sample of ratio;
// the ratio in use is a high quantile of a bounded window of recent samples,
// so one odd report neither lowers the price nor raises it for long.
package calib

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"sync"
	"unicode"

	"github.com/hashicorp/golang-lru/v2/simplelru"
	"github.com/tmc/langchaingo/llms"
)

// Framing of a chat prompt as OpenAI counts it: every message costs its
// content, 3 tokens of separators and its role (1 token); the reply is
// primed with 3 more.
const (
	PerMessage   = 4
	ReplyPriming = 3
)

// Bounds of a Table.
const (
	// MaxKeys bounds the (model, script) pairs a Table remembers; the least
	// recently used is forgotten beyond it.
	MaxKeys = 256
	// Window is the number of recent samples kept per key.
	Window = 32
	// Quantile of the window used as the ratio: high, so that prices err
	// on the side of fitting.
	Quantile = 0.9
	// Margin is added to the quantile: a sixty-fourth, so that a prompt
	// whose mix of texts differs a little from the recent ones still fits.
	Margin = 1.0 / 64
	// MaxModelLen bounds a model name (longer names are cut).
	MaxModelLen = 128
	// MinRatio and MaxRatio bound a plausible sample: a provider counting
	// a text less than a quarter or more than eight times Strata's
	// estimate is reporting something else (a cached or aggregated count,
	// another request).
	MinRatio = 0.25
	MaxRatio = 8.0
	// MaxReported bounds a plausible prompt count.
	MaxReported = 10_000_000
)

// ErrImplausible is wrapped by the error Observe returns for a report it
// refuses: a count that is not positive, absurdly large, or too far from
// the estimate to be about the same prompt.
var ErrImplausible = errors.New("calib: implausible usage report")

// ErrUnknownModel is wrapped by the error Observe returns for a model that
// was never priced through the Table (see Ratio).
var ErrUnknownModel = errors.New("calib: usage reported for a model never priced")

// Script is the writing system that carries most of a prompt's estimated
// tokens; tokenizers differ from an estimate most between scripts, so each
// script of a model is calibrated on its own.
type Script uint8

// The scripts.
const (
	ScriptLatin    Script = iota // ASCII: English, code, JSON
	ScriptHangul                 // Korean
	ScriptJapanese               // kana, with or without Han
	ScriptHan                    // Chinese
	ScriptOther                  // Latin with diacritics, Cyrillic, Greek, Arabic, …
	numScripts
)

// String names the script.
func (s Script) String() string {
	return [...]string{"latin", "hangul", "japanese", "han", "other", "?"}[min(s, numScripts)]
}

// Tally counts the runes of a text by class; Add more texts, then read
// the Script.
type Tally struct{ ascii, hangul, kana, han, other int }

// Add counts the runes of s.
func (t *Tally) Add(s string) {
	for _, r := range s {
		switch {
		case r <= 0x7F:
			t.ascii++
		case unicode.Is(unicode.Hangul, r):
			t.hangul++
		case unicode.In(r, unicode.Hiragana, unicode.Katakana):
			t.kana++
		case unicode.Is(unicode.Han, r):
			t.han++
		default:
			t.other++
		}
	}
}

// Script returns the class carrying most estimated tokens (about 4 ASCII
// characters, 1.5 CJK characters or 3 other characters per token).
// Japanese is Han and kana together once kana make a tenth of them.
func (t Tally) Script() Script {
	weights := [numScripts]int{
		ScriptLatin:  3 * t.ascii,  // 12/4 per character
		ScriptHangul: 8 * t.hangul, // 12·2/3
		ScriptHan:    8 * t.han,
		ScriptOther:  4 * t.other, // 12/3
	}
	if t.kana > 0 && 10*t.kana >= t.kana+t.han {
		weights[ScriptJapanese], weights[ScriptHan] = 8*(t.kana+t.han), 0
	}
	best := ScriptLatin
	for s := range numScripts {
		if weights[s] > weights[best] {
			best = s
		}
	}
	return best
}

// Key names one calibration: a model and a script.
type Key struct {
	Model  string
	Script Script
}

// Sample is what one report says about a prompt: the provider's count,
// the estimator's count of the prompt's texts, and its number of
// messages.
type Sample struct {
	Reported int
	Content  int
	Messages int
}

// ratio returns the sample's content ratio, or an error when it is not
// plausible.
func (s Sample) ratio() (float64, error) {
	switch {
	case s.Reported <= 0:
		return 0, fmt.Errorf("%w: prompt count %d", ErrImplausible, s.Reported)
	case s.Reported > MaxReported:
		return 0, fmt.Errorf("%w: prompt count %d over %d", ErrImplausible, s.Reported, MaxReported)
	case s.Content <= 0 || s.Messages < 0:
		return 0, fmt.Errorf("%w: empty prompt", ErrImplausible)
	}
	r := float64(s.Reported-PerMessage*s.Messages-ReplyPriming) / float64(s.Content)
	if math.IsNaN(r) || r < MinRatio || r > MaxRatio {
		return 0, fmt.Errorf("%w: %d tokens reported for a prompt estimated at %d tokens of text in %d messages",
			ErrImplausible, s.Reported, s.Content, s.Messages)
	}
	return r, nil
}

// Table holds the calibrations of a manager: bounded, safe for concurrent
// use.
type Table struct {
	mu   sync.Mutex
	keys *simplelru.LRU[Key, *series]
}

// series is one key's recent samples, a ring.
type series struct {
	ring [Window]float64
	n    int // samples so far (the ring holds min(n, Window))
}

func (s *series) ratio() float64 {
	k := min(s.n, Window)
	if k == 0 {
		return 1
	}
	v := slices.Clone(s.ring[:k])
	slices.Sort(v)
	return v[int(math.Ceil(Quantile*float64(k)))-1] * (1 + Margin)
}

// New returns an empty Table.
func New() *Table {
	lru, err := simplelru.NewLRU[Key, *series](MaxKeys, nil)
	if err != nil {
		panic("calib: invalid size") // unreachable: MaxKeys > 0
	}
	return &Table{keys: lru}
}

func norm(k Key) Key {
	if len(k.Model) > MaxModelLen {
		k.Model = k.Model[:MaxModelLen]
	}
	return k
}

// Ratio returns the ratio to price key's prompts with (1 before any
// sample) and how many samples it rests on. It registers key, so that
// reports for it are accepted afterwards.
func (t *Table) Ratio(key Key) (float64, int) {
	key = norm(key)
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.keys.Get(key)
	if !ok {
		s = &series{}
		t.keys.Add(key, s)
	}
	return s.ratio(), s.n
}

// Center returns the median of key's recent ratios: the best guess of
// how the provider counts, without the safety of the price (Ratio); 0 and
// false before any sample. Ratio, not Center, prices prompts.
func (t *Table) Center(key Key) (float64, bool) {
	key = norm(key)
	t.mu.Lock()
	defer t.mu.Unlock()
	s, ok := t.keys.Peek(key)
	if !ok || s.n == 0 {
		return 0, false
	}
	v := slices.Clone(s.ring[:min(s.n, Window)])
	slices.Sort(v)
	return v[(len(v)-1)/2], true
}

// Observe records one report for key, whose model must have been priced
// (Ratio, in any script) and not forgotten since; a refused report (ErrImplausible,
// ErrUnknownModel) changes nothing.
func (t *Table) Observe(key Key, s Sample) error {
	key = norm(key)
	r, err := s.ratio()
	if err != nil {
		return err
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	ser, ok := t.keys.Get(key)
	if !ok {
		if !t.knownModel(key.Model) {
			return fmt.Errorf("%w: %q", ErrUnknownModel, key.Model)
		}
		ser = &series{}
		t.keys.Add(key, ser)
	}
	ser.ring[ser.n%Window] = r
	ser.n++
	return nil
}

// knownModel reports whether some script of model is in the table.
func (t *Table) knownModel(model string) bool {
	for sc := range numScripts {
		if t.keys.Contains(Key{Model: model, Script: sc}) {
			return true
		}
	}
	return false
}

// Len reports how many keys the table holds.
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.keys.Len()
}

// ModelRatio returns the largest ratio in use among model's calibrated
// scripts, and false when none has a sample.
func (t *Table) ModelRatio(model string) (float64, bool) {
	model = norm(Key{Model: model}).Model
	t.mu.Lock()
	defer t.mu.Unlock()
	best, ok := 0.0, false
	for sc := range numScripts {
		if s, _ := t.keys.Peek(Key{Model: model, Script: sc}); s != nil && s.n > 0 {
			best, ok = max(best, s.ratio()), true
		}
	}
	return best, ok
}

// Known registers model (so that reports for it are accepted, as after
// Ratio) and reports whether any of its scripts has a sample: until one
// does, pricing need not look at a prompt's script.
func (t *Table) Known(model string) bool {
	model = norm(Key{Model: model}).Model
	t.mu.Lock()
	defer t.mu.Unlock()
	sampled, known := false, false
	for sc := range numScripts {
		if s, ok := t.keys.Get(Key{Model: model, Script: sc}); ok {
			known = true
			sampled = sampled || s.n > 0
		}
	}
	if !known {
		t.keys.Add(Key{Model: model}, &series{})
	}
	return sampled
}

// ToolsText is the text of tool definitions that is estimated for them:
// their JSON, as OpenAI-style clients send it.
func ToolsText(tools []llms.Tool) string {
	if len(tools) == 0 {
		return ""
	}
	b, err := json.Marshal(tools)
	if err != nil {
		return fmt.Sprint(tools)
	}
	return string(b)
}
