package autoconfig

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/strata-go/strata/memory"
)

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks every setting and returns the first problem as an *Error
// naming the key, its value, where it came from and the allowed range.
// Load calls it; call it again after changing a Config by hand.
func (c *Config) Validate() error {
	m := c.Memory
	type check struct {
		bad  bool
		key  string
		want string
	}
	checks := []check{
		{m.RecentMessageCount < 1, keyRecent, "must be >= 1"},
		{m.TriggerMessageCount < m.RecentMessageCount, keyTrigger,
			fmt.Sprintf("must be >= recent-message-count (%d)", m.RecentMessageCount)},
		{c.Summary.MaxNarrativeTokens < 1, keyMaxNarrative, "must be >= 1"},
		{m.MaxConversationTurns < 1, keyMaxTurns, "must be >= 1"},
		{c.LLM.MaxOutputTokens < 0, keyMaxOutput, "must be >= 0"},
		{m.ContextWindowTokens <= c.LLM.MaxOutputTokens, keyWindow,
			fmt.Sprintf("must be > max-output-tokens (%d)", c.LLM.MaxOutputTokens)},
		{m.MaxMessageBytes < 0, keyMaxMessageBytes, "must be >= 0 (0 = no limit)"},
		{c.Store.MaxSummaries < 0, keyMaxSummaries, "must be >= 0 (0 = 10000)"},
		{m.FailureCooldown < 0, keyFailureCooldown, "must be >= 0"},
		{m.MaxFailureCooldown < m.FailureCooldown, keyMaxFailureCooldown,
			fmt.Sprintf("must be >= failure-cooldown (%s)", formatDuration(m.FailureCooldown))},
		{m.MaxFacts < 1, keyMaxFacts, "must be >= 1"},
		{m.MaxFactValueLen < 1, keyMaxFactValueLen, "must be >= 1"},
		{m.Policy != memory.PolicyParity && m.Policy != memory.PolicyChunked, keyPolicy,
			`must be "parity" or "chunked"`},
		{m.BufferMessageCount < 0, keyBuffer, "must be >= 0"},
		{m.FoldTokenThreshold < 0, keyFoldTokenThreshold, "must be >= 0 (0 = off)"},
		{m.FoldTokenFraction < 0 || m.FoldTokenFraction > 1, keyFoldTokenFraction,
			"must be between 0 and 1 (0 = off)"},
		{m.SafetyTurns < 0, keySafetyTurns, "must be >= 0 (0 = off)"},
		{m.FoldMode != memory.FoldIncremental && m.FoldMode != memory.FoldFull, keyFoldMode,
			`must be "incremental" or "full"`},
		{m.MaxFoldInputTokens < 0, keyMaxFoldInput, "must be >= 0 (0 = no cap)"},
		{m.PromptMemoryBudget < 0, keyPromptBudget, "must be >= 0 (0 = off)"},
		{m.MinTailMessages < 0, keyMinTail, "must be >= 0"},
		{!isProvider(normalizeProvider(c.Summarizer.Provider)), keySummarizerProvider,
			"must be one of " + strings.Join(Providers, ", ")},
		{c.Summarizer.Timeout <= 0, keySummarizerTimeout, "must be > 0 (e.g. 60s)"},
	}
	for _, ck := range checks {
		if ck.bad {
			return c.errorFor(ck.key, ck.want)
		}
	}

	if lm := normalizeProvider(c.Summary.LLMModel); m.Enabled && lm != "" && !isProvider(lm) && !c.IsSet(keySummarizerProvider) {
		msg := "must name a summarizer provider (" + strings.Join(Providers, ", ") + ")"
		if strings.ContainsAny(lm, "-.") || strings.HasPrefix(lm, "gpt") {
			msg += "; this looks like a model name: set it as " + keySummarizerModel
		}
		return c.errorFor(keyLLMModel, msg)
	}
	if u := strings.TrimSpace(c.Summarizer.BaseURL); u != "" {
		if err := checkHTTPURL(u); err != nil {
			return c.errorFor(keySummarizerBaseURL, err.Error())
		}
	}
	if n := c.Summarizer.APIKeyEnv; n != "" && !envNameRE.MatchString(n) {
		return newError(keySummarizerAPIKeyEnv, "", c.Source(keySummarizerAPIKeyEnv),
			"must be the NAME of an environment variable ([A-Za-z_][A-Za-z0-9_]*) holding the key, never the key itself")
	}
	if _, err := c.DatabaseURL(); err != nil {
		return err
	}
	if err := c.validateServer(); err != nil {
		return err
	}
	// memory.Config may gain settings this package does not know yet:
	// its own validation backs ours up, translated to key names.
	if err := c.Memory.Validate(); err != nil {
		return c.translateMemoryError(err)
	}
	return nil
}

func (c *Config) errorFor(key, msg string) error {
	v, _ := c.Value(key)
	return newError(key, v, c.Source(key), msg)
}

func checkHTTPURL(u string) error {
	p, err := url.Parse(u)
	if err != nil {
		return fmt.Errorf("cannot parse URL: %v", unwrapURLError(err))
	}
	if p.Scheme != "http" && p.Scheme != "https" {
		return errors.New("must be an http:// or https:// URL")
	}
	if p.Host == "" {
		return errors.New("must be an absolute URL with a host")
	}
	return nil
}

// fieldKeys maps memory.Config field names to configuration keys.
var fieldKeys = map[string]string{
	"Enabled":              keyEnabled,
	"TriggerMessageCount":  keyTrigger,
	"RecentMessageCount":   keyRecent,
	"MaxConversationTurns": keyMaxTurns,
	"MaxMessageBytes":      keyMaxMessageBytes,
	"FailureCooldown":      keyFailureCooldown,
	"MaxFailureCooldown":   keyMaxFailureCooldown,
	"MaxFacts":             keyMaxFacts,
	"MaxFactValueLen":      keyMaxFactValueLen,
	"Policy":               keyPolicy,
	"BufferMessageCount":   keyBuffer,
	"FoldTokenThreshold":   keyFoldTokenThreshold,
	"FoldTokenFraction":    keyFoldTokenFraction,
	"ContextWindowTokens":  keyWindow,
	"SafetyTurns":          keySafetyTurns,
	"FoldMode":             keyFoldMode,
	"MaxFoldInputTokens":   keyMaxFoldInput,
	"PromptMemoryBudget":   keyPromptBudget,
	"MinTailMessages":      keyMinTail,
}

var fieldRE = regexp.MustCompile(`\b([A-Z][A-Za-z]+)\b`)

// translateMemoryError rewrites memory.Config.Validate's field names as
// configuration keys.
func (c *Config) translateMemoryError(err error) error {
	msg := strings.TrimPrefix(err.Error(), memory.ErrInvalidConfig.Error()+": ")
	key := ""
	msg = fieldRE.ReplaceAllStringFunc(msg, func(f string) string {
		k, ok := fieldKeys[f]
		if !ok {
			return f
		}
		if key == "" {
			key = k
		}
		return k[strings.LastIndex(k, ".")+1:]
	})
	if key == "" {
		return newError("arc.reactor.memory", "", "", msg)
	}
	// "recent-message-count = 0, want >= 1" → "must be >= 1"
	short := key[strings.LastIndex(key, ".")+1:]
	if rest, ok := strings.CutPrefix(msg, short+" = "); ok {
		if _, want, ok := strings.Cut(rest, ", want "); ok {
			msg = "must be " + want
		}
	}
	return c.errorFor(key, msg)
}
