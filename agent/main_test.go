package agent_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/tmc/langchaingo/llms"
	"go.uber.org/goleak"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m,
		// generative-ai-go v0.15.1 (used by langchaingo's googleai) never
		// closes the gRPC connection of its cache client, even in
		// GoogleAI.Close; these are that connection's goroutines.
		goleak.IgnoreTopFunction("google.golang.org/grpc/internal/grpcsync.(*CallbackSerializer).run"),
		goleak.IgnoreTopFunction("google.golang.org/grpc.(*addrConn).resetTransportAndUnlock"),
	)
}

var quiet = slog.New(slog.NewTextHandler(io.Discard, nil))

// newManager returns a manager on the in-memory store. trigger and recent
// > 0 turn hierarchical memory on with the offline extractive summarizer
// (which extracts order ids such as "#A-1234" as facts); 0 keeps takeLast.
func newManager(t testing.TB, trigger, recent int) *memory.Manager {
	t.Helper()
	cfg := memory.DefaultConfig()
	var opts []memory.Option
	if trigger > 0 {
		cfg.Enabled = true
		cfg.TriggerMessageCount, cfg.RecentMessageCount = trigger, recent
		opts = append(opts, memory.WithSummaries(summary.NewInMemoryStore(0), summary.NewExtractiveService()))
	}
	opts = append(opts, memory.WithLogger(quiet))
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), cfg, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = mgr.Close() })
	return mgr
}

// orderLookup is a SchemaTool over fake order data.
type orderLookup struct{ calls atomic.Int32 }

var orders = map[string]string{
	"#A-1234": `{"order_id":"#A-1234","status":"shipped","carrier":"UPS"}`,
	"#C-7000": `{"order_id":"#C-7000","status":"cancelled","replaced_by":"#C-7001"}`,
	"#C-7001": `{"order_id":"#C-7001","status":"processing"}`,
}

func (*orderLookup) Name() string        { return "lookup_order" }
func (*orderLookup) Description() string { return "Looks up an order by its id, e.g. #A-1234." }
func (*orderLookup) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"order_id": map[string]any{"type": "string", "description": "The order id, e.g. #A-1234."},
		},
		"required": []string{"order_id"},
	}
}

func (o *orderLookup) Call(_ context.Context, args string) (string, error) {
	o.calls.Add(1)
	var in struct {
		OrderID string `json:"order_id"`
	}
	if err := json.Unmarshal([]byte(args), &in); err != nil {
		return "", fmt.Errorf("bad arguments %s: %w", args, err)
	}
	if s, ok := orders[in.OrderID]; ok {
		return s, nil
	}
	if strings.HasPrefix(in.OrderID, "#B-") {
		return fmt.Sprintf(`{"order_id":%q,"status":"delivered"}`, in.OrderID), nil
	}
	return "", fmt.Errorf("order %s not found", in.OrderID)
}

// stored renders a session's stored messages as comparable lines.
func stored(t testing.TB, mgr *memory.Manager, session, user string) []string {
	t.Helper()
	msgs, err := mgr.Messages(context.Background(), session, user, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = line(m.ChatMessage())
	}
	return out
}

// line renders a chat message as one comparable line.
func line(m llms.ChatMessage) string {
	switch m := m.(type) {
	case llms.AIChatMessage:
		var calls []string
		for _, tc := range m.ToolCalls {
			calls = append(calls, tc.ID+" "+tc.FunctionCall.Name+" "+tc.FunctionCall.Arguments)
		}
		if len(calls) > 0 {
			return fmt.Sprintf("ai: %s [%s]", m.Content, strings.Join(calls, "; "))
		}
		return "ai: " + m.Content
	case llms.ToolChatMessage:
		return "tool " + m.ID + ": " + m.Content
	default:
		return string(m.GetType()) + ": " + m.GetContent()
	}
}

func lines(msgs []llms.ChatMessage) []string {
	out := make([]string, len(msgs))
	for i, m := range msgs {
		out[i] = line(m)
	}
	return out
}
