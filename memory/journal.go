package memory

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// journalRetention is how many records a session's fold journal keeps:
// older ones are rolled into its totals (store.Journal.Rolled), which
// keep counting them.
const journalRetention = 200

// journalWriteTimeout bounds one journal write, which runs even when the
// fold it records was cancelled.
const journalWriteTimeout = 5 * time.Second

// Journal returns the session's fold journal: a record of every fold,
// erasure and import of the session — its message range, summarizer and
// model, tokens (as reported, or estimated and marked so), duration,
// outcome and fact changes — the newest 200 of them, with totals over
// every record ever appended. Values of erased messages and facts are not
// in it: Forget and ForgetFact clear them from every record. A missing
// session gives ErrNotFound, another user's ErrNotOwner. A message store
// given with a summary store apart keeps the journal when it can
// (store.Journaler), else the manager keeps it in process memory
// (store.Compose).
func (m *Manager) Journal(ctx context.Context, sessionID, userID string) (store.Journal, error) {
	t, err := m.store.Tail(ctx, sessionID, m.owner(sessionID, userID), 0)
	if err != nil {
		return store.Journal{}, fmt.Errorf("memory: journal of %q: %w", sessionID, err)
	}
	j, err := m.store.ReadJournal(ctx, sessionID, t.Epoch)
	if err != nil {
		return store.Journal{}, fmt.Errorf("memory: journal of %q: %w", sessionID, err)
	}
	return j, nil
}

// editJournal applies edit to the journal of the session's incarnation
// epoch, even when ctx was cancelled (a fold abandoned is journaled too),
// within journalWriteTimeout. A failure is logged: the journal never fails
// the operation it records.
func (e *engine) editJournal(ctx context.Context, sessionID string, epoch int64, edit func(j *store.Journal)) error {
	wctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), journalWriteTimeout)
	defer cancel()
	err := e.store.EditJournal(wctx, sessionID, epoch, edit)
	if err != nil {
		e.log.WarnContext(ctx, "strata: journal write failed", "session_id", sessionID, "error", err)
	}
	return err
}

// foldSpend is what a fold's summarizer calls cost.
type foldSpend struct {
	summarizer, model string
	in, out           int // as reported
	estIn, estOut     int // estimated for calls that reported nothing
	fallback          string
	calls             int
}

// summarizerInfo is implemented by the summarizers of package summary:
// their name and model for the journal and the metrics.
type summarizerInfo interface {
	SummarizerInfo() (name, model string)
}

// describe names svc and its model ("" when unknown): as the summarizer
// says (SummarizerInfo), else by its Go type and its Model method.
func describe(svc summary.Service) (name, model string) {
	if d, ok := svc.(summarizerInfo); ok {
		return d.SummarizerInfo()
	}
	name = strings.TrimPrefix(fmt.Sprintf("%T", svc), "*")
	if m, ok := svc.(interface{ Model() string }); ok { // the Gemini summarizer's
		model = m.Model()
	}
	return name, model
}

// summarizerFor is the summarizer of a fold's next call: the manager's,
// or the offline extractive one once the session's summarizer tokens of
// the day (UTC, by the manager's clock) reach
// Config.SessionDailyTokenBudget — fallback then says "budget".
func (e *engine) summarizerFor(ctx context.Context, j *foldJob) (summary.Service, string) {
	budget := int64(e.cfg.SessionDailyTokenBudget)
	if budget <= 0 {
		return e.svc, ""
	}
	if !j.rec.budgetRead {
		j.rec.budgetRead = true
		jr, err := e.store.ReadJournal(ctx, j.sessionID, j.epoch)
		if err != nil {
			e.log.WarnContext(ctx, "strata: journal read for the token budget failed", "session_id", j.sessionID, "error", err)
		}
		j.rec.spentToday = spentOn(jr, time.Now())
	}
	if j.rec.spentToday+j.rec.spentFold < budget {
		return e.svc, ""
	}
	return summary.NewExtractiveService(), "budget"
}

