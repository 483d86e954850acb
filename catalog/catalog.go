package catalog

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-go/strata/internal/bg"
	"github.com/strata-go/strata/internal/owner"
	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
)

// Tuning of a Catalog that has no option.
const (
	// titleThreshold: the generated title is regenerated when the Jaccard
	// similarity between the fingerprint it was made from and the current
	// one falls below this.
	titleThreshold = 0.5
	// firstTurns is how many first user messages title and describe a
	// session without summary.
	firstTurns = 5
	// maxTextRunes caps the text embedded for a session.
	maxTextRunes = 4000
	// keywordMessages is how many messages the keywords line is drawn
	// from: the session's first ones, and as many of the ones its summary
	// does not cover yet.
	keywordMessages = 400
	// keywordCount is how many words the keywords line lists.
	keywordCount = 200
	// searchLimit is Search's limit when it is given limit <= 0.
	searchLimit = 5
	// refreshWorkers caps the refreshes running at once.
	refreshWorkers = 4
	// retryEmbedding: a document whose embedding failed is retried by
	// List at most this often (Reindex retries it at once).
	retryEmbedding = time.Minute
)

// Option configures a Catalog.
type Option func(*Catalog)

// WithEmbedder sets the embedder and the model name stored with its vectors
// (default: NewLexicalEmbedder(0), lexical and offline, named
// "strata-lexical-v1-1024"). Vectors of another model are never compared
// with a query's: after a change of embedder (or of its name), sessions are
// searchable again once refreshed (Reindex, or in the background by List).
// model "" names the embedder by its Go type. A nil embedder turns search
// off: titles are still kept, and Search finds nothing.
func WithEmbedder(e Embedder, model string) Option {
	return func(c *Catalog) {
		c.emb, c.model = e, model
		switch lex, ok := e.(*lexicalEmbedder); {
		case e == nil:
			c.model = ""
		case model != "":
		case ok:
			c.model = lex.model()
		default:
			c.model = fmt.Sprintf("%T", e)
		}
	}
}

// WithRanking sets how search scores combine similarity and recency:
// score = weight × similarity + (1 − weight) × recency, where recency
// halves every halfLife since the session's last activity (defaults 0.8
// and 30 days; weight is clamped to [0, 1]; halfLife <= 0 ignores recency).
func WithRanking(weight float64, halfLife time.Duration) Option {
	return func(c *Catalog) {
		c.weight = math.Max(0, math.Min(1, weight))
		c.halfLife = halfLife
	}
}

// WithThresholds sets the similarity below which a session is no match
// (default 0.05; model embedders give unrelated texts higher similarities
// than the lexical one, so raise it for them) and the score margin by
// which the best match must beat the second to be a clear winner (default
// 0.05; see Results).
func WithThresholds(minSimilarity, margin float64) Option {
	return func(c *Catalog) { c.minSim, c.margin = minSimilarity, margin }
}

// WithLogger sets the logger of background failures (default: discard).
func WithLogger(l *slog.Logger) Option {
	return func(c *Catalog) {
		if l != nil {
			c.log = l
		}
	}
}

// WithTimeouts bounds one refresh of a session's document (default 2
// minutes) and Close (default 5 seconds); a value <= 0 keeps the default.
func WithTimeouts(refresh, close time.Duration) Option {
	return func(c *Catalog) {
		if refresh > 0 {
			c.refreshTimeout = refresh
		}
		if close > 0 {
			c.closeTimeout = close
		}
	}
}

