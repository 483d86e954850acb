package catalog

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"time"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
)

// Defaults of a Catalog.
const (
	// DefaultTitleThreshold: the title is regenerated when the Jaccard
	// similarity between the fingerprint it was made from and the current
	// one falls below this.
	DefaultTitleThreshold = 0.5
	// DefaultWeight is the similarity's share of a search score; recency
	// has the rest.
	DefaultWeight = 0.8
	// DefaultHalfLife: a session's recency halves every 30 days.
	DefaultHalfLife = 30 * 24 * time.Hour
	// DefaultMinSimilarity drops search matches less similar than this.
	DefaultMinSimilarity = 0.05
	// DefaultMargin: the best match is a clear winner when its score beats
	// the second best by at least this much (see Decide).
	DefaultMargin = 0.05
	// DefaultFirstTurns is how many first user messages title a session
	// without summary.
	DefaultFirstTurns = 5
	// DefaultMaxTextRunes caps the text embedded for a session.
	DefaultMaxTextRunes = 4000
	// DefaultRefreshTimeout bounds one background refresh.
	DefaultRefreshTimeout = 2 * time.Minute
	// DefaultKeywordMessages is how many of a session's newest messages
	// its keywords line is drawn from.
	DefaultKeywordMessages = 400
	// DefaultKeywords is how many words the keywords line lists.
	DefaultKeywords = 200
	// DefaultSearchLimit is Search's limit when it is given limit <= 0.
	DefaultSearchLimit = 5
)

// ErrListingUnsupported: neither the index (Lister) nor the message store
// (memory.SessionLister) can list sessions.
var ErrListingUnsupported = errors.New("catalog: neither the index nor the message store can list sessions")

// Option configures a Catalog.
type Option func(*Catalog)

// WithEmbedder sets the embedder and the model name stored with its
// vectors (default: NewLexicalEmbedder(0), lexical and offline). Changing
// the embedder (or its model name) makes existing vectors invisible to
// Search until their sessions are refreshed (Reindex, or lazily by List).
// For langchaingo: e, _ := embeddings.NewEmbedder(openaiLLM), with the
// model the client was configured with as model. A nil embedder turns
// embeddings off: titles are still kept and Search returns nothing.
func WithEmbedder(e Embedder, model string) Option {
	return func(c *Catalog) {
		c.emb, c.model = e, model
		if e != nil && model == "" {
			c.model = fmt.Sprintf("%T", e)
		}
	}
}

// WithTitleFunc sets the title generator (default DefaultTitle, offline).
// Use LLMTitle for a model-written title.
func WithTitleFunc(fn TitleFunc) Option {
	return func(c *Catalog) {
		if fn != nil {
			c.title = fn
		}
	}
}

// WithTitleThreshold sets the fingerprint Jaccard similarity below which
// the title is regenerated (default DefaultTitleThreshold). 0 keeps the
// first title forever; 1 regenerates it whenever the fingerprint changes
// at all.
func WithTitleThreshold(t float64) Option {
	return func(c *Catalog) { c.threshold = math.Max(0, math.Min(1, t)) }
}

// WithRanking sets the similarity weight (clamped to [0, 1]; default
// DefaultWeight) and the recency half-life (default DefaultHalfLife; <= 0
// ignores recency) of search scores.
func WithRanking(weight float64, halfLife time.Duration) Option {
	return func(c *Catalog) {
		c.weight = math.Max(0, math.Min(1, weight))
		c.halfLife = halfLife
	}
}

// WithMinSimilarity sets the similarity below which a session is not a
// match (default DefaultMinSimilarity). Model embedders give unrelated texts
// higher similarities than the lexical one; raise it for them.
func WithMinSimilarity(s float64) Option { return func(c *Catalog) { c.minSim = s } }

// WithMargin sets the score margin of a clear winner (default
// DefaultMargin; see Decide).
func WithMargin(m float64) Option { return func(c *Catalog) { c.margin = m } }

// WithFirstTurns sets how many first user messages title and describe a
// session without summary (default DefaultFirstTurns).
func WithFirstTurns(n int) Option {
	return func(c *Catalog) {
		if n > 0 {
			c.firstTurns = n
		}
	}
}

// WithMaxTextRunes caps the embedded text (default DefaultMaxTextRunes); the
// text stored is the text embedded, cut.
func WithMaxTextRunes(n int) Option {
	return func(c *Catalog) {
		if n > 0 {
			c.maxText = n
		}
	}
}

