package catalog

import (
	"context"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"github.com/strata-go/strata/memory"
)

// Sources of a Doc: what its title and text were made from.
const (
	// SourceSummary: the session's folded summary (facts and narrative).
	SourceSummary = "summary"
	// SourceTurns: the session's first user messages, while it has no
	// summary yet.
	SourceTurns = "turns"
)

// Doc is a session's entry in the search index: its title and the plain
// text its embedding was computed from, side by side. An embedding is never
// stored without its text: Embedding, Text and Model are set together or
// not at all.
type Doc struct {
	SessionID string
	// UserID is the session's owner. PostgreSQL indexes read it from the
	// session row, so it can never disagree with the owner.
	UserID string
	// Title is the conversation's title.
	Title string
	// Fingerprint is the set of salient terms (space-separated, sorted) of
	// the source the title was generated from. The title is regenerated
	// only when the current source's fingerprint differs enough from it.
	Fingerprint string
	// Source is SourceSummary or SourceTurns.
	Source string
	// SourceSeq orders the versions of a session's document: the summary's
	// cursor (summary.Summary.UpToSeq) for SourceSummary, the sequence
	// number of the last message read for SourceTurns.
	SourceSeq int64
	// MessageCount is the number of messages the session held when the
	// document was built.
	MessageCount int
	// Text is the exact text Embedding was computed from ("" when there is
	// no embedding).
	Text string
	// Embedding is Text's vector (nil when the embedder failed or is not
	// configured); Model names the embedder that made it. Dims is
	// len(Embedding).
	Embedding []float32
	Model     string
	// LastActivity is the session's last activity as of the document's
	// build (PostgreSQL indexes read the live value from the session row).
	LastActivity time.Time
	// UpdatedAt is when the document was last written.
	UpdatedAt time.Time
}

// Supersedes reports whether d may replace old, a stored document of the
// same session: a summary-based document replaces a turns-based one, never
// the reverse, and within one source a document never replaces one built
// from newer data (a higher SourceSeq). Indexes apply this rule on Upsert
// so that a slow refresh never overwrites a newer one.
func (d Doc) Supersedes(old Doc) bool {
	if d.Source != old.Source {
		return d.Source == SourceSummary
	}
	return d.SourceSeq >= old.SourceSeq
}

// Ranking combines similarity and recency into a search score:
//
//	score   = Weight × similarity + (1 − Weight) × recency
//	recency = 0.5 ^ (age / HalfLife)
//
// where age is Now minus the session's last activity (0 when negative).
// HalfLife <= 0 makes recency 0.
type Ranking struct {
	Weight   float64
	HalfLife time.Duration
	Now      time.Time
}

// Recency returns the recency of a session last active at last.
func (r Ranking) Recency(last time.Time) float64 {
	if r.HalfLife <= 0 || last.IsZero() {
		return 0
	}
	age := r.Now.Sub(last)
	if age < 0 {
		age = 0
	}
	return math.Pow(0.5, age.Seconds()/r.HalfLife.Seconds())
}

// Score returns the combined score and the recency of a session with
// similarity sim, last active at last.
func (r Ranking) Score(sim float64, last time.Time) (score, recency float64) {
	recency = r.Recency(last)
	return r.Weight*sim + (1-r.Weight)*recency, recency
}

// Query is a search of one user's sessions.
type Query struct {
	UserID string
	// Vector is the query's embedding; only documents embedded by Model
	// with the same dimension are compared with it.
	Vector []float32
	Model  string
	// Limit caps the results (<= 0: no cap).
	Limit int
	// MinSimilarity drops documents less similar than this.
	MinSimilarity float64
	Ranking       Ranking
}

// Scored is a search result: a document (its Embedding may be left out)
// with its cosine similarity to the query, its recency and its combined
// score.
type Scored struct {
	Doc        Doc
	Similarity float64
	Recency    float64
	Score      float64
}