// Catalog lists a user's conversations with titles and previews, and finds
// them by meaning (or, with the default embedder, by words). It reads
// sessions, messages and summaries only through a memory.Manager, and
// keeps one document per session in an Index: a title, and an embedding
// next to the exact text it was computed from.
//
// A Catalog is safe for concurrent use. Close it to stop its background
// refreshes.
type Catalog struct {
	mgr *memory.Manager
	idx Index
	// shared are the manager's shared-session prefixes: with them,
	// owner.Of maps a caller to the owner the manager stores a session
	// under, which is the owner its document, title and listing go by.
	shared []string
	// viewers are the users who list and search every shared session
	// (memory.Config.SharedSessionViewers); the others see those they
	// wrote in.
	viewers []string
	mem     *memoryIndex // idx when it is the in-memory index: writes are fenced
	// trusted: the index sees sessions and owners itself (a Lister), so its
	// user filter needs no re-check through the manager.
	trusted bool

	emb            Embedder
	model          string
	title          titleFunc
	weight         float64
	halfLife       time.Duration
	minSim         float64
	margin         float64
	log            *slog.Logger
	refreshTimeout time.Duration
	closeTimeout   time.Duration

	runner *bg.Runner
	sem    chan struct{}
	mu     sync.Mutex
	jobs   map[string]*job // sessions with a background refresh queued or running
}

// job is a background refresh of one session. A request arriving while it
// runs makes it run once more, so that the newest fold is always indexed.
type job struct {
	userID string
	count  int // the session's message count in the latest listing, 0 when unknown
	again  bool
	// fresh: an erasure happened while the job ran, whose read may hold
	// erased content; the next run rebuilds the document without reusing
	// the stored one (see erased).
	fresh bool
}

// New returns a catalogue reading sessions through mgr and keeping their
// documents in idx. It subscribes to mgr (memory.Manager.Observe): its
// Folded and Deleted methods hear of the manager's folds, erasures and
// deletes from then on, so that documents follow them.
func New(mgr *memory.Manager, idx Index, opts ...Option) (*Catalog, error) {
	if mgr == nil {
		return nil, errors.New("catalog: nil manager")
	}
	if idx == nil {
		return nil, errors.New("catalog: nil index")
	}
	lex := &lexicalEmbedder{dims: lexicalDims}
	c := &Catalog{
		mgr: mgr, idx: idx, shared: mgr.Config().SharedSessionPrefixes, viewers: mgr.Config().SharedSessionViewers,
		emb: lex, model: lex.model(), title: offlineTitle,
		weight: 0.8, halfLife: 30 * 24 * time.Hour, minSim: 0.05, margin: 0.05,
		log:            slog.New(slog.NewTextHandler(io.Discard, nil)),
		refreshTimeout: 2 * time.Minute, closeTimeout: 5 * time.Second,
		sem:  make(chan struct{}, refreshWorkers),
		jobs: map[string]*job{},
	}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	c.mem, _ = idx.(*memoryIndex)
	_, c.trusted = idx.(Lister)
	c.runner = bg.New(c.log)
	mgr.Observe(c.Folded, c.Deleted)
	return c, nil
}

// Observers returns no options: New subscribes the catalogue to its
// manager itself. It is kept so that code written for the wiring through
// an atomic pointer still builds, and behaves as before (the pointer is
// not read).
//
// Deprecated: build the manager without it; catalog.New subscribes.
func Observers(*atomic.Pointer[Catalog]) []memory.Option { return nil }

// Folded is the manager's fold observer (memory.WithFoldObserver): it
// schedules a background refresh of the session's title and embedding,
// which reads the session's current summary through the manager as
// ev.UserID. It returns at once; failures are logged. A nil Catalog does
// nothing. For the event of an erasure (ev.Erased) it rebuilds the
// document at once instead, reusing nothing of the old one but a pinned
// title, and returns when it is written.
func (c *Catalog) Folded(ctx context.Context, ev memory.FoldEvent) {
	if c == nil || ev.SessionID == "" {
		return
	}
	if ev.Erased {
		c.erased(ctx, ev)
		return
	}
	c.schedule(ev.SessionID, c.owner(ev.SessionID, ev.UserID), 0)
}

// Deleted is the manager's delete observer (memory.WithDeleteObserver): it
// drops the session's document, its pinned title included, and makes any
// refresh that read the session before the delete write nothing. A nil
// Catalog does nothing.
func (c *Catalog) Deleted(ctx context.Context, sessionID string) {
	if c == nil {
		return
	}
	if err := c.idx.Delete(context.WithoutCancel(ctx), sessionID); err != nil {
		c.log.Warn("strata: catalog delete failed", "session_id", sessionID, "error", err)
	}
}

