package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

// Query parameter bounds.
const (
	defaultHistoryLimit = 100
	maxHistoryLimit     = 1000
	defaultListLimit    = 20
	maxListLimit        = 100
	defaultSearchLimit  = 5
	maxSearchLimit      = 50
	maxBudget           = 10_000_000
	// reindexTimeout bounds the catalogue refresh a search does first.
	reindexTimeout = 3 * time.Second
)

// route is one endpoint.
type route struct {
	method  string
	pattern string
	handler http.Handler
}

// routeTable lists every endpoint; openapi.json documents each of them.
func (s *Server) routeTable() []route {
	routes := []route{
		{"GET", "/healthz", http.HandlerFunc(s.handleHealthz)},
		{"GET", "/readyz", http.HandlerFunc(s.handleReadyz)},
		{"GET", "/openapi.json", http.HandlerFunc(s.handleOpenAPI)},
		{"POST", "/v1/sessions", http.HandlerFunc(s.handleCreate)},
		{"GET", "/v1/sessions", http.HandlerFunc(s.handleList)},
		{"GET", "/v1/sessions/{id}", http.HandlerFunc(s.handleGet)},
		{"DELETE", "/v1/sessions/{id}", http.HandlerFunc(s.handleDelete)},
		{"POST", "/v1/sessions/{id}/messages", http.HandlerFunc(s.handleAppend)},
		{"GET", "/v1/sessions/{id}/context", http.HandlerFunc(s.handleContext)},
	}
	return append(append(routes, s.portableRoutes()...), s.inspectRoutes()...)
}

// Seconds a client is told to wait (Retry-After) before retrying a 503.
const (
	// retryAfterOutage follows a store outage: the database is down or
	// does not answer.
	retryAfterOutage = "5"
	// retryAfterBusy follows a timeout or a shutdown.
	retryAfterBusy = "1"
)

// fail answers with the response err calls for. Store and internal errors
// are logged and answered without details. A session that does not exist
// and one another user owns get the same answer.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	retry := retryAfterBusy
	var ae *apiError
	switch {
	case errors.As(err, &ae):
	case errors.Is(err, store.ErrNotFound), errors.Is(err, memory.ErrNotOwner):
		ae = errNotFound
	case errors.Is(err, store.ErrMessageTooLarge):
		ae = &apiError{status: http.StatusRequestEntityTooLarge, code: "message_too_large", msg: memoryReason(err)}
	case errors.Is(err, store.ErrInvalidMessage):
		ae = &apiError{status: http.StatusBadRequest, code: "invalid_message", msg: memoryReason(err)}
	case errors.Is(err, store.ErrStoreFull):
		// The in-memory store makes room only at the caller's own cost; a
		// caller with nothing to give up is refused.
		ae = &apiError{status: http.StatusInsufficientStorage, code: "store_full",
			msg: "the server's session store is full; delete sessions or retry later"}
	case errors.Is(err, memory.ErrClosed):
		ae = &apiError{status: http.StatusServiceUnavailable, code: "unavailable", msg: "server is shutting down"}
	case errors.Is(err, store.ErrUnavailable):
		s.log.WarnContext(r.Context(), "strata serve: store unavailable", "request_id", stateOf(r.Context()).id, "error", err)
		ae = &apiError{status: http.StatusServiceUnavailable, code: "unavailable", msg: "storage temporarily unavailable, retry later"}
		retry = retryAfterOutage
	case errors.Is(err, context.DeadlineExceeded):
		s.log.WarnContext(r.Context(), "strata serve: request timed out", "request_id", stateOf(r.Context()).id, "error", err)
		ae = &apiError{status: http.StatusServiceUnavailable, code: "timeout", msg: "request timed out"}
	case errors.Is(err, context.Canceled):
		ae = &apiError{status: http.StatusServiceUnavailable, code: "canceled", msg: "request canceled"}
	default:
		s.log.ErrorContext(r.Context(), "strata serve: request failed", "request_id", stateOf(r.Context()).id, "error", err)
		ae = &apiError{status: http.StatusInternalServerError, code: "internal", msg: "internal error"}
	}
	if ae.status == http.StatusServiceUnavailable {
		w.Header().Set("Retry-After", retry)
	}
	s.writeError(w, r, ae)
}

