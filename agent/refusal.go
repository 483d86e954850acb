package agent

import (
	"regexp"
	"strconv"
	"strings"

	"github.com/tmc/langchaingo/llms"
)

// contextRefusals are the spellings of a provider refusing a prompt over
// the model's context window, lower case, as langchaingo's clients pass
// them on: OpenAI's context_length_exceeded ("This model's maximum context
// length is … tokens"), Anthropic's invalid_request_error ("prompt is too
// long: … tokens > … maximum") and Gemini's INVALID_ARGUMENT ("The input
// token count (…) exceeds the maximum number of tokens allowed (…)").
var contextRefusals = []string{
	"context_length_exceeded",
	"maximum context length",
	"context length exceeded",
	"prompt is too long",
	"input token count",
	"exceeds the maximum number of tokens",
}

// The prompt's size as a refusal states it.
var (
	// OpenAI, older: "However, your messages resulted in 5012 tokens".
	openAIResulted = regexp.MustCompile(`resulted in (\d+) tokens`)
	// OpenAI, newer: "However, you requested 5524 tokens (5012 in the
	// messages, 512 in the completion)"; with functions, "… 120 in the
	// functions, …".
	openAIParts = regexp.MustCompile(`(\d+) in the (messages|functions)`)
	// Anthropic: "prompt is too long: 210831 tokens > 200000 maximum".
	anthropicCount = regexp.MustCompile(`prompt is too long: (\d+) tokens`)
	// Gemini: "The input token count (1204567) exceeds the maximum …";
	// also "input token count of 1204567".
	geminiCount = regexp.MustCompile(`input token count (?:\(|of )(\d+)`)

	// The model's window as a refusal states it: OpenAI "maximum context
	// length is 4096 tokens", Anthropic "> 200000 maximum", Gemini
	// "maximum number of tokens allowed (1048576)".
	windowStated = []*regexp.Regexp{
		regexp.MustCompile(`maximum context length is (\d+) tokens`),
		regexp.MustCompile(`tokens > (\d+) maximum`),
		regexp.MustCompile(`maximum number of tokens allowed (?:\(|is )?(\d+)`),
	}
)

// maxStatedTokens bounds a count read from an error message.
const maxStatedTokens = 100_000_000

// contextRefusal reports whether err is a provider refusing the prompt
// for its size and, when the message says, the prompt's size as the
// provider counted it (0 when it does not say).
func contextRefusal(err error) (refused bool, promptTokens int) {
	if err == nil {
		return false, 0
	}
	return readRefusal(strings.ToLower(err.Error()), llms.IsTokenLimitError(err))
}

// statedWindow returns the model's context window a refusal states, 0 when
// it states none.
func statedWindow(err error) int {
	msg := strings.ToLower(err.Error())
	for _, re := range windowStated {
		if m := re.FindStringSubmatch(msg); m != nil {
			return clampStated(atoi(m[1]))
		}
	}
	return 0
}

func readRefusal(msg string, mapped bool) (refused bool, promptTokens int) {
	refused = mapped
	for _, s := range contextRefusals {
		refused = refused || strings.Contains(msg, s)
	}
	if !refused {
		return false, 0
	}
	if parts := openAIParts.FindAllStringSubmatch(msg, -1); len(parts) > 0 {
		sum := 0
		for _, p := range parts {
			sum += atoi(p[1])
		}
		return true, clampStated(sum)
	}
	for _, re := range []*regexp.Regexp{openAIResulted, anthropicCount, geminiCount} {
		if m := re.FindStringSubmatch(msg); m != nil {
			return true, clampStated(atoi(m[1]))
		}
	}
	return true, 0
}

func atoi(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return 0
	}
	return n
}

func clampStated(n int) int {
	if n <= 0 || n > maxStatedTokens {
		return 0
	}
	return n
}
