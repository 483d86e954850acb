package standin

import (
	"context"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/llms/openai"

	"github.com/strata-go/strata/trimmer"
)

// TestCountsAndRefusesAsOpenAI: the count is OpenAI's (3 per message plus
// the role's token and the content's, 3 priming the reply), reported as
// PromptTokens through langchaingo's openai client; a prompt whose count
// and max_tokens exceed the window is refused with the message that client
// passes on.
func TestCountsAndRefusesAsOpenAI(t *testing.T) {
	for _, enc := range []string{trimmer.EncodingCL100kBase, trimmer.EncodingO200kBase} {
		t.Run(enc, func(t *testing.T) {
			tok, err := trimmer.NewTiktokenEstimator(enc)
			if err != nil {
				t.Fatal(err)
			}
			srv, err := New(200, enc, func(Request) Reply { return Reply{Text: "네, 확인했습니다."} })
			if err != nil {
				t.Fatal(err)
			}
			defer srv.Close()
			llm, err := openai.New(openai.WithToken("sk-test"), openai.WithBaseURL(srv.URL), openai.WithModel("m"))
			if err != nil {
				t.Fatal(err)
			}
			system, user := "You are helpful.", "주문하신 상품은 어제 발송되었습니다."
			want := 3 + (3 + tok.Estimate("system") + tok.Estimate(system)) + (3 + tok.Estimate("user") + tok.Estimate(user))
			resp, err := llm.GenerateContent(context.Background(), []llms.MessageContent{
				llms.TextParts(llms.ChatMessageTypeSystem, system), llms.TextParts(llms.ChatMessageTypeHuman, user)})
			if err != nil {
				t.Fatal(err)
			}
			if got := resp.Choices[0].GenerationInfo["PromptTokens"]; got != want {
				t.Fatalf("PromptTokens %v, want %d", got, want)
			}
			long := strings.Repeat(user, 20)
			_, err = llm.GenerateContent(context.Background(), []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, long)}, llms.WithMaxTokens(50))
			wantCount := 3 + 3 + tok.Estimate("user") + tok.Estimate(long)
			if err == nil || !strings.Contains(err.Error(), "maximum context length is 200 tokens") || !strings.Contains(err.Error(), "in the messages, 50 in the completion") {
				t.Fatalf("over the window: %v", err)
			}
			if r := srv.Refused(); len(r) != 1 || r[0] != wantCount || len(srv.Accepted()) != 1 {
				t.Fatalf("refused %v (want [%d]), accepted %v", r, wantCount, srv.Accepted())
			}
		})
	}
}