// SetTitle pins title as the session's title, for example the one a
// client gave when it created the session: refreshes keep it, listings and
// search show it, and it goes with the session when the session is
// deleted. It is trimmed and cut to 80 characters; "" removes the pin (a
// title is generated again). A missing
// session gives store.ErrNotFound, another user's memory.ErrNotOwner. A
// shared session (memory.Config.SharedSessionPrefixes) has one title for
// all its participants, which any of them may set.
func (c *Catalog) SetTitle(ctx context.Context, sessionID, userID, title string) error {
	userID, title = c.owner(sessionID, userID), capTitle(strings.TrimSpace(title))
	var err error
	switch {
	case c.trusted: // the index checks the owner in the same statement
		err = c.idx.SetTitle(ctx, sessionID, userID, title)
	case c.mem != nil:
		t := c.mem.fence()
		defer c.mem.unfence(t)
		if err = c.probe(ctx, sessionID, userID); err == nil {
			err = c.mem.pin(sessionID, userID, title, t)
		}
	default:
		if err = c.probe(ctx, sessionID, userID); err == nil {
			err = c.idx.SetTitle(ctx, sessionID, userID, title)
		}
	}
	if err != nil {
		return fmt.Errorf("catalog: set title of %q: %w", sessionID, err)
	}
	c.schedule(sessionID, userID, 0) // the embedded text names the title
	return nil
}

// Title returns the session's title: the pinned one, else the generated
// one, else (for a session not indexed yet) an offline title from its
// first user messages; "" for a session without user message. A missing
// session gives store.ErrNotFound, another user's memory.ErrNotOwner.
func (c *Catalog) Title(ctx context.Context, sessionID, userID string) (string, error) {
	userID = c.owner(sessionID, userID)
	d, err := c.idx.Get(ctx, sessionID, userID)
	if err != nil {
		return "", fmt.Errorf("catalog: title of %q: %w", sessionID, err)
	}
	if d != nil && d.Title != "" && c.trusted {
		return d.Title, nil
	}
	msgs, err := c.mgr.Messages(ctx, sessionID, userID, 0, 4*firstTurns)
	if err != nil {
		return "", fmt.Errorf("catalog: title of %q: %w", sessionID, err)
	}
	if d != nil && d.Title != "" {
		return d.Title, nil
	}
	return sketchTitle(nil, firstUserMessages(msgs)), nil
}

// Flush returns when no background refresh is queued or running, or with
// ctx's error. Refreshes after folds are queued by the manager's fold
// observers: flush the manager (memory.Manager.Flush) first.
func (c *Catalog) Flush(ctx context.Context) error { return c.runner.Flush(ctx) }

// Close cancels the background refreshes and waits for them at most the
// close timeout (WithTimeouts); a refresh still running then (an embedder
// that ignores cancellation) writes nothing when it returns, and Close
// reports it. Folded schedules nothing afterwards; List, Search, Title,
// SetTitle and Reindex keep working. Close is idempotent.
func (c *Catalog) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), c.closeTimeout)
	defer cancel()
	if err := c.runner.Close(ctx); err != nil {
		return fmt.Errorf("catalog: close: %w", err)
	}
	return nil
}

// probe checks through the manager that userID owns the session.
func (c *Catalog) probe(ctx context.Context, sessionID, userID string) error {
	_, err := c.mgr.Messages(ctx, sessionID, userID, math.MaxInt64, 1)
	return err
}

// owner is the owner userID acts as on the session, by the manager's own
// mapping: the shared owner for a shared session, else the user ("" is
// store.AnonymousUser). Documents are filed under it.
func (c *Catalog) owner(sessionID, userID string) string {
	return owner.Of(c.shared, sessionID, userID)
}

// scope is one part of what a user lists and searches: the sessions of an
// owner, only those participant wrote in when it is not "".
type scope struct{ owner, participant string }