// WithLogger sets the logger of background failures (default
// slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(c *Catalog) {
		if l != nil {
			c.log = l
		}
	}
}

// WithClock sets the clock used for recency and timestamps (tests).
func WithClock(now func() time.Time) Option {
	return func(c *Catalog) {
		if now != nil {
			c.now = now
		}
	}
}

// WithoutLazyRefresh stops List from scheduling background refreshes of
// sessions whose document is missing or stale; they are then refreshed
// only after folds (Observer) and by Refresh / Reindex.
func WithoutLazyRefresh() Option { return func(c *Catalog) { c.lazy = false } }

// WithoutSummaryTitles stops the catalog from writing titles back into the
// summary store (summary.Summary.Title, conversation_summaries.title on
// PostgreSQL). The index always keeps them.
func WithoutSummaryTitles() Option { return func(c *Catalog) { c.writeBack = false } }

// WithKeywords sets how many of a session's newest messages its keywords
// line is drawn from and how many words it lists (defaults
// DefaultKeywordMessages and DefaultKeywords); n <= 0 leaves the keywords
// line out of the embedded text, which then holds only the title and the
// summary (or the first user messages).
func WithKeywords(messages, n int) Option {
	return func(c *Catalog) {
		if messages > 0 {
			c.keywordMessages = messages
		}
		c.keywords = n
	}
}

// WithRefreshTimeout bounds one background refresh (default
// DefaultRefreshTimeout).
func WithRefreshTimeout(d time.Duration) Option {
	return func(c *Catalog) {
		if d > 0 {
			c.refreshTimeout = d
		}
	}
}

// Catalog lists a user's conversations with titles and previews, and finds
// them by meaning (or, with the default embedder, by words). It keeps one
// document per session in an Index — a title, and an embedding next to the
// exact text it was computed from — refreshed in the background after each
// fold (Observer), lazily for sessions without summary (List), or
// explicitly (Refresh).
//
// A Catalog is safe for concurrent use. Close it to stop background
// refreshes.
type Catalog struct {
	store memory.MessageStore
	sums  summary.Store
	idx   Index

	emb             Embedder
	model           string
	title           TitleFunc
	threshold       float64
	weight          float64
	halfLife        time.Duration
	minSim          float64
	margin          float64
	firstTurns      int
	maxText         int
	log             *slog.Logger
	now             func() time.Time
	lazy            bool
	writeBack       bool
	refreshTimeout  time.Duration
	keywordMessages int
	keywords        int

	bg     context.Context
	cancel context.CancelFunc
	sem    chan struct{}

	mu       sync.Mutex
	inflight map[string]bool
	wg       sync.WaitGroup
	pending  int
	idle     chan struct{}
	closed   bool
}

// New returns a catalog over a manager's stores — the message store and the
// summary store it was (or will be) built with; sums may be nil — keeping
// its documents in idx. Register Observer with the manager
// (memory.WithFoldObserver) so that titles and embeddings follow folds:
//
//	store, sums := memory.NewInMemoryStore(), summary.NewInMemoryStore(0)
//	cat := catalog.New(store, sums, catalog.NewMemoryIndex())
//	mgr, err := memory.NewManager(store, cfg,
//		memory.WithSummaries(sums, summary.NewExtractiveService()),
//		memory.WithFoldObserver(cat.Observer()))
//
// Listing needs an index that is a Lister (db.NewCatalogIndex) or a store
// that is a memory.SessionLister (memory's in-memory store).
func New(store memory.MessageStore, sums summary.Store, idx Index, opts ...Option) *Catalog {
	lex := NewLexicalEmbedder(0)
	c := &Catalog{
		store: store, sums: sums, idx: idx,
		emb: lex, model: lex.Model(),
		title: DefaultTitle, threshold: DefaultTitleThreshold,
		weight: DefaultWeight, halfLife: DefaultHalfLife,
		minSim: DefaultMinSimilarity, margin: DefaultMargin,
		firstTurns: DefaultFirstTurns, maxText: DefaultMaxTextRunes,
		log: slog.Default(), now: time.Now, lazy: true, writeBack: true,
		refreshTimeout:  DefaultRefreshTimeout,
		keywordMessages: DefaultKeywordMessages, keywords: DefaultKeywords,
		sem:      make(chan struct{}, 4),
		inflight: make(map[string]bool),
	}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	c.bg, c.cancel = context.WithCancel(context.Background())
	return c
}