// memoryReason strips the manager's "memory: save …: message N:" prefixes.
func memoryReason(err error) string {
	msg := err.Error()
	if i := strings.LastIndex(msg, "memory: "); i >= 0 {
		msg = msg[i+len("memory: "):]
	}
	return msg
}

// sessionID reads and checks the {id} path value.
func sessionID(r *http.Request) (string, *apiError) {
	id := r.PathValue("id")
	if !validSessionID(id) {
		return "", badRequest("invalid session id: want 1 to %d characters among letters, digits and . _ : @ -, starting with a letter or digit", maxSessionIDLength)
	}
	stateOf(r.Context()).session = id
	return id, nil
}

// intParam reads an integer query parameter within [lo, hi].
func intParam(r *http.Request, name string, def, lo, hi int64) (int64, *apiError) {
	v := r.URL.Query().Get(name)
	if v == "" {
		return def, nil
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, badRequest("query parameter %s = %q: want an integer between %d and %d", name, v, lo, hi)
	}
	return n, nil
}

// newSessionID returns a random (version 4) UUID.
func newSessionID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	h := hex.EncodeToString(b[:])
	return h[0:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:32]
}

// convert validates client messages and turns them into stored form.
func (s *Server) convert(in []wireMessage) ([]store.Message, *apiError) {
	if len(in) > maxMessagesPerRequest {
		return nil, badRequest("too many messages: %d, at most %d per request", len(in), maxMessagesPerRequest)
	}
	max := s.mgr.Config().MaxMessageBytes
	out := make([]store.Message, 0, len(in))
	for i, w := range in {
		m, err := w.toMemory(i)
		if err != nil {
			return nil, &apiError{status: http.StatusBadRequest, code: "invalid_message", msg: err.Error()}
		}
		if err := m.Validate(max); err != nil {
			e := &apiError{status: http.StatusBadRequest, code: "invalid_message", msg: fmt.Sprintf("messages[%d]: %s", i, memoryReason(err))}
			if errors.Is(err, store.ErrMessageTooLarge) {
				e.status, e.code = http.StatusRequestEntityTooLarge, "message_too_large"
			}
			return nil, e
		}
		out = append(out, m)
	}
	return out, nil
}

// maxCreateAttempts bounds the new ids tried by POST /v1/sessions when an
// id is already in use (with random UUIDs, practically never).
const maxCreateAttempts = 3

// discardTimeout bounds the removal of a session whose creation failed
// half-way.
const discardTimeout = 5 * time.Second

// --- POST /v1/sessions -------------------------------------------------

type createRequest struct {
	Title    string        `json:"title"`
	Messages []wireMessage `json:"messages"`
}

type appendResponse struct {
	ID     string `json:"id"`
	Title  string `json:"title,omitempty"`
	Stored int    `json:"stored"`
	Total  int    `json:"total"`
}

func (s *Server) handleCreate(w http.ResponseWriter, r *http.Request) {
	ctx, st := r.Context(), stateOf(r.Context())
	var req createRequest
	if e := decodeJSON(w, r, s.cfg.MaxBodyBytes, &req, true); e != nil {
		s.writeError(w, r, e)
		return
	}
	title, err := cleanTitle(req.Title)
	if err != nil {
		s.writeError(w, r, badRequest("%v", err))
		return
	}
	msgs, e := s.convert(req.Messages)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	// A new session holds no tool call yet: each result must answer a call
	// made earlier in the request.
	if i, call := firstUnanswered(msgs, nil); i >= 0 {
		s.writeError(w, r, unknownToolCall(i, call))
		return
	}
	var id string
	for range maxCreateAttempts {
		id = newSessionID()
		if err = s.mgr.Create(ctx, id, st.user); !errors.Is(err, store.ErrSessionExists) {
			break
		}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	st.session = id
	resp := appendResponse{ID: id, Stored: len(msgs)}
	if title != "" && s.cat != nil {
		if err := s.setTitle(ctx, id, st.user, title); err != nil {
			s.discard(ctx, id, st.user)
			s.fail(w, r, err)
			return
		}
		resp.Title = title
	}
	if len(msgs) > 0 {
		res, err := s.mgr.Append(ctx, id, st.user, false, msgs...)
		if err != nil {
			s.discard(ctx, id, st.user)
			s.fail(w, r, err)
			return
		}
		resp.Total = res.Total
	}
	w.Header().Set("Location", "/v1/sessions/"+id)
	s.writeJSON(w, http.StatusCreated, resp)
}

// discard deletes a session whose creation failed half-way, so that a
// failed POST /v1/sessions leaves nothing behind. Failures are logged.
func (s *Server) discard(ctx context.Context, id, user string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), discardTimeout)
	defer cancel()
	if err := s.mgr.DeleteSession(ctx, id, user); err != nil {
		s.log.WarnContext(ctx, "strata serve: could not remove a half-created session", "session_id", id, "error", err)
	}
}

