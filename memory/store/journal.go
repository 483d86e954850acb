package store

import (
	"context"
	"time"
)

// JournalRecord is one entry of a session's fold journal: what one fold,
// erasure or import did to the session's memory and what it cost. Values
// of erased messages or facts are never kept in it: an erasure clears them
// from every record in the same step (Scrubbed).
type JournalRecord struct {
	// N numbers the session's records from 1, in order; the store sets it.
	N  int64     `json:"n"`
	At time.Time `json:"at"`
	// Kind is "fold", "forget" (Manager.Forget), "forget_fact"
	// (Manager.ForgetFact) or "import" (Manager.Import).
	Kind string `json:"kind"`
	// Trigger is what asked for a fold (the policy's trigger).
	Trigger string `json:"trigger,omitempty"`
	// Outcome is, for a fold, "saved" (a summary was stored), "stale"
	// (another replica stored a newer one), "failed" (ErrorClass says why)
	// or "abandoned" (cancelled by a delete, Close or the caller); "done"
	// for the other kinds.
	Outcome    string `json:"outcome"`
	ErrorClass string `json:"error_class,omitempty"`
	// FromSeq and ToSeq are the first and the last message a fold read or
	// an import wrote (FromSeq <= seq <= ToSeq); Seqs are the messages an
	// erasure erased.
	FromSeq int64   `json:"from_seq,omitempty"`
	ToSeq   int64   `json:"to_seq,omitempty"`
	Seqs    []int64 `json:"seqs,omitempty"`
	// Summarizer ("llm", "extractive" or the summarizer's Go type) and
	// Model (empty when unknown) made the fold.
	Summarizer string `json:"summarizer,omitempty"`
	Model      string `json:"model,omitempty"`
	// Calls counts the summarizer calls of a fold (one per chunk).
	Calls int `json:"calls,omitempty"`
	// InputTokens and OutputTokens are the token counts the summarizer
	// reported; EstimatedInputTokens and EstimatedOutputTokens are
	// estimated, by the manager's estimator, for the calls that reported
	// none.
	InputTokens           int `json:"input_tokens,omitempty"`
	OutputTokens          int `json:"output_tokens,omitempty"`
	EstimatedInputTokens  int `json:"estimated_input_tokens,omitempty"`
	EstimatedOutputTokens int `json:"estimated_output_tokens,omitempty"`
	// Duration is how long the fold took.
	Duration time.Duration `json:"duration_ns,omitempty"`
	// Fallback says why the offline extractive summarizer folded instead
	// of the configured one: "budget" when the session's daily token
	// budget was spent.
	Fallback string `json:"fallback,omitempty"`
	// Changes are the fact changes the record made to the ledger, in
	// order.
	Changes []FactChange `json:"changes,omitempty"`
	// Scrubbed is true when an erasure cleared values from this record.
	Scrubbed bool `json:"scrubbed,omitempty"`
}

// FactChange is one change to a session's fact ledger. Op is "added"
// (To), "changed" (From → To), "removed" (the summarizer asked), "evicted"
// (a cap or the facts block's budget dropped it) or "forgotten" (an
// erasure removed it; no value is kept). Applied in order from an empty
// ledger, the changes of a session's journal give its current facts, key
// by key.
type FactChange struct {
	Op   string `json:"op"`
	Key  string `json:"key"`
	From string `json:"from,omitempty"`
	To   string `json:"to,omitempty"`
}

// JournalTotals sums journal records.
type JournalTotals struct {
	Records               int64 `json:"records"`
	Folds                 int64 `json:"folds"`        // folds saved
	FailedFolds           int64 `json:"failed_folds"` // folds failed or abandoned
	Fallbacks             int64 `json:"fallbacks"`    // folds the offline summarizer made instead
	Calls                 int64 `json:"calls"`
	InputTokens           int64 `json:"input_tokens"`
	OutputTokens          int64 `json:"output_tokens"`
	EstimatedInputTokens  int64 `json:"estimated_input_tokens"`
	EstimatedOutputTokens int64 `json:"estimated_output_tokens"`
}

// add counts r.
func (t *JournalTotals) add(r JournalRecord) {
	t.Records++
	if r.Kind == "fold" {
		switch r.Outcome {
		case "saved":
			t.Folds++
		case "failed", "abandoned":
			t.FailedFolds++
		}
	}
	if r.Fallback != "" {
		t.Fallbacks++
	}
	t.Calls += int64(r.Calls)
	t.InputTokens += int64(r.InputTokens)
	t.OutputTokens += int64(r.OutputTokens)
	t.EstimatedInputTokens += int64(r.EstimatedInputTokens)
	t.EstimatedOutputTokens += int64(r.EstimatedOutputTokens)
}

