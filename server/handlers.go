package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/summary"
	"github.com/strata-go/strata/trimmer"
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
	return []route{
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
}

// fail answers with the response err calls for. Store and internal errors
// are logged and answered without details.
func (s *Server) fail(w http.ResponseWriter, r *http.Request, err error) {
	var ae *apiError
	switch {
	case errors.As(err, &ae):
	case errors.Is(err, memory.ErrNotOwner):
		ae = errNotFound
	case errors.Is(err, memory.ErrMessageTooLarge):
		ae = &apiError{status: http.StatusRequestEntityTooLarge, code: "message_too_large", msg: memoryReason(err)}
	case errors.Is(err, memory.ErrInvalidMessage):
		ae = &apiError{status: http.StatusBadRequest, code: "invalid_message", msg: memoryReason(err)}
	case errors.Is(err, memory.ErrClosed):
		ae = &apiError{status: http.StatusServiceUnavailable, code: "unavailable", msg: "server is shutting down"}
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
		w.Header().Set("Retry-After", "1")
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
func (s *Server) convert(in []wireMessage) ([]memory.Message, *apiError) {
	if len(in) > maxMessagesPerRequest {
		return nil, badRequest("too many messages: %d, at most %d per request", len(in), maxMessagesPerRequest)
	}
	max := s.mgr.Config().MaxMessageBytes
	out := make([]memory.Message, 0, len(in))
	for i, w := range in {
		m, err := w.toMemory(i)
		if err != nil {
			return nil, &apiError{status: http.StatusBadRequest, code: "invalid_message", msg: err.Error()}
		}
		if err := m.Validate(max); err != nil {
			e := &apiError{status: http.StatusBadRequest, code: "invalid_message", msg: fmt.Sprintf("messages[%d]: %s", i, memoryReason(err))}
			if errors.Is(err, memory.ErrMessageTooLarge) {
				e.status, e.code = http.StatusRequestEntityTooLarge, "message_too_large"
			}
			return nil, e
		}
		out = append(out, m)
	}
	return out, nil
}

func setMetadata(m *memory.Message, k, v string) {
	if m.Metadata == nil {
		m.Metadata = map[string]string{}
	}
	m.Metadata[k] = v
}

// --- POST /v1/sessions -------------------------------------------------

type createRequest struct {
	Title    string        `json:"title"`
	Messages []wireMessage `json:"messages"`
}

type appendResponse struct {
	ID     string `json:"id"`
	Title  string `json:"title,omitempty"`
	Stored int    `json:"stored"`
	Total  *int   `json:"total"`
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
	id := newSessionID()
	st.session = id
	resp := appendResponse{ID: id, Title: title, Stored: len(msgs)}
	if len(msgs) == 0 {
		s.pending.add(id, st.user, title)
		zero := 0
		resp.Total = &zero
	} else {
		if title != "" {
			setMetadata(&msgs[0], MetadataTitle, title)
		}
		res, err := s.mgr.Append(ctx, id, st.user, msgs...)
		if err != nil {
			s.fail(w, r, err)
			return
		}
		resp.Total = &res.Total
	}
	w.Header().Set("Location", "/v1/sessions/"+id)
	s.writeJSON(w, http.StatusCreated, resp)
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
				a.Metadata = map[string]string{memory.MetadataModelVariant: t.ModelVariant}
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
	p, pending := s.pending.get(id)
	if pending {
		if p.user != st.user {
			s.writeError(w, r, errNotFound)
			return
		}
		if p.title != "" {
			setMetadata(&msgs[0], MetadataTitle, p.title)
		}
	}
	res, err := s.mgr.Append(ctx, id, st.user, msgs...)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if pending {
		s.pending.remove(id)
	}
	s.writeJSON(w, http.StatusOK, appendResponse{ID: id, Stored: len(msgs), Total: &res.Total})
}

// --- GET /v1/sessions/{id}/context --------------------------------------

type contextResponse struct {
	SessionID      string         `json:"session_id"`
	Mode           string         `json:"mode"`
	Messages       []wireMessage  `json:"messages"`
	Tokens         contextTokens  `json:"tokens"`
	Removed        int            `json:"removed"`
	OverBudget     bool           `json:"over_budget"`
	StoredMessages int            `json:"stored_messages"`
	Summary        *contextSumary `json:"summary,omitempty"`
}

type contextTokens struct {
	Total      int `json:"total"`
	Budget     int `json:"budget"`
	BeforeTrim int `json:"before_trim"`
}

type contextSumary struct {
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
	budget, e := intParam(r, "budget", int64(s.cfg.ContextBudget), 1, maxBudget)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	h, err := s.mgr.Load(ctx, id, st.user)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := contextResponse{SessionID: id, Mode: string(h.Mode), Messages: []wireMessage{},
		Tokens: contextTokens{Budget: int(budget)}, StoredMessages: h.Total}
	if h.Total == 0 {
		if p, ok := s.pending.get(id); !ok || p.user != st.user {
			s.writeError(w, r, errNotFound)
			return
		}
		s.writeJSON(w, http.StatusOK, resp)
		return
	}
	out, rep := trimmer.New(int(budget), 0, s.est).TrimReport(h.Messages, "", 0)
	for _, cm := range out {
		resp.Messages = append(resp.Messages, fromChat(cm))
	}
	resp.Tokens.Total, resp.Tokens.BeforeTrim = rep.TokensAfter, rep.TokensBefore
	resp.Removed, resp.OverBudget = rep.Removed, rep.OverBudget
	if h.Summary != nil && !h.Summary.IsEmpty() {
		resp.Summary = &contextSumary{Facts: wireFacts(h.Summary.Facts), Narrative: h.Summary.Narrative, UpToSeq: h.Summary.UpToSeq}
	}
	s.writeJSON(w, http.StatusOK, resp)
}

// --- GET /v1/sessions/{id} -----------------------------------------------

type sessionResponse struct {
	ID           string          `json:"id"`
	Title        string          `json:"title"`
	MessageCount int             `json:"message_count"`
	Messages     []storedMessage `json:"messages"`
	NextAfterSeq *int64          `json:"next_after_seq"`
	Summary      *sessionSummary `json:"summary"`
}

type sessionSummary struct {
	Facts     []wireFact `json:"facts"`
	Narrative string     `json:"narrative"`
	UpToSeq   int64      `json:"up_to_seq"`
	Version   int64      `json:"version"`
	Title     string     `json:"title,omitempty"`
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
	owner, err := s.store.Owner(ctx, id)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := sessionResponse{ID: id, Messages: []storedMessage{}}
	switch owner {
	case st.user:
	case "":
		p, ok := s.pending.get(id)
		if !ok || p.user != st.user {
			s.writeError(w, r, errNotFound)
			return
		}
		resp.Title = p.title
		s.writeJSON(w, http.StatusOK, resp)
		return
	default:
		s.writeError(w, r, errNotFound)
		return
	}
	msgs, err := s.store.Range(ctx, id, after, math.MaxInt64, int(limit)+1)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	if len(msgs) > int(limit) {
		msgs = msgs[:limit]
		next := msgs[len(msgs)-1].Seq
		resp.NextAfterSeq = &next
	}
	var first *memory.Message
	for i, m := range msgs {
		if m.UserID != "" && m.UserID != st.user { // deleted and re-created meanwhile
			s.writeError(w, r, errNotFound)
			return
		}
		if i == 0 && after == 0 {
			first = &msgs[0]
		}
		resp.Messages = append(resp.Messages, storedMessage{Seq: m.Seq, wireMessage: fromMemory(m), CreatedAt: m.CreatedAt})
	}
	tail, err := s.store.Tail(ctx, id, 0)
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp.MessageCount = tail.Total
	var sum *summary.Summary
	if s.sums != nil {
		if sum, err = s.sums.Get(ctx, id); err != nil {
			s.fail(w, r, err)
			return
		}
	}
	if sum != nil {
		resp.Summary = &sessionSummary{Facts: wireFacts(sum.Facts), Narrative: sum.Narrative, UpToSeq: sum.UpToSeq,
			Version: sum.Version, Title: sum.Title, UpdatedAt: sum.UpdatedAt}
	}
	resp.Title = s.title(ctx, id, first, sum, "")
	s.writeJSON(w, http.StatusOK, resp)
}

// title returns a session's title: the one given at creation (kept on its
// first message), else the summary's, else the catalogue's (fallback).
// first is the session's first message when the caller has it.
func (s *Server) title(ctx context.Context, id string, first *memory.Message, sum *summary.Summary, fallback string) string {
	if first == nil {
		msgs, err := s.store.Range(ctx, id, 0, math.MaxInt64, 1)
		if err == nil && len(msgs) > 0 {
			first = &msgs[0]
		}
	}
	if first != nil && first.Metadata[MetadataTitle] != "" {
		return first.Metadata[MetadataTitle]
	}
	if sum != nil && sum.Title != "" {
		return sum.Title
	}
	if fallback == "" && s.cat != nil {
		if d, err := s.cat.Index().Get(ctx, id); err == nil && d != nil {
			return d.Title
		}
	}
	return fallback
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
	switch lister, ok := s.store.(memory.SessionLister); {
	case s.cat != nil:
		page, err := s.cat.List(ctx, st.user, int(limit), int(offset))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		resp.Total = page.Total
		for _, e := range page.Sessions {
			resp.Sessions = append(resp.Sessions, listEntry{ID: e.SessionID, Title: s.title(ctx, e.SessionID, nil, nil, e.Title),
				Preview: e.Preview, MessageCount: e.MessageCount, CreatedAt: e.CreatedAt, LastActivity: e.LastActivity})
		}
	case ok:
		infos, total, err := lister.Sessions(ctx, st.user, int(limit), int(offset))
		if err != nil {
			s.fail(w, r, err)
			return
		}
		resp.Total = total
		for _, in := range infos {
			resp.Sessions = append(resp.Sessions, listEntry{ID: in.SessionID, Title: s.title(ctx, in.SessionID, nil, nil, ""),
				Preview: in.Preview, MessageCount: in.MessageCount, CreatedAt: in.CreatedAt, LastActivity: in.LastActivity})
		}
	default:
		s.writeError(w, r, &apiError{status: http.StatusNotImplemented, code: "not_implemented",
			msg: "listing sessions needs a catalogue or a message store that can list sessions"})
		return
	}
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
	// Sessions without a document yet (short, never folded, never listed)
	// or with a stale one are indexed first, within a bound; the rest is
	// searched as it is.
	rctx, cancel := context.WithTimeout(ctx, reindexTimeout)
	if _, err := s.cat.Reindex(rctx, st.user); err != nil && ctx.Err() == nil {
		s.log.WarnContext(ctx, "strata serve: reindex before search", "user_id", st.user, "error", err)
	}
	cancel()
	matches, err := s.cat.Search(ctx, st.user, q, int(limit))
	if err != nil {
		s.fail(w, r, err)
		return
	}
	resp := searchResponse{Query: q, Matches: []searchMatch{}}
	winner, ambiguous := s.cat.Decide(matches)
	if winner != nil {
		resp.Best = &winner.SessionID
	}
	resp.Ambiguous = ambiguous
	for _, m := range matches {
		resp.Matches = append(resp.Matches, searchMatch{ID: m.SessionID, Title: s.title(ctx, m.SessionID, nil, nil, m.Title),
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
	if p, ok := s.pending.get(id); ok {
		if p.user != st.user {
			s.writeError(w, r, errNotFound)
			return
		}
		s.pending.remove(id)
	}
	// Cancels the session's fold, then deletes its messages and summary
	// (behaviour §1.11); unknown sessions are not an error.
	if err := s.mgr.DeleteSession(ctx, id, st.user); err != nil {
		s.fail(w, r, err)
		return
	}
	if s.cat != nil {
		if err := s.cat.Delete(ctx, id); err != nil {
			s.log.WarnContext(ctx, "strata serve: catalogue delete", "session_id", id, "error", err)
		}
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
		w.Header().Set("Retry-After", "1")
		s.writeJSON(w, http.StatusServiceUnavailable, statusResponse{Status: "shutting down"})
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), readyTimeout)
	defer cancel()
	err := func() error {
		if _, err := s.store.Owner(ctx, "__readyz__"); err != nil {
			return err
		}
		for _, check := range s.ready {
			if err := check(ctx); err != nil {
				return err
			}
		}
		return nil
	}()
	if err != nil {
		s.log.WarnContext(ctx, "strata serve: not ready", "error", err)
		w.Header().Set("Retry-After", "1")
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
