package memory

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/tmc/langchaingo/llms"
	"go.opentelemetry.io/otel/attribute"

	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

// AnonymousUser is the owner recorded for saves and checked for loads that
// come without a user id (the reference's R318 rule: a missing user id never
// bypasses the ownership check).
const AnonymousUser = "anonymous"

// Option configures a Manager.
type Option func(*Manager)

// WithSummaries turns on hierarchical memory's machinery: folded summaries
// are kept in store and produced by svc. Hierarchical mode is active only
// when Config.Enabled is also true.
func WithSummaries(store summary.Store, svc summary.Service) Option {
	return func(m *Manager) { m.sums, m.svc = store, svc }
}

// WithLogger sets the structured logger (default slog.Default()).
func WithLogger(l *slog.Logger) Option {
	return func(m *Manager) {
		if l != nil {
			m.log = l
		}
	}
}

// WithClock sets the manager's clock (tests of cool-downs and timestamps).
func WithClock(now func() time.Time) Option { return func(m *Manager) { m.now = now } }

// WithFoldLockTTL sets how long a cross-process fold lock (FoldLocker) is
// held at most before another replica may take it over (default 2 minutes;
// set it above the summarizer's timeout).
func WithFoldLockTTL(d time.Duration) Option {
	return func(m *Manager) {
		if d > 0 {
			m.foldTTL = d
		}
	}
}

// FoldObserver is told about every summary a fold saved. It runs in a
// background goroutine — never on a caller's load or save path — with a
// context that Close cancels; Close waits for it.
type FoldObserver func(ctx context.Context, s summary.Summary)

// WithFoldObserver registers fn to be called after every successful fold
// (e.g. to refresh titles and search embeddings). Failures inside fn never
// affect the conversation.
func WithFoldObserver(fn FoldObserver) Option {
	return func(m *Manager) {
		if fn != nil {
			m.observers = append(m.observers, fn)
		}
	}
}

// DeleteObserver is told, after DeleteSession removed a session, so that
// derived data kept elsewhere (a search index) can be dropped too. It runs on
// the deleting caller's goroutine; a panic is recovered and logged.
type DeleteObserver func(ctx context.Context, sessionID string)

// WithDeleteObserver registers fn to be called after every successful
// DeleteSession.
func WithDeleteObserver(fn DeleteObserver) Option {
	return func(m *Manager) {
		if fn != nil {
			m.deleteObservers = append(m.deleteObservers, fn)
		}
	}
}

// WithEstimator sets the token estimator used by the chunked policy's
// token trigger, input cap and prompt-memory budget (default
// trimmer.NewEstimator()).
func WithEstimator(est trimmer.Estimator) Option {
	return func(m *Manager) {
		if est != nil {
			m.est = est
		}
	}
}

// WithSupersedeDelay sets how long a background fold that superseded a
// still-running one waits before it reads anything (default 100ms). Under a
// burst of saves each fold is superseded by the next save anyway; the delay
// lets the burst settle so that only its last fold does work. Sequential
// turns (a save after the previous fold finished) are not delayed.
func WithSupersedeDelay(d time.Duration) Option {
	return func(m *Manager) {
		if d >= 0 {
			m.supersedeDelay = d
		}
	}
}

// WithFoldWait bounds how long a load waits for another process's fold of
// the same session before it degrades (parity: takeLast; chunked: the whole
// unfolded tail) instead of stalling on a slow summarizer elsewhere (default
// 10 seconds).
func WithFoldWait(d time.Duration) Option {
	return func(m *Manager) {
		if d > 0 {
			m.foldWait = d
		}
	}
}

