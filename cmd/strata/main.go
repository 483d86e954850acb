// Command strata replays transcripts through Strata's hierarchical memory,
// migrates its PostgreSQL schema, inspects stored sessions and serves the
// memory over HTTP (strata serve), all driven by the same configuration an
// application uses (autoconfig).
//
// Usage:
//
//	strata replay [flags] FILE          show what the model would receive before each user message
//	strata migrate up|down|version      manage the database schema
//	strata inspect --user USER SESSION  print a stored session's facts, narrative, cursor and window
//	strata config [flags]               print the effective configuration, or the example file
//	strata serve [flags]                serve the HTTP API (package server) until SIGINT/SIGTERM
//
// Every command takes --config FILE (repeatable; later files win) and --set
// key=value (repeatable; wins over files and the environment), and --help.
// Exit status: 0 on success, 1 on a runtime error (missing file, malformed
// input, invalid configuration, database error), 2 on a usage error; errors
// are printed as one line, "strata: …", on stderr.
//
// Examples:
//
//	go run ./cmd/strata replay examples/support-chat.jsonl
//	go run ./cmd/strata replay --json --sample conv-26 ../shared/data/locomo/locomo10.json
//	go run ./cmd/strata replay --sample all ../shared/data/taubench_airline/gpt-4o-airline.json
//	go run ./cmd/strata replay --config strata.yaml --set arc.reactor.memory.summary.recent-message-count=6 chat.jsonl
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/strata-go/strata/autoconfig"

	// The summarizer providers register themselves with autoconfig when
	// linked in, so that summarizer.provider gemini and openai work.
	_ "github.com/strata-go/strata/providers/gemini"
	_ "github.com/strata-go/strata/providers/openai"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := runContext(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

// usageError is a command-line mistake: exit status 2.
type usageError struct{ msg string }

func (e *usageError) Error() string { return e.msg }

func usagef(format string, args ...any) error {
	return &usageError{msg: fmt.Sprintf(format, args...)}
}

// errHelp: --help was asked for and printed.
var errHelp = errors.New("help")

const mainUsage = `strata — replay, migrate, inspect and serve Strata's hierarchical conversation memory.

Usage:
  strata <command> [flags] [arguments]

Commands:
  replay FILE            feed a transcript through a manager built from the
                         configuration and show, turn by turn, what the model
                         would receive before each user message, when folds
                         happen, and token counts
  migrate up|down|version|force N
                         manage Strata's PostgreSQL schema
  inspect --user USER SESSION
                         print a stored session's facts, narrative, cursor and window
  config                 print the effective configuration and where each value
                         comes from (--example: every key with its default)
  serve                  serve the JSON HTTP API over the configured manager and
                         stores (--listen ADDR), until SIGINT or SIGTERM

Common flags (every command):
  --config FILE          YAML configuration file (repeatable; later files win)
  --set KEY=VALUE        set one key, e.g. arc.reactor.memory.summary.enabled=true
                         (repeatable; wins over files and the environment)
  --help                 show the command's help

Configuration: defaults < --config files < environment (ARC_REACTOR_…,
SPRING_DATASOURCE_URL) < --set. See config.example.yaml for every key.

Run "strata <command> --help" for a command's flags.
`

// run is the whole command in-process: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	}
	fmt.Fprintln(stderr, "strata: "+oneLine(err.Error()))
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitError
}

func dispatch(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("no command (want replay, migrate, inspect, config or serve; see strata --help)")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "-h", "-help", "--help", "help":
		if len(rest) > 0 && cmd == "help" {
			return dispatch(ctx, []string{rest[0], "--help"}, stdout, stderr)
		}
		fmt.Fprint(stdout, mainUsage)
		return errHelp
	case "replay":
		return cmdReplay(ctx, rest, stdout, stderr)
	case "migrate":
		return cmdMigrate(ctx, rest, stdout, stderr)
	case "inspect":
		return cmdInspect(ctx, rest, stdout, stderr)
	case "config":
		return cmdConfig(rest, stdout, stderr)
	case "serve":
		return cmdServe(ctx, rest, stdout, stderr)
	}
	if strings.HasPrefix(cmd, "-") {
		return usagef("flags go after the command: strata <command> %s … (commands: replay, migrate, inspect, config, serve)", cmd)
	}
	return usagef("unknown command %q (want replay, migrate, inspect, config or serve; see strata --help)", cmd)
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// commonFlags are the flags of every command.
type commonFlags struct {
	configs stringList
	sets    stringList
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.Var(&c.configs, "config", "YAML configuration `FILE` (repeatable; later files win)")
	fs.Var(&c.sets, "set", "set one configuration key, `KEY=VALUE` (repeatable; wins over files and environment)")
}

// load reads the configuration: defaults < --config files < environment <
// --set.
func (c *commonFlags) load() (*autoconfig.Config, error) {
	return autoconfig.LoadWith(autoconfig.LoadOptions{Files: c.configs, Overrides: c.sets, OverrideSource: "--set"})
}

// parseFlags parses flags and positional arguments in any order ("replay
// FILE --json" works). --help prints usage to stdout and returns errHelp;
// other mistakes are usage errors naming the command.
func parseFlags(fs *flag.FlagSet, args []string, usage string, stdout io.Writer) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var positional []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				fmt.Fprint(stdout, usage)
				fs.SetOutput(stdout)
				fs.PrintDefaults()
				return nil, errHelp
			}
			return nil, usagef("%s: %v (see strata %s --help)", fs.Name(), err, fs.Name())
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return positional, nil
		}
		if rest[0] == "--" {
			return append(positional, rest[1:]...), nil
		}
		positional = append(positional, rest[0])
		args = rest[1:]
	}
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }
