// Package agent runs a langchaingo model with Strata's hierarchical memory,
// so a memory-backed agent takes a few lines:
//
//	bot, err := agent.New(llm, mgr,
//		agent.WithSystemPrompt("You are a helpful support agent."),
//		agent.WithTools(orderLookup))
//	res, err := bot.Run(ctx, sessionID, userID, "Where is my order #A-1234?")
//	fmt.Println(res.Text)
//
// Each turn (Agent.Run, or Agent.RunStream to stream the answer):
//
//  1. loads the session's history with memory.Manager.LoadHistory (an
//     ownership error aborts the turn before any model call);
//  2. assembles [system prompt][facts][narrative][recent…][user input];
//  3. trims it with a trimmer.Trimmer built from the context window and the
//     output reserve, keeping room for the tool definitions (active tools ×
//     trimmer.ToolDefinitionTokens), as the reference does;
//  4. calls the model; while the model asks for tool calls, runs them,
//     appends the results and calls again (trimming before every call), for
//     at most WithMaxToolRounds rounds;
//  5. saves the whole turn losslessly in one append — the user message,
//     every assistant tool-call message, every tool result, the final
//     answer — and the manager folds old turns in the background. A failed
//     model call saves only the user message and returns the error.
//
// Requests are made valid for the provider in use (see Provider; detected
// from the model's type, or set with WithProvider): Gemini and Anthropic take
// a single system instruction, so the system prompt, facts and narrative are
// merged into one, any later system message becomes a "[system note]" user
// message, and the conversation opens with a user turn; Gemini needs the
// function name on every function response, which is filled from the
// matching call; Gemini's tool calls, which have no ids, get generated ones
// so that results pair with their calls in memory. What is sent passes
// trimmer.Validate (for OpenAI, a stored system message in the middle of the
// conversation is kept where it is, which OpenAI accepts).
//
// langchaingo's own agents work with the same memory through
// memory.Manager.Memory: see the examples for agents.NewConversationalAgent
// and agents.NewOpenAIFunctionsAgent with agents.NewExecutor. Those agents
// only store the user input and the final answer (the executor never saves
// tool calls), and the executor accepts string memory only; Agent stores
// every message and sends structured history.
//
// Package agenttest holds a scripted, recording model for offline tests.
package agent
