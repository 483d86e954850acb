package store

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/strata-go/strata/record"
)

// undoTimeout bounds the delete that undoes a composed store's import
// whose summary could not be saved, even when the import's context is done.
const undoTimeout = 10 * time.Second

// Compose returns the Store over msgs and sums that memory.NewManager uses:
// msgs itself when it is a Store and sums is nil or its own summaries (a
// Store that has a method KeepsSummaries(SummaryStore) bool answering true
// for sums: the in-memory store's Summaries, db's SummaryStore on the
// message store's pool); otherwise an adapter, the one place where a
// session's messages and its summary live in two stores. With sums nil
// the adapter keeps no summary (Summary returns nil; SaveSummary an error
// wrapping errors.ErrUnsupported) and passes erasures and imports to msgs
// as they are, so a msgs that keeps summaries of its own still rewrites
// them.
//
// The adapter's fallbacks, which two stores cannot make atomic:
//   - Snapshot and SnapshotAfterSummary read the tail (msgs.Tail) and then
//     the summary (sums.Get): two calls. When sums fails the tail is
//     returned with an error wrapping ErrSummaryUnavailable.
//   - Delete and Replace remove the session from msgs, then its summary
//     from sums by id: a replica re-creating the id in between may lose
//     its first summary. Without a Replacer, Replace is a delete, a create
//     and an append.
//   - Import creates the session and its messages (in one step with an
//     Importer, else a create then an append) and then saves the summary
//     to sums, deleting the session again when that fails.
//   - Forget reads the messages to erase, rewrites the summary in sums,
//     then erases the messages (msgs must be a Forgetter; otherwise an
//     error wrapping errors.ErrUnsupported): a failure in between leaves
//     nothing derived behind and a retry completes it.
//   - ParticipantSessions needs a ParticipantLister (else
//     errors.ErrUnsupported).
//   - TryLockFold takes the lease of msgs (a Store's, or a FoldLocker's),
//     else of sums (a FoldLocker), else grants it at once: folds are then
//     coordinated within one process only. Its save is nil.
//   - SaveSummary cannot know of a session deleted in msgs: sums decides.
//     It does not apply the journal edit its context carries
//     (WithJournalEdit): the manager writes the edit right after the save.
//   - The journal is kept by msgs when it is a Journaler; otherwise in
//     process memory, for at most 10 000 sessions (past it an arbitrary
//     session's is dropped), lost with the process and not shared with
//     other replicas.
func Compose(msgs Messages, sums SummaryStore) Store {
	if s, ok := msgs.(Store); ok {
		if sums == nil {
			return s
		}
		if k, ok := s.(interface{ KeepsSummaries(SummaryStore) bool }); ok && k.KeepsSummaries(sums) {
			return s
		}
	}
	c := &composed{msgs: msgs, sums: sums}
	if j, ok := msgs.(Journaler); ok {
		// The journal stays where the message store keeps it.
		c.journal = j
	} else {
		c.journal = &processJournals{m: map[string]Journal{}}
	}
	return c
}

// maxProcessJournals bounds the journals Compose keeps in process memory
// for a message store that keeps none (Journaler): past 10 000 sessions,
// an arbitrary session's journal is dropped to make room.
const maxProcessJournals = 10_000

// processJournals is Compose's journal for a message store that keeps
// none: in process memory, bounded (maxProcessJournals), lost with the
// process, never shared with another replica. It keeps one incarnation's
// journal per session id: an edit of an older epoch than the one kept is
// ignored, of a newer one starts a new journal.
type processJournals struct {
	mu sync.Mutex
	m  map[string]Journal
}

func (p *processJournals) EditJournal(ctx context.Context, sessionID string, epoch int64, edit func(j *Journal)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	j, ok := p.m[sessionID]
	switch {
	case ok && epoch < j.Epoch:
		return nil // an incarnation the id no longer has
	case !ok || j.Epoch != epoch:
		j = Journal{Epoch: epoch}
	}
	if !ok && len(p.m) >= maxProcessJournals {
		for k := range p.m {
			delete(p.m, k)
			break
		}
	}
	j.Records = slices.Clone(j.Records)
	edit(&j)
	j.Epoch = epoch
	p.m[sessionID] = j
	return nil
}

