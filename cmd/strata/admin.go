package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"

	"github.com/strata-go/strata/autoconfig"
	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/snapshot"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

const migrateUsage = `Usage: strata migrate [flags] up|down|version|force VERSION|distribute|import-arc-reactor

Manages Strata's PostgreSQL schema in the configured database
(arc.reactor.memory.datasource.url, else spring.datasource.url, else
$DATABASE_URL):

  up        apply every pending migration (idempotent); each migration file
            runs in one transaction, and a failure prints the statement that
            failed and the force command that recovers
  down      remove every Strata table and its data (needs --yes)
  version   print the applied schema version
  force N   record version N as applied and clear the dirty flag, without
            running anything (recovery after a failed migration; -1 = none)
  distribute
            on Citus (the citus extension installed, connected to the
            coordinator directly): distribute Strata's tables by session
            id, colocated with strata_sessions, and its functions on
            their session argument, so that every statement about one
            session runs on one worker (idempotent; migrate up keeps a
            distributed schema distributed)
  import-arc-reactor
            import arc-reactor's conversations (its conversation_messages
            and conversation_summaries tables, which are only read): each
            session is created in Strata with its owner (the user_id of
            its first message; the shared owner when its id has a
            shared-session prefix), its messages in arc-reactor's order
            with their roles, timestamps and authors, and its summary
            (facts, narrative, cursor), in one transaction, with no
            summarizer call. Incremental: run it again, while arc-reactor
            still runs, and it adds to each session exactly the messages
            arc-reactor wrote since (its rows of a greater id), none twice,
            and re-homes as shared the threads imported before their
            prefix was set; it reports what it added per session. Sessions
            created in Strata, or deleted in Strata after their import,
            are left alone. --dry-run reports what it would do (and names
            the sessions several users wrote in) and writes nothing.
            --arc-time-zone names the zone of arc-reactor's JVM (default
            UTC): arc-reactor writes its summaries' times as wall-clock
            times of that zone. Needs no API key. migrate up offers it
            when those tables hold rows.

Flags:
`

func cmdMigrate(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("migrate", flag.ContinueOnError)
	var cf commonFlags
	cf.register(fs)
	cf.stderr = stderr
	yes := fs.Bool("yes", false, "confirm migrate down (it deletes every Strata table and its data)")
	dryRun := fs.Bool("dry-run", false, "import-arc-reactor: report what would be imported, write nothing")
	showProgress := fs.Bool("progress", true, "import-arc-reactor: draw a progress bar on stderr when it is a terminal")
	arcZone := fs.String("arc-time-zone", "UTC", "import-arc-reactor: the IANA `ZONE` (e.g. Asia/Seoul) of arc-reactor's JVM, in which it wrote its TIMESTAMP columns (summaries' created_at and updated_at)")
	pos, err := parseFlags(fs, args, migrateUsage, stdout)
	if err != nil {
		return err
	}
	if len(pos) == 0 {
		return usagef("migrate: want up, down, version, force VERSION, distribute or import-arc-reactor (see strata migrate --help)")
	}
	action := pos[0]
	want := 1
	if action == "force" {
		want = 2
	}
	switch action {
	case "up", "down", "version", "force", "distribute", "import-arc-reactor":
	default:
		return usagef("migrate: unknown action %q (want up, down, version, force VERSION, distribute or import-arc-reactor)", action)
	}
	if len(pos) != want {
		return usagef("migrate %s: want %d argument(s), got %d", action, want-1, len(pos)-1)
	}
	force := 0
	if action == "force" {
		if force, err = strconv.Atoi(pos[1]); err != nil || force < -1 {
			return usagef("migrate force: VERSION must be an integer >= -1, got %q", pos[1])
		}
	}
	if *dryRun && action != "import-arc-reactor" {
		return usagef("migrate %s: --dry-run applies to import-arc-reactor only", action)
	}
	zone, err := time.LoadLocation(strings.TrimSpace(*arcZone))
	if err != nil || strings.TrimSpace(*arcZone) == "" {
		return usagef("migrate: --arc-time-zone %q is not an IANA time zone (e.g. UTC, Asia/Seoul, Europe/Berlin)", *arcZone)
	}
	if action == "down" && !*yes {
		return usagef("migrate down deletes every Strata table and its data; pass --yes to confirm")
	}
	cfg, err := cf.load()
	if err != nil {
		return err
	}
	d, err := openDatabase(ctx, cfg, "migrate")
	if err != nil {
		return err
	}
	defer d.Close()
	switch action {
	case "up":
		if err := db.Migrate(ctx, d); err != nil {
			return dbError(err)
		}
	case "down":
		if err := db.MigrateDown(ctx, d); err != nil {
			return dbError(err)
		}
	case "force":
		if err := db.MigrateForce(ctx, d, force); err != nil {
			return dbError(err)
		}
	case "distribute":
		if err := db.Distribute(ctx, d); err != nil {
			return dbError(err)
		}
		fmt.Fprintln(stdout, "distributed by session id")
	case "import-arc-reactor":
		return importArcReactor(ctx, cfg, d, arcImportFlags{dryRun: *dryRun, progress: *showProgress, zone: zone}, stdout, stderr)
	}
	v, dirty, err := db.MigrationVersion(ctx, d)
	if err != nil {
		return fmt.Errorf("migrate %s: version: %w", action, err)
	}
	switch {
	case v == 0 && !dirty:
		fmt.Fprintln(stdout, "schema version: none (no migration applied)")
	case dirty:
		fmt.Fprintf(stdout, "schema version: %d (%v)\n", v, &db.DirtySchemaError{Version: int(v)})
	default:
		fmt.Fprintf(stdout, "schema version: %d\n", v)
	}
	if action == "up" {
		n, err := db.ArcReactorSessions(ctx, d)
		if err != nil {
			return fmt.Errorf("migrate up: %w", err)
		}
		if n > 0 {
			fmt.Fprintf(stdout, "arc-reactor's tables hold %d conversations: strata migrate import-arc-reactor imports them (--dry-run first shows what it would do)\n", n)
		}
	}
	return nil
}

