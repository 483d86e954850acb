package memstore

import (
	"context"
	"slices"

	"github.com/strata-go/strata/memory/store"
)

var _ store.Journaler = (*Store)(nil)

// EditJournal implements store.Journaler: the journal lives in the
// session, so it goes with it (delete, replace, eviction).
func (s *Store) EditJournal(ctx context.Context, sessionID string, epoch int64, edit func(j *store.Journal)) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sess := s.sessions[sessionID]; sess != nil && sess.epoch == epoch {
		sess.edit(edit)
	}
	return nil
}

// ReadJournal implements store.Journaler. It returns a deep copy.
func (s *Store) ReadJournal(ctx context.Context, sessionID string, epoch int64) (store.Journal, error) {
	if err := ctx.Err(); err != nil {
		return store.Journal{}, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	sess := s.sessions[sessionID]
	if sess == nil || sess.epoch != epoch {
		return store.Journal{Epoch: epoch}, nil
	}
	return cloneJournal(sess.journal, epoch), nil
}

// editJournal applies the journal edit ctx carries (store.WithJournalEdit)
// to sess's journal. s.mu must be held.
func editJournal(ctx context.Context, sess *memSession) {
	if edit := store.JournalEditOf(ctx); edit != nil {
		sess.edit(edit)
	}
}

// edit rewrites sess's journal with edit, on a copy. s.mu must be held.
func (sess *memSession) edit(edit func(j *store.Journal)) {
	j := cloneJournal(sess.journal, sess.epoch)
	edit(&j)
	sess.journal = j
}

func cloneJournal(j store.Journal, epoch int64) store.Journal {
	j.Epoch = epoch
	j.Records = slices.Clone(j.Records)
	for i := range j.Records {
		j.Records[i] = cloneRecord(j.Records[i])
	}
	return j
}

func cloneRecord(r store.JournalRecord) store.JournalRecord {
	r.Seqs = slices.Clone(r.Seqs)
	r.Changes = slices.Clone(r.Changes)
	return r
}
