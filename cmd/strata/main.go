// Command strata replays transcripts through Strata's hierarchical memory,
// migrates its PostgreSQL schema, inspects stored sessions and serves the
// memory over HTTP (strata serve), all driven by the same configuration an
// application uses (autoconfig).
//
// Usage:
//
//	strata replay [flags] FILE|-        show what the model would receive before each user message
//	strata migrate up|down|version|force N|distribute|import-arc-reactor
//	                                    manage the database schema
//	strata inspect --user USER SESSION  print a stored session's summary and what the model sees of it
//	strata config [flags]               print the effective configuration, or the example file
//	strata serve [flags]                serve the HTTP API (package server) until SIGINT/SIGTERM
//	strata export --user USER [SESSION...] | --all
//	                                    write sessions as JSON Lines snapshots
//	strata import [FILE|-]              create sessions from JSON Lines snapshots
//	strata forget --user USER SESSION SEQ... | --fact KEY
//	                                    erase messages (and what was derived from them) or a fact
//	strata version                      print the module version and the Go version it was built with
//
// Every command takes --config FILE (repeatable; later files win) and --set
// key=value (repeatable; wins over files and the environment), and --help.
// When the configuration names no datasource, $DATABASE_URL is used, except
// by replay, which then replays in memory.
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
	"strconv"
	"strings"
	_ "time/tzdata" // migrate --arc-time-zone works where the system has no zone database

	"github.com/strata-go/strata/autoconfig"
	"github.com/strata-go/strata/db"
	_ "github.com/strata-go/strata/providers/gemini" // registers itself: summarizer.provider gemini works
	_ "github.com/strata-go/strata/providers/openai" // registers itself: summarizer.provider openai works
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	code := runInput(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
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
  replay FILE|-          feed a transcript (- reads standard input) through a
                         manager built from the configuration and show, turn
                         by turn, what the model would receive before each
                         user message, when folds happen, and token counts
  migrate up|down|version|force N|distribute|import-arc-reactor
                         manage Strata's PostgreSQL schema; import
                         arc-reactor's conversations (--dry-run; run it
                         again to add what arc-reactor wrote since)
  inspect --user USER SESSION
                         print a stored session's summary and what the model
                         sees of it, numbered
  config                 print the effective configuration and where each value
                         comes from (--example: every key with its default)
  serve                  serve the JSON HTTP API over the configured manager and
                         stores (--listen ADDR), until SIGINT or SIGTERM
  export --user USER [SESSION...] | --all
                         write sessions as JSON Lines snapshots (backups, moves)
  import [FILE|-]        create sessions from JSON Lines snapshots
  forget --user USER SESSION SEQ... | --user USER --fact KEY SESSION
                         erase messages and what was derived from them, or a fact
  version                print strata's module version and the Go version

Common flags (every command):
  --config FILE          YAML configuration file (repeatable; later files win)
  --set KEY=VALUE        set one key, e.g. arc.reactor.memory.summary.enabled=true
                         (repeatable; wins over files and the environment)
  --help                 show the command's help

Configuration: defaults < --config files < environment (ARC_REACTOR_…,
SPRING_DATASOURCE_URL) < --set. When none of them names a datasource,
$DATABASE_URL is used (except by replay, which then stays in memory). See
config.example.yaml for every key.