// Manager is Strata's conversation memory: it saves messages, assembles
// what the model sees (takeLast, or facts + narrative + a verbatim window),
// and folds old messages into summaries in the background.
//
// A Manager is safe for concurrent use. Close it to stop background work.
type Manager struct {
	store    MessageStore
	cfg      Config
	sums     summary.Store
	svc      summary.Service
	log      *slog.Logger
	now      func() time.Time
	locker   FoldLocker
	foldTTL  time.Duration
	foldWait time.Duration
	// supersedeDelay: see WithSupersedeDelay.
	supersedeDelay time.Duration
	est            trimmer.Estimator
	cost           *trimmer.Trimmer // prices messages with est
	otel           instruments

	observers       []FoldObserver
	deleteObservers []DeleteObserver

	bg       context.Context // parent of background jobs; cancelled by Close
	cancelBG context.CancelFunc
	wg       sync.WaitGroup

	mu       sync.Mutex
	sessions map[string]*sessionState
	closed   bool
	pending  int           // background jobs queued or running
	idle     chan struct{} // closed when pending drops to 0

	cool  *cooldowns
	stats counters
}

// sessionState is the per-session coordination record; it lives while
// someone holds a reference (a call in progress or a background job).
type sessionState struct {
	refs  int
	job   *job          // the newest background job, nil when none
	fold  chan struct{} // 1-slot semaphore: one fold per session at a time
	write sync.Mutex    // orders summary writes against deletes
	gen   uint64        // bumped by DeleteSession; guarded by write
}

type job struct {
	cancel context.CancelFunc
	done   chan struct{}
	again  bool // chunked: another save arrived while running; guarded by Manager.mu
}

