package agent

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/tmc/langchaingo/llms"
	"github.com/tmc/langchaingo/tools"

	"github.com/strata-go/strata/internal/nilcheck"
)

// SchemaTool is a langchaingo tool that describes its parameters with its
// own JSON schema (an object schema as a map[string]any, nested maps for
// nested schemas). WithTools offers it with that schema and passes the
// model's JSON arguments to Call unchanged.
type SchemaTool interface {
	tools.Tool
	Parameters() map[string]any
}

// toolInputParam is the single string parameter of a plain tools.Tool.
const toolInputParam = "input"

// toolSpec is one function offered to the model and how to run it.
type toolSpec struct {
	def  llms.FunctionDefinition
	call func(ctx context.Context, argsJSON string) (string, error)
}

// specFromTool describes a tool; a nil tool (or a typed nil) gives a spec
// without a call, which New rejects.
func specFromTool(t tools.Tool) toolSpec {
	if nilcheck.IsNil(t) {
		return toolSpec{}
	}
	if st, ok := t.(SchemaTool); ok {
		return toolSpec{
			def:  llms.FunctionDefinition{Name: st.Name(), Description: st.Description(), Parameters: st.Parameters()},
			call: st.Call,
		}
	}
	return toolSpec{
		def: llms.FunctionDefinition{
			Name:        t.Name(),
			Description: t.Description(),
			Parameters: map[string]any{
				"type": "object",
				"properties": map[string]any{
					toolInputParam: map[string]any{"type": "string", "description": "The input for the tool."},
				},
				"required": []string{toolInputParam},
			},
		},
		call: func(ctx context.Context, args string) (string, error) { return t.Call(ctx, stringArg(args)) },
	}
}

// stringArg extracts a plain tool's input from the model's JSON arguments:
// the "input" field (or langchaingo's "__arg1"), the only string field,
// a JSON string, or else the raw arguments.
func stringArg(args string) string {
	var obj map[string]any
	if err := json.Unmarshal([]byte(args), &obj); err == nil {
		for _, k := range []string{toolInputParam, "__arg1"} {
			if s, ok := obj[k].(string); ok {
				return s
			}
		}
		if len(obj) == 1 {
			for _, v := range obj {
				if s, ok := v.(string); ok {
					return s
				}
			}
		}
		return args
	}
	var s string
	if err := json.Unmarshal([]byte(args), &s); err == nil {
		return s
	}
	return args
}

// toolSet is the agent's tools by name.
type toolSet struct {
	specs  []toolSpec
	byName map[string]toolSpec
}

func newToolSet(specs []toolSpec) (toolSet, error) {
	ts := toolSet{byName: make(map[string]toolSpec, len(specs))}
	for i, s := range specs {
		if s.call == nil {
			return toolSet{}, fmt.Errorf("agent: tool %d is nil", i)
		}
		name := s.def.Name
		if strings.TrimSpace(name) == "" {
			return toolSet{}, fmt.Errorf("agent: tool %d has no name", i)
		}
		if _, dup := ts.byName[name]; dup {
			return toolSet{}, fmt.Errorf("agent: two tools are named %q", name)
		}
		ts.byName[name] = s
		ts.specs = append(ts.specs, s)
	}
	return ts, nil
}

// llmTools returns the call option's tool list (nil when there are none).
func (ts toolSet) llmTools() []llms.Tool {
	if len(ts.specs) == 0 {
		return nil
	}
	out := make([]llms.Tool, len(ts.specs))
	for i, s := range ts.specs {
		def := s.def
		out[i] = llms.Tool{Type: "function", Function: &def}
	}
	return out
}

// run executes one tool call and returns its result text. A tool error or
// an unknown tool becomes the result ("error: …", failed set) so the model
// can recover; only a done ctx is returned as an error.
func (ts toolSet) run(ctx context.Context, call llms.ToolCall) (result string, failed bool, err error) {
	name, args := call.FunctionCall.Name, call.FunctionCall.Arguments
	spec, ok := ts.byName[name]
	if !ok {
		return fmt.Sprintf("error: unknown tool %q", name), true, nil
	}
	out, callErr := spec.call(ctx, args)
	if ctxErr := ctx.Err(); ctxErr != nil {
		return "", false, ctxErr
	}
	if callErr != nil {
		return "error: " + callErr.Error(), true, nil
	}
	return out, false, nil
}