// --- POST /v1/sessions/{id}/messages ------------------------------------

type appendRequest struct {
	Messages []wireMessage `json:"messages"`
	Turn     *turnRequest  `json:"turn"`
}

type turnRequest struct {
	User         string `json:"user"`
	Assistant    string `json:"assistant"`
	ModelVariant string `json:"model_variant"`
}

func (s *Server) handleAppend(w http.ResponseWriter, r *http.Request) {
	ctx, st := r.Context(), stateOf(r.Context())
	id, e := sessionID(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	var req appendRequest
	if e := decodeJSON(w, r, s.cfg.MaxBodyBytes, &req, false); e != nil {
		s.writeError(w, r, e)
		return
	}
	var in []wireMessage
	switch {
	case req.Turn != nil && len(req.Messages) > 0:
		s.writeError(w, r, badRequest("give either messages or turn, not both"))
		return
	case req.Turn != nil:
		t := req.Turn
		if t.User == "" {
			s.writeError(w, r, badRequest("turn.user is missing"))
			return
		}
		if t.ModelVariant != "" && t.Assistant == "" {
			s.writeError(w, r, badRequest("turn.model_variant needs turn.assistant"))
			return
		}
		in = []wireMessage{{Role: "user", Content: t.User}}
		if t.Assistant != "" {
			a := wireMessage{Role: "assistant", Content: t.Assistant}
			if t.ModelVariant != "" {
				a.Metadata = map[string]string{store.MetadataModelVariant: t.ModelVariant}
			}
			in = append(in, a)
		}
	case len(req.Messages) > 0:
		in = req.Messages
	default:
		s.writeError(w, r, badRequest("nothing to append: give messages (a non-empty array) or turn"))
		return
	}
	msgs, e := s.convert(in)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	if err := s.checkToolResults(ctx, id, st.user, msgs); err != nil {
		s.fail(w, r, err)
		return
	}
	// Sessions are created by POST /v1/sessions only: Append without create stores
	// nothing into an unknown id (404, like another user's session), and it
	// checks existence and ownership in the same atomic step as the write.
	res, err := s.mgr.Append(ctx, id, st.user, false, msgs...)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, appendResponse{ID: id, Stored: len(msgs), Total: res.Total})
}

// --- GET /v1/sessions/{id}/context --------------------------------------

type contextResponse struct {
	SessionID      string          `json:"session_id"`
	Mode           string          `json:"mode"`
	Messages       []wireMessage   `json:"messages"`
	Tokens         contextTokens   `json:"tokens"`
	Removed        int             `json:"removed"`
	Truncated      int             `json:"truncated"`
	OverBudget     bool            `json:"over_budget"`
	StoredMessages int             `json:"stored_messages"`
	Summary        *contextSummary `json:"summary,omitempty"`
}

type contextTokens struct {
	Total      int `json:"total"`
	Budget     int `json:"budget"`
	BeforeTrim int `json:"before_trim"`
}

type contextSummary struct {
	Facts     []wireFact `json:"facts"`
	Narrative string     `json:"narrative"`
	UpToSeq   int64      `json:"up_to_seq"`
}