func (p *processJournals) ReadJournal(ctx context.Context, sessionID string, epoch int64) (Journal, error) {
	if err := ctx.Err(); err != nil {
		return Journal{}, err
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	j, ok := p.m[sessionID]
	if !ok || j.Epoch != epoch {
		return Journal{Epoch: epoch}, nil
	}
	j.Records = slices.Clone(j.Records)
	return j, nil
}

// EditJournal implements Journaler: the message store's journal when it
// keeps one, else one in process memory (maxProcessJournals). A summary
// save of the summary store apart does not carry a journal edit; the
// manager then writes it right after the save.
func (c *composed) EditJournal(ctx context.Context, sessionID string, epoch int64, edit func(j *Journal)) error {
	return c.journal.EditJournal(ctx, sessionID, epoch, edit)
}

// ReadJournal implements Journaler (see EditJournal).
func (c *composed) ReadJournal(ctx context.Context, sessionID string, epoch int64) (Journal, error) {
	return c.journal.ReadJournal(ctx, sessionID, epoch)
}

// composed is Compose's adapter over a message store and a summary store.
type composed struct {
	msgs    Messages
	sums    SummaryStore // nil: no summaries
	journal Journaler    // the message store's, or processJournals
}

func (c *composed) Create(ctx context.Context, sessionID, userID string) error {
	return c.msgs.Create(ctx, sessionID, userID)
}

func (c *composed) Append(ctx context.Context, sessionID, userID string, msgs ...Message) (AppendResult, error) {
	return c.msgs.Append(ctx, sessionID, userID, msgs...)
}

func (c *composed) Tail(ctx context.Context, sessionID, userID string, n int) (Tail, error) {
	return c.msgs.Tail(ctx, sessionID, userID, n)
}

func (c *composed) Range(ctx context.Context, sessionID, userID string, afterSeq, throughSeq int64, limit int) ([]Message, error) {
	return c.msgs.Range(ctx, sessionID, userID, afterSeq, throughSeq, limit)
}

func (c *composed) Sessions(ctx context.Context, userID string, limit, offset int) ([]SessionInfo, int, error) {
	return c.msgs.Sessions(ctx, userID, limit, offset)
}

func (c *composed) Delete(ctx context.Context, sessionID, userID string) error {
	if err := c.msgs.Delete(ctx, sessionID, userID); err != nil {
		return err
	}
	return c.deleteSummary(ctx, sessionID)
}

// deleteSummary removes the session's summary from sums, if any.
func (c *composed) deleteSummary(ctx context.Context, sessionID string) error {
	if c.sums == nil {
		return nil
	}
	if err := c.sums.Delete(ctx, sessionID); err != nil {
		return fmt.Errorf("summary: %w", err)
	}
	return nil
}

func (c *composed) Replace(ctx context.Context, sessionID, userID string, msgs ...Message) (AppendResult, error) {
	var res AppendResult
	var err error
	if r, ok := c.msgs.(Replacer); ok {
		res, err = r.Replace(ctx, sessionID, userID, msgs...)
	} else {
		res, err = c.replaceSteps(ctx, sessionID, userID, msgs)
	}
	if err != nil {
		return AppendResult{}, err
	}
	return res, c.deleteSummary(ctx, sessionID)
}

// replaceSteps replaces a session's history with a message store that is
// no Replacer: delete (a missing session is fine), create, append.
func (c *composed) replaceSteps(ctx context.Context, sessionID, userID string, msgs []Message) (AppendResult, error) {
	if err := c.msgs.Delete(ctx, sessionID, userID); err != nil && !errors.Is(err, ErrNotFound) {
		return AppendResult{}, err
	}
	if err := c.msgs.Create(ctx, sessionID, userID); err != nil {
		return AppendResult{}, err
	}
	return c.msgs.Append(ctx, sessionID, userID, msgs...)
}

func (c *composed) Import(ctx context.Context, sessionID, userID string, msgs []Message, sum func(epoch int64, seqs []int64) *record.Summary) (AppendResult, error) {
	imp, ok := c.msgs.(Importer)
	if ok && (c.sums == nil || sum == nil) {
		return imp.Import(ctx, sessionID, userID, msgs, sum)
	}
	var made *record.Summary
	var res AppendResult
	var err error
	if ok {
		res, err = imp.Import(ctx, sessionID, userID, msgs, func(epoch int64, seqs []int64) *record.Summary {
			made = sum(epoch, seqs)
			return nil // saved to sums below
		})
		if err != nil {
			return AppendResult{}, err
		}
	} else {
		if res, made, err = c.importSteps(ctx, sessionID, userID, msgs, sum); err != nil {
			return AppendResult{}, err
		}
	}
	if made == nil {
		return res, nil
	}
	if c.sums == nil {
		return AppendResult{}, errors.Join(fmt.Errorf("save summary: no summary store: %w", errors.ErrUnsupported), c.undoImport(ctx, sessionID, userID))
	}
	if err := c.sums.Save(ctx, *made); err != nil {
		return AppendResult{}, errors.Join(fmt.Errorf("save summary: %w", err), c.undoImport(ctx, sessionID, userID))
	}
	return res, nil
}

// importSteps imports into a message store that is no Importer: create,
// append, read the sequence numbers given; the session is deleted again
// when a step after the create fails. It returns the summary sum made.
func (c *composed) importSteps(ctx context.Context, sessionID, userID string, msgs []Message, sum func(int64, []int64) *record.Summary) (AppendResult, *record.Summary, error) {
	if err := c.msgs.Create(ctx, sessionID, userID); err != nil {
		return AppendResult{}, nil, err
	}
	res, err := c.msgs.Append(ctx, sessionID, userID, msgs...)
	if err != nil {
		return AppendResult{}, nil, errors.Join(err, c.undoImport(ctx, sessionID, userID))
	}
	stored, err := c.msgs.Range(ctx, sessionID, userID, 0, 1<<62, 0)
	if err == nil && len(stored) != len(msgs) {
		err = fmt.Errorf("the new session holds %d messages, not %d", len(stored), len(msgs))
	}
	if err != nil {
		return AppendResult{}, nil, errors.Join(err, c.undoImport(ctx, sessionID, userID))
	}
	if sum == nil {
		return res, nil, nil
	}
	seqs := make([]int64, len(stored))
	for i, m := range stored {
		seqs[i] = m.Seq
	}
	return res, sum(res.Epoch, seqs), nil
}

// undoImport deletes a half-imported session, within undoTimeout even when
// the import's context is done.
func (c *composed) undoImport(ctx context.Context, sessionID, userID string) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	if err := c.msgs.Delete(ctx, sessionID, userID); err != nil {
		return fmt.Errorf("undo the partial import: %w", err)
	}
	return nil
}

