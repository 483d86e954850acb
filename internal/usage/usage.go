// Package usage reads the token counts a langchaingo provider reports in a
// choice's GenerationInfo, for the summarizer and the agent alike: every
// provider names them differently.
package usage

// Tokens returns the input, output and total token counts of one call
// from a langchaingo choice's GenerationInfo: input under "PromptTokens"
// (openai, googleai), "input_tokens" (googleai, bedrock) or "InputTokens"
// (anthropic); output under "CompletionTokens", "output_tokens" or
// "OutputTokens"; total under "TotalTokens", else input + output. Values
// may be any Go integer or float type (decoded JSON gives float64); a
// missing, zero or non-numeric entry counts as absent.
func Tokens(info map[string]any) (input, output, total int) {
	input = first(info, "PromptTokens", "input_tokens", "InputTokens")
	output = first(info, "CompletionTokens", "output_tokens", "OutputTokens")
	total = first(info, "TotalTokens")
	if total == 0 {
		total = input + output
	}
	return input, output, total
}

// first returns the first positive count stored in info under one of
// keys, 0 when none is.
func first(info map[string]any, keys ...string) int {
	for _, k := range keys {
		if n, ok := toInt(info[k]); ok && n > 0 {
			return n
		}
	}
	return 0
}

func toInt(v any) (int, bool) {
	switch n := v.(type) {
	case int:
		return n, true
	case int32:
		return int(n), true
	case int64:
		return int(n), true
	case float64:
		return int(n), true
	case float32:
		return int(n), true
	case uint:
		return int(n), true
	case uint32:
		return int(n), true
	case uint64:
		return int(n), true
	}
	return 0, false
}
