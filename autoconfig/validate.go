package autoconfig

import (
	"errors"
	"fmt"
	"net/url"
	"regexp"
	"strings"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

var envNameRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// Validate checks every setting and returns the first problem as an *Error
// naming the key, its value, where it came from and the allowed range. The
// memory settings are checked by memory.Config.Validate, whose field errors
// are reported under their keys; the others here. Load calls it; call it
// again after changing a Config by hand.
func (c *Config) Validate() error {
	if err := c.Memory.Validate(); err != nil {
		return c.translateMemoryError(err)
	}
	type check struct {
		bad  bool
		key  string
		want string
	}
	checks := []check{
		{c.Summary.MaxNarrativeTokens < 1, keyMaxNarrative, "must be >= 1"},
		{c.Store.MaxSummaries < 0, keyMaxSummaries, "must be >= 0 (0 = 10000)"},
		{c.Store.MaxSessions < 0, keyMaxSessions, "must be >= 0 (0 = 10000)"},
		{c.Store.MaxSessionsPerUser < 0, keyMaxSessionsPerUser, "must be >= 0 (0 = 1000)"},
		{!isProvider(summary.ProviderName(c.Summarizer.Provider)), keySummarizerProvider,
			"must be one of " + joinNames(knownProviders())},
		{c.Summarizer.Timeout <= 0, keySummarizerTimeout, "must be > 0 (e.g. 60s)"},
		{c.TokenEncoding != "" && c.TokenEncoding != trimmer.EncodingCL100kBase && c.TokenEncoding != trimmer.EncodingO200kBase,
			keyTokenEncoding, "must be empty (Strata's estimator), " + trimmer.EncodingCL100kBase + " or " + trimmer.EncodingO200kBase},
		{c.IsSet(keyFoldLockTTL) && c.Memory.FoldLockTTL <= c.Summarizer.Timeout, keyFoldLockTTL,
			"must be > summarizer.timeout (" + formatDuration(c.Summarizer.Timeout) + "): a fold must not outlive its lock"},
	}
	for _, ck := range checks {
		if ck.bad {
			return c.errorFor(ck.key, ck.want)
		}
	}

	if c.Memory.Enabled && c.IsSet(keyLLMModel) && !c.IsSet(keySummarizerProvider) &&
		strings.TrimSpace(c.Summary.LLMModel) != "" && llmModelProvider(c.Summary.LLMModel) == "" {
		return c.errorFor(keyLLMModel, "must name a summarizer provider ("+joinNames(knownProviders())+
			") or one of their models (gemini-…, gpt-…); for another model of an OpenAI-compatible server set "+
			keySummarizerProvider+": openai and "+keySummarizerModel)
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
	return c.validateServer()
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
	"Enabled":               keyEnabled,
	"TriggerMessageCount":   keyTrigger,
	"RecentMessageCount":    keyRecent,
	"MaxConversationTurns":  keyMaxTurns,
	"MaxMessageBytes":       keyMaxMessageBytes,
	"SummarizeTimeout":      keySummarizerTimeout,
	"FailureCooldown":       keyFailureCooldown,
	"MaxFailureCooldown":    keyMaxFailureCooldown,
	"MaxFacts":              keyMaxFacts,
	"MaxFactValueLen":       keyMaxFactValueLen,
	"MaxFactsPerFamily":     keyMaxFactsPerFamily,
	"FactsTokenBudget":      keyFactsTokenBudget,
	"PinnedFactKeys":        keyPinnedFactKeys,
	"ShowPreviousValues":    keyShowPrevious,
	"MaxNarrativeTokens":    keyMaxNarrative,
	"SharedSessionPrefixes": keySharedPrefixes,
	"SharedSessionViewers":  keySharedViewers,
	"Estimator":             keyTokenEncoding,
	"Policy":                keyPolicy,
	"BufferMessageCount":    keyBuffer,
	"FoldTokenThreshold":    keyFoldTokenThreshold,
	"FoldTokenFraction":     keyFoldTokenFraction,
	"ContextWindowTokens":   keyWindow,
	"OutputReserveTokens":   keyMaxOutput,
	"SafetyTurns":           keySafetyTurns,
	"FoldMode":              keyFoldMode,
	"MaxFoldInputTokens":    keyMaxFoldInput,
	"PromptMemoryBudget":    keyPromptBudget,
	"MinTailMessages":       keyMinTail,
	"LoadGrace":             keyLoadGrace,
	"FoldWait":              keyFoldWait,
	"FoldLockTTL":           keyFoldLockTTL,
	"SupersedeDelay":        keySupersedeDelay,
	"CloseTimeout":          keyCloseTimeout,

	"SessionDailyTokenBudget": keySessionTokenBudget,
}

var fieldRE = regexp.MustCompile(`\b[A-Z][A-Za-z]+\b`)

// translateMemoryError reports an error of memory.Config.Validate (a
// *memory.FieldError) under the field's configuration key, with the field
// names in its allowed range written as key names ("must be >=
// failure-cooldown (2s)"). Other errors are returned unchanged.
func (c *Config) translateMemoryError(err error) error {
	var fe *memory.FieldError
	if !errors.As(err, &fe) {
		return err
	}
	want := fieldRE.ReplaceAllStringFunc(fe.Want, func(f string) string {
		if k, ok := fieldKeys[f]; ok {
			return k[strings.LastIndex(k, ".")+1:]
		}
		return f
	})
	field, _, _ := strings.Cut(fe.Field, "[") // PinnedFactKeys[2]: the list's key
	key, ok := fieldKeys[field]
	if !ok {
		// A memory setting without a key (none today): name the field.
		return newError(memoryPrefix, fmt.Sprint(fe.Value), "", fe.Field+" must be "+want)
	}
	return c.errorFor(key, "must be "+want)
}