// dbError presents an error of package db's migration functions, which
// already name the operation ("db: migrate up: …"), without the package
// prefix; the error stays in the chain.
func dbError(err error) error {
	return &reworded{msg: strings.TrimPrefix(err.Error(), "db: "), err: err}
}

// reworded is an error shown with another text.
type reworded struct {
	msg string
	err error
}

func (e *reworded) Error() string { return e.msg }
func (e *reworded) Unwrap() error { return e.err }

// maxListedFailures bounds the sessions import-arc-reactor lists as
// failed.
const maxListedFailures = 20

// importArcReactor runs migrate import-arc-reactor on a migrated database:
// db.ImportArcReactor into a manager over the configured stores, built
// with summaries wired and a summarizer that refuses to run (an import
// never summarizes, so no API key is needed).
// arcImportFlags are migrate import-arc-reactor's flags.
type arcImportFlags struct {
	dryRun, progress bool
	zone             *time.Location
}

func importArcReactor(ctx context.Context, cfg *autoconfig.Config, d *sqlx.DB, f arcImportFlags, stdout, stderr io.Writer) error {
	const cmd = "migrate import-arc-reactor"
	if err := db.CheckSchema(ctx, d); err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	built := cfg.Clone()
	built.Memory.Enabled = true
	built.Datasource.MigrateOnStart = false
	rt, err := autoconfig.BuildRuntime(ctx, built, autoconfig.WithSummarizer(refuseToSummarize))
	if err != nil {
		return fmt.Errorf("%s: %w", cmd, err)
	}
	defer rt.Close()
	bar := newProgress(stderr, stdout, 0, f.progress).withUnit("sessions")
	res, err := db.ImportArcReactor(ctx, d, rt.Manager, db.ArcReactorImportOptions{DryRun: f.dryRun, TimeZone: f.zone,
		Progress: func(done, total int) { bar.total = total; bar.update(done, "") }})
	bar.finish()
	if res.Sessions == 0 && err == nil {
		fmt.Fprintln(stdout, "no arc-reactor conversations to import (no conversation_messages or conversation_summaries table of arc-reactor's, or they are empty)")
		return nil
	}
	printArcReactorImport(stdout, res, f.dryRun)
	if err != nil {
		return fmt.Errorf("%s: stopped (run it again to resume): %w", cmd, err)
	}
	if n := len(res.Failed); n > 0 {
		return fmt.Errorf("%s: %d session(s) could not be imported (listed above); the others were", cmd, n)
	}
	return nil
}