Run "strata <command> --help" for a command's flags.
`

// run is the whole command in-process: it returns the exit status.
func run(args []string, stdout, stderr io.Writer) int {
	return runContext(context.Background(), args, stdout, stderr)
}

// runContext is run with a context, and no standard input.
func runContext(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return runInput(ctx, args, nil, stdout, stderr)
}

// runInput is the whole command with its standard input (read by
// "strata replay -"; nil reads as empty).
func runInput(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	err := dispatch(ctx, args, stdin, stdout, stderr)
	switch {
	case err == nil, errors.Is(err, errHelp):
		return exitOK
	}
	fmt.Fprintln(stderr, "strata: "+errorText(err))
	var ue *usageError
	if errors.As(err, &ue) {
		return exitUsage
	}
	return exitError
}

func dispatch(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return usagef("no command (want replay, migrate, inspect, config, serve or version; see strata --help)")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "-h", "-help", "--help", "help":
		if len(rest) > 0 && cmd == "help" {
			return dispatch(ctx, []string{rest[0], "--help"}, stdin, stdout, stderr)
		}
		fmt.Fprint(stdout, mainUsage)
		return errHelp
	case "replay":
		return cmdReplay(ctx, rest, stdin, stdout, stderr)
	case "migrate":
		return cmdMigrate(ctx, rest, stdout, stderr)
	case "inspect":
		return cmdInspect(ctx, rest, stdout, stderr)
	case "config":
		return cmdConfig(rest, stdout, stderr)
	case "serve":
		return cmdServe(ctx, rest, stdout, stderr)
	case "export":
		return cmdExport(ctx, rest, stdout, stderr)
	case "import":
		return cmdImport(ctx, rest, stdin, stdout, stderr)
	case "forget":
		return cmdForget(ctx, rest, stdout, stderr)
	case "version", "--version", "-version":
		return cmdVersion(rest, stdout)
	}
	if strings.HasPrefix(cmd, "-") {
		return usagef("flags go after the command: strata <command> %s … (commands: replay, migrate, inspect, config, serve, version)", cmd)
	}
	return usagef("unknown command %q (want replay, migrate, inspect, config, serve or version; see strata --help)", cmd)
}

// stringList is a repeatable string flag.
type stringList []string

func (s *stringList) String() string     { return strings.Join(*s, ",") }
func (s *stringList) Set(v string) error { *s = append(*s, v); return nil }

// commonFlags are the flags of every command.
type commonFlags struct {
	configs stringList
	sets    stringList
	// ignoreDatabaseURL turns off the $DATABASE_URL fallback (replay: a
	// variable set for other tools must not send a replay into a database).
	ignoreDatabaseURL bool
	// fromDatabaseURL: load took the datasource from $DATABASE_URL.
	fromDatabaseURL bool
	// stderr, when set, receives one information line from load naming
	// the keys Strata accepts but does not use (autoconfig's UnusedNote).
	// Commands that build with a logger leave it nil: the build logs it.
	stderr io.Writer
}

func (c *commonFlags) register(fs *flag.FlagSet) {
	fs.Var(&c.configs, "config", "YAML configuration `FILE` (repeatable; later files win)")
	fs.Var(&c.sets, "set", "set one configuration key, `KEY=VALUE` (repeatable; wins over files and environment)")
}

// envDatabaseURL is the conventional variable the CLI falls back on when
// the configuration names no datasource.
const envDatabaseURL = "DATABASE_URL"

// noDatasource is the error text of commands that need a database.
const noDatasource = "no datasource configured (set arc.reactor.memory.datasource.url or spring.datasource.url, ARC_REACTOR_MEMORY_DATASOURCE_URL, or DATABASE_URL)"

// load reads the configuration: defaults < --config files < environment <
// --set. When none of them names a datasource, $DATABASE_URL is used as
// arc.reactor.memory.datasource.url, unless ignoreDatabaseURL.
func (c *commonFlags) load() (*autoconfig.Config, error) {
	cfg, err := autoconfig.LoadWith(autoconfig.LoadOptions{Files: c.configs, Overrides: c.sets, OverrideSource: "--set"})
	if err != nil {
		return nil, err
	}
	if note := cfg.UnusedNote(); note != "" && c.stderr != nil {
		fmt.Fprintln(c.stderr, "strata: info: "+note)
	}
	if c.ignoreDatabaseURL || cfg.IsSet(keyDatasourceURL) || cfg.IsSet(keySpringDatasourceURL) {
		return cfg, nil
	}
	u, ok := cfg.LookupEnv(envDatabaseURL)
	if !ok || strings.TrimSpace(u) == "" {
		return cfg, nil
	}
	out := cfg.Clone()
	out.Datasource.URL = strings.TrimSpace(u)
	if _, err := out.DatabaseURL(); err != nil {
		return nil, fmt.Errorf("%s: %w", envDatabaseURL, err)
	}
	c.fromDatabaseURL = true
	return out, nil
}

// The datasource keys.
const (
	keyDatasourceURL       = "arc.reactor.memory.datasource.url"
	keySpringDatasourceURL = "spring.datasource.url"
)

// parseFlags parses flags and positional arguments in any order ("replay
// FILE --json" works). --help prints usage to stdout and returns errHelp;
// other mistakes are usage errors naming the command.
func parseFlags(fs *flag.FlagSet, args []string, usage string, stdout io.Writer) ([]string, error) {
	fs.SetOutput(io.Discard)
	fs.Usage = func() {}
	var positional []string
	for {
		// A negative number ("migrate force -1") is an argument, unless it
		// is the value of the flag before it ("--width -5").
		if i := negativeArgument(fs, args); i >= 0 {
			rest, err := parseFlags(fs, args[:i], usage, stdout)
			if err != nil {
				return nil, err
			}
			positional = append(append(positional, rest...), args[i])
			args = args[i+1:]
			continue
		}
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

// negativeArgument returns the index of the first argument that is a
// negative integer and not the value of the flag before it, or -1. Arguments
// after "--" are not considered.
func negativeArgument(fs *flag.FlagSet, args []string) int {
	for i, a := range args {
		if a == "--" {
			return -1
		}
		if _, err := strconv.Atoi(a); err != nil || !strings.HasPrefix(a, "-") {
			continue
		}
		if i > 0 && takesValue(fs, args[i-1]) {
			continue
		}
		return i
	}
	return -1
}

// takesValue reports whether arg is a flag that takes the next argument as
// its value: a defined non-boolean flag without "=value".
func takesValue(fs *flag.FlagSet, arg string) bool {
	if !strings.HasPrefix(arg, "-") || strings.Contains(arg, "=") {
		return false
	}
	f := fs.Lookup(strings.TrimLeft(arg, "-"))
	if f == nil {
		return false
	}
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return !ok || !b.IsBoolFlag()
}

// errorText is the one line printed for a failed command. A query that
// met a database without Strata's tables (PostgreSQL's undefined_table)
// says to migrate it.
func errorText(err error) string {
	msg := err.Error()
	if db.IsMissingTable(err) && !errors.Is(err, db.ErrSchemaNotMigrated) {
		msg += "; " + db.ErrSchemaNotMigrated.Error()
	}
	return oneLine(dedupPrefixes(msg))
}

// packagePrefixes are the prefixes Strata's packages start their errors
// with; wrapping one package's error in another's repeats them.
var packagePrefixes = map[string]bool{"memory": true, "db": true, "summary": true, "autoconfig": true, "catalog": true, "server": true}

// dedupPrefixes keeps each package prefix of a wrapped error's text where
// it first appears only: "memory: load "s": db: snapshot "s": memory:
// session is owned by another user" becomes "memory: load "s": db:
// snapshot "s": session is owned by another user".
func dedupPrefixes(msg string) string {
	seen := map[string]bool{}
	parts := strings.Split(msg, ": ")
	out := parts[:0]
	for _, p := range parts {
		if packagePrefixes[p] {
			if seen[p] {
				continue
			}
			seen[p] = true
		}
		out = append(out, p)
	}
	return strings.Join(out, ": ")
}

func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// plural is n with the noun's singular or plural form: "1 message",
// "2 messages", "0 messages".
func plural(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.Itoa(n) + " " + many
}
