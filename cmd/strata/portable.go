package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/strata-go/strata/autoconfig"
	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/internal/msgjson"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

const exportUsage = `strata export — write sessions as JSON Lines, one snapshot per line.

Usage:
  strata export [flags] --user USER [SESSION...]
  strata export [flags] --all

Writes each session of the configured store as a snapshot (the format of
GET /v1/sessions/{id}/export, memory/snapshot.schema.json): every stored
message with its tool calls, metadata and timestamp, and the summary with
its facts, their provenance and its cursor. With SESSION arguments, those
sessions of USER; with --user alone, every session of USER; with --all
(PostgreSQL only), every live session of every user. strata import reads
the output back, into the same store or another.

Output goes to standard output (or --out FILE). A progress line is drawn on
stderr when it is a terminal.

Flags:
`

const importUsage = `strata import — create sessions from JSON Lines snapshots.

Usage:
  strata import [flags] [FILE|-]

Reads one snapshot per line (strata export, GET /v1/sessions/{id}/export)
from FILE or standard input and creates each session in the configured
store as its owner: its messages in order with their timestamps, and its
summary with the cursor mapped onto the store's sequence numbers, so the
model sees what it saw before, without a summarizer call. Each snapshot is
validated before anything of it is written, and imported all or nothing (on
PostgreSQL in one transaction). A session id already in use stops the
import (exit status 1) unless --skip-existing. Blank lines are ignored; a
line may hold at most 64 MiB.

A progress line is drawn on stderr when it is a terminal; a summary line is
printed at the end.

Flags:
`

// maxSnapshotLine bounds one line of strata import's input.
const maxSnapshotLine = 64 << 20

// exportPage is how many sessions a listing reads at once.
const exportPage = 500

type portableOptions struct {
	configSrc    commonFlags
	user         string
	all          bool
	out          string
	skipExisting bool
	progress     bool
}

// portableRuntime builds the manager for export and import: summaries on
// (so that stored summaries are read and written) unless the configuration
// says otherwise.
func portableRuntime(ctx context.Context, o *portableOptions, cmd string) (*autoconfig.Runtime, error) {
	cfg, err := o.configSrc.load()
	if err != nil {
		return nil, err
	}
	if !cfg.IsSet("arc.reactor.memory.summary.enabled") {
		cfg.Memory.Enabled = true
		if err := cfg.Validate(); err != nil {
			return nil, err
		}
	}
	rt, err := autoconfig.BuildRuntime(ctx, cfg)
	if err != nil {
		return nil, err
	}
	if rt.DB != nil {
		if err := db.CheckSchema(ctx, rt.DB); err != nil {
			_ = rt.Close()
			return nil, fmt.Errorf("%s: %w", cmd, err)
		}
	}
	return rt, nil
}

