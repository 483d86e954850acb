package memory

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/internal/nilcheck"
	"github.com/strata-go/strata/internal/owner"
	"github.com/strata-go/strata/memory/store"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
)

// Manager is Strata's conversation memory: the one door to session data.
// It saves messages, assembles what the model sees (takeLast, or facts +
// narrative + a verbatim window), fits prompts into the one token budget,
// and folds old messages into summaries in the background.
//
// A Manager is safe for concurrent use. Close it to stop background work.
type Manager struct {
	// store is the one storage contract the manager talks to: the
	// message store itself, or store.Compose's adapter over it and the
	// summary store given to WithSummaries.
	store store.Store
	cfg   Config
	sums  summary.Store // as given to WithSummaries; nil without
	svc   summary.Service
	log   *slog.Logger
	cost  *trimmer.Trimmer // the one budget: window, output reserve, estimator
	price *pricing         // per-model calibration, shared with the model views
	model string           // the model this view prices for ("" for the manager itself)
	pol   policy
	eng   *engine
	otel  *instruments
	stats *counters

	obs *observers // shared with the engine and the model views
}

// NewManager returns a manager over store. It refuses an invalid cfg (a
// *FieldError) and a half-configured one: Enabled without WithSummaries
// giving both a summary store and a summarizer.
func NewManager(ms MessageStore, cfg Config, opts ...Option) (*Manager, error) {
	if nilcheck.IsNil(ms) {
		return nil, errors.New("memory: NewManager: nil MessageStore")
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	defaultEst := nilcheck.IsNil(cfg.Estimator)
	cfg = cfg.withDefaults()
	m := &Manager{
		cfg: cfg, price: newPricing(defaultEst),
		log: slog.New(slog.NewTextHandler(io.Discard, nil)),
		obs: &observers{},
	}
	for _, o := range opts {
		o(m)
	}
	if nilcheck.IsNil(m.sums) != nilcheck.IsNil(m.svc) || (cfg.Enabled && nilcheck.IsNil(m.sums)) {
		return nil, errors.New("memory: NewManager: Config.Enabled needs WithSummaries with both a summary store and a summarizer")
	}
	var sums summary.Store
	if !nilcheck.IsNil(m.sums) {
		sums = m.sums
	}
	m.store = store.Compose(ms, sums)
	m.cost = trimmer.New(cfg.ContextWindowTokens, cfg.OutputReserveTokens, cfg.Estimator)
	m.pol = newPolicy(cfg, m.cost)
	m.otel, m.stats = newInstruments(), &counters{}
	m.eng = newEngine(engineDeps{store: m.store, summaries: sums != nil, svc: m.svc, cfg: cfg, pol: m.pol, cost: m.cost,
		log: m.log, stats: m.stats, otel: m.otel, obs: m.obs})
	return m, nil
}

// Config returns the manager's configuration, its defaults filled in: the
// zero timings and fact caps as their defaults, and Estimator as the
// estimator in use (for a model view, as calibrated so far: see ForModel).
// Its slices are copies: changing them changes nothing.
func (m *Manager) Config() Config {
	c := m.cfg
	c.Estimator = m.viewEstimator()
	c.PinnedFactKeys = slices.Clone(c.PinnedFactKeys)
	c.SharedSessionPrefixes = slices.Clone(c.SharedSessionPrefixes)
	c.SharedSessionViewers = slices.Clone(c.SharedSessionViewers)
	return c
}

func (m *Manager) hierarchical() bool { return m.eng.hierarchical() }

// Create makes an empty session owned by userID, visible at once to every
// manager sharing the store. An id already in use gives ErrSessionExists.
func (m *Manager) Create(ctx context.Context, sessionID, userID string) error {
	if sessionID == "" {
		return fmt.Errorf("memory: create: %w: empty session id", store.ErrInvalidMessage)
	}
	if err := m.store.Create(ctx, sessionID, m.owner(sessionID, userID)); err != nil {
		return fmt.Errorf("memory: create %q: %w", sessionID, err)
	}
	return nil
}

// SaveTurn saves one user message and, when assistantText is not empty, the
// assistant's answer, atomically and adjacently. An empty assistantText
// records a failed turn: only the user message is stored, as arc-reactor
// does. Past the trigger a background fold starts; SaveTurn never waits.
func (m *Manager) SaveTurn(ctx context.Context, sessionID, userID, userText, assistantText string) error {
	msgs := []store.Message{{Role: store.RoleUser, Content: userText}}
	if assistantText != "" {
		msgs = append(msgs, store.Message{Role: store.RoleAssistant, Content: assistantText})
	}
	_, err := m.append(ctx, sessionID, userID, true, msgs)
	return err
}

// SaveMessages saves langchaingo messages — including assistant tool calls
// and tool results — losslessly, atomically and adjacently.
func (m *Manager) SaveMessages(ctx context.Context, sessionID, userID string, msgs ...llms.ChatMessage) error {
	stored := make([]store.Message, 0, len(msgs))
	for i, cm := range msgs {
		sm, err := store.FromChatMessage(cm)
		if err != nil {
			return fmt.Errorf("memory: save %q: message %d: %w", sessionID, i, err)
		}
		stored = append(stored, sm)
	}
	_, err := m.append(ctx, sessionID, userID, true, stored)
	return err
}

// Append saves stored-form messages, which may carry metadata such as the
// model variant (store.MetadataModelVariant), and reports the session's
// message count and last sequence number, read atomically with the write.
// create says what a session that does not exist becomes: with create it is
// made for userID, who then owns it (with no msgs it is only created), as
// SaveTurn and SaveMessages do; without, Append answers store.ErrNotFound
// and stores nothing — for callers such as an HTTP API, where a mistyped
// id must not start a new conversation. An empty sessionID stores nothing
// (no memory without a session).
func (m *Manager) Append(ctx context.Context, sessionID, userID string, create bool, msgs ...store.Message) (store.AppendResult, error) {
	return m.append(ctx, sessionID, userID, create, msgs)
}

func (m *Manager) append(ctx context.Context, sessionID, userID string, create bool, msgs []store.Message) (store.AppendResult, error) {
	if sessionID == "" {
		return store.AppendResult{}, nil
	}
	for i := range msgs {
		if err := msgs[i].Validate(m.cfg.MaxMessageBytes); err != nil {
			return store.AppendResult{}, fmt.Errorf("memory: save %q: message %d: %w", sessionID, i, err)
		}
	}
	user := m.owner(sessionID, userID)
	msgs = authored(msgs, userID)
	ctx, span := m.otel.startSpan(ctx, "strata.memory.save", sessionID)
	res, err := m.store.Append(ctx, sessionID, user, msgs...)
	// Each step is atomic in the store: a session created by another user
	// in between makes the next Append fail with ErrNotOwner; one deleted in
	// between is created again (a bounded number of times).
	for i := 0; create && errors.Is(err, store.ErrNotFound) && i < 3; i++ {
		if err = m.store.Create(ctx, sessionID, user); err == nil || errors.Is(err, store.ErrSessionExists) {
			res, err = m.store.Append(ctx, sessionID, user, msgs...)
		}
	}
	m.observeSave(ctx, len(msgs), err)
	endSpan(span, err)
	if err != nil {
		m.stats.saveErrors.Add(1)
		return store.AppendResult{}, fmt.Errorf("memory: save %q: %w", sessionID, err)
	}
	m.stats.saves.Add(1)
	m.afterSave(sessionID, user, res, msgs)
	return res, nil
}

// afterSave starts a background fold (or asks the running one for another
// pass) when a save or replace that left res in the session, having written
// msgs, fires the policy's trigger and the session is not cooling down.
func (m *Manager) afterSave(sessionID, user string, res store.AppendResult, msgs []store.Message) {
	if m.hierarchical() && len(msgs) > 0 && m.pol.triggers(res.Total) && m.eng.saveDue(sessionID, res, msgs) {
		m.eng.request(sessionID, user, triggerSave, len(msgs))
	}
}

// Count returns how many messages the session holds. A missing session
// gives ErrNotFound, another user's ErrNotOwner.
func (m *Manager) Count(ctx context.Context, sessionID, userID string) (int, error) {
	t, err := m.store.Tail(ctx, sessionID, m.owner(sessionID, userID), 0)
	return t.Total, err
}

// LoadHistory returns what the model should see of the session (see Load).
func (m *Manager) LoadHistory(ctx context.Context, sessionID, userID string) ([]llms.ChatMessage, error) {
	h, err := m.Load(ctx, sessionID, userID)
	return h.Messages, err
}

// Load assembles what the model sees of the session, with how it was
// assembled. Summaries off, or a session no longer than the trigger: the
// last 2 × MaxConversationTurns messages (takeLast). Otherwise the summary's
// facts and narrative blocks followed by the verbatim window.
//
// A load never waits long for a fold: a stale summary is regenerated, but
// waited for only Config.LoadGrace, and not at all when this manager's folds
// are known to take longer than that — then the load shows the stale summary
// plus every message after its cursor, and the fold finishes in the
// background. With no summary yet it waits Config.FoldWait at most, and never
// past ctx's deadline, then degrades (Mode "fallback"). A summarizer failure
// degrades too; it is logged and counted, never returned.
//
// An unknown session yields an empty history; a session owned by another
// user an empty history and an error wrapping ErrNotOwner.
func (m *Manager) Load(ctx context.Context, sessionID, userID string) (h History, err error) {
	if sessionID == "" {
		return History{Mode: ModeEmpty}, nil
	}
	ctx, span := m.otel.startSpan(ctx, "strata.memory.load", sessionID)
	defer func() { m.observeLoad(ctx, h); endSpan(span, err) }()
	m.stats.loads.Add(1)
	h, err = m.eng.assemble(ctx, sessionID, m.owner(sessionID, userID))
	switch {
	case errors.Is(err, store.ErrNotFound):
		return History{Mode: ModeEmpty}, nil
	case errors.Is(err, ErrNotOwner):
		m.stats.ownerDenied.Add(1)
		return History{Mode: ModeEmpty}, fmt.Errorf("memory: load %q: %w", sessionID, err)
	case err != nil:
		m.stats.loadErrors.Add(1)
		return History{Mode: ModeEmpty}, fmt.Errorf("memory: load %q: %w", sessionID, err)
	}
	return h, nil
}

// Sessions lists userID's sessions, newest activity first; total counts
// them all.
func (m *Manager) Sessions(ctx context.Context, userID string, limit, offset int) ([]store.SessionInfo, int, error) {
	return m.store.Sessions(ctx, owner.User(userID), limit, offset)
}

// SharedSessions lists the shared sessions (Config.SharedSessionPrefixes)
// userID wrote in, newest activity first; total counts them all. It needs
// a store that records participants (store.ParticipantLister, part of
// store.Store): with another store the error wraps
// errors.ErrUnsupported. Without shared prefixes it lists nothing.
func (m *Manager) SharedSessions(ctx context.Context, userID string, limit, offset int) ([]store.SessionInfo, int, error) {
	if len(m.cfg.SharedSessionPrefixes) == 0 {
		return nil, 0, nil
	}
	return m.store.ParticipantSessions(ctx, owner.Shared, owner.User(userID), limit, offset)
}

// authored returns msgs, copied, with userID (store.AnonymousUser when
// empty) as every message's author: the store records who wrote each
// message, which in a shared session is not its owner.
func authored(msgs []store.Message, userID string) []store.Message {
	out := make([]store.Message, len(msgs))
	u := owner.User(userID)
	for i, m := range msgs {
		m.UserID = u
		out[i] = m
	}
	return out
}

// Messages returns up to limit (<= 0: all) of the session's stored messages
// with Seq > afterSeq, oldest first: pages of a transcript. A missing
// session gives ErrNotFound, another user's ErrNotOwner.
func (m *Manager) Messages(ctx context.Context, sessionID, userID string, afterSeq int64, limit int) ([]store.Message, error) {
	return m.store.Range(ctx, sessionID, m.owner(sessionID, userID), afterSeq, 1<<62, limit)
}

// Summary returns the session's current summary, nil when it has none. A
// missing session gives ErrNotFound, another user's ErrNotOwner.
func (m *Manager) Summary(ctx context.Context, sessionID, userID string) (*summary.Summary, error) {
	t, err := m.store.Tail(ctx, sessionID, m.owner(sessionID, userID), 0)
	if err != nil || m.sums == nil {
		return nil, err
	}
	return m.eng.usableSummary(ctx, sessionID, t.Epoch)
}

// CancelSummarization cancels the session's background fold, if any. Safe
// for unknown sessions and after Close.
func (m *Manager) CancelSummarization(sessionID string) { m.eng.cancelRun(sessionID) }

// DeleteSession removes the session's messages and summary, and cancels its
// fold: no fold that finishes later writes a summary for it. A missing
// session gives ErrNotFound, another user's ErrNotOwner; neither removes
// anything.
func (m *Manager) DeleteSession(ctx context.Context, sessionID, userID string) error {
	if err := m.eng.deleteSession(ctx, sessionID, m.owner(sessionID, userID)); err != nil {
		return fmt.Errorf("memory: delete %q: %w", sessionID, err)
	}
	for _, fn := range m.obs.deletes() {
		m.observeDelete(ctx, fn, sessionID)
	}
	return nil
}

// replace makes msgs the whole history of the session (see
// ChatHistory.SetMessages): every message is validated before anything
// changes, then the history is replaced in one store operation (atomic for
// a store.Store; see store.Compose for a message store without
// store.Replacer), the owner kept. Delete observers are told,
// as the old history and its summary are gone.
func (m *Manager) replace(ctx context.Context, sessionID, userID string, msgs []store.Message) error {
	if sessionID == "" {
		return fmt.Errorf("memory: replace: %w: empty session id", store.ErrInvalidMessage)
	}
	for i := range msgs {
		if err := msgs[i].Validate(m.cfg.MaxMessageBytes); err != nil {
			return fmt.Errorf("memory: replace %q: message %d: %w", sessionID, i, err)
		}
	}
	user := m.owner(sessionID, userID)
	msgs = authored(msgs, userID)
	ctx, span := m.otel.startSpan(ctx, "strata.memory.replace", sessionID)
	res, err := m.eng.replaceSession(ctx, sessionID, user, msgs)
	endSpan(span, err)
	if err != nil {
		return fmt.Errorf("memory: replace %q: %w", sessionID, err)
	}
	for _, fn := range m.obs.deletes() {
		m.observeDelete(ctx, fn, sessionID)
	}
	m.afterSave(sessionID, user, res, msgs)
	return nil
}

// Flush returns when no background fold (nor fold observer) is queued or
// running, or when ctx is done. While it waits, folds do not queue for
// one of the Config.MaxConcurrentFolds slots: they all run at once.
func (m *Manager) Flush(ctx context.Context) error { return m.eng.flush(ctx) }

// Close first drains, then cancels: it lets the fold attempts (and fold
// observers) in flight finish and save their summaries — without starting
// further passes — waiting for them at most four fifths of the close
// timeout (Config.CloseTimeout, default 5s: 4s), so that a short
// program's last fold is not lost without a call to Flush; then it cancels
// what still runs and waits for it until the close timeout. No summary is
// saved after it returns, and no fold starts. Loads and saves keep
// working, without folding. A fold whose summarizer ignores cancellation
// is abandoned at once: it stops waiting for the summarizer and releases
// its cross-process lock, so that another replica can fold the session;
// Close then returns an error saying a summarizer call was still running
// at the deadline. Close is idempotent: only the first call waits; a
// later one returns at once, with an error only for what still runs then.
func (m *Manager) Close() error {
	if !m.eng.closed.Load() {
		m.eng.draining.Store(true)
		drain, stop := context.WithTimeout(context.Background(), m.cfg.CloseTimeout*closeDrainShare/5)
		_ = m.eng.flush(drain) // what is left is cancelled below
		stop()
	}
	ctx, cancel := context.WithTimeout(context.Background(), m.cfg.CloseTimeout-m.cfg.CloseTimeout*closeDrainShare/5)
	defer cancel()
	return m.eng.close(ctx)
}

// closeDrainShare is the share of Config.CloseTimeout, in fifths, that
// Close waits for folds to finish before it cancels them.
const closeDrainShare = 4