func printArcReactorImport(w io.Writer, r db.ArcReactorImport, dryRun bool) {
	verb, note, added := "imported", "", "added"
	if dryRun {
		verb, note, added = "would import", " (dry run: nothing written)", "would add"
	}
	fmt.Fprintf(w, "%s %d of %d arc-reactor sessions (%s, %s)%s\n", verb, r.Imported, r.Sessions,
		plural(r.Messages, "message", "messages"), plural(r.Summaries, "summary", "summaries"), note)
	if n := len(r.Updated); n > 0 {
		total := 0
		for _, u := range r.Updated {
			total += u.Added
		}
		fmt.Fprintf(w, "%s %s written in arc-reactor since the last import to %s:\n", added, plural(total, "message", "messages"), plural(n, "session", "sessions"))
		for i, u := range r.Updated {
			if i == maxListedFailures {
				fmt.Fprintf(w, "  … and %d more\n", n-i)
				break
			}
			fmt.Fprintf(w, "  %s +%d\n", u.SessionID, u.Added)
		}
	}
	if r.Current > 0 {
		fmt.Fprintf(w, "up to date: %s imported before, with no newer message in arc-reactor\n", plural(r.Current, "session", "sessions"))
	}
	if n := len(r.Rehomed); n > 0 {
		v := "re-homed"
		if dryRun {
			v = "would re-home"
		}
		fmt.Fprintf(w, "%s %s as shared (id with a shared-session prefix; imported before under its first author): %s\n",
			v, plural(n, "session", "sessions"), listIDs(r.Rehomed))
	}
	if r.Existing > 0 {
		fmt.Fprintf(w, "skipped %d already in Strata and not imported from arc-reactor (created in Strata; left as they are)\n", r.Existing)
	}
	if r.Deleted > 0 {
		fmt.Fprintf(w, "skipped %d imported before and deleted in Strata since (not created again)\n", r.Deleted)
	}
	if r.NoMessages > 0 {
		fmt.Fprintf(w, "skipped %d with a summary but no message left in arc-reactor (no owner, no history)\n", r.NoMessages)
	}
	if n := len(r.SeveralUsers); n > 0 {
		var shared, owned []string
		for _, m := range r.SeveralUsers {
			item := m.SessionID + " (" + strings.Join(m.Users, ", ") + ")"
			if m.Shared {
				shared = append(shared, item)
			} else {
				owned = append(owned, item)
			}
		}
		if len(owned) > 0 {
			which := "which belongs to its first author"
			if len(owned) > 1 {
				which = "which belong to their first authors"
			}
			fmt.Fprintf(w, "note: several users wrote in %s, %s: %s; to share a thread with everyone who writes in it, set arc.reactor.memory.shared-session-prefixes (e.g. --set arc.reactor.memory.shared-session-prefixes=slack-) and run the import again: it re-homes them\n",
				plural(len(owned), "session", "sessions"), which, listIDs(owned))
		}
		if len(shared) > 0 {
			fmt.Fprintf(w, "note: several users wrote in %s, shared (shared-session-prefixes): %s\n", plural(len(shared), "session", "sessions"), listIDs(shared))
		}
	}
	if r.UndecodableFacts > 0 {
		fmt.Fprintf(w, "note: %s of arc-reactor's facts_json could not be decoded and were left out\n", plural(r.UndecodableFacts, "fact", "facts"))
	}
	for i, f := range r.Failed {
		if i == maxListedFailures {
			fmt.Fprintf(w, "failed: … and %d more\n", len(r.Failed)-i)
			break
		}
		fmt.Fprintf(w, "failed: session %q: %s\n", f.SessionID, oneLine(f.Err.Error()))
	}
}

// listIDs joins at most maxListedFailures items, saying how many more.
func listIDs(ids []string) string {
	if len(ids) <= maxListedFailures {
		return strings.Join(ids, ", ")
	}
	return strings.Join(ids[:maxListedFailures], ", ") + fmt.Sprintf(" and %d more", len(ids)-maxListedFailures)
}

