// Package agent runs a langchaingo model with Strata's hierarchical memory,
// so a memory-backed agent takes a few lines:
//
//	bot, err := agent.New(llm, mgr,
//		agent.WithSystemPrompt("You are a helpful support agent."),
//		agent.WithTools(orderLookup))
//	res, err := bot.Run(ctx, sessionID, userID, "Where is my order #A-1234?")
//	fmt.Println(res.Text)
//
// # One turn
//
// Agent.Run (or Agent.RunStream, which streams the answer) goes:
//
//  1. load: memory.Manager.LoadHistory returns the session's facts,
//     narrative and recent messages (an ownership error ends the turn
//     before any model call);
//  2. prompt: memory.Manager.Prompt, the manager's one prompt builder,
//     fits [system prompt][facts][narrative][recent…][user input] into the
//     manager's budget, keeping room for the tool definitions;
//  3. call: the model gets the prompt and the tools; the prompt tokens the
//     provider reports go back to the manager, which prices the model's
//     next prompts by them; a prompt the provider refuses for its size is
//     built again smaller and sent once more;
//  4. tools: while the model asks for tool calls, the agent runs them,
//     appends the results and goes back to 2, for at most
//     WithMaxToolRounds rounds;
//  5. save: the whole turn — user message, tool calls, tool results,
//     answer — is appended in one atomic step, and the manager folds old
//     turns in the background. A failed model call saves only the user
//     message.
//
// # One budget
//
// The context window, the output reserve and the token estimator are the
// manager's (memory.Config.ContextWindowTokens, OutputReserveTokens and
// Estimator): the prompt budget and the chunked policy's token
// trigger are computed from the same numbers, so old turns are folded into
// facts before the prompt has to drop them. WithContextWindow only checks
// that the agent was written for that same budget. The agent prices its
// prompts with the manager's view of its model (memory.Manager.ForModel,
// for the model named by llms.WithModel in WithCallOptions), so that the
// budget holds as the provider counts it, not only as the estimator does.
//
// # Providers
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
// # langchaingo's agents
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
