package catalog

import (
	"cmp"
	"context"
	"math"
	"slices"
	"sync"
	"time"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

// Sources of a Doc: what its generated title and its text were made from.
const (
	// SourceSummary: the session's folded summary (facts and narrative).
	SourceSummary = "summary"
	// SourceTurns: the session's first messages, while it has no summary.
	SourceTurns = "turns"
)

// Doc is a session's entry in an Index: its title, and the plain text its
// embedding was computed from, side by side. An embedding is never stored
// without its text: Embedding, Text and Model are set together or not at
// all.
type Doc struct {
	SessionID string
	// UserID is the session's owner; indexes filter every read by it.
	UserID string
	// Epoch is the incarnation of the session the document was built for
	// (summary.Summary.Epoch), 0 when it was built from messages alone. An
	// index never stores a document whose epoch is not the session's
	// current one.
	Epoch int64
	// Title is the conversation's title as shown: the pinned one when
	// Pinned, else the generated one.
	Title string
	// Pinned is true when Title was given with Catalog.SetTitle: refreshes
	// then keep it, and Upsert never replaces it.
	Pinned bool
	// Fingerprint is the set of salient terms (space-separated, sorted) of
	// the source the generated title was made from. The title is
	// regenerated only when the current source's fingerprint differs
	// enough from it.
	Fingerprint string
	// Source is SourceSummary or SourceTurns.
	Source string
	// SourceSeq orders the versions of a session's document: the summary's
	// cursor (summary.Summary.UpToSeq) for SourceSummary, the sequence
	// number of the last message read for SourceTurns.
	SourceSeq int64
	// Erasures is the session's erasure count (memory.Manager.Forget) read
	// before the document was built, -1 when the index does not count
	// them; SummaryVersion is the Version of the summary it was built
	// from (0 for none). An index that counts erasures writes the
	// document only while both are still current, so a document read
	// before an erasure is never written after it, on any replica.
	Erasures       int64
	SummaryVersion int64
	// MessageCount is the number of messages the session held when the
	// document was built.
	MessageCount int
	// Text is the exact text Embedding was computed from ("" when there is
	// no embedding).
	Text string
	// Embedding is Text's vector (nil when the embedder failed or is not
	// configured); Model names the embedder that made it.
	Embedding []float32
	Model     string
	// LastActivity is the session's last activity as of the document's
	// build (the PostgreSQL index reads the live value from the session).
	LastActivity time.Time
	// UpdatedAt is when the document was last written.
	UpdatedAt time.Time
}

// supersedes reports whether d may replace old, a stored document of the
// same session and user: a summary-based document replaces a turns-based
// one, never the reverse, and within one source a document never replaces
// one built from newer data (a higher SourceSeq).
func (d Doc) supersedes(old Doc) bool {
	if d.Source != old.Source {
		return d.Source == SourceSummary
	}
	return d.SourceSeq >= old.SourceSeq
}

// Query is a search of one user's documents.
type Query struct {
	UserID string
	// Vector is the query's embedding; only documents embedded by Model
	// with as many dimensions are compared with it.
	Vector []float32
	Model  string
	// Participant, when not "", keeps only the sessions Participant wrote
	// in (of the shared sessions, whose owner UserID names): an index that
	// sees sessions (a Lister) filters by it; Rank and the in-memory index
	// ignore it, and the catalogue filters their matches itself.
	Participant string
	// Limit caps the matches (<= 0: no cap).
	Limit int
	// MinSimilarity drops documents whose cosine similarity to Vector is
	// lower.
	MinSimilarity float64
	// Weight, HalfLife and Now rank the matches:
	//
	//	score   = Weight × similarity + (1 − Weight) × recency
	//	recency = 0.5 ^ (age / HalfLife)
	//
	// where age is Now minus the session's last activity (0 when
	// negative); HalfLife <= 0, or an unknown last activity, makes recency 0.
	Weight   float64
	HalfLife time.Duration
	Now      time.Time
}

// Rank scores docs against q in process, as an index without server-side
// vector search does: it keeps q.UserID's documents of q.Model with
// len(q.Vector) dimensions and a similarity of at least q.MinSimilarity,
// and returns them best first (higher Score, then higher Similarity, then
// session id), at most q.Limit of them.
func (q Query) Rank(docs []Doc) []Match {
	var out []Match
	for _, d := range docs {
		if d.UserID != q.UserID || d.Model != q.Model || len(q.Vector) == 0 || len(d.Embedding) != len(q.Vector) {
			continue
		}
		sim := cosine(d.Embedding, q.Vector)
		if sim < q.MinSimilarity {
			continue
		}
		m := Match{SessionID: d.SessionID, Title: d.Title, Text: d.Text, Similarity: sim, LastActivity: d.LastActivity}
		q.score(&m)
		out = append(out, m)
	}
	sortMatches(out)
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out
}

// score sets m's Recency and Score from its Similarity and LastActivity.
func (q Query) score(m *Match) {
	m.Recency = 0
	if q.HalfLife > 0 && !m.LastActivity.IsZero() {
		age := max(q.Now.Sub(m.LastActivity), 0)
		m.Recency = math.Pow(0.5, age.Seconds()/q.HalfLife.Seconds())
	}
	m.Score = q.Weight*m.Similarity + (1-q.Weight)*m.Recency
}

// sortMatches sorts best first: higher Score, then higher Similarity, then
// session id.
func sortMatches(ms []Match) {
	slices.SortStableFunc(ms, func(a, b Match) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		if c := cmp.Compare(b.Similarity, a.Similarity); c != 0 {
			return c
		}
		return cmp.Compare(a.SessionID, b.SessionID)
	})
}

