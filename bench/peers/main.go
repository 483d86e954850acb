// Command peers renders the sections of Strata's benchmark report that run
// other libraries: section 13 — Strata next to its peers on the same LoCoMo
// replay, with CloudWeGo eino's summarization middleware among the peers —
// and section 15 — Strata beside langchaingo's own PostgreSQL chat history
// (memory/alloydb over pgx) on one database. It is a module of its own so
// that Strata's module never depends on eino, pgx or the Google Cloud
// connectors langchaingo's history imports; strata-bench runs it (go run
// .) for those sections and embeds its output.
//
// From this directory:
//
//	go run . -data ../../../shared/data          # Markdown on standard output
//	go run . -data ../../../shared/data -json    # the report as JSON (body, headlines, rows)
//	go run . -data ../../../shared/data -quick   # smoke run; numbers are meaningless
//	go run . -section 15 -database-url postgres://…  # section 15
//
// Progress goes to standard error.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime/debug"
	"strconv"
	"strings"
	"syscall"

	"github.com/strata-go/strata/bench/internal/runner"
	"github.com/strata-go/strata/memory"
)

const einoModule = "github.com/cloudwego/eino"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data", "../../../shared/data", "directory holding locomo/ (read in place)")
	quick := fs.Bool("quick", false, "smoke run: one short conversation (numbers are meaningless)")
	asJSON := fs.Bool("json", false, "print the report as JSON (body, headlines, rows) instead of Markdown")
	command := fs.String("command", "go run . (bench/peers)", "command line shown in the tables' provenance line")
	section := fs.Int("section", 13, "the section to render: 13 (eino beside Strata's policies) or 15 (langchaingo's PostgreSQL history beside Strata; needs -database-url)")
	databaseURL := fs.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL for section 15 (a throwaway schema is created and dropped)")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "peers: unexpected arguments %q\n", fs.Args())
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	switch *section {
	case 13:
	case 15:
		rep, err := runner.RunPGHistory(ctx, runner.PGHistoryOptions{
			DatabaseURL: *databaseURL,
			DataDir:     *dataDir,
			Quick:       *quick,
			Command:     *command,
			Progress:    stderr,
		}, langchaingoHistory())
		if err != nil {
			fmt.Fprintf(stderr, "peers: %v\n", err)
			return 1
		}
		return emit(stdout, stderr, *asJSON, rep, rep.Body, rep.Headlines)
	default:
		fmt.Fprintf(stderr, "peers: unknown section %d (13 or 15)\n", *section)
		return 2
	}
	rep, err := runner.RunPeers(ctx, runner.PeersOptions{
		DataDir:  *dataDir,
		Quick:    *quick,
		Command:  *command,
		Progress: stderr,
	}, einoPeers())
	if err != nil {
		fmt.Fprintf(stderr, "peers: %v\n", err)
		return 1
	}
	return emit(stdout, stderr, *asJSON, rep, rep.Body, rep.Headlines)
}

// emit prints a report: as JSON, or its Markdown body and headlines.
func emit(stdout, stderr io.Writer, asJSON bool, rep any, body string, headlines []string) int {
	if asJSON {
		enc := json.NewEncoder(stdout)
		enc.SetIndent("", "  ")
		if err := enc.Encode(rep); err != nil {
			fmt.Fprintf(stderr, "peers: %v\n", err)
			return 1
		}
		return 0
	}
	fmt.Fprint(stdout, body)
	if len(headlines) > 0 {
		fmt.Fprintln(stdout, "\nHeadlines:")
		for _, h := range headlines {
			fmt.Fprintln(stdout, "- "+h)
		}
	}
	return 0
}

// einoPeers are the two eino rows of the section: the middleware's
// rewritten messages carried to the next turn, and the complete history
// passed in at every turn.
func einoPeers() []runner.Peer {
	cfg := memory.DefaultConfig()
	common := fmt.Sprintf("`github.com/cloudwego/eino/adk/middlewares/summarization` %s, its `BeforeModelRewriteState` hook (what a chat-model agent runs before each model call) called directly. "+
		"Configuration: `Trigger{ContextMessages: %d, ContextTokens: %d}` — Strata's message trigger and chunked token trigger (%.1f × %s) — and eino's defaults otherwise: its token estimate (chars/4 here, as the replayed answers carry no usage metadata), its prompts and its finalizer. "+
		"Above the trigger the middleware sends its summarizer model all the messages (its system instruction, the conversation, its long user instruction) and replaces them all with one user message — a preamble, the summary, the user's original messages since the previous summary (the most recent within 30 000 estimated tokens, filled into the summary's `<all_user_messages>` block) and a continue instruction; it keeps no verbatim window. "+
		"The summarizer model is the extractive summarizer behind eino's `ChatModel` interface (`ExtractiveChatModel` in `bench/peers`): it folds the conversation part of that input and replies with the facts and narrative blocks plus the empty `<all_user_messages>` block eino's prompt asks for.",
		moduleVersion(einoModule), cfg.TriggerMessageCount, int(cfg.FoldTokenFraction*float64(cfg.ContextWindowTokens)), cfg.FoldTokenFraction, fmtThousands(cfg.ContextWindowTokens))
	return []runner.Peer{
		{
			Name:        "eino summarization (state carried)",
			Description: common + " The agent's messages after the middleware are the next turn's history, as an application that keeps the agent's state between turns has it: the context drops to one summary message when it passes the trigger and grows again.",
			New: func(env runner.PeerEnv) (runner.PeerPolicy, error) {
				return newEinoPolicy(context.Background(), env, true)
			},
		},
		{
			Name:        "eino summarization (history re-sent)",
			Description: "the same middleware and configuration, but the application keeps the complete history and passes it in at every turn (as `Runner.Run(ctx, history)` without saving the agent's state): above the trigger the middleware summarizes the whole history again at every turn, and its summary lists every user message so far (within the same 30 000-token budget).",
			New: func(env runner.PeerEnv) (runner.PeerPolicy, error) {
				return newEinoPolicy(context.Background(), env, false)
			},
		},
	}
}

// moduleVersion returns the version of a module this program was built
// with ("" when unknown).
func moduleVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return ""
	}
	for _, m := range bi.Deps {
		if m.Path == path {
			return m.Version
		}
	}
	return ""
}

// fmtThousands renders n with thin thousands separators ("128 000").
func fmtThousands(n int) string {
	s := strconv.Itoa(n)
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(' ')
		}
		b.WriteRune(c)
	}
	return b.String()
}