// openDatabase loads the configuration and opens its datasource; without
// one it is an error.
func openDatabase(ctx context.Context, cfg *autoconfig.Config, cmd string) (*sqlx.DB, error) {
	if dsn, err := cfg.DatabaseURL(); err != nil {
		return nil, err
	} else if dsn == "" {
		return nil, fmt.Errorf("%s: %s", cmd, noDatasource)
	}
	// autoconfig.OpenDatabase says how to fix a TLS mismatch.
	d, err := autoconfig.OpenDatabase(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cmd, err)
	}
	return d, nil
}

const inspectUsage = `Usage: strata inspect --user USER [flags] SESSION

Prints a session stored in the configured PostgreSQL database, read through
the memory manager as its owner USER: its message count, its summary (facts,
narrative, cursor = the seq of the last message folded into it) and what
the model sees of it: the messages Manager.Load assembles, in the order the
model gets them — the facts and narrative blocks, then the verbatim
messages, each with its seq, the store's sequence number of the message:
the number strata export, GET /v1/sessions/{id} and strata forget use
(seqs are counted per session and never reused for a session id, so a
session's need not start at 1 nor be consecutive: a re-created id goes on
from its predecessor's, and erased messages leave gaps). Nothing is summarized or changed: when a
fold is due, inspect shows what the model sees until the fold has run. A
session of another user is reported as such and not shown. With --html FILE
it writes one self-contained HTML page instead (no network needed to view
it): the messages with their seqs, what the model saw on a turn (--turn N)
against the budget, the folds, erasures and imports of the session's
journal with their tokens, and each fact's history.

Flags:
`

// inspectReport is inspect's --json output.
type inspectReport struct {
	Session  string          `json:"session"`
	Owner    string          `json:"owner"`
	Messages int             `json:"stored_messages"`
	Summary  *inspectSummary `json:"summary"`
	// Mode is how Manager.Load assembled the prompt (memory.History.Mode):
	// take-last, hierarchical, all, stale, fallback or empty.
	Mode string `json:"mode"`
	// Prompt is what the model sees, in order.
	Prompt []inspectMsg `json:"prompt"`
}

type inspectSummary struct {
	// Cursor is the seq of the last message folded in; Folded is how many
	// of the session's stored messages it covers.
	Cursor    int64           `json:"cursor"`
	Folded    int             `json:"folded_messages"`
	Version   int64           `json:"version"`
	Facts     []snapshot.Fact `json:"facts"` // as strata export writes them
	Narrative string          `json:"narrative"`
	CreatedAt time.Time       `json:"created_at"`
	UpdatedAt time.Time       `json:"updated_at"`
}

type inspectMsg struct {
	// Position is the message's place in the prompt, 1 for the first.
	Position int `json:"position"`
	// Seq is a stored message's sequence number, the one strata forget,
	// strata export and the HTTP API use; 0 for the facts and narrative
	// blocks.
	Seq      int64             `json:"seq,omitempty"`
	Role     string            `json:"role"`
	Text     string            `json:"content"`
	Folded   bool              `json:"folded,omitempty"`
	Metadata map[string]string `json:"metadata,omitempty"` // e.g. model_variant
}

// refuseToSummarize is inspect's summarizer: inspect only reads, so
// nothing may be summarized.
var refuseToSummarize = summary.ServiceFunc(func(context.Context, summary.Request) (summary.Result, error) {
	return summary.Result{}, errors.New("strata inspect never summarizes")
})