func (c *composed) Forget(ctx context.Context, sessionID, userID string, seqs []int64, clean func(sum *record.Summary, epoch int64, erased []Message) *record.Summary) error {
	if err := c.forget(ctx, sessionID, userID, seqs, clean); err != nil {
		return err
	}
	// A journal kept in process memory takes the erasure's edit after it
	// (a message store that keeps the journal applies it in its step).
	edit := JournalEditOf(ctx)
	if _, ok := c.journal.(*processJournals); !ok || edit == nil {
		return nil
	}
	t, err := c.msgs.Tail(ctx, sessionID, userID, 0)
	if err != nil {
		return fmt.Errorf("journal: %w", err)
	}
	return c.journal.EditJournal(ctx, sessionID, t.Epoch, edit)
}

func (c *composed) forget(ctx context.Context, sessionID, userID string, seqs []int64, clean func(sum *record.Summary, epoch int64, erased []Message) *record.Summary) error {
	fg, ok := c.msgs.(Forgetter)
	if !ok {
		return fmt.Errorf("%w: the message store cannot erase messages", errors.ErrUnsupported)
	}
	if c.sums == nil || clean == nil || len(seqs) == 0 {
		// Without a summary store of its own, the message store cleans the
		// summary it may keep.
		return fg.Forget(ctx, sessionID, userID, seqs, clean)
	}
	// The summary lives apart: check the messages and clean the summary
	// first, then erase the messages.
	erased, epoch, err := c.messagesAt(ctx, sessionID, userID, seqs)
	if err != nil {
		return err
	}
	sum, err := c.sums.Get(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("summary store: %w", err)
	}
	if next := clean(sum, epoch, erased); next != nil && sum != nil {
		if err := c.sums.Save(ctx, *next); err != nil {
			return fmt.Errorf("save summary: %w", err)
		}
	}
	return fg.Forget(ctx, sessionID, userID, seqs, nil)
}