// spentOn is the tokens the journal counts against the budget on now's
// day (UTC).
func spentOn(j store.Journal, now time.Time) int64 {
	if j.Day == now.UTC().Format(time.DateOnly) {
		return j.DayTokens
	}
	return 0
}

// count adds one summarizer call to the record: its tokens as reported,
// or estimated when it reported none (a call that failed without
// reporting costs nothing known); a call of the offline extractive
// summarizer, configured or a spent budget's fallback, costs none. It updates the manager's counters and
// metrics too.
func (r *foldRecord) count(e *engine, ctx context.Context, svc summary.Service, fallback string, req summary.Request, res summary.Result, err error, d time.Duration) {
	name, model := describe(svc)
	if r.spend.summarizer == "" {
		r.spend.summarizer, r.spend.model = name, model
	}
	in, out, estimated := res.Usage.InputTokens, res.Usage.OutputTokens, false
	switch {
	case fallback != "":
		r.spend.fallback = fallback
		in, out = 0, 0
		e.stats.budgetFallbacks.Add(1)
	case name == "extractive":
		in, out = 0, 0 // offline: no model, no tokens
	case in == 0 && out == 0 && err == nil:
		estimated = true
		in = e.cost.Cost(req.Messages) + e.cost.Cost(summary.BlocksWith(req.Existing, render(e.cfg)))
		out = resultTokens(e, res)
		r.spend.estIn += in
		r.spend.estOut += out
	default:
		r.spend.in += in
		r.spend.out += out
	}
	r.spend.calls++
	if estimated || fallback == "" {
		r.spentFold += int64(in + out)
	}
	if estimated {
		e.stats.summarizerEstimatedTokens.Add(int64(in + out))
	} else {
		e.stats.summarizerInputTokens.Add(int64(in))
		e.stats.summarizerOutputTokens.Add(int64(out))
	}
	e.otel.observeCall(ctx, callObservation{summarizer: name, model: model, in: in, out: out,
		estimated: estimated, fallback: fallback, d: d, err: err})
}

// removedKeys are the normalized keys of the facts a summarizer asked to
// remove.
func removedKeys(facts []summary.Fact) map[string]bool {
	out := map[string]bool{}
	for _, f := range facts {
		if f.Remove {
			out[summary.NormalizeKey(f.Key)] = true
		}
	}
	return out
}

// saveRecord is the journal record of a fold's save of next over prev:
// the calls since the fold's last record, what they cost, and the facts
// the save changes. res is the summarizer's reply, chunk the messages it
// folded.
func (r *foldRecord) saveRecord(e *engine, prev, next *summary.Summary, res []summary.Fact, chunk []store.Message) store.JournalRecord {
	rec := r.record(e, "saved", "")
	rec.FromSeq, rec.ToSeq = chunk[0].Seq, chunk[len(chunk)-1].Seq
	rec.Changes = factChanges(factsOf(prev), next.Facts, removedKeys(res), "evicted")
	return rec
}

// record is a journal record of the fold's calls since its last record.
func (r *foldRecord) record(e *engine, outcome, class string) store.JournalRecord {
	now := time.Now()
	return store.JournalRecord{At: now.UTC(), Kind: "fold", Trigger: string(r.trigger), Outcome: outcome, ErrorClass: class,
		FromSeq: r.from, ToSeq: r.to, Summarizer: r.spend.summarizer, Model: r.spend.model, Calls: r.spend.calls,
		InputTokens: r.spend.in, OutputTokens: r.spend.out, EstimatedInputTokens: r.spend.estIn,
		EstimatedOutputTokens: r.spend.estOut, Fallback: r.spend.fallback, Duration: now.Sub(r.since)}
}

// flushed starts the fold's next record: its last one is written.
func (r *foldRecord) flushed(e *engine) {
	r.spend = foldSpend{summarizer: r.spend.summarizer, model: r.spend.model}
	r.since = time.Now()
}