func cmdInspect(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("inspect", flag.ContinueOnError)
	var cf commonFlags
	cf.register(fs)
	cf.stderr = stderr
	user := fs.String("user", "", "the session's owner, `USER` (required: sessions are read as their owner)")
	asJSON := fs.Bool("json", false, "print one JSON object")
	htmlFile := fs.String("html", "", "write the session as one self-contained HTML page to `FILE` (messages, a turn's prompt, folds and their costs, fact histories) instead of printing it")
	turn := fs.Int("turn", 0, "with --html: the user turn `N` whose prompt the page shows (default: the newest)")
	pos, err := parseFlags(fs, args, inspectUsage, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 1 || strings.TrimSpace(pos[0]) == "" {
		return usagef("inspect: want exactly one SESSION (see strata inspect --help)")
	}
	if strings.TrimSpace(*user) == "" {
		return usagef("inspect: want --user USER, the session's owner (see strata inspect --help)")
	}
	session := pos[0]
	cfg, err := cf.load()
	if err != nil {
		return err
	}
	if dsn, err := cfg.DatabaseURL(); err != nil {
		return err
	} else if dsn == "" {
		return errors.New("inspect: " + noDatasource)
	}
	// The managers are built with a summarizer that refuses to run, so
	// that nothing is folded and no API key is needed; the schema is not
	// migrated. The summary is read with the summary store wired in
	// whatever the configuration says, so that a stored summary is shown;
	// the prompt follows the configuration as given (summaries on or off).
	built := cfg.Clone()
	built.Datasource.MigrateOnStart = false
	built.Memory.Enabled = true
	rt, err := autoconfig.BuildRuntime(ctx, built, autoconfig.WithSummarizer(refuseToSummarize))
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	defer rt.Close()
	if err := db.CheckSchema(ctx, rt.DB); err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	loader := rt.Manager
	if !cfg.Memory.Enabled {
		asGiven := cfg.Clone()
		asGiven.Datasource.MigrateOnStart = false
		rt2, err := autoconfig.BuildRuntime(ctx, asGiven, autoconfig.WithSummarizer(refuseToSummarize))
		if err != nil {
			return fmt.Errorf("inspect: %w", err)
		}
		defer rt2.Close()
		loader = rt2.Manager
	}
	if *htmlFile != "" {
		return writeInspectHTML(ctx, rt.Manager, session, *user, *turn, *htmlFile, stdout)
	}
	rep, err := inspect(ctx, rt.Manager, loader, session, *user)
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	if *asJSON {
		b, err := json.MarshalIndent(rep, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(stdout, "%s\n", b)
		return err
	}
	printInspect(stdout, rep)
	return nil
}

// inspect reads a session as its owner: its stored messages and its
// summary through mgr, and what the model sees of it through loader's
// Load.
func inspect(ctx context.Context, mgr, loader *memory.Manager, session, user string) (inspectReport, error) {
	msgs, err := mgr.Messages(ctx, session, user, 0, 0)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return inspectReport{}, fmt.Errorf("session %q not found", session)
	case errors.Is(err, memory.ErrNotOwner):
		return inspectReport{}, fmt.Errorf("session %q: %w", session, memory.ErrNotOwner)
	case err != nil:
		return inspectReport{}, err
	}
	s, err := mgr.Summary(ctx, session, user)
	if err != nil {
		return inspectReport{}, fmt.Errorf("summary: %w", err)
	}
	h, err := loader.Load(ctx, session, user)
	if err != nil {
		return inspectReport{}, err
	}
	rep := inspectReport{Session: session, Owner: user, Messages: len(msgs), Mode: string(h.Mode), Prompt: []inspectMsg{}}
	var cursor int64
	if s != nil {
		cursor = s.UpToSeq
		folded := 0
		for _, m := range msgs {
			if m.Seq <= cursor {
				folded++
			}
		}
		rep.Summary = &inspectSummary{Cursor: s.UpToSeq, Folded: folded, Version: s.Version,
			Facts: snapshot.FromSummary(s).Facts, Narrative: s.Narrative, CreatedAt: s.CreatedAt, UpdatedAt: s.UpdatedAt}
		if rep.Summary.Facts == nil {
			rep.Summary.Facts = []snapshot.Fact{}
		}
	}
	// Load's messages are the summary's blocks, then one message per
	// verbatim stored message (h.Recent), in order.
	blocks := len(h.Messages) - len(h.Recent)
	for i, cm := range h.Messages {
		im := inspectMsg{Position: i + 1, Role: string(cm.GetType()), Text: chatText(cm)}
		if j := i - blocks; blocks >= 0 && j >= 0 {
			m := h.Recent[j]
			im.Seq, im.Role, im.Folded, im.Metadata = m.Seq, string(m.Role), m.Seq <= cursor, m.Metadata
		}
		rep.Prompt = append(rep.Prompt, im)
	}
	return rep, nil
}

func printInspect(w io.Writer, r inspectReport) {
	fmt.Fprintf(w, "session:  %s\nowner:    %s\nmessages: %d\n", r.Session, r.Owner, r.Messages)
	if r.Summary == nil {
		fmt.Fprintln(w, "summary:  none")
	} else {
		s := r.Summary
		fmt.Fprintf(w, "cursor:   #%d (folds %s of %d; summary version %d, updated %s)\n", s.Cursor, plural(s.Folded, "message", "messages"),
			r.Messages, s.Version, s.UpdatedAt.Format(time.RFC3339))
		facts := make([]summary.Fact, len(s.Facts))
		for i, f := range s.Facts {
			facts[i] = summary.Fact{Key: f.Key, Value: f.Value, Category: summary.Category(f.Category)}
		}
		printFactsAndNarrative(w, facts, s.Narrative)
	}
	fmt.Fprintf(w, "what the model sees (%s, %s):\n", r.Mode, plural(len(r.Prompt), "message", "messages"))
	anyFolded, anyVariant, anyBlock := false, false, false
	for _, m := range r.Prompt {
		mark := " "
		if m.Folded {
			mark, anyFolded = "f", true
		}
		variant := ""
		if v := m.Metadata[store.MetadataModelVariant]; v != "" {
			variant, anyVariant = " ["+store.MetadataModelVariant+"="+v+"]", true
		}
		num := "-"
		if m.Seq > 0 {
			num = fmt.Sprintf("#%d", m.Seq)
		} else {
			anyBlock = true
		}
		fmt.Fprintf(w, "  %3d %s %-7s %-9s %s%s\n", m.Position, mark, num, m.Role, oneLine(m.Text), variant)
	}
	if len(r.Prompt) == 0 {
		return
	}
	legend := []string{"first column: the place in the prompt", "#N = the message's seq, the number strata forget takes"}
	if anyBlock {
		legend = append(legend, "- = the summary's facts or narrative block")
	}
	if anyFolded {
		legend = append(legend, "f = already folded into the summary")
	}
	if anyVariant {
		legend = append(legend, "["+store.MetadataModelVariant+"=…] = the model variant stored with the message")
	}
	fmt.Fprintf(w, "  (%s)\n", strings.Join(legend, "; "))
}

const configUsage = `Usage: strata config [flags]

Prints the effective configuration — every key, its value and where the value
comes from (default, a --config file, an environment variable, --set) — after
validating it. With --example, prints every key with its default and meaning
(the content of config.example.yaml).

Flags:
`

func cmdConfig(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("config", flag.ContinueOnError)
	var cf commonFlags
	cf.register(fs)
	cf.stderr = stderr
	example := fs.Bool("example", false, "print every key with its default and meaning (YAML)")
	pos, err := parseFlags(fs, args, configUsage, stdout)
	if err != nil {
		return err
	}
	if len(pos) != 0 {
		return usagef("config: unexpected argument %q", pos[0])
	}
	if *example {
		return autoconfig.WriteExampleYAML(stdout)
	}
	cfg, err := cf.load()
	if err != nil {
		return err
	}
	width := 0
	for _, k := range autoconfig.Keys() {
		width = max(width, len(k.Key))
	}
	for _, k := range autoconfig.Keys() {
		v, _ := cfg.Value(k.Key)
		src := cfg.Source(k.Key)
		if k.Key == keyDatasourceURL && cf.fromDatabaseURL {
			v = `"` + db.RedactDSN(cfg.Datasource.URL) + `"`
			src = "environment variable " + envDatabaseURL + " (no datasource configured)"
		}
		fmt.Fprintf(stdout, "%-*s  %-22s  %s\n", width, k.Key, v, src)
	}
	provider, why := cfg.SummarizerChoice()
	fmt.Fprintf(stdout, "\nsummarizer in use: %s", provider)
	if model, keyEnv := summarizerDetails(cfg); model != "" {
		fmt.Fprintf(stdout, " (model %s, API key from $%s)", model, keyEnv)
	}
	fmt.Fprintf(stdout, "\n  because %s\n", why)
	if !cfg.Memory.Enabled {
		fmt.Fprintln(stdout, "  (summaries are off, arc.reactor.memory.summary.enabled: no summarizer runs until they are on)")
	}
	dsn, err := cfg.DatabaseURL()
	if err != nil {
		return err
	}
	if dsn == "" {
		fmt.Fprintln(stdout, "stores: in-memory")
	} else {
		from := ""
		if cf.fromDatabaseURL {
			from = " (from $" + envDatabaseURL + ")"
		}
		fmt.Fprintf(stdout, "stores: PostgreSQL %s%s\n", db.RedactDSN(dsn), from)
	}
	return nil
}