// NewManager returns a manager over store. cfg is validated; an invalid
// configuration is an error naming the field.
func NewManager(store MessageStore, cfg Config, opts ...Option) (*Manager, error) {
	if store == nil {
		return nil, errors.New("memory: NewManager: nil MessageStore")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	m := &Manager{
		store:          store,
		cfg:            cfg,
		log:            slog.Default(),
		now:            time.Now,
		foldTTL:        2 * time.Minute,
		foldWait:       10 * time.Second,
		supersedeDelay: 100 * time.Millisecond,
		sessions:       map[string]*sessionState{},
	}
	for _, o := range opts {
		o(m)
	}
	if m.est == nil {
		m.est = trimmer.NewEstimator()
	}
	m.cost = trimmer.New(max(cfg.ContextWindowTokens, 1), 0, m.est)
	m.otel = newInstruments()
	m.cool = newCooldowns(cfg.FailureCooldown, cfg.MaxFailureCooldown, m.now)
	if l, ok := store.(FoldLocker); ok {
		m.locker = l
	} else if l, ok := m.sums.(FoldLocker); ok {
		m.locker = l
	}
	m.bg, m.cancelBG = context.WithCancel(context.Background())
	return m, nil
}

// Config returns the manager's configuration.
func (m *Manager) Config() Config { return m.cfg }

// Store returns the manager's message store.
func (m *Manager) Store() MessageStore { return m.store }

// SummaryStore returns the summary store, nil when summaries are not set up.
func (m *Manager) SummaryStore() summary.Store { return m.sums }

// hierarchical reports whether summaries are on: the flag and both
// collaborators are required, as in the reference.
func (m *Manager) hierarchical() bool { return m.cfg.Enabled && m.sums != nil && m.svc != nil }

func normUser(userID string) string {
	if userID == "" {
		return AnonymousUser
	}
	return userID
}

// SaveTurn saves one user message and, when assistantText is not empty, the
// assistant's answer, atomically and adjacently. An empty assistantText
// records a failed turn: only the user message is stored, as the reference
// does. Above the trigger, a background fold is started; SaveTurn never
// waits for it.
func (m *Manager) SaveTurn(ctx context.Context, sessionID, userID, userText, assistantText string) error {
	msgs := []Message{{Role: RoleUser, Content: userText}}
	if assistantText != "" {
		msgs = append(msgs, Message{Role: RoleAssistant, Content: assistantText})
	}
	return m.AppendMessages(ctx, sessionID, userID, msgs...)
}

// SaveMessages saves langchaingo messages — including assistant tool calls
// and tool results — losslessly, atomically and adjacently.
func (m *Manager) SaveMessages(ctx context.Context, sessionID, userID string, msgs ...llms.ChatMessage) error {
	stored := make([]Message, 0, len(msgs))
	for i, cm := range msgs {
		sm, err := FromChatMessage(cm)
		if err != nil {
			return fmt.Errorf("memory: save %q: message %d: %w", sessionID, i, err)
		}
		stored = append(stored, sm)
	}
	return m.AppendMessages(ctx, sessionID, userID, stored...)
}

// AppendMessages saves stored-form messages, which may carry metadata such
// as the model variant (MetadataModelVariant). Seq, UserID and CreatedAt are
// set by the store. An empty sessionID stores nothing (no memory without a
// session, as the reference).
func (m *Manager) AppendMessages(ctx context.Context, sessionID, userID string, msgs ...Message) error {
	_, err := m.Append(ctx, sessionID, userID, msgs...)
	return err
}

// Append is AppendMessages that also reports the store's message count and
// the last sequence number, read atomically with the write (an API that
// answers "stored N" needs the exact figure under concurrent writers).
func (m *Manager) Append(ctx context.Context, sessionID, userID string, msgs ...Message) (AppendResult, error) {
	if sessionID == "" || len(msgs) == 0 {
		return AppendResult{}, nil
	}
	for i := range msgs {
		if err := msgs[i].Validate(m.cfg.MaxMessageBytes); err != nil {
			return AppendResult{}, fmt.Errorf("memory: save %q: message %d: %w", sessionID, i, err)
		}
	}
	ctx, span := m.startSpan(ctx, "strata.memory.save", sessionID)
	res, err := m.store.Append(ctx, sessionID, normUser(userID), msgs...)
	m.observeSave(ctx, len(msgs), err)
	endSpan(span, err)
	if err != nil {
		m.stats.saveErrors.Add(1)
		return AppendResult{}, fmt.Errorf("memory: save %q: %w", sessionID, err)
	}
	m.stats.saves.Add(1)
	m.trigger(sessionID, res.Total)
	return res, nil
}

// LoadHistory returns what the model should see of the session: the last
// 2 × MaxConversationTurns messages (takeLast) when summaries are off or the
// session holds no more than TriggerMessageCount messages; otherwise a
// "Conversation Facts:" and a "Conversation Summary:" system message followed
// by the last RecentMessageCount messages verbatim. A summarizer failure
// degrades to takeLast and is logged and counted, never returned.
//
// A session owned by another user yields an empty history and an error
// wrapping ErrNotOwner. An unknown session yields an empty history.
func (m *Manager) LoadHistory(ctx context.Context, sessionID, userID string) ([]llms.ChatMessage, error) {
	h, err := m.Load(ctx, sessionID, userID)
	return h.Messages, err
}

// Mode says how a History was assembled.
type Mode string

// The assembly modes.
const (
	ModeEmpty        Mode = "empty"        // no session, or no messages
	ModeTakeLast     Mode = "take-last"    // summaries off or below the trigger
	ModeHierarchical Mode = "hierarchical" // facts + narrative + verbatim window
	ModeAll          Mode = "all"          // nothing precedes the window: every message
	ModeFallback     Mode = "fallback"     // summarizer failed: takeLast
)

// History is an assembled view of a session.
type History struct {
	// Messages is what the model receives (LoadHistory's result).
	Messages []llms.ChatMessage
	Mode     Mode
	// Summary is the summary shown (hierarchical mode only).
	Summary *summary.Summary
	// Recent are the stored messages shown verbatim.
	Recent []Message
	// Total is the number of stored messages.
	Total int
}

// Load is LoadHistory with the details of how the history was assembled.
func (m *Manager) Load(ctx context.Context, sessionID, userID string) (h History, err error) {
	if sessionID == "" {
		return History{Mode: ModeEmpty}, nil
	}
	ctx, span := m.startSpan(ctx, "strata.memory.load", sessionID)
	defer func() { m.observeLoad(ctx, h); endSpan(span, err) }()
	m.stats.loads.Add(1)
	if err := m.checkOwner(ctx, sessionID, normUser(userID)); err != nil {
		return History{Mode: ModeEmpty}, err
	}
	takeLast := 2 * m.cfg.MaxConversationTurns
	if !m.hierarchical() {
		return m.loadTakeLast(ctx, sessionID, takeLast, ModeTakeLast)
	}
	if m.chunked() {
		return m.loadChunked(ctx, sessionID)
	}
	v, err := m.window(ctx, sessionID, max(takeLast, m.cfg.RecentMessageCount))
	if err != nil {
		m.stats.loadErrors.Add(1)
		return History{Mode: ModeEmpty}, fmt.Errorf("memory: load %q: %w", sessionID, err)
	}
	if v.total == 0 {
		return History{Mode: ModeEmpty}, nil
	}
	if v.total <= m.cfg.TriggerMessageCount {
		return v.takeLast(takeLast, ModeTakeLast), nil
	}
	recent, cut := v.recent(m.cfg.RecentMessageCount)
	if cut == 0 {
		return History{Messages: ChatMessages(recent), Mode: ModeAll, Recent: recent, Total: v.total}, nil
	}
	sum, err := m.summaryCovering(ctx, sessionID, cut)
	if err != nil {
		if ctx.Err() != nil {
			return History{Mode: ModeEmpty}, ctx.Err()
		}
		m.stats.fallbacks.Add(1)
		m.log.WarnContext(ctx, "strata: hierarchical load failed, using takeLast", "session_id", sessionID, "error", err)
		return v.takeLast(takeLast, ModeFallback), nil
	}
	return History{Messages: Assemble(sum, ChatMessages(recent)), Mode: ModeHierarchical, Summary: sum, Recent: recent, Total: v.total}, nil
}

func (m *Manager) loadTakeLast(ctx context.Context, sessionID string, n int, mode Mode) (History, error) {
	v, err := m.window(ctx, sessionID, n)
	if err != nil {
		m.stats.loadErrors.Add(1)
		return History{Mode: ModeEmpty}, fmt.Errorf("memory: load %q: %w", sessionID, err)
	}
	if v.total == 0 {
		return History{Mode: ModeEmpty}, nil
	}
	return v.takeLast(n, mode), nil
}

// checkOwner fails closed: a lookup error is returned, never ignored.
func (m *Manager) checkOwner(ctx context.Context, sessionID, userID string) error {
	owner, err := m.store.Owner(ctx, sessionID)
	if err != nil {
		m.stats.loadErrors.Add(1)
		return fmt.Errorf("memory: load %q: owner lookup: %w", sessionID, err)
	}
	if owner != "" && owner != userID {
		m.stats.ownerDenied.Add(1)
		m.log.WarnContext(ctx, "strata: session owned by another user", "session_id", sessionID)
		return fmt.Errorf("memory: session %q: %w", sessionID, ErrNotOwner)
	}
	return nil
}

// Assemble builds the hierarchical context: a facts system message (when
// there are facts), a narrative system message (when the narrative is not
// blank), then recent. With neither block it returns recent unchanged.
func Assemble(s *summary.Summary, recent []llms.ChatMessage) []llms.ChatMessage {
	out := make([]llms.ChatMessage, 0, len(recent)+2)
	if s != nil {
		if f := FactsBlock(s.Facts); f != "" {
			out = append(out, llms.SystemChatMessage{Content: f})
		}
		if n := NarrativeBlock(s.Narrative); n != "" {
			out = append(out, llms.SystemChatMessage{Content: n})
		}
	}
	return append(out, recent...)
}

// Prefixes of the two system messages that carry a summary.
const (
	FactsHeader     = "Conversation Facts:"
	NarrativeHeader = "Conversation Summary:"
)

// FactsBlock renders facts as the reference does: "Conversation Facts:" and
// one "- key: value" line per fact, in ledger order. No facts: "".
func FactsBlock(facts []summary.Fact) string {
	if len(facts) == 0 {
		return ""
	}
	b := []byte(FactsHeader)
	for _, f := range facts {
		b = append(b, "\n- "...)
		b = append(b, f.Key...)
		b = append(b, ": "...)
		b = append(b, f.Value...)
	}
	return string(b)
}

// NarrativeBlock renders the narrative block, "" when it is blank.
func NarrativeBlock(narrative string) string {
	if isBlank(narrative) {
		return ""
	}
	return NarrativeHeader + "\n" + narrative
}

// summaryCovering returns a non-empty summary covering every message with
// Seq <= cut: the stored one when fresh, otherwise one made now (the lazy
// fallback), single-flight with any background fold of the session.
func (m *Manager) summaryCovering(ctx context.Context, sessionID string, cut int64) (*summary.Summary, error) {
	s, err := m.sums.Get(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("summary store: %w", err)
	}
	if covers(s, cut) {
		return s, nil
	}
	m.stats.lazyFolds.Add(1)
	return m.fold(ctx, sessionID, cut, true, "load")
}

func covers(s *summary.Summary, cut int64) bool {
	return s != nil && s.UpToSeq >= cut && !s.IsEmpty()
}

// errCoolingDown: a recent failure pauses this session's folds.
var errCoolingDown = errors.New("memory: summarizer cooling down after a failure")

// errFoldBusy: another process holds the session's fold lock.
var errFoldBusy = errors.New("memory: another process is folding this session")

// fold makes the summary cover every message with Seq <= cut and returns
// it. wait says whether to wait for another process's fold (loads) or to
// give up at once (background jobs); trigger names why it runs (logs).
//
// Parity folds send every message up to cut in one call, with the existing
// facts. Chunked folds send only the new messages (incremental mode) or all
// of them (full mode), in chunks of at most MaxFoldInputTokens, each saved
// as it completes so progress survives a later failure.
func (m *Manager) fold(ctx context.Context, sessionID string, cut int64, wait bool, trigger string) (_ *summary.Summary, err error) {
	ctx, span := m.startSpan(ctx, "strata.memory.fold", sessionID)
	span.SetAttributes(attribute.String("memory.fold.trigger", trigger))
	defer func() { endSpan(span, err) }()
	st := m.acquire(sessionID)
	defer m.release(sessionID, st)
	release, err := m.lockFold(ctx, sessionID, st, wait)
	if err != nil {
		return nil, err
	}
	defer release()

	// Another fold may have finished while we waited for the lock.
	existing, err := m.sums.Get(ctx, sessionID)
	if err != nil {
		return nil, fmt.Errorf("summary store: %w", err)
	}
	if covers(existing, cut) {
		return existing, nil
	}
	if !m.cool.ready(sessionID) {
		return nil, errCoolingDown
	}
	st.write.Lock()
	gen := st.gen
	st.write.Unlock()

	incremental := m.chunked() && m.cfg.FoldMode != FoldFull && existing != nil && !existing.IsEmpty()
	var from int64
	if incremental {
		from = existing.UpToSeq
	}
	msgs, err := m.store.Range(ctx, sessionID, from, cut, 0)
	if err != nil {
		return nil, fmt.Errorf("read messages to fold: %w", err)
	}
	if len(msgs) == 0 {
		return nil, errors.New("memory: no messages to fold")
	}
	began := m.now()
	rec := foldRecord{trigger: trigger, messages: len(msgs), tokensBefore: m.summaryTokens(existing) + m.messageTokens(msgs)}
	cur := existing
	for i, chunk := range m.chunks(msgs) {
		req := summary.Request{SessionID: sessionID, Messages: ChatMessages(chunk), Existing: cur, Incremental: incremental || i > 0}
		m.stats.summarizerCalls.Add(1)
		rec.calls++
		res, err := m.svc.Summarize(ctx, req)
		if err == nil && res.IsEmpty() {
			err = summary.ErrEmptyReply
		}
		if err != nil {
			if ctx.Err() == nil {
				m.stats.foldFailures.Add(1)
				m.cool.fail(sessionID)
			}
			rec.finish(m, ctx, sessionID, began, cur, err)
			return nil, fmt.Errorf("summarize: %w", err)
		}
		rec.inputTokens += res.Usage.InputTokens
		cur = m.merge(sessionID, cur, res, chunk[len(chunk)-1].Seq)
		// Each chunk's result covers a whole prefix of the session: save it so
		// progress survives a later failure (the store ignores a lower cursor).
		if err := m.saveSummary(ctx, st, gen, cur); err != nil {
			return nil, err
		}
	}
	m.cool.succeed(sessionID)
	m.stats.folds.Add(1)
	rec.finish(m, ctx, sessionID, began, cur, nil)
	m.notifyFold(*cur)
	return cur, nil
}

// notifyFold hands a saved summary to the fold observers in the background.
func (m *Manager) notifyFold(s summary.Summary) {
	if len(m.observers) == 0 {
		return
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.closed {
		return
	}
	m.beginBackgroundLocked()
	go func() {
		defer func() {
			m.mu.Lock()
			m.endBackgroundLocked()
			m.mu.Unlock()
		}()
		for _, fn := range m.observers {
			m.safeObserve(fn, s)
		}
	}()
}

// beginBackgroundLocked counts a background task (a fold job or fold
// observers) for Flush and Close; m.mu must be held.
func (m *Manager) beginBackgroundLocked() {
	if m.pending == 0 {
		m.idle = make(chan struct{})
	}
	m.pending++
	m.wg.Add(1)
}

// endBackgroundLocked is the counterpart of beginBackgroundLocked.
func (m *Manager) endBackgroundLocked() {
	m.pending--
	if m.pending == 0 {
		close(m.idle)
	}
	m.wg.Done()
}

func (m *Manager) safeObserve(fn FoldObserver, s summary.Summary) {
	defer func() {
		if r := recover(); r != nil {
			m.log.Error("strata: fold observer panicked", "session_id", s.SessionID, "panic", r)
		}
	}()
	fn(m.bg, s)
}

// merge builds the next summary: the fact ledger merged by key (facts the
// summarizer leaves out are kept), the new narrative (the old one when the
// new is blank).
func (m *Manager) merge(sessionID string, existing *summary.Summary, res summary.Result, upTo int64) *summary.Summary {
	next := &summary.Summary{SessionID: sessionID, Narrative: res.Narrative, UpToSeq: upTo}
	var old []summary.Fact
	if existing != nil {
		old = existing.Facts
		next.CreatedAt, next.Title, next.Version = existing.CreatedAt, existing.Title, existing.Version
		if isBlank(next.Narrative) {
			next.Narrative = existing.Narrative
		}
	}
	next.Facts = summary.MergeFacts(old, res.Facts, summary.MergeOptions{
		MaxFacts: m.cfg.MaxFacts, MaxValueLen: m.cfg.MaxFactValueLen, Now: m.now(),
	})
	return next
}

// saveSummary writes s unless the session was deleted (gen changed) or the
// fold was cancelled since it started, so no late fold resurrects a deleted
// session's summary.
func (m *Manager) saveSummary(ctx context.Context, st *sessionState, gen uint64, s *summary.Summary) error {
	st.write.Lock()
	defer st.write.Unlock()
	if err := ctx.Err(); err != nil {
		return err
	}
	if st.gen != gen {
		return errors.New("memory: session deleted during fold")
	}
	if err := m.sums.Save(ctx, *s); err != nil {
		return fmt.Errorf("save summary: %w", err)
	}
	return nil
}

// lockFold takes the session's in-process fold slot and, when the stores
// coordinate across processes, the shared fold lock.
func (m *Manager) lockFold(ctx context.Context, sessionID string, st *sessionState, wait bool) (func(), error) {
	select {
	case st.fold <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	unlock := func() { <-st.fold }
	if m.locker == nil {
		return unlock, nil
	}
	deadline := time.NewTimer(m.foldWait)
	defer deadline.Stop()
	for delay := 20 * time.Millisecond; ; delay = min(2*delay, time.Second) {
		release, ok, err := m.locker.TryLockFold(ctx, sessionID, m.foldTTL)
		if err != nil {
			unlock()
			return nil, fmt.Errorf("fold lock: %w", err)
		}
		if ok {
			return func() { release(); unlock() }, nil
		}
		if !wait {
			unlock()
			return nil, errFoldBusy
		}
		select {
		case <-time.After(delay):
		case <-deadline.C:
			unlock()
			return nil, errFoldBusy
		case <-ctx.Done():
			unlock()
			return nil, ctx.Err()
		}
	}
}

// trigger starts a background fold after a save that left the session above
// the trigger. The newest job supersedes (cancels) the previous one; it
// starts only after the previous one has stopped, so folds of a session
// never overlap.
//
// Chunked policy: a running job is not cancelled — the range it folds stays
// valid — it is asked to check again when it finishes (coalescing).
func (m *Manager) trigger(sessionID string, total int) {
	if !m.hierarchical() || !m.cool.ready(sessionID) {
		return
	}
	// Parity folds only above the trigger; a chunked fold keeps K verbatim
	// messages, so it needs more than K (its triggers are checked in the job).
	if (!m.chunked() && total <= m.cfg.TriggerMessageCount) || total <= m.cfg.RecentMessageCount {
		return
	}
	m.mu.Lock()
	if m.closed {
		m.mu.Unlock()
		return
	}
	if st := m.sessions[sessionID]; st != nil && st.job != nil && m.chunked() {
		st.job.again = true
		m.mu.Unlock()
		return
	}
	st := m.acquireLocked(sessionID)
	prev := st.job
	ctx, cancel := context.WithCancel(m.bg)
	j := &job{cancel: cancel, done: make(chan struct{})}
	st.job = j
	m.beginBackgroundLocked()
	m.mu.Unlock()
	if prev != nil {
		prev.cancel()
	}
	go m.runJob(ctx, sessionID, st, j, prev)
}

func (m *Manager) runJob(ctx context.Context, sessionID string, st *sessionState, j, prev *job) {
	defer func() {
		j.cancel()
		m.mu.Lock()
		if st.job == j { // compare-and-delete: never evict a newer job
			st.job = nil
		}
		m.releaseLocked(sessionID, st)
		m.endBackgroundLocked()
		m.mu.Unlock()
		close(j.done)
	}()
	if prev != nil {
		select {
		case <-prev.done:
		case <-ctx.Done():
			return
		}
		// Superseded a running fold: saves are arriving faster than folds.
		select {
		case <-time.After(m.supersedeDelay):
		case <-ctx.Done():
			return
		}
	}
	for ctx.Err() == nil {
		if err := m.backgroundFold(ctx, sessionID); err != nil && ctx.Err() == nil {
			m.log.DebugContext(ctx, "strata: background fold skipped or failed", "session_id", sessionID, "error", err)
		}
		m.mu.Lock()
		again := j.again
		j.again = false
		m.mu.Unlock()
		if !again {
			return
		}
	}
}

// backgroundFold re-reads the session and folds everything before the
// verbatim window unless the stored summary already covers it.
func (m *Manager) backgroundFold(ctx context.Context, sessionID string) error {
	if m.chunked() {
		return m.backgroundChunked(ctx, sessionID)
	}
	v, err := m.window(ctx, sessionID, m.cfg.RecentMessageCount)
	if err != nil {
		return err
	}
	if v.total <= m.cfg.TriggerMessageCount {
		return nil
	}
	_, cut := v.recent(m.cfg.RecentMessageCount)
	if cut == 0 {
		return nil
	}
	s, err := m.sums.Get(ctx, sessionID)
	if err != nil {
		return err
	}
	if covers(s, cut) {
		return nil
	}
	m.stats.backgroundFolds.Add(1)
	_, err = m.fold(ctx, sessionID, cut, false, "save")
	return err
}

// CancelSummarization cancels the session's background fold, if any. Safe
// for unknown sessions and after Close.
func (m *Manager) CancelSummarization(sessionID string) {
	m.mu.Lock()
	var j *job
	if st := m.sessions[sessionID]; st != nil {
		j = st.job
	}
	m.mu.Unlock()
	if j != nil {
		j.cancel()
	}
}

// DeleteSession cancels the session's background fold, then removes its
// messages and its summary. No fold that finishes later writes a summary for
// it. Deleting an unknown session is not an error; deleting another user's
// session returns ErrNotOwner and removes nothing.
func (m *Manager) DeleteSession(ctx context.Context, sessionID, userID string) error {
	if sessionID == "" {
		return nil
	}
	owner, err := m.store.Owner(ctx, sessionID)
	if err != nil {
		return fmt.Errorf("memory: delete %q: owner lookup: %w", sessionID, err)
	}
	if owner != "" && owner != normUser(userID) {
		return fmt.Errorf("memory: delete %q: %w", sessionID, ErrNotOwner)
	}
	st := m.acquire(sessionID)
	defer m.release(sessionID, st)
	st.write.Lock()
	defer st.write.Unlock()
	st.gen++
	m.CancelSummarization(sessionID)
	if err := m.store.Delete(ctx, sessionID); err != nil {
		return fmt.Errorf("memory: delete %q: messages: %w", sessionID, err)
	}
	if m.sums != nil {
		if err := m.sums.Delete(ctx, sessionID); err != nil {
			return fmt.Errorf("memory: delete %q: summary: %w", sessionID, err)
		}
	}
	m.cool.succeed(sessionID)
	for _, fn := range m.deleteObservers {
		m.safeDeleteObserve(ctx, fn, sessionID)
	}
	return nil
}

func (m *Manager) safeDeleteObserve(ctx context.Context, fn DeleteObserver, sessionID string) {
	defer func() {
		if r := recover(); r != nil {
			m.log.Error("strata: delete observer panicked", "session_id", sessionID, "panic", r)
		}
	}()
	fn(ctx, sessionID)
}

// Flush returns when no background fold (nor fold observer) is queued or
// running, or when ctx is done.
func (m *Manager) Flush(ctx context.Context) error {
	for {
		m.mu.Lock()
		if m.pending == 0 {
			m.mu.Unlock()
			return nil
		}
		idle := m.idle
		m.mu.Unlock()
		select {
		case <-idle:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// Close cancels background folds, waits for them to stop, and starts no new
// ones; their results are not saved. Loads and saves keep working (a load
// may still fold synchronously). Close is idempotent.
func (m *Manager) Close() error {
	m.mu.Lock()
	m.closed = true
	m.mu.Unlock()
	m.cancelBG()
	m.wg.Wait()
	return nil
}

func (m *Manager) acquire(sessionID string) *sessionState {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.acquireLocked(sessionID)
}

func (m *Manager) acquireLocked(sessionID string) *sessionState {
	st := m.sessions[sessionID]
	if st == nil {
		st = &sessionState{fold: make(chan struct{}, 1)}
		m.sessions[sessionID] = st
	}
	st.refs++
	return st
}

func (m *Manager) release(sessionID string, st *sessionState) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.releaseLocked(sessionID, st)
}

func (m *Manager) releaseLocked(sessionID string, st *sessionState) {
	st.refs--
	if st.refs == 0 && m.sessions[sessionID] == st {
		delete(m.sessions, sessionID)
	}
}

// Stats are the manager's counters since it was created.
type Stats struct {
	Loads           int64 // LoadHistory/Load calls with a session id
	LoadErrors      int64 // loads that returned a store error
	OwnerDenied     int64 // loads refused because another user owns the session
	Fallbacks       int64 // hierarchical loads degraded to takeLast
	Saves           int64 // successful appends
	SaveErrors      int64 // failed appends
	LazyFolds       int64 // folds attempted on the load path
	BackgroundFolds int64 // folds attempted by background jobs
	SummarizerCalls int64 // calls to the summary service
	Folds           int64 // summaries saved
	FoldFailures    int64 // summarizer errors and empty replies
}

type counters struct {
	loads, loadErrors, ownerDenied, fallbacks, saves, saveErrors     atomic.Int64
	lazyFolds, backgroundFolds, summarizerCalls, folds, foldFailures atomic.Int64
}

// Stats returns a snapshot of the counters.
func (m *Manager) Stats() Stats {
	c := &m.stats
	return Stats{
		Loads: c.loads.Load(), LoadErrors: c.loadErrors.Load(), OwnerDenied: c.ownerDenied.Load(),
		Fallbacks: c.fallbacks.Load(), Saves: c.saves.Load(), SaveErrors: c.saveErrors.Load(),
		LazyFolds: c.lazyFolds.Load(), BackgroundFolds: c.backgroundFolds.Load(),
		SummarizerCalls: c.summarizerCalls.Load(), Folds: c.folds.Load(), FoldFailures: c.foldFailures.Load(),
	}
}
