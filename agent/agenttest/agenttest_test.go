package agenttest_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/agent/agenttest"
)

func TestScriptRecordsAndStreams(t *testing.T) {
	ctx := context.Background()
	m := agenttest.NewScript(agenttest.Text("one two three"), nil)
	var chunks []string
	resp, err := m.GenerateContent(ctx, []llms.MessageContent{llms.TextParts(llms.ChatMessageTypeHuman, "hi")},
		llms.WithStreamingFunc(func(_ context.Context, c []byte) error { chunks = append(chunks, string(c)); return nil }))
	if err != nil || resp.Choices[0].Content != "one two three" {
		t.Fatalf("%v %v", resp, err)
	}
	if strings.Join(chunks, "|") != "one |two |three" {
		t.Fatalf("chunks %q", chunks)
	}
	if _, err := m.Call(ctx, "again"); err == nil {
		t.Fatal("scripted failure not returned")
	}
	if _, err := m.Call(ctx, "more"); !errors.Is(err, agenttest.ErrScriptExhausted) {
		t.Fatalf("err = %v", err)
	}
	reqs := m.Requests()
	if len(reqs) != 3 || reqs[0].Text() != "human: hi\n" || m.LastRequest().LastText() != "more" {
		t.Fatalf("requests %+v", reqs)
	}
}