// journaledSave returns the context a fold saves rec's summary with and
// a function to call once the save succeeded. When the message store
// keeps the journal beside the summaries (both stores of this module
// with their own summary stores), the record is appended in the save's
// own step (store.WithJournalEdit): no erasure can come between the save
// and its record, which could otherwise keep a value the erasure removed
// from the summary. Otherwise, and when the save did not apply the edit,
// the function appends the record after the save.
func (e *engine) journaledSave(ctx context.Context, sessionID string, epoch int64, rec store.JournalRecord) (context.Context, func()) {
	applied := false
	ctx = store.WithJournalEdit(store.WithJournalRecord(ctx, rec, journalRetention), func(j *store.Journal) { applied = true; j.Add(rec, journalRetention) })
	return ctx, func() {
		if !applied {
			e.appendJournal(ctx, sessionID, epoch, rec)
		}
	}
}

// appendJournal appends rec to the journal of the session's incarnation
// epoch, as editJournal does, telling the store it is one record appended
// (store.WithJournalRecord), which a database appends without reading the
// journal.
func (e *engine) appendJournal(ctx context.Context, sessionID string, epoch int64, rec store.JournalRecord) {
	_ = e.editJournal(store.WithJournalRecord(ctx, rec, journalRetention), sessionID, epoch, func(j *store.Journal) { j.Add(rec, journalRetention) })
}

// journalFold appends the record of a fold that did not save its last
// summary: outcome is "stale", or "" to derive it from err — abandoned
// (cancelled, closed, deleted) or failed with its error class. It carries
// the calls since the fold's last record and no fact change (a summary
// saved before was journaled with its save).
func (e *engine) journalFold(ctx context.Context, sessionID string, r foldRecord, err error, outcome string) {
	if errors.Is(err, ErrClosed) || e.closed.Load() {
		// Close abandoned it: no write may delay Close, and the record
		// would hold no change (its call's cost is unknown).
		return
	}
	class := ""
	if outcome == "" {
		outcome, class = foldOutcome(ctx, err)
	}
	rec := r.record(e, outcome, class)
	e.appendJournal(ctx, sessionID, r.epoch, rec)
}

// foldOutcome classifies how a fold ended.
func foldOutcome(ctx context.Context, err error) (outcome, class string) {
	switch {
	case err == nil:
		return "saved", ""
	case errors.Is(err, ErrClosed):
		return "abandoned", "closed"
	case errors.Is(err, errDeleted):
		return "abandoned", "deleted"
	case ctx.Err() != nil || errors.Is(err, context.Canceled):
		return "abandoned", "cancelled"
	case errors.Is(err, summary.ErrTimeout), errors.Is(err, errSummarizerTimeout), errors.Is(err, context.DeadlineExceeded):
		return "failed", "timeout"
	case errors.Is(err, summary.ErrEmptyReply):
		return "failed", "empty_reply"
	case errors.Is(err, summary.ErrUnparseable), errors.Is(err, summary.ErrNotJSON):
		return "failed", "unparseable"
	case errors.Is(err, summary.ErrSessionGone):
		return "abandoned", "deleted"
	case errors.Is(err, store.ErrUnavailable):
		return "failed", "store_unavailable"
	case strings.Contains(err.Error(), "panicked"):
		return "failed", "panic"
	}
	return "failed", "summarizer_error"
}

func factsOf(s *summary.Summary) []summary.Fact {
	if s == nil {
		return nil
	}
	return s.Facts
}

