package usage

import "testing"

func TestTokens(t *testing.T) {
	cases := []struct {
		name               string
		info               map[string]any
		in, out, wantTotal int
	}{
		{"openai ints", map[string]any{"PromptTokens": 10, "CompletionTokens": 5}, 10, 5, 15},
		{"openai with total", map[string]any{"PromptTokens": 10, "CompletionTokens": 5, "TotalTokens": 17}, 10, 5, 17},
		{"googleai int32", map[string]any{"input_tokens": int32(7), "output_tokens": int32(3)}, 7, 3, 10},
		{"int64", map[string]any{"PromptTokens": int64(8), "CompletionTokens": int64(4)}, 8, 4, 12},
		{"float64 (decoded JSON)", map[string]any{"input_tokens": float64(11), "output_tokens": float64(2)}, 11, 2, 13},
		{"anthropic", map[string]any{"InputTokens": 9, "OutputTokens": 1}, 9, 1, 10},
		{"zero openai falls back", map[string]any{"PromptTokens": 0, "input_tokens": 6, "CompletionTokens": 0, "output_tokens": 2}, 6, 2, 8},
		{"strings ignored", map[string]any{"PromptTokens": "10"}, 0, 0, 0},
		{"nil", nil, 0, 0, 0},
	}
	for _, tc := range cases {
		if in, out, total := Tokens(tc.info); in != tc.in || out != tc.out || total != tc.wantTotal {
			t.Errorf("%s: got %d/%d/%d, want %d/%d/%d", tc.name, in, out, total, tc.in, tc.out, tc.wantTotal)
		}
	}
}