// Model returns the name stored with the catalog's embeddings ("" when
// embeddings are off).
func (c *Catalog) Model() string {
	if c.emb == nil {
		return ""
	}
	return c.model
}

// Index returns the catalog's index.
func (c *Catalog) Index() Index { return c.idx }

// Observer returns the fold observer to register with the manager
// (memory.WithFoldObserver). The manager calls it in the background after
// each fold it saved; it refreshes the session's title and embedding.
// Failures are logged and never reach the conversation.
func (c *Catalog) Observer() memory.FoldObserver {
	return func(ctx context.Context, s summary.Summary) {
		ctx, cancel := context.WithTimeout(ctx, c.refreshTimeout)
		defer cancel()
		if err := c.refresh(ctx, s.SessionID, &s); err != nil {
			c.log.Warn("strata: catalog refresh after fold failed", "session_id", s.SessionID, "error", err)
		}
	}
}

// Refresh brings the session's document up to date now: it reads the
// session's summary (or, without one, its first user messages), regenerates
// the title when the focus changed (see WithTitleThreshold), and re-embeds
// the text when it or the embedder changed. A deleted session's document is
// removed. The title is stored even when embedding fails; the error is
// returned.
func (c *Catalog) Refresh(ctx context.Context, sessionID string) error {
	return c.refresh(ctx, sessionID, nil)
}

// Delete removes the session's document. Call it after
// memory.Manager.DeleteSession with an in-memory index; PostgreSQL indexes
// lose the document with the session (ON DELETE CASCADE).
func (c *Catalog) Delete(ctx context.Context, sessionID string) error {
	if err := c.idx.Delete(ctx, sessionID); err != nil {
		return fmt.Errorf("catalog: delete %q: %w", sessionID, err)
	}
	return nil
}

// DeleteObserver returns the hook to register with
// memory.WithDeleteObserver, so that deleting a session through the manager
// drops its document from the index too (PostgreSQL also cascades).
func (c *Catalog) DeleteObserver() memory.DeleteObserver {
	return func(ctx context.Context, sessionID string) {
		if err := c.Delete(ctx, sessionID); err != nil {
			c.log.Warn("strata: catalog delete failed", "session_id", sessionID, "error", err)
		}
	}
}