// scopes are what userID lists and searches: their own sessions and, when
// sessions are shared, the shared sessions they wrote in — every shared
// session for a configured viewer (memory.Config.SharedSessionViewers).
func (c *Catalog) scopes(userID string) []scope {
	u := owner.User(userID)
	switch {
	case len(c.shared) == 0 || u == owner.Shared:
		return []scope{{owner: u}}
	case slices.Contains(c.viewers, u):
		return []scope{{owner: u}, {owner: owner.Shared}}
	}
	return []scope{{owner: u}, {owner: owner.Shared, participant: u}}
}

// gone reports whether err says that the session is not the user's (any
// more): there is nothing to index for them.
func gone(err error) bool {
	return errors.Is(err, store.ErrNotFound) || errors.Is(err, memory.ErrNotOwner)
}

// schedule refreshes the session in the background, coalescing requests:
// one refresh per session at a time, run once more when asked meanwhile.
func (c *Catalog) schedule(sessionID, userID string, count int) {
	c.mu.Lock()
	if j := c.jobs[sessionID]; j != nil {
		j.userID, j.count, j.again = userID, max(j.count, count), true
		c.mu.Unlock()
		return
	}
	j := &job{userID: userID, count: count}
	c.jobs[sessionID] = j
	c.mu.Unlock()
	err := c.runner.Go("catalog refresh", func(ctx context.Context) {
		defer func() {
			c.mu.Lock()
			delete(c.jobs, sessionID)
			c.mu.Unlock()
		}()
		select {
		case c.sem <- struct{}{}:
			defer func() { <-c.sem }()
		case <-ctx.Done():
			return
		}
		for {
			c.mu.Lock()
			userID, count, fresh := j.userID, j.count, j.fresh
			j.again, j.fresh = false, false
			c.mu.Unlock()
			rctx, cancel := context.WithTimeout(ctx, c.refreshTimeout)
			var err error
			if fresh {
				err = c.rebuild(rctx, sessionID, userID)
			} else {
				err = c.refresh(rctx, sessionID, userID, count)
			}
			cancel()
			if err != nil && ctx.Err() == nil {
				c.log.Warn("strata: catalog refresh failed", "session_id", sessionID, "error", err)
			}
			c.mu.Lock()
			again := j.again && ctx.Err() == nil
			c.mu.Unlock()
			if !again {
				return
			}
		}
	})
	if err != nil { // closed
		c.mu.Lock()
		delete(c.jobs, sessionID)
		c.mu.Unlock()
	}
}

// refresh brings the session's document up to date for userID: it reads
// the session's current summary (or, without one, its first messages)
// through the manager, regenerates the title when the focus changed, and
// re-embeds the text when it or the embedder changed. count, when known,
// is the session's message count from a listing. The title is stored even
// when embedding fails; the error is returned.
func (c *Catalog) refresh(ctx context.Context, sessionID, userID string, count int) error {
	if c.mem != nil {
		t := c.mem.fence()
		defer c.mem.unfence(t)
		return c.build(ctx, sessionID, userID, count, func(d Doc) error {
			c.mem.upsert(d, t)
			return nil
		})
	}
	return c.build(ctx, sessionID, userID, count, func(d Doc) error { return c.idx.Upsert(ctx, d) })
}

// build reads the session through the manager, builds its document and
// hands it to write, unless ctx ended meanwhile.
func (c *Catalog) build(ctx context.Context, sessionID, userID string, count int, write func(Doc) error) error {
	return c.buildFrom(ctx, sessionID, userID, count, false, write)
}