// Journal is a session incarnation's fold journal: its newest records and
// the totals of every record ever appended, the ones no longer kept
// included.
type Journal struct {
	Epoch   int64           `json:"epoch"`
	Records []JournalRecord `json:"records,omitempty"` // oldest first
	// Totals sums every record appended; Rolled the records rolled out
	// of Records by the retention bound.
	Totals JournalTotals `json:"totals"`
	Rolled JournalTotals `json:"rolled"`
	// Day (UTC, YYYY-MM-DD) is the day of the newest record that spent
	// summarizer tokens, and DayTokens the tokens, reported and estimated,
	// the records of that day spent: what a daily token budget counts.
	Day       string `json:"day,omitempty"`
	DayTokens int64  `json:"day_tokens,omitempty"`
}

// Add appends r to j as record number Totals.Records + 1 and counts it
// (in the day's tokens too), then rolls the oldest records past keep (keep <= 0: one) into Rolled.
// Both stores append through it.
func (j *Journal) Add(r JournalRecord, keep int) {
	keep = max(keep, 1)
	r.N = j.Totals.Records + 1
	j.Totals.add(r)
	if spent := int64(r.InputTokens + r.OutputTokens + r.EstimatedInputTokens + r.EstimatedOutputTokens); spent > 0 {
		if day := r.At.UTC().Format(time.DateOnly); day != j.Day {
			j.Day, j.DayTokens = day, 0
		}
		j.DayTokens += spent
	}
	j.Records = append(j.Records, r)
	if over := len(j.Records) - keep; over > 0 {
		for _, old := range j.Records[:over] {
			j.Rolled.add(old)
		}
		j.Records = append([]JournalRecord(nil), j.Records[over:]...)
	}
}

// Journaler is the journal part of the Store contract (a message store
// outside it may have it too, and Compose then keeps the journal there):
// it keeps each session's fold journal, bounded, with the session — a
// delete, a replace or a re-creation of the id drops it.
//
// A Journaler that is a Forgetter applies the edit its Forget's context
// carries (WithJournalEdit) to the session's journal in the same atomic
// step as the erasure, after calling clean; and the summary store whose
// summaries its Forget rewrites (ForgetsSummariesOf) applies the edit its
// Save's context carries in the same step as the save, when the save
// writes. A manager thus writes a fold's record with the summary it
// saved, and an erasure's with the erasure: no erasure comes between a
// value's save and its record.
type Journaler interface {
	// EditJournal rewrites the journal of the session's incarnation epoch
	// in one atomic step: edit is given it (an empty one of that epoch
	// when there is none, or when the stored one is of another epoch) and
	// what it leaves replaces it. Appending is an edit that calls
	// Journal.Add. A session that is gone, or now of another epoch, is
	// not edited and gives no error.
	EditJournal(ctx context.Context, sessionID string, epoch int64, edit func(j *Journal)) error
	// ReadJournal returns the journal of the session's incarnation epoch
	// (an empty one when there is none). Callers check ownership first.
	ReadJournal(ctx context.Context, sessionID string, epoch int64) (Journal, error)
}

type journalEditKey struct{}

// WithJournalEdit returns ctx carrying edit, a rewrite of a session's
// journal (appending a record with Journal.Add, scrubbing erased values)
// that a Journaler's Forget, or its summary store's Save, applies in the
// same atomic step as the erasure or the save (see Journaler).
func WithJournalEdit(ctx context.Context, edit func(j *Journal)) context.Context {
	return context.WithValue(ctx, journalEditKey{}, edit)
}

// JournalEditOf returns the journal edit ctx carries, nil when none.
func JournalEditOf(ctx context.Context) func(j *Journal) {
	edit, _ := ctx.Value(journalEditKey{}).(func(j *Journal))
	return edit
}

type journalRecordKey struct{}

// journalAppend is what WithJournalRecord carries.
type journalAppend struct {
	rec  JournalRecord
	keep int
}

// WithJournalRecord returns ctx saying that the journal edit it comes
// with — the edit given to EditJournal, or the one WithJournalEdit makes
// ctx carry to a save — is exactly Journal.Add(rec, keep): one record
// appended. A Journaler may then append rec as data (in PostgreSQL, one
// row inserted, without reading the journal) rather than calling the
// edit; having appended it so, it still calls the edit once, on a
// scratch journal, so that the caller learns the record was applied.
func WithJournalRecord(ctx context.Context, rec JournalRecord, keep int) context.Context {
	return context.WithValue(ctx, journalRecordKey{}, journalAppend{rec: rec, keep: keep})
}

// JournalRecordOf returns the record and retention ctx carries
// (WithJournalRecord); ok is false when it carries none.
func JournalRecordOf(ctx context.Context) (rec JournalRecord, keep int, ok bool) {
	a, ok := ctx.Value(journalRecordKey{}).(journalAppend)
	return a.rec, a.keep, ok
}