// factChanges lists how the ledger before became after, key by key: a key
// gone is "removed" when the summarizer asked (removed, by normalized
// key), else gone (an erasure's "forgotten", a fold's "evicted"); a new
// key is "added"; a new value "changed". An erasure's records (gone ==
// "forgotten") keep no value that left.
func factChanges(before, after []summary.Fact, removed map[string]bool, gone string) []store.FactChange {
	now := map[string]string{}
	for _, f := range after {
		now[f.Key] = f.Value
	}
	was := map[string]string{}
	var out []store.FactChange
	for _, f := range before {
		was[f.Key] = f.Value
		if _, ok := now[f.Key]; ok {
			continue
		}
		op := gone
		if gone != "forgotten" && removed[summary.NormalizeKey(f.Key)] {
			op = "removed"
		}
		out = append(out, store.FactChange{Op: op, Key: f.Key})
	}
	for _, f := range after {
		old, ok := was[f.Key]
		switch {
		case !ok:
			out = append(out, store.FactChange{Op: "added", Key: f.Key, To: f.Value})
		case old != f.Value:
			c := store.FactChange{Op: "changed", Key: f.Key, From: old, To: f.Value}
			if gone == "forgotten" {
				c.From = ""
			}
			out = append(out, c)
		}
	}
	return out
}

// valuesOf is every value s shows: its facts' values and previous values.
func valuesOf(s *summary.Summary) map[string]bool {
	out := map[string]bool{}
	if s == nil {
		return out
	}
	for _, f := range s.Facts {
		out[f.Value] = true
		if f.Previous != "" {
			out[f.Previous] = true
		}
	}
	return out
}

// scrub clears from j's records every value erase says was erased, in
// every record that holds it (a value erased where a record shows it is
// erased where another shows it too, e.g. as a later change's from);
// kept values (still shown by the session's summary) stay.
func scrub(j *store.Journal, kept map[string]bool, erase func(r store.JournalRecord, v string) bool) {
	gone := map[string]bool{}
	for _, r := range j.Records {
		for _, c := range r.Changes {
			for _, v := range []string{c.From, c.To} {
				if v != "" && !kept[v] && !gone[v] && erase(r, v) {
					gone[v] = true
				}
			}
		}
	}
	for i := range j.Records {
		r := &j.Records[i]
		for k := range r.Changes {
			c := &r.Changes[k]
			for _, v := range []*string{&c.From, &c.To} {
				if gone[*v] {
					*v, r.Scrubbed = "", true
				}
			}
		}
	}
}

// forgetEdit is the journal edit of a Forget: it clears from every record
// the values derived from the erased messages — those that left the
// summary, those an erased message contains (letters and digits
// compared, case folded), and those the records of folds that read an
// erased message show and the summary no longer does (their origin may be
// an erased message, paraphrased) — and
// appends the erasure's record. before and after are the session's
// summary around the erasure (nil when none).
func forgetEdit(at time.Time, before, after *summary.Summary, erased []store.Message) func(j *store.Journal) {
	kept := valuesOf(after)
	left := valuesOf(before)
	var texts []string
	var seqs []int64
	for _, msg := range erased {
		texts = append(texts, fold(messageText(msg)))
		seqs = append(seqs, msg.Seq)
	}
	slices.Sort(seqs)
	rec := store.JournalRecord{At: at, Kind: "forget", Outcome: "done", Seqs: seqs,
		Changes: factChanges(factsOf(before), factsOf(after), nil, "forgotten")}
	return func(j *store.Journal) {
		scrub(j, kept, func(r store.JournalRecord, v string) bool {
			if left[v] {
				return true
			}
			if r.ToSeq > 0 && slices.ContainsFunc(seqs, func(q int64) bool { return q >= r.FromSeq && q <= r.ToSeq }) {
				return true
			}
			fv := fold(v)
			return fv != "" && slices.ContainsFunc(texts, func(t string) bool { return strings.Contains(t, fv) })
		})
		j.Add(rec, journalRetention)
	}
}