// messagesAt reads the session's messages with sequence numbers seqs
// (sorted) and its epoch, with the tool results answering an erased call;
// a seq that is not the session's gives ErrUnknownMessage.
func (c *composed) messagesAt(ctx context.Context, sessionID, userID string, seqs []int64) ([]Message, int64, error) {
	t, err := c.msgs.Tail(ctx, sessionID, userID, 0)
	if err != nil {
		return nil, 0, err
	}
	msgs, err := c.msgs.Range(ctx, sessionID, userID, seqs[0]-1, seqs[len(seqs)-1], 0)
	if err != nil {
		return nil, 0, err
	}
	var out []Message
	for _, q := range seqs {
		i := slices.IndexFunc(msgs, func(m Message) bool { return m.Seq == q })
		if i < 0 {
			return nil, 0, fmt.Errorf("seq %d: %w", q, ErrUnknownMessage)
		}
		out = append(out, msgs[i])
	}
	for _, call := range slices.Clone(out) {
		if len(call.ToolCalls) == 0 {
			continue
		}
		after, err := c.msgs.Range(ctx, sessionID, userID, call.Seq, 1<<62, len(call.ToolCalls))
		if err != nil {
			return nil, 0, err
		}
		for _, r := range ToolResultsOf(call, after) {
			if !slices.ContainsFunc(out, func(m Message) bool { return m.Seq == r.Seq }) {
				out = append(out, r)
			}
		}
	}
	return out, t.Epoch, nil
}

func (c *composed) ParticipantSessions(ctx context.Context, ownerID, participant string, limit, offset int) ([]SessionInfo, int, error) {
	pl, ok := c.msgs.(ParticipantLister)
	if !ok {
		return nil, 0, fmt.Errorf("memory: shared sessions: the store records no participants: %w", errors.ErrUnsupported)
	}
	return pl.ParticipantSessions(ctx, ownerID, participant, limit, offset)
}

func (c *composed) Summary(ctx context.Context, sessionID string) (*record.Summary, error) {
	if c.sums == nil {
		return nil, nil
	}
	s, err := c.sums.Get(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("summary store: %w", err)
	}
	return s, nil
}

func (c *composed) SaveSummary(ctx context.Context, s record.Summary) error {
	if c.sums == nil {
		return fmt.Errorf("save summary: no summary store: %w", errors.ErrUnsupported)
	}
	return c.sums.Save(ctx, s)
}

func (c *composed) Snapshot(ctx context.Context, sessionID, userID string, n int) (Tail, *record.Summary, error) {
	t, err := c.msgs.Tail(ctx, sessionID, userID, n)
	if err != nil {
		return Tail{}, nil, err
	}
	s, err := c.Summary(ctx, sessionID)
	if err != nil {
		return t, nil, fmt.Errorf("%w: %w", ErrSummaryUnavailable, err)
	}
	return t, s, nil
}

func (c *composed) SnapshotAfterSummary(ctx context.Context, sessionID, userID string, n int) (Tail, *record.Summary, error) {
	t, s, err := c.Snapshot(ctx, sessionID, userID, n)
	if err != nil || s == nil || s.Epoch != t.Epoch {
		return t, s, err
	}
	// The newest n messages, less those the summary covers, are the newest
	// of those after its cursor.
	t.Messages = slices.DeleteFunc(t.Messages, func(m Message) bool { return m.Seq <= s.UpToSeq })
	return t, s, nil
}

func (c *composed) TryLockFold(ctx context.Context, sessionID string, ttl time.Duration) (func(), func(context.Context, record.Summary) error, bool, error) {
	if s, ok := c.msgs.(Store); ok {
		release, _, ok, err := s.TryLockFold(ctx, sessionID, ttl)
		return release, nil, ok, err
	}
	var l FoldLocker
	if ml, ok := c.msgs.(FoldLocker); ok {
		l = ml
	} else if sl, ok := c.sums.(FoldLocker); ok {
		l = sl
	}
	if l == nil {
		return func() {}, nil, true, nil
	}
	release, ok, err := l.TryLockFold(ctx, sessionID, ttl)
	return release, nil, ok, err
}