// cosine returns the cosine similarity of a and b, 0 when their lengths
// differ or either is all zeros.
func cosine(a, b []float32) float64 {
	if len(a) != len(b) || len(a) == 0 {
		return 0
	}
	var dot, na, nb float64
	for i := range a {
		x, y := float64(a[i]), float64(b[i])
		dot += x * y
		na += x * x
		nb += y * y
	}
	if na == 0 || nb == 0 {
		return 0
	}
	c := dot / (math.Sqrt(na) * math.Sqrt(nb))
	if math.IsNaN(c) {
		return 0
	}
	return c
}

// Index stores one Doc per session and searches them. NewMemoryIndex keeps
// them in process memory; db.NewCatalogIndex in PostgreSQL.
// Implementations must be safe for concurrent use.
//
// Every read is filtered by user: Get and Search return only documents
// whose UserID is the caller's. An index that is also a Lister reads
// sessions, owners and deletions from the message store's own tables, so
// the catalogue trusts its filter as is; the matches and titles of any
// other index are re-checked through the manager.
type Index interface {
	// Upsert stores d, unless the stored document of the session
	// supersedes it (a summary-based document is never replaced by a
	// turns-based one, nor a document by one built from older data: a
	// lower SourceSeq), and keeps a stored pinned title. An index that
	// sees sessions (a Lister) writes only while the session is
	// d.UserID's live session and the incarnation d was built from —
	// epoch d.Epoch, or when it is 0 the one holding message d.SourceSeq
	// — checked in the same atomic step as the write; the in-memory index
	// is fenced by the catalogue instead. Writing nothing is not an error.
	Upsert(ctx context.Context, d Doc) error
	// SetTitle pins title as the session's title (creating a document
	// without text when there is none); "" removes the pin. It returns
	// store.ErrNotFound or memory.ErrNotOwner when the session is not
	// userID's, as far as the index knows.
	SetTitle(ctx context.Context, sessionID, userID, title string) error
	// Get returns userID's document of the session, nil when there is none
	// (or the session is another user's).
	Get(ctx context.Context, sessionID, userID string) (*Doc, error)
	// Delete drops the document of a session deleted through the manager
	// (Catalog.Deleted calls it). An index whose documents go with their
	// session in the message store's own delete may do nothing.
	Delete(ctx context.Context, sessionID string) error
	// Search returns q.UserID's matches for q (see Query.Rank for the
	// rules), best first, each with the document's title, text and last
	// activity.
	Search(ctx context.Context, q Query) ([]Match, error)
}

// Session is one row of a listing made by a Lister: the session as the
// message store sees it, and its document (without Text and Embedding),
// nil when it has none.
type Session struct {
	Info store.SessionInfo
	Doc  *Doc
}

// Lister is implemented by indexes that list a user's sessions together
// with their documents in one query (db.CatalogIndex does), with the
// contract of memory.Manager.Sessions: newest activity first, total before
// pagination, limit <= 0 means no limit, a negative offset counts as 0.
//
// ListParticipantSessions lists, with the same contract, the sessions of
// ownerID that participant wrote in (store.ParticipantLister): the
// shared sessions a user took part in.
type Lister interface {
	ListSessions(ctx context.Context, userID string, limit, offset int) (page []Session, total int, err error)
	ListParticipantSessions(ctx context.Context, ownerID, participant string, limit, offset int) (page []Session, total int, err error)
}

// memoryIndex is the in-process Index. It learns about deletions only from
// Catalog.Deleted, so the catalogue fences its writes: a refresh opens a
// fence before it reads the session through the manager, and its write is
// dropped, in the same critical section as the delete path, when the
// session was deleted after the fence opened.
type memoryIndex struct {
	mu    sync.RWMutex
	docs  map[string]Doc
	clock uint64            // ticks on every fence and delete
	tombs map[string]uint64 // session id → clock at its delete, while fences older than it are open
	open  map[uint64]int    // open fences by their clock
	prune int               // prune tombs when they reach this many
}