// Flush returns when no background refresh scheduled by List is queued or
// running, or when ctx is done. (Refreshes after folds run in the manager's
// observers: memory.Manager.Flush waits for those.)
func (c *Catalog) Flush(ctx context.Context) error {
	c.mu.Lock()
	if c.pending == 0 {
		c.mu.Unlock()
		return nil
	}
	idle := c.idle
	c.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Close cancels background refreshes, waits for them and schedules no new
// ones. List, Search and Refresh keep working. Close is idempotent.
func (c *Catalog) Close() error {
	c.mu.Lock()
	c.closed = true
	c.mu.Unlock()
	c.cancel()
	c.wg.Wait()
	return nil
}

// schedule refreshes a session in the background, once at a time.
func (c *Catalog) schedule(sessionID string) {
	c.mu.Lock()
	if c.closed || c.inflight[sessionID] {
		c.mu.Unlock()
		return
	}
	c.inflight[sessionID] = true
	if c.pending == 0 {
		c.idle = make(chan struct{})
	}
	c.pending++
	c.wg.Add(1)
	c.mu.Unlock()
	go func() {
		defer func() {
			if r := recover(); r != nil {
				c.log.Error("strata: catalog refresh panicked", "session_id", sessionID, "panic", r)
			}
			c.mu.Lock()
			delete(c.inflight, sessionID)
			c.pending--
			if c.pending == 0 {
				close(c.idle)
			}
			c.mu.Unlock()
			c.wg.Done()
		}()
		select {
		case c.sem <- struct{}{}:
			defer func() { <-c.sem }()
		case <-c.bg.Done():
			return
		}
		ctx, cancel := context.WithTimeout(c.bg, c.refreshTimeout)
		defer cancel()
		if err := c.refresh(ctx, sessionID, nil); err != nil && c.bg.Err() == nil {
			c.log.Warn("strata: catalog background refresh failed", "session_id", sessionID, "error", err)
		}
	}()
}

// refresh rebuilds a session's document; sum, when given, is the summary a
// fold just saved.
func (c *Catalog) refresh(ctx context.Context, sessionID string, sum *summary.Summary) error {
	if sessionID == "" {
		return nil
	}
	owner, err := c.store.Owner(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("catalog: refresh %q: owner: %w", sessionID, err)
	}
	if owner == "" { // deleted
		return c.Delete(ctx, sessionID)
	}
	if sum == nil && c.sums != nil {
		if sum, err = c.sums.Get(ctx, sessionID); err != nil {
			return fmt.Errorf("catalog: refresh %q: summary: %w", sessionID, err)
		}
	}
	if sum != nil && sum.IsEmpty() {
		sum = nil
	}
	tail, err := c.store.Tail(ctx, sessionID, c.keywordMessages)
	if err != nil {
		return fmt.Errorf("catalog: refresh %q: tail: %w", sessionID, err)
	}
	firstUsers, lastSeq, err := c.firstUserMessages(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("catalog: refresh %q: first messages: %w", sessionID, err)
	}
	old, err := c.idx.Get(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("catalog: refresh %q: index: %w", sessionID, err)
	}
	if old != nil && old.UserID != "" && old.UserID != owner {
		old = nil // a re-created session of another user
	}

	d := Doc{SessionID: sessionID, UserID: owner, MessageCount: tail.Total, UpdatedAt: c.now()}
	if n := len(tail.Messages); n > 0 {
		d.LastActivity = tail.Messages[n-1].CreatedAt
	}
	var sumVal summary.Summary
	if sum != nil {
		d.Source, d.SourceSeq, sumVal = SourceSummary, sum.UpToSeq, *sum
	} else {
		d.Source, d.SourceSeq = SourceTurns, lastSeq
	}
	if old != nil && !d.Supersedes(*old) {
		if old.Source == SourceSummary && sum == nil {
			// The summary is gone (history replaced): start over.
			if err := c.idx.Delete(ctx, sessionID); err != nil {
				return fmt.Errorf("catalog: refresh %q: %w", sessionID, err)
			}
			old = nil
		} else {
			return nil // a newer document is already stored
		}
	}
	fp := Fingerprint(fingerprintSource(sum, firstUsers))

	// Title: keep it unless the focus changed.
	d.Title, d.Fingerprint = "", fp
	if old != nil && old.Title != "" && old.Source == d.Source && Jaccard(old.Fingerprint, fp) >= c.threshold {
		d.Title, d.Fingerprint = old.Title, old.Fingerprint
	} else {
		t, terr := c.makeTitle(ctx, sumVal, firstUsers)
		switch {
		case terr == nil && t != "":
			d.Title = t
		case old != nil && old.Title != "":
			d.Title, d.Fingerprint = old.Title, old.Fingerprint // retry next time
			if terr != nil {
				c.log.Warn("strata: catalog title failed, keeping the previous one", "session_id", sessionID, "error", terr)
			}
		default:
			d.Title, _ = DefaultTitle(ctx, sumVal, firstUsers)
			d.Fingerprint = "" // not the TitleFunc's title: try it again next time
			if terr != nil {
				c.log.Warn("strata: catalog title failed, using the offline title", "session_id", sessionID, "error", terr)
			}
		}
	}

	// Embedding: the text and its vector, together.
	var embErr error
	if c.emb != nil {
		var text string
		if sum != nil {
			text = SummaryText(d.Title, sumVal)
		} else {
			text = turnsText(d.Title, firstUsers)
		}
		if kw := keywordsOf(tail.Messages, c.keywords); kw != "" {
			text += "\nKeywords: " + kw
		}
		text = cutRunes(text, c.maxText)
		switch {
		case text == "":
		case old != nil && old.Text == text && old.Model == c.model && len(old.Embedding) > 0:
			d.Text, d.Model, d.Embedding = old.Text, old.Model, old.Embedding
		default:
			vec, err := c.embedDocument(ctx, text)
			if err != nil {
				embErr = fmt.Errorf("catalog: refresh %q: embed: %w", sessionID, err)
				if old != nil && len(old.Embedding) > 0 { // keep the previous pair
					d.Text, d.Model, d.Embedding = old.Text, old.Model, old.Embedding
				}
			} else {
				d.Text, d.Model, d.Embedding = text, c.model, vec
			}
		}
	}
	if err := c.idx.Upsert(ctx, d); err != nil {
		return errors.Join(fmt.Errorf("catalog: refresh %q: index: %w", sessionID, err), embErr)
	}
	if sum != nil && c.writeBack && c.sums != nil && sum.Title != d.Title {
		if err := c.writeTitle(ctx, *sum, d.Title); err != nil {
			c.log.Warn("strata: catalog could not store the title in the summary", "session_id", sessionID, "error", err)
		}
	}
	return embErr
}

// makeTitle calls the TitleFunc, turning a panic into an error.
func (c *Catalog) makeTitle(ctx context.Context, s summary.Summary, firstUsers []string) (t string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("catalog: title function panicked: %v", r)
		}
	}()
	t, err = c.title(ctx, s, firstUsers)
	return capTitle(strings.TrimSpace(t)), err
}