// Index stores one Doc per session and searches them. NewMemoryIndex keeps
// them in process memory; db.NewCatalogIndex in PostgreSQL.
// Implementations must be safe for concurrent use.
type Index interface {
	// Upsert stores d unless the stored document of the session supersedes
	// it (see Doc.Supersedes); it is not an error when a newer document
	// wins or the session no longer exists.
	Upsert(ctx context.Context, d Doc) error
	// Get returns the session's document, nil when there is none.
	Get(ctx context.Context, sessionID string) (*Doc, error)
	// Delete removes the session's document; an unknown session is not an
	// error.
	Delete(ctx context.Context, sessionID string) error
	// Search returns q.UserID's documents that have an embedding of
	// q.Model with len(q.Vector) dimensions and a similarity of at least
	// q.MinSimilarity, best Score first (ties: higher similarity, then
	// session id), at most q.Limit of them.
	Search(ctx context.Context, q Query) ([]Scored, error)
}

// Session is one row of a listing made by a Lister: the session as the
// message store sees it, and its document (without Text and Embedding),
// nil when it has none.
type Session struct {
	Info memory.SessionInfo
	Doc  *Doc
}

// Lister is implemented by indexes that list a user's sessions together
// with their documents in one query (db.CatalogIndex does). The contract is
// memory.SessionLister's: newest activity first, total before pagination,
// limit <= 0 means no limit, a negative offset counts as 0.
type Lister interface {
	ListSessions(ctx context.Context, userID string, limit, offset int) (page []Session, total int, err error)
}

// MemoryIndex is an Index in process memory, for use with memory's
// in-memory stores. It does not know when a session is deleted: delete
// through Catalog.Delete (or call Delete) after Manager.DeleteSession; until
// then searches skip the session anyway, because Catalog checks every
// match's owner. Its recency is as of each document's last refresh.
type MemoryIndex struct {
	mu   sync.RWMutex
	docs map[string]Doc
}

var _ Index = (*MemoryIndex)(nil)

// NewMemoryIndex returns an empty in-memory index.
func NewMemoryIndex() *MemoryIndex { return &MemoryIndex{docs: make(map[string]Doc)} }

// Upsert implements Index.
func (x *MemoryIndex) Upsert(ctx context.Context, d Doc) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	d = cloneDoc(d)
	x.mu.Lock()
	defer x.mu.Unlock()
	if old, ok := x.docs[d.SessionID]; ok && old.UserID == d.UserID && !d.Supersedes(old) {
		return nil
	}
	x.docs[d.SessionID] = d
	return nil
}

// Get implements Index.
func (x *MemoryIndex) Get(ctx context.Context, sessionID string) (*Doc, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	x.mu.RLock()
	defer x.mu.RUnlock()
	d, ok := x.docs[sessionID]
	if !ok {
		return nil, nil
	}
	d = cloneDoc(d)
	return &d, nil
}

// Delete implements Index.
func (x *MemoryIndex) Delete(ctx context.Context, sessionID string) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	x.mu.Lock()
	delete(x.docs, sessionID)
	x.mu.Unlock()
	return nil
}

// Search implements Index by scoring every document of the user.
func (x *MemoryIndex) Search(ctx context.Context, q Query) ([]Scored, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	x.mu.RLock()
	var out []Scored
	for _, d := range x.docs {
		if d.UserID != q.UserID || d.Model != q.Model || len(d.Embedding) != len(q.Vector) || len(q.Vector) == 0 {
			continue
		}
		sim := Cosine(d.Embedding, q.Vector)
		if sim < q.MinSimilarity {
			continue
		}
		score, rec := q.Ranking.Score(sim, d.LastActivity)
		d.Embedding = nil
		out = append(out, Scored{Doc: d, Similarity: sim, Recency: rec, Score: score})
	}
	x.mu.RUnlock()
	SortScored(out)
	if q.Limit > 0 && len(out) > q.Limit {
		out = out[:q.Limit]
	}
	return out, nil
}

// Len returns the number of documents.
func (x *MemoryIndex) Len() int {
	x.mu.RLock()
	defer x.mu.RUnlock()
	return len(x.docs)
}

// SortScored sorts results best first: higher Score, then higher
// Similarity, then session id.
func SortScored(s []Scored) {
	sort.SliceStable(s, func(i, j int) bool {
		if s[i].Score != s[j].Score {
			return s[i].Score > s[j].Score
		}
		if s[i].Similarity != s[j].Similarity {
			return s[i].Similarity > s[j].Similarity
		}
		return s[i].Doc.SessionID < s[j].Doc.SessionID
	})
}

func cloneDoc(d Doc) Doc {
	d.Embedding = slices.Clone(d.Embedding)
	return d
}