func (s *Server) handleContext(w http.ResponseWriter, r *http.Request) {
	ctx, st := r.Context(), stateOf(r.Context())
	id, e := sessionID(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	requested, e := intParam(r, "budget", int64(s.ctxBudget), 1, maxBudget)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	// The manager's budget is the ceiling.
	budget := min(int(requested), s.budget)
	h, err := s.mgr.Load(ctx, id, st.user)
	if (err == nil && h.Total == 0) || errors.Is(err, memory.ErrNotOwner) {
		// An empty history is an empty session or none at all: the count
		// tells. Another user's session is counted too, so that it costs
		// the same store calls as a session that does not exist, and the
		// answer's timing does not tell them apart.
		if _, cerr := s.mgr.Count(ctx, id, st.user); err == nil {
			err = cerr
		}
	}
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := contextResponse{SessionID: id, Mode: string(h.Mode), Messages: []wireMessage{},
		Tokens: contextTokens{Budget: budget}, StoredMessages: h.Total}
	if len(h.Messages) > 0 {
		// The manager's one prompt builder fits the context, as it fits
		// every prompt; a budget below the manager's is a larger reserve.
		msgs, rep := s.mgr.Prompt("", h.Messages, s.budget-budget)
		if rep.OverBudget {
			// Not even the last user message cut fits: an empty context
			// rather than one above its budget.
			msgs, rep.TokensAfter, rep.Truncated = nil, 0, 0
		}
		resp.Tokens.Total, resp.Tokens.BeforeTrim = rep.TokensAfter, rep.TokensBefore
		resp.Removed, resp.Truncated, resp.OverBudget = len(h.Messages)-len(msgs), rep.Truncated, rep.OverBudget
		for _, cm := range msgs {
			resp.Messages = append(resp.Messages, fromChat(cm))
		}
	}
	if h.Summary != nil && !h.Summary.IsEmpty() {
		resp.Summary = &contextSummary{Facts: wireFacts(h.Summary.Facts), Narrative: h.Summary.Narrative, UpToSeq: h.Summary.UpToSeq}
	}
	s.writeJSON(w, http.StatusOK, resp)
}

// --- GET /v1/sessions/{id} -----------------------------------------------

type sessionResponse struct {
	ID           string            `json:"id"`
	Title        string            `json:"title"`
	MessageCount int               `json:"message_count"`
	Messages     []json.RawMessage `json:"messages"`
	NextAfterSeq *int64            `json:"next_after_seq"`
	Summary      *sessionSummary   `json:"summary"`
	// SummaryOmitted: the summary's JSON is larger than half the page cap
	// (Config.MaxHistoryBytes), so it is left out (summary is null);
	// GET /v1/sessions/{id}/export has it.
	SummaryOmitted bool `json:"summary_omitted,omitempty"`
}

type sessionSummary struct {
	Facts     []wireFact `json:"facts"`
	Narrative string     `json:"narrative"`
	UpToSeq   int64      `json:"up_to_seq"`
	Version   int64      `json:"version"`
	UpdatedAt time.Time  `json:"updated_at"`
}

func (s *Server) handleGet(w http.ResponseWriter, r *http.Request) {
	ctx, st := r.Context(), stateOf(r.Context())
	id, e := sessionID(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	limit, e := intParam(r, "limit", defaultHistoryLimit, 1, maxHistoryLimit)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	after, e := intParam(r, "after_seq", 0, 0, math.MaxInt64-1)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	// The summary counts against the page's byte cap: the messages get
	// what it leaves; one larger than half the cap is left out.
	sum, err := s.mgr.Summary(ctx, id, st.user)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	var resp sessionResponse
	budget := s.cfg.MaxHistoryBytes
	if sum != nil {
		resp.Summary = &sessionSummary{Facts: wireFacts(sum.Facts), Narrative: sum.Narrative, UpToSeq: sum.UpToSeq,
			Version: sum.Version, UpdatedAt: sum.UpdatedAt}
		n, err := jsonSize(resp.Summary)
		switch {
		case err != nil:
			s.fail(w, r, fmt.Errorf("encode summary: %w", err))
			return
		case n > budget/2:
			resp.Summary, resp.SummaryOmitted = nil, true
		default:
			budget -= n
		}
	}
	page, more, err := s.historyPage(ctx, id, st.user, after, int(limit), budget)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp.ID, resp.Messages = id, page.msgs
	if more {
		resp.NextAfterSeq = &page.last
	}
	if after == 0 && !more {
		resp.MessageCount = len(page.msgs) // the page is the whole session
	} else if resp.MessageCount, err = s.mgr.Count(ctx, id, st.user); err != nil {
		s.fail(w, r, err)
		return
	}
	if resp.Title, err = s.title(ctx, id, st.user); err != nil {
		s.fail(w, r, err)
		return
	}
	s.writeJSON(w, http.StatusOK, resp)
}

// historyChunkMax caps the messages read from the store at once for a
// history page.
const historyChunkMax = 256

// historyPageData is one page of a session's history, each message
// encoded once.
type historyPageData struct {
	msgs []json.RawMessage
	last int64 // seq of the last message of the page
}

// historyPage reads the messages after afterSeq, at most limit of them and
// at most budget bytes of JSON (at least one message), in chunks: each
// read asks for no more messages than could exceed twice the byte cap at
// the manager's MaxMessageBytes, so the page is built within a bounded
// amount of memory whatever the messages' sizes. more reports that the
// session holds messages after the page.
func (s *Server) historyPage(ctx context.Context, id, user string, afterSeq int64, limit int, budget int64) (historyPageData, bool, error) {
	chunk := historyChunkMax
	if maxMsg := int64(s.mgr.Config().MaxMessageBytes); maxMsg > 0 {
		chunk = int(min(max(2*s.cfg.MaxHistoryBytes/maxMsg, 1), historyChunkMax))
	}
	p := historyPageData{msgs: []json.RawMessage{}}
	var used int64
	cursor := afterSeq
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false) // as writeJSON does
	for {
		want := min(chunk, limit-len(p.msgs)+1) // one more tells whether there is more
		msgs, err := s.mgr.Messages(ctx, id, user, cursor, want)
		if err != nil {
			return p, false, err
		}
		for _, m := range msgs {
			if len(p.msgs) == limit {
				return p, true, nil
			}
			buf.Reset()
			if err := enc.Encode(storedMessage{Seq: m.Seq, wireMessage: fromMemory(m), CreatedAt: m.CreatedAt}); err != nil {
				return p, false, fmt.Errorf("encode message %d: %w", m.Seq, err)
			}
			b := bytes.Clone(bytes.TrimSuffix(buf.Bytes(), []byte("\n")))
			if len(p.msgs) > 0 && used+int64(len(b))+1 > budget {
				return p, true, nil
			}
			p.msgs = append(p.msgs, b)
			used += int64(len(b)) + 1 // and a comma
			p.last, cursor = m.Seq, m.Seq
		}
		if len(msgs) < want {
			return p, false, nil
		}
	}
}

// jsonSize is the length of v's JSON as writeJSON encodes it.
func jsonSize(v any) (int64, error) {
	var n countWriter
	enc := json.NewEncoder(&n)
	enc.SetEscapeHTML(false)
	err := enc.Encode(v)
	return int64(n), err
}

// countWriter counts the bytes written to it.
type countWriter int64

func (c *countWriter) Write(b []byte) (int, error) {
	*c += countWriter(len(b))
	return len(b), nil
}

// --- GET /v1/sessions ------------------------------------------------------

type listResponse struct {
	Sessions   []listEntry `json:"sessions"`
	Total      int         `json:"total"`
	Limit      int         `json:"limit"`
	Offset     int         `json:"offset"`
	NextOffset *int        `json:"next_offset"`
}

type listEntry struct {
	ID           string    `json:"id"`
	Title        string    `json:"title"`
	Preview      string    `json:"preview"`
	MessageCount int       `json:"message_count"`
	CreatedAt    time.Time `json:"created_at"`
	LastActivity time.Time `json:"last_activity"`
}

type searchResponse struct {
	Query     string        `json:"query"`
	Matches   []searchMatch `json:"matches"`
	Best      *string       `json:"best"`
	Ambiguous bool          `json:"ambiguous"`
}

type searchMatch struct {
	ID         string  `json:"id"`
	Title      string  `json:"title"`
	Score      float64 `json:"score"`
	Similarity float64 `json:"similarity"`
	Recency    float64 `json:"recency"`
	Text       string  `json:"text"`
}

func (s *Server) handleList(w http.ResponseWriter, r *http.Request) {
	if r.URL.Query().Has("search") {
		s.handleSearch(w, r)
		return
	}
	ctx, st := r.Context(), stateOf(r.Context())
	limit, e := intParam(r, "limit", defaultListLimit, 1, maxListLimit)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	offset, e := intParam(r, "offset", 0, 0, math.MaxInt32)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	resp := listResponse{Sessions: []listEntry{}, Limit: int(limit), Offset: int(offset)}
	entries, total, err := s.list(ctx, st.user, int(limit), int(offset))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp.Sessions, resp.Total = append(resp.Sessions, entries...), total
	if next := int(offset) + len(resp.Sessions); len(resp.Sessions) > 0 && next < resp.Total {
		resp.NextOffset = &next
	}
	s.writeJSON(w, http.StatusOK, resp)
}

func (s *Server) handleSearch(w http.ResponseWriter, r *http.Request) {
	ctx, st := r.Context(), stateOf(r.Context())
	q := strings.TrimSpace(r.URL.Query().Get("search"))
	switch {
	case q == "":
		s.writeError(w, r, badRequest("query parameter search is empty"))
		return
	case !utf8.ValidString(q) || utf8.RuneCountInString(q) > maxSearchQueryRunes:
		s.writeError(w, r, badRequest("query parameter search: want valid UTF-8 of at most %d characters", maxSearchQueryRunes))
		return
	case s.cat == nil:
		s.writeError(w, r, &apiError{status: http.StatusNotImplemented, code: "not_implemented",
			msg: "search needs the conversation catalogue, which this server was built without"})
		return
	}
	limit, e := intParam(r, "limit", defaultSearchLimit, 1, maxSearchLimit)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	found, err := s.search(ctx, st.user, q, int(limit))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := searchResponse{Query: q, Matches: []searchMatch{}, Ambiguous: found.Ambiguous}
	if found.Best != nil {
		resp.Best = &found.Best.SessionID
	}
	for _, m := range found.Matches {
		resp.Matches = append(resp.Matches, searchMatch{ID: m.SessionID, Title: m.Title,
			Score: m.Score, Similarity: m.Similarity, Recency: m.Recency, Text: m.Text})
	}
	s.writeJSON(w, http.StatusOK, resp)
}

// --- DELETE /v1/sessions/{id} ------------------------------------------------

func (s *Server) handleDelete(w http.ResponseWriter, r *http.Request) {
	ctx, st := r.Context(), stateOf(r.Context())
	id, e := sessionID(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	// Cancels the session's fold, then deletes its messages and summary;
	// the manager's delete observer drops its catalogue document. A
	// session that does not exist (any more) is 404, like another user's.
	if err := s.mgr.DeleteSession(ctx, id, st.user); err != nil {
		s.fail(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// --- probes and documentation ------------------------------------------------

type statusResponse struct {
	Status string `json:"status"`
}

func (s *Server) handleHealthz(w http.ResponseWriter, r *http.Request) {
	s.writeJSON(w, http.StatusOK, statusResponse{Status: "ok"})
}

func (s *Server) handleReadyz(w http.ResponseWriter, r *http.Request) {
	if s.draining.Load() {
		w.Header().Set("Retry-After", retryAfterBusy)
		s.writeJSON(w, http.StatusServiceUnavailable, statusResponse{Status: "shutting down"})
		return
	}
	if err := s.checkReady(r.Context()); err != nil {
		s.log.WarnContext(r.Context(), "strata serve: not ready", "error", err)
		w.Header().Set("Retry-After", retryAfterOutage)
		s.writeJSON(w, http.StatusServiceUnavailable, statusResponse{Status: "unavailable"})
		return
	}
	s.writeJSON(w, http.StatusOK, statusResponse{Status: "ready"})
}

func (s *Server) handleOpenAPI(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("Cache-Control", "public, max-age=300")
	_, _ = w.Write(openAPISpec)
}