// NewMemoryIndex returns an empty in-memory index. It knows of deletions
// only through the catalogue: wire Catalog.Deleted as the manager's delete
// observer (see Observers).
func NewMemoryIndex() Index {
	return &memoryIndex{docs: map[string]Doc{}, tombs: map[string]uint64{}, open: map[uint64]int{}, prune: 64}
}

// fence opens a fence: writes made under it are dropped when their session
// is deleted after this call. Close it with unfence.
func (x *memoryIndex) fence() uint64 {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.clock++
	x.open[x.clock]++
	return x.clock
}

// unfence closes fence t and forgets the tombstones no open fence needs.
func (x *memoryIndex) unfence(t uint64) {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.open[t]--; x.open[t] <= 0 {
		delete(x.open, t)
	}
	if len(x.open) == 0 {
		clear(x.tombs)
		return
	}
	if len(x.tombs) < x.prune {
		return
	}
	oldest := uint64(math.MaxUint64)
	for f := range x.open {
		oldest = min(oldest, f)
	}
	for id, at := range x.tombs {
		if at <= oldest { // every open fence began after this delete
			delete(x.tombs, id)
		}
	}
	x.prune = max(64, 2*len(x.tombs))
}

// deletedSince reports whether the session was deleted after fence t
// opened (t == 0: no fence). x.mu must be held.
func (x *memoryIndex) deletedSince(sessionID string, t uint64) bool {
	return t != 0 && x.tombs[sessionID] > t
}

// Upsert implements Index.
func (x *memoryIndex) Upsert(ctx context.Context, d Doc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	x.upsert(d, 0)
	return nil
}

// upsert writes d unless its session was deleted since fence t, or the
// stored document supersedes it; it reports whether it wrote.
func (x *memoryIndex) upsert(d Doc, t uint64) bool {
	d.Embedding = slices.Clone(d.Embedding)
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.deletedSince(d.SessionID, t) {
		return false
	}
	// A document of another user or of another epoch is left over from a
	// deleted incarnation: replaced whatever its version.
	if old, ok := x.docs[d.SessionID]; ok && old.UserID == d.UserID && (old.Epoch == 0 || d.Epoch == 0 || old.Epoch == d.Epoch) {
		if !d.supersedes(old) {
			return false
		}
		if old.Pinned {
			d.Title, d.Pinned = old.Title, true
		}
	}
	x.docs[d.SessionID] = d
	return true
}

// SetTitle implements Index. Knowing owners only from its documents, it
// refuses a session whose document is another user's.
func (x *memoryIndex) SetTitle(ctx context.Context, sessionID, userID, title string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.docs[sessionID]; ok && old.UserID != userID {
		return memory.ErrNotOwner
	}
	x.pinLocked(sessionID, userID, title)
	return nil
}

// pin pins title for userID, who the caller found owns the session after
// fence t opened; store.ErrNotFound when the session was deleted since.
func (x *memoryIndex) pin(sessionID, userID, title string, t uint64) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	if x.deletedSince(sessionID, t) {
		return store.ErrNotFound
	}
	x.pinLocked(sessionID, userID, title)
	return nil
}

func (x *memoryIndex) pinLocked(sessionID, userID, title string) {
	d, ok := x.docs[sessionID]
	if !ok || d.UserID != userID { // none, or left over from another user's deleted session
		if title == "" {
			return
		}
		d = Doc{SessionID: sessionID, UserID: userID, Source: SourceTurns}
	}
	d.Title, d.Pinned, d.UpdatedAt = title, title != "", time.Now()
	if title == "" {
		d.Fingerprint = "" // generate a title again at the next refresh
	}
	x.docs[sessionID] = d
}

// Get implements Index.
func (x *memoryIndex) Get(ctx context.Context, sessionID, userID string) (*Doc, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	d, ok := x.docs[sessionID]
	if !ok || d.UserID != userID {
		return nil, nil
	}
	d.Embedding = slices.Clone(d.Embedding)
	return &d, nil
}

// Delete implements Index: the document goes, and writes fenced before
// this call are dropped.
func (x *memoryIndex) Delete(ctx context.Context, sessionID string) error {
	x.mu.Lock()
	defer x.mu.Unlock()
	x.clock++
	if len(x.open) > 0 {
		x.tombs[sessionID] = x.clock
	}
	delete(x.docs, sessionID)
	return nil
}

// Search implements Index by scoring every document of the user.
func (x *memoryIndex) Search(ctx context.Context, q Query) ([]Match, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	var docs []Doc
	for _, d := range x.docs {
		if d.UserID == q.UserID {
			docs = append(docs, d)
		}
	}
	return q.Rank(docs), nil // Rank copies what it keeps
}
