package agent

import (
	"errors"
	"fmt"
	"testing"

	"github.com/tmc/langchaingo/llms"
)

// TestContextRefusal reads each provider's refusal as langchaingo's
// clients pass it on, and nothing else.
func TestContextRefusal(t *testing.T) {
	for _, c := range []struct {
		msg     string
		refused bool
		count   int
	}{
		{"API returned unexpected status code: 400: This model's maximum context length is 4096 tokens. However, your messages resulted in 5012 tokens. Please reduce the length of the messages.", true, 5012},
		{"API returned unexpected status code: 400: This model's maximum context length is 4096 tokens. However, you requested 5524 tokens (5012 in the messages, 512 in the completion). Please reduce the length of the messages or completion.", true, 5012},
		{"API returned unexpected status code: 400: This model's maximum context length is 8192 tokens. However, you requested 8500 tokens (7000 in the messages, 300 in the functions, 1200 in the completion).", true, 7300},
		{"API returned unexpected status code: 400: prompt is too long: 210831 tokens > 200000 maximum", true, 210831},
		{"googleapi: Error 400: The input token count (1204567) exceeds the maximum number of tokens allowed (1048576).", true, 1204567},
		{"The input token count of 40000 exceeds the limit", true, 40000},
		{"error, status code: 400, message: context_length_exceeded", true, 0},
		{"prompt is too long", true, 0},
		{"prompt is too long: 99999999999999999999999 tokens > 200000 maximum", true, 0},
		{"API returned unexpected status code: 429: Rate limit exceeded", false, 0},
		{"API returned unexpected status code: 400: Invalid 'messages[3].content': string too long.", false, 0},
		{"dial tcp: connection refused", false, 0},
	} {
		refused, count := contextRefusal(fmt.Errorf("agent: model call: %w", errors.New(c.msg)))
		if refused != c.refused || count != c.count {
			t.Errorf("%q: refused %v, count %d; want %v, %d", c.msg, refused, count, c.refused, c.count)
		}
	}
	if refused, _ := contextRefusal(llms.NewError(llms.ErrCodeTokenLimit, "openai", "Context length exceeded")); !refused {
		t.Error("a mapped token-limit error is not a refusal")
	}
	if refused, _ := contextRefusal(nil); refused {
		t.Error("nil is a refusal")
	}
}

// FuzzContextRefusal: any error text is read in bounded time, without a
// panic, and a count is never negative nor absurd.
func FuzzContextRefusal(f *testing.F) {
	for _, s := range []string{
		"This model's maximum context length is 4096 tokens. However, your messages resulted in 5012 tokens.",
		"you requested 5524 tokens (5012 in the messages, 512 in the completion)",
		"prompt is too long: 210831 tokens > 200000 maximum",
		"The input token count (1204567) exceeds the maximum number of tokens allowed (1048576).",
		"(9223372036854775807 in the messages, 9223372036854775807 in the functions) maximum context length",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, msg string) {
		refused, count := contextRefusal(errors.New(msg))
		if count < 0 || count > maxStatedTokens || (!refused && count != 0) {
			t.Fatalf("%q: refused %v, count %d", msg, refused, count)
		}
	})
}

func TestStatedWindow(t *testing.T) {
	for msg, want := range map[string]int{
		"This model's maximum context length is 4096 tokens. However, your messages resulted in 5012 tokens.": 4096,
		"prompt is too long: 210831 tokens > 200000 maximum":                                                  200000,
		"The input token count (1204567) exceeds the maximum number of tokens allowed (1048576).":             1048576,
		"prompt is too long": 0,
	} {
		if got := statedWindow(errors.New(msg)); got != want {
			t.Errorf("%q: %d, want %d", msg, got, want)
		}
	}
}