// embedDocument embeds one text, checking what the embedder returned.
func (c *Catalog) embedDocument(ctx context.Context, text string) (vec []float32, err error) {
	defer func() {
		if r := recover(); r != nil {
			vec, err = nil, fmt.Errorf("embedder panicked: %v", r)
		}
	}()
	vecs, err := c.emb.EmbedDocuments(ctx, []string{text})
	if err != nil {
		return nil, err
	}
	if len(vecs) != 1 {
		return nil, fmt.Errorf("embedder returned %d vectors for 1 text", len(vecs))
	}
	return checkVector(vecs[0])
}

// embedQuery embeds a search query, checking what the embedder returned.
func (c *Catalog) embedQuery(ctx context.Context, text string) (vec []float32, err error) {
	defer func() {
		if r := recover(); r != nil {
			vec, err = nil, fmt.Errorf("embedder panicked: %v", r)
		}
	}()
	vec, err = c.emb.EmbedQuery(ctx, text)
	if err != nil {
		return nil, err
	}
	return checkVector(vec)
}

func checkVector(v []float32) ([]float32, error) {
	if len(v) == 0 {
		return nil, errors.New("embedder returned an empty vector")
	}
	zero := true
	for _, x := range v {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, errors.New("embedder returned a vector with NaN or Inf")
		}
		if x != 0 {
			zero = false
		}
	}
	if zero {
		return nil, nil // nothing to compare: no embedding, and no error
	}
	return v, nil
}

// writeTitle stores the title in the summary the fold saved, unless a newer
// summary replaced it meanwhile. A summary store that does not know about
// deletions (the in-memory one) could be given back a deleted session's
// summary this way, so the session is checked afterwards and the summary
// removed again when it is gone.
func (c *Catalog) writeTitle(ctx context.Context, s summary.Summary, title string) error {
	cur, err := c.sums.Get(ctx, s.SessionID)
	if err != nil || cur == nil || cur.UpToSeq != s.UpToSeq || cur.Title == title {
		return err
	}
	cur.Title = title
	if err := c.sums.Save(ctx, *cur); err != nil {
		return err
	}
	owner, err := c.store.Owner(ctx, s.SessionID)
	if err != nil {
		return err
	}
	if owner == "" {
		return c.sums.Delete(ctx, s.SessionID)
	}
	return nil
}

// firstUserMessages returns the session's first user messages (at most
// firstTurns) and the sequence number of the last message read.
func (c *Catalog) firstUserMessages(ctx context.Context, sessionID string) ([]string, int64, error) {
	msgs, err := c.store.Range(ctx, sessionID, 0, math.MaxInt64, 4*c.firstTurns)
	if err != nil {
		return nil, 0, err
	}
	var out []string
	var last int64
	for _, m := range msgs {
		last = m.Seq
		if m.Role == memory.RoleUser && strings.TrimSpace(m.Content) != "" {
			out = append(out, m.Content)
			if len(out) == c.firstTurns {
				break
			}
		}
	}
	return out, last, nil
}

func cutRunes(s string, n int) string {
	if n <= 0 || len(s) <= n {
		return s
	}
	r := []rune(s)
	if len(r) <= n {
		return s
	}
	return string(r[:n])
}

// keywordsOf returns the keywords line of the user and assistant messages.
func keywordsOf(msgs []memory.Message, n int) string {
	if n <= 0 {
		return ""
	}
	texts := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == memory.RoleUser || m.Role == memory.RoleAssistant {
			texts = append(texts, m.Content)
		}
	}
	return Keywords(texts, n)
}