// forgetFactScrub is the journal edit that clears, before ForgetFact saves
// its summary, every value out's Forgotten list matches (as folds match
// them, summary.SuppressForgotten) or the forgotten fact held.
func forgetFactScrub(before, out summary.Summary) func(j *store.Journal) {
	kept := valuesOf(&out)
	left := valuesOf(&before)
	for v := range kept {
		delete(left, v)
	}
	return func(j *store.Journal) {
		scrub(j, kept, func(_ store.JournalRecord, v string) bool {
			if left[v] {
				return true
			}
			probe := summary.SuppressForgotten(summary.Summary{ForgetKey: out.ForgetKey, Forgotten: out.Forgotten,
				Facts: []summary.Fact{{Key: "probe", Value: v}}})
			return len(probe.Facts) == 0
		})
	}
}

// fold is s case-folded with only its letters and digits kept, for
// containment: so that a value an LLM rewrote
// ("9537 1491" as "95371491", an upper-cased address) is still found in
// the text it came from.
func fold(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return unicode.ToLower(r)
		}
		return -1
	}, s)
}

// resultTokens estimates the tokens of a summarizer's reply.
func resultTokens(e *engine, res summary.Result) int {
	est := e.cost.Estimator()
	n := est.Estimate(res.Narrative)
	for _, f := range res.Facts {
		n += est.Estimate(f.Key + ": " + f.Value)
	}
	return n
}

// messageText is a stored message's content with its tool calls' names
// and arguments: everything an erasure erases.
func messageText(msg store.Message) string {
	var b strings.Builder
	b.WriteString(msg.Content)
	for _, c := range msg.ToolCalls {
		if c.FunctionCall != nil {
			b.WriteString(" " + c.FunctionCall.Name + " " + c.FunctionCall.Arguments)
		}
	}
	return b.String()
}

// importEdit is the journal of an imported session: the snapshot's
// records (their sequence numbers mapped from the exporting store's, old,
// onto the new ones, seqs; a number not imported becomes 0) after the
// snapshot's rolled totals, then the import's record, whose changes take
// the ledger those records give to the imported summary's.
func importEdit(at time.Time, from *store.Journal, sum *summary.Summary, old, seqs []int64) func(j *store.Journal) {
	to := func(q int64) int64 {
		if i, ok := slices.BinarySearch(old, q); ok && i < len(seqs) {
			return seqs[i]
		}
		return 0
	}
	rec := store.JournalRecord{At: at, Kind: "import", Outcome: "done"}
	if len(seqs) > 0 {
		rec.FromSeq, rec.ToSeq = seqs[0], seqs[len(seqs)-1]
	}
	// The import's changes take the ledger the snapshot's records give to
	// the imported summary's.
	var had []summary.Fact
	if from != nil {
		had = replayed(from.Records)
	}
	rec.Changes = factChanges(had, factsOf(sum), nil, "removed")
	return func(j *store.Journal) {
		*j = store.Journal{Epoch: j.Epoch}
		if from != nil {
			j.Totals, j.Rolled = from.Rolled, from.Rolled
			for _, r := range from.Records {
				r.FromSeq, r.ToSeq = to(r.FromSeq), to(r.ToSeq)
				var kept []int64
				for _, q := range r.Seqs {
					if n := to(q); n != 0 {
						kept = append(kept, n)
					}
				}
				r.Seqs = kept
				j.Add(r, journalRetention)
			}
		}
		j.Add(rec, journalRetention)
	}
}

// replayed is the ledger records' fact changes give, in the order keys
// were first added.
func replayed(records []store.JournalRecord) []summary.Fact {
	var out []summary.Fact
	for _, r := range records {
		for _, c := range r.Changes {
			i := slices.IndexFunc(out, func(f summary.Fact) bool { return f.Key == c.Key })
			switch {
			case c.Op == "added" || c.Op == "changed":
				if i < 0 {
					out = append(out, summary.Fact{Key: c.Key, Value: c.To})
				} else {
					out[i].Value = c.To
				}
			case i >= 0:
				out = slices.Delete(out, i, i+1)
			}
		}
	}
	return out
}