func cmdExport(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("export", flag.ContinueOnError)
	var o portableOptions
	o.configSrc.register(fs)
	fs.StringVar(&o.user, "user", "", "the sessions' owner `USER`")
	fs.BoolVar(&o.all, "all", false, "every live session of every user (PostgreSQL)")
	fs.StringVar(&o.out, "out", "", "write to `FILE` instead of standard output")
	fs.BoolVar(&o.progress, "progress", true, "draw a progress line on stderr when it is a terminal")
	pos, err := parseFlags(fs, args, exportUsage, stdout)
	if err != nil {
		return err
	}
	switch {
	case o.all && (o.user != "" || len(pos) > 0):
		return usagef("export: --all takes no --user and no SESSION")
	case !o.all && o.user == "":
		return usagef("export: want --user USER [SESSION...] or --all (see strata export --help)")
	}
	rt, err := portableRuntime(ctx, &o, "export")
	if err != nil {
		return err
	}
	defer rt.Close()
	if o.all && rt.DB == nil {
		return errors.New("export: --all needs a PostgreSQL datasource (" + noDatasource + ")")
	}
	var refs []db.SessionRef
	for _, id := range pos {
		refs = append(refs, db.SessionRef{SessionID: id, UserID: o.user})
	}
	if len(pos) == 0 {
		if refs, err = listSessions(ctx, rt, o.user); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	w := stdout
	var file *os.File
	if o.out != "" {
		if file, err = os.Create(o.out); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		defer file.Close()
		w = file
	}
	bw := bufio.NewWriter(w)
	p := newProgress(stderr, w, len(refs), o.progress).withUnit("sessions")
	defer p.finish()
	messages := 0
	for i, ref := range refs {
		snap, err := rt.Manager.Export(ctx, ref.SessionID, ref.UserID)
		if err != nil {
			return fmt.Errorf("export: session %q: %w", ref.SessionID, err)
		}
		line, err := json.Marshal(snap)
		if err != nil {
			return fmt.Errorf("export: session %q: %w", ref.SessionID, err)
		}
		if _, err := bw.Write(append(line, '\n')); err != nil {
			return fmt.Errorf("export: %w", err)
		}
		messages += len(snap.Messages)
		p.update(i+1, ref.SessionID)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export: %w", err)
	}
	if file != nil {
		if err := file.Close(); err != nil {
			return fmt.Errorf("export: %w", err)
		}
	}
	p.finish()
	fmt.Fprintf(stderr, "exported %s, %s\n", plural(len(refs), "session", "sessions"), plural(messages, "message", "messages"))
	return nil
}

// listSessions lists the sessions to export: every live one (user "") or
// every one of user.
func listSessions(ctx context.Context, rt *autoconfig.Runtime, user string) ([]db.SessionRef, error) {
	var out []db.SessionRef
	if user == "" {
		after := ""
		for {
			page, err := db.LiveSessions(ctx, rt.DB, after, exportPage)
			if err != nil {
				return nil, err
			}
			out = append(out, page...)
			if len(page) < exportPage {
				return out, nil
			}
			after = page[len(page)-1].SessionID
		}
	}
	for offset := 0; ; offset += exportPage {
		page, total, err := rt.Manager.Sessions(ctx, user, exportPage, offset)
		if err != nil {
			return nil, err
		}
		for _, s := range page {
			out = append(out, db.SessionRef{SessionID: s.SessionID, UserID: user})
		}
		if len(page) == 0 || offset+len(page) >= total {
			return out, nil
		}
	}
}

func cmdImport(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("import", flag.ContinueOnError)
	var o portableOptions
	o.configSrc.register(fs)
	fs.BoolVar(&o.skipExisting, "skip-existing", false, "skip snapshots whose session id is already in use instead of stopping")
	fs.BoolVar(&o.progress, "progress", true, "draw a progress line on stderr when it is a terminal")
	pos, err := parseFlags(fs, args, importUsage, stdout)
	if err != nil {
		return err
	}
	if len(pos) > 1 {
		return usagef("import: want at most one FILE, got %d arguments", len(pos))
	}
	in := stdin
	if in == nil {
		in = bytes.NewReader(nil)
	}
	if len(pos) == 1 && pos[0] != stdinPath {
		f, err := os.Open(pos[0])
		if err != nil {
			return fmt.Errorf("import: %w", err)
		}
		defer f.Close()
		in = f
	}
	rt, err := portableRuntime(ctx, &o, "import")
	if err != nil {
		return err
	}
	defer rt.Close()
	if rt.DB == nil {
		fmt.Fprintln(stderr, "strata: import: no datasource configured: importing into the in-memory store, which keeps nothing after this command")
	}
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 64<<10), maxSnapshotLine)
	p := newProgress(stderr, stdout, 0, o.progress).withUnit("sessions")
	defer p.finish()
	imported, skipped, messages, line := 0, 0, 0, 0
	for sc.Scan() {
		line++
		raw := bytes.TrimSpace(sc.Bytes())
		if len(raw) == 0 {
			continue
		}
		var snap memory.Snapshot
		if err := msgjson.UnmarshalStrict(bytes.NewReader(raw), &snap); err != nil {
			return fmt.Errorf("import: line %d: %w", line, err)
		}
		err := rt.Manager.Import(ctx, &snap)
		switch {
		case errors.Is(err, store.ErrSessionExists) && o.skipExisting:
			skipped++
		case errors.Is(err, store.ErrSessionExists):
			return &reworded{msg: fmt.Sprintf("import: line %d: session %q already exists (%d imported before it); pass --skip-existing to skip the sessions already present and import the rest",
				line, snap.SessionID, imported), err: err}
		case err != nil:
			return fmt.Errorf("import: line %d: session %q: %w (%d imported before it)", line, snap.SessionID, err, imported)
		default:
			imported++
			messages += len(snap.Messages)
		}
		p.update(imported+skipped, snap.SessionID)
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return fmt.Errorf("import: line %d: longer than %d bytes", line+1, maxSnapshotLine)
		}
		return fmt.Errorf("import: %w", err)
	}
	p.finish()
	fmt.Fprintf(stderr, "imported %s, %s; skipped %d already present\n", plural(imported, "session", "sessions"), plural(messages, "message", "messages"), skipped)
	return nil
}

