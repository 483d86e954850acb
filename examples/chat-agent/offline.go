package main

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/agent/agenttest"
)

// orderLookup is the agent's tool: it looks an order up in fake data. It
// describes its own JSON schema (agent.SchemaTool), so the model passes
// {"order_id": "..."}.
type orderLookup struct{}

type order struct {
	ID       string `json:"order_id"`
	Status   string `json:"status"`
	Item     string `json:"item"`
	Carrier  string `json:"carrier,omitempty"`
	Tracking string `json:"tracking,omitempty"`
	ETA      string `json:"eta,omitempty"`
}

var orders = map[string]order{
	"#A-1234": {ID: "#A-1234", Status: "shipped", Item: "espresso machine", Carrier: "UPS", Tracking: "1Z999AA10123456784", ETA: "2026-05-04"},
	"#B-5521": {ID: "#B-5521", Status: "processing", Item: "milk frother", ETA: "2026-05-09"},
	"#C-0007": {ID: "#C-0007", Status: "delivered", Item: "coffee grinder"},
}

func (orderLookup) Name() string { return "lookup_order" }
func (orderLookup) Description() string {
	return "Looks up an order of the customer by its id (like #A-1234): status, item, carrier, tracking number, ETA."
}

func (orderLookup) Parameters() map[string]any {
	return map[string]any{
		"type": "object",
		"properties": map[string]any{
			"order_id": map[string]any{"type": "string", "description": "The order id, e.g. #A-1234."},
		},
		"required": []string{"order_id"},
	}
}

func (orderLookup) Call(_ context.Context, args string) (string, error) {
	var in struct {
		OrderID string `json:"order_id"`
	}
	if err := json.Unmarshal([]byte(args), &in); err != nil {
		return "", fmt.Errorf("arguments must be {\"order_id\": \"...\"}: %w", err)
	}
	id := strings.TrimSpace(in.OrderID)
	if !strings.HasPrefix(id, "#") {
		id = "#" + id
	}
	o, ok := orders[strings.ToUpper(id)]
	if !ok {
		return "", fmt.Errorf("no order %s", id)
	}
	b, err := json.Marshal(o)
	return string(b), err
}

var orderIDRe = regexp.MustCompile(`#[A-Z]-\d+`)

// newScriptedModel returns the offline model: a few rules that read the
// request the agent sends, like a (very small) real model would.
func newScriptedModel() llms.Model {
	calls := 0
	return agenttest.New(func(_ context.Context, req agenttest.Request) (*llms.ContentResponse, error) {
		last := req.Messages[len(req.Messages)-1]
		if last.Role == llms.ChatMessageTypeTool {
			answer := describeOrders(last)
			if strings.Contains(strings.ToLower(lastUserText(req)), "first") {
				answer = "The first order you asked about is still in my notes. " + answer
			}
			return agenttest.Text(answer), nil
		}
		input := req.LastText()
		lower := strings.ToLower(input)
		switch {
		case strings.Contains(lower, "first"):
			// Answer from memory: the first order id anywhere before the
			// current message (by now, in the folded facts).
			var earlier strings.Builder
			for _, m := range req.Messages[:len(req.Messages)-1] {
				for _, p := range m.Parts {
					if t, ok := p.(llms.TextContent); ok {
						earlier.WriteString(t.Text + "\n")
					}
				}
			}
			id := orderIDRe.FindString(earlier.String())
			if id == "" {
				return agenttest.Text("I'm sorry, I don't remember an order."), nil
			}
			calls++
			return agenttest.ToolCalls(agenttest.Call(fmt.Sprintf("call_%d", calls), "lookup_order", fmt.Sprintf(`{"order_id":%q}`, id))), nil
		case orderIDRe.MatchString(input):
			calls++
			id := orderIDRe.FindString(input)
			return agenttest.ToolCalls(agenttest.Call(fmt.Sprintf("call_%d", calls), "lookup_order", fmt.Sprintf(`{"order_id":%q}`, id))), nil
		case strings.HasPrefix(lower, "hi") || strings.HasPrefix(lower, "hello"):
			name := ""
			if i := strings.Index(lower, "i'm "); i >= 0 {
				name = " " + strings.Fields(input[i+4:])[0]
			}
			return agenttest.Text(fmt.Sprintf("Hi%s! How can I help you today?", strings.TrimSuffix(name, "."))), nil
		case strings.Contains(lower, "address"):
			return agenttest.Text("Yes: the address can be changed until the order ships. I've noted your request."), nil
		case strings.Contains(lower, "return"):
			return agenttest.Text("Returns are free within 30 days of delivery."), nil
		}
		return agenttest.Text("Noted. Anything else?"), nil
	})
}

// lastUserText returns the text of the request's last user message.
func lastUserText(req agenttest.Request) string {
	for i := len(req.Messages) - 1; i >= 0; i-- {
		if m := req.Messages[i]; m.Role == llms.ChatMessageTypeHuman {
			if t, ok := m.Parts[0].(llms.TextContent); ok {
				return t.Text
			}
		}
	}
	return ""
}

// describeOrders turns the tool results of a request into an answer.
func describeOrders(results llms.MessageContent) string {
	var out []string
	for _, p := range results.Parts {
		r, ok := p.(llms.ToolCallResponse)
		if !ok {
			continue
		}
		var o order
		if err := json.Unmarshal([]byte(r.Content), &o); err != nil || o.ID == "" {
			out = append(out, "I couldn't find that order ("+r.Content+").")
			continue
		}
		s := fmt.Sprintf("Order %s (%s) is %s", o.ID, o.Item, o.Status)
		if o.Carrier != "" {
			s += fmt.Sprintf(" with %s, tracking %s", o.Carrier, o.Tracking)
		}
		if o.ETA != "" {
			s += ", expected " + o.ETA
		}
		out = append(out, s+".")
	}
	return strings.Join(out, " ")
}