// buildFrom is build; fresh (after an erasure) ignores the stored
// document but for a pinned title, and writes whatever its version.
func (c *Catalog) buildFrom(ctx context.Context, sessionID, userID string, count int, fresh bool, write func(Doc) error) error {
	erasures := int64(-1)
	if ec, ok := c.idx.(erasureCounter); ok {
		// Before anything of the session is read: the index refuses the
		// document if an erasure happens from now on.
		n, err := ec.Erasures(ctx, sessionID)
		if err != nil {
			return fmt.Errorf("catalog: refresh %q: %w", sessionID, err)
		}
		erasures = n
	}
	sum, err := c.mgr.Summary(ctx, sessionID, userID)
	if gone(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("catalog: refresh %q: summary: %w", sessionID, err)
	}
	if sum != nil && sum.IsEmpty() {
		sum = nil
	}
	msgs, err := c.mgr.Messages(ctx, sessionID, userID, 0, keywordMessages)
	if err == nil && sum != nil && len(msgs) == keywordMessages {
		// A long session: add the messages its summary does not cover yet.
		var rest []store.Message
		rest, err = c.mgr.Messages(ctx, sessionID, userID, max(sum.UpToSeq, msgs[len(msgs)-1].Seq), keywordMessages)
		msgs = append(msgs, rest...)
	}
	if gone(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("catalog: refresh %q: messages: %w", sessionID, err)
	}
	if sum == nil && len(msgs) == 0 {
		if fresh { // everything erased: the old document goes
			return c.idx.Delete(ctx, sessionID)
		}
		return nil // nothing to index yet
	}
	old, err := c.idx.Get(ctx, sessionID, userID)
	if err != nil {
		return fmt.Errorf("catalog: refresh %q: index: %w", sessionID, err)
	}
	if old != nil && old.Epoch != 0 && sum != nil && old.Epoch != sum.Epoch {
		old = nil // left over from a deleted incarnation
	}
	if fresh && old != nil {
		if old.Pinned {
			old = &Doc{SessionID: old.SessionID, UserID: old.UserID, Title: old.Title, Pinned: true}
		} else {
			old = nil
		}
	}

	first := firstUserMessages(msgs)
	d := Doc{SessionID: sessionID, UserID: userID, MessageCount: max(count, len(msgs)), UpdatedAt: time.Now(), Erasures: erasures}
	if sum != nil {
		d.SummaryVersion = sum.Version
	}
	for _, m := range msgs {
		if m.CreatedAt.After(d.LastActivity) {
			d.LastActivity = m.CreatedAt
		}
	}
	var sumVal summary.Summary
	if sum != nil {
		d.Source, d.SourceSeq, d.Epoch, sumVal = SourceSummary, sum.UpToSeq, sum.Epoch, *sum
	} else {
		d.Source, d.SourceSeq = SourceTurns, msgs[len(msgs)-1].Seq
	}
	if old != nil && !fresh && !d.supersedes(*old) {
		return nil // a newer document is already stored
	}
	c.titleDoc(ctx, &d, old, sum, first, recentUserMessages(msgs))

	// The text and its vector, together.
	var embErr error
	if c.emb != nil {
		var body string
		if sum != nil {
			body = summaryText(d.Title, sumVal)
		} else {
			body = turnsText(d.Title, first)
		}
		if kw := keywordsOf(msgs); kw != "" {
			body += "\nKeywords: " + kw
		}
		body = text.Cut(body, maxTextRunes)
		switch {
		case body == "":
		case old != nil && old.Text == body && old.Model == c.model && len(old.Embedding) > 0:
			d.Text, d.Model, d.Embedding = old.Text, old.Model, old.Embedding
		default:
			vec, err := c.embedDocument(ctx, body)
			if err != nil {
				embErr = fmt.Errorf("catalog: refresh %q: embed: %w", sessionID, err)
				if old != nil && len(old.Embedding) > 0 { // keep the previous pair
					d.Text, d.Model, d.Embedding = old.Text, old.Model, old.Embedding
				}
			} else if vec != nil {
				d.Text, d.Model, d.Embedding = body, c.model, vec
			}
		}
	}
	if err := ctx.Err(); err != nil {
		// Cancelled (Close) or timed out: an abandoned refresh writes nothing.
		return errors.Join(fmt.Errorf("catalog: refresh %q: %w", sessionID, err), embErr)
	}
	if err := write(d); err != nil {
		return errors.Join(fmt.Errorf("catalog: refresh %q: index: %w", sessionID, err), embErr)
	}
	return embErr
}