const forgetUsage = `strata forget — erase messages, or a fact, of a stored session.

Usage:
  strata forget [flags] --user USER SESSION SEQ...
  strata forget [flags] --user USER --fact KEY SESSION

With SEQ arguments (the seq of each message, as strata export or
GET /v1/sessions/{id} show them), erases those messages and everything
derived from them: the facts whose value came from them, the narrative
sentences carrying their content, the catalogue's document. With --fact,
removes the fact KEY from the session's memory, for good: later
summarizations of the messages already stored do not bring it back. All or
nothing: on PostgreSQL one transaction.

Flags:
`

func cmdForget(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("forget", flag.ContinueOnError)
	var o portableOptions
	o.configSrc.register(fs)
	fs.StringVar(&o.user, "user", "", "the session's owner `USER`")
	var fact string
	fs.StringVar(&fact, "fact", "", "erase the fact with this `KEY` instead of messages")
	pos, err := parseFlags(fs, args, forgetUsage, stdout)
	if err != nil {
		return err
	}
	if o.user == "" || len(pos) == 0 {
		return usagef("forget: want --user USER SESSION SEQ... or --user USER --fact KEY SESSION (see strata forget --help)")
	}
	session, rest := pos[0], pos[1:]
	if (fact == "") == (len(rest) == 0) {
		return usagef("forget: want either SEQ arguments or --fact KEY")
	}
	var seqs []int64
	for _, a := range rest {
		var n int64
		if _, err := fmt.Sscan(a, &n); err != nil || n < 1 || fmt.Sprint(n) != a {
			return usagef("forget: %q is not a sequence number (a positive integer)", a)
		}
		seqs = append(seqs, n)
	}
	rt, err := portableRuntime(ctx, &o, "forget")
	if err != nil {
		return err
	}
	defer rt.Close()
	if fact != "" {
		if err := rt.Manager.ForgetFact(ctx, session, o.user, fact); err != nil {
			return fmt.Errorf("forget: %w", err)
		}
		fmt.Fprintf(stdout, "erased fact %q of session %s\n", fact, session)
		return nil
	}
	if err := rt.Manager.Forget(ctx, session, o.user, seqs...); err != nil {
		if errors.Is(err, store.ErrUnknownMessage) {
			return unknownSeqs(ctx, rt.Manager, session, o.user, seqs, err)
		}
		return fmt.Errorf("forget: %w", err)
	}
	fmt.Fprintf(stdout, "erased %s of session %s\n", plural(len(seqs), "message", "messages"), session)
	return nil
}

// unknownSeqs is forget's error for seqs of which some are not messages
// of the session (nothing was erased): it names them, read after the
// failed erasure, and says where the seqs are shown.
func unknownSeqs(ctx context.Context, m *memory.Manager, session, user string, seqs []int64, err error) error {
	msgs, rerr := m.Messages(ctx, session, user, 0, 0)
	if rerr != nil {
		return fmt.Errorf("forget: %w", err)
	}
	have := make(map[int64]bool, len(msgs))
	for _, msg := range msgs {
		have[msg.Seq] = true
	}
	var missing []string
	for _, q := range seqs {
		if !have[q] {
			missing = append(missing, strconv.FormatInt(q, 10))
		}
	}
	what := "seq " + strings.Join(missing, ", ") + " is not a message"
	if len(missing) != 1 {
		what = "seqs " + strings.Join(missing, ", ") + " are not messages"
	}
	return &reworded{msg: fmt.Sprintf("forget: %s of session %s; nothing was erased (strata inspect and strata export show each message's seq)", what, session), err: err}
}