// titleDoc sets d's title: the pinned one; else the previous one while the
// focus has not changed; else a new one. The focus of a summarized session
// is what its user said last (recent): a summary keeps the conversation's
// opening goal, so it changes too little when the subject does.
func (c *Catalog) titleDoc(ctx context.Context, d, old *Doc, sum *summary.Summary, first, recent []string) {
	fp := fingerprint(fingerprintSource(sum, first))
	if sum != nil && len(recent) > 0 {
		fp = fingerprint(strings.Join(recent, " "))
	}
	var sumVal summary.Summary
	if sum != nil {
		sumVal = *sum
	}
	switch {
	case old != nil && old.Pinned:
		d.Title, d.Pinned, d.Fingerprint = old.Title, true, old.Fingerprint
		return
	case old != nil && old.Title != "" && old.Source == d.Source && jaccard(old.Fingerprint, fp) >= titleThreshold:
		d.Title, d.Fingerprint = old.Title, old.Fingerprint
		return
	}
	titled, from := sumVal, first
	if old != nil && old.Title != "" && len(recent) > 0 {
		// The focus moved: title the new subject, from what the user said
		// last, rather than the goal the conversation opened with.
		titled, from = summary.Summary{}, recent
	}
	t, err := c.makeTitle(ctx, titled, from)
	switch {
	case err == nil && t != "":
		d.Title, d.Fingerprint = t, fp
	case old != nil && old.Title != "":
		d.Title, d.Fingerprint = old.Title, "" // retry next time
		c.log.Warn("strata: catalog title failed, keeping the previous one", "session_id", d.SessionID, "error", err)
	default:
		d.Title, _ = offlineTitle(ctx, sumVal, first)
		d.Fingerprint = "" // not the configured title: try again next time
		if err != nil {
			c.log.Warn("strata: catalog title failed, using the offline title", "session_id", d.SessionID, "error", err)
		}
	}
}

// makeTitle calls the title function, turning a panic into an error.
func (c *Catalog) makeTitle(ctx context.Context, s summary.Summary, first []string) (t string, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("catalog: title function panicked: %v", r)
		}
	}()
	t, err = c.title(ctx, s, first)
	return capTitle(strings.TrimSpace(t)), err
}

// embedDocument embeds one text, checking what the embedder returned; a
// vector of zeros (a text without content words) gives nil, nil.
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

// firstUserMessages returns the first non-blank user messages of msgs, at
// most firstTurns of them.
func firstUserMessages(msgs []store.Message) []string {
	var out []string
	for _, m := range msgs {
		if m.Role == store.RoleUser && strings.TrimSpace(m.Content) != "" {
			out = append(out, m.Content)
			if len(out) == firstTurns {
				break
			}
		}
	}
	return out
}

// recentUserMessages returns the non-blank user messages among the newest
// messages of msgs, at most firstTurns, oldest first.
func recentUserMessages(msgs []store.Message) []string {
	var out []string
	for i := len(msgs) - 1; i >= 0 && len(out) < firstTurns; i-- {
		if m := msgs[i]; m.Role == store.RoleUser && strings.TrimSpace(m.Content) != "" {
			out = append(out, m.Content)
		}
	}
	slices.Reverse(out)
	return out
}

// keywordsOf returns the keywords line of the user and assistant messages.
func keywordsOf(msgs []store.Message) string {
	texts := make([]string, 0, len(msgs))
	for _, m := range msgs {
		if m.Role == store.RoleUser || m.Role == store.RoleAssistant {
			texts = append(texts, m.Content)
		}
	}
	return keywords(texts, keywordCount)
}

// erasureCounter is an Index that counts each session's erasures and
// checks the count on Upsert (Doc.Erasures): the PostgreSQL index.
type erasureCounter interface {
	Erasures(ctx context.Context, sessionID string) (int64, error)
}
