package server

import (
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"

	"github.com/strata-go/strata/internal/msgjson"
	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/store"
)

// Bounds of the erasure and import endpoints.
const (
	// maxForgetSeqs caps the sequence numbers one batch erasure names.
	maxForgetSeqs = 1000
	// importBodyFactor: an import's body may be this many times
	// Config.MaxBodyBytes (8 MiB by default), since it carries a whole
	// session. The bound keeps an import's one transaction well within
	// PostgreSQL's statement timeout under concurrent imports; a larger
	// session is imported with strata import.
	importBodyFactor = 8
)

// portableRoutes are the erasure, export and import endpoints.
func (s *Server) portableRoutes() []route {
	return []route{
		{"DELETE", "/v1/sessions/{id}/messages/{seq}", http.HandlerFunc(s.handleForgetMessage)},
		{"DELETE", "/v1/sessions/{id}/messages", http.HandlerFunc(s.handleForgetMessages)},
		{"DELETE", "/v1/sessions/{id}/facts/{key}", http.HandlerFunc(s.handleForgetFact)},
		{"GET", "/v1/sessions/{id}/export", http.HandlerFunc(s.handleExport)},
		{"POST", "/v1/sessions/import", http.HandlerFunc(s.handleImport)},
	}
}

// failPortable answers the errors of erasure and import, and the rest as
// fail does.
func (s *Server) failPortable(w http.ResponseWriter, r *http.Request, err error) {
	switch {
	case errors.Is(err, store.ErrNotFound), errors.Is(err, memory.ErrNotOwner):
		s.fail(w, r, err)
	case errors.Is(err, store.ErrUnknownMessage):
		s.writeError(w, r, &apiError{status: http.StatusNotFound, code: "message_not_found", msg: memoryReason(err)})
	case errors.Is(err, store.ErrNoSuchFact):
		s.writeError(w, r, &apiError{status: http.StatusNotFound, code: "fact_not_found", msg: "the session has no such fact"})
	case errors.Is(err, store.ErrSessionExists):
		s.writeError(w, r, &apiError{status: http.StatusConflict, code: "session_exists", msg: "a session with this id already exists"})
	case errors.Is(err, errors.ErrUnsupported):
		s.writeError(w, r, &apiError{status: http.StatusNotImplemented, code: "not_implemented", msg: memoryReason(err)})
	default:
		s.fail(w, r, err)
	}
}

// parseSeq reads one sequence number.
func parseSeq(v string) (int64, *apiError) {
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil || n < 1 {
		return 0, badRequest("sequence number %q: want a positive integer", v)
	}
	return n, nil
}

// --- DELETE /v1/sessions/{id}/messages/{seq} ---------------------------------

func (s *Server) handleForgetMessage(w http.ResponseWriter, r *http.Request) {
	id, e := sessionID(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	seq, e := parseSeq(r.PathValue("seq"))
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	s.forget(w, r, id, []int64{seq})
}

// --- DELETE /v1/sessions/{id}/messages?seq=…&seq=… ---------------------------

func (s *Server) handleForgetMessages(w http.ResponseWriter, r *http.Request) {
	id, e := sessionID(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	vals := r.URL.Query()["seq"]
	if len(vals) == 0 || len(vals) > maxForgetSeqs {
		s.writeError(w, r, badRequest("want 1 to %d seq query parameters, got %d", maxForgetSeqs, len(vals)))
		return
	}
	seqs := make([]int64, 0, len(vals))
	for _, v := range vals {
		seq, e := parseSeq(v)
		if e != nil {
			s.writeError(w, r, e)
			return
		}
		seqs = append(seqs, seq)
	}
	s.forget(w, r, id, seqs)
}

// forget erases the messages and everything derived from them: facts,
// narrative sentences, the catalogue's document; all or nothing.
func (s *Server) forget(w http.ResponseWriter, r *http.Request, id string, seqs []int64) {
	if err := s.mgr.Forget(r.Context(), id, stateOf(r.Context()).user, seqs...); err != nil {
		s.failPortable(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// --- DELETE /v1/sessions/{id}/facts/{key} ------------------------------------

func (s *Server) handleForgetFact(w http.ResponseWriter, r *http.Request) {
	id, e := sessionID(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	key := r.PathValue("key")
	if key == "" || len(key) > 256 {
		s.writeError(w, r, badRequest("fact key: want 1 to 256 bytes"))
		return
	}
	if err := s.mgr.ForgetFact(r.Context(), id, stateOf(r.Context()).user, key); err != nil {
		s.failPortable(w, r, err)
		return
	}
	w.WriteHeader(http.StatusNoContent)
}

// --- GET /v1/sessions/{id}/export --------------------------------------------

func (s *Server) handleExport(w http.ResponseWriter, r *http.Request) {
	id, e := sessionID(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	// Streamed: the snapshot is read and written in bounded chunks, never
	// held whole (see memory.Manager.WriteExport).
	sw := &startWriter{w: w}
	err := s.mgr.WriteExport(r.Context(), sw, id, stateOf(r.Context()).user)
	switch {
	case err == nil:
	case !sw.started:
		s.failPortable(w, r, err)
	default:
		// The status is sent: cut the response, so that the client sees
		// an incomplete body rather than a complete one.
		s.log.ErrorContext(r.Context(), "strata serve: export failed after its first bytes; the response is cut",
			"request_id", stateOf(r.Context()).id, "session_id", id, "error", err)
		panic(http.ErrAbortHandler)
	}
}

// startWriter sends the 200 headers of a streamed JSON response before
// its first byte, and records whether it has.
type startWriter struct {
	w       http.ResponseWriter
	started bool
}

func (sw *startWriter) Write(b []byte) (int, error) {
	if !sw.started {
		sw.started = true
		h := sw.w.Header()
		h.Set("Content-Type", "application/json; charset=utf-8")
		h.Set("X-Content-Type-Options", "nosniff")
		sw.w.WriteHeader(http.StatusOK)
	}
	return sw.w.Write(b)
}

// --- POST /v1/sessions/import -------------------------------------------------

// importResponse answers an import.
type importResponse struct {
	ID     string `json:"id"`
	Stored int    `json:"stored"`
}

func (s *Server) handleImport(w http.ResponseWriter, r *http.Request) {
	st := stateOf(r.Context())
	var snap memory.Snapshot
	if e := decodeJSON(w, r, importBodyFactor*s.cfg.MaxBodyBytes, &snap, false); e != nil {
		s.writeError(w, r, e)
		return
	}
	if !validSessionID(snap.SessionID) {
		s.writeError(w, r, badRequest("invalid session id: want 1 to %d characters among letters, digits and . _ : @ -, starting with a letter or digit", maxSessionIDLength))
		return
	}
	st.session = snap.SessionID
	if e := checkImport(&snap); e != nil {
		s.writeError(w, r, e)
		return
	}
	// The session is the caller's, whoever owned the exported one.
	snap.UserID = st.user
	if err := s.mgr.Import(r.Context(), &snap); err != nil {
		if errors.Is(err, store.ErrSessionExists) {
			// Session ids are one namespace: an id in use by another user
			// answers the 404 every other endpoint gives for another
			// user's session, not a conflict that says it exists; 409 is
			// for the caller's own session. The count costs what it costs
			// on the caller's own sessions, so the timing does not tell.
			if _, cerr := s.mgr.Count(r.Context(), snap.SessionID, st.user); cerr != nil {
				err = cerr
			}
		}
		s.failPortable(w, r, err)
		return
	}
	w.Header().Set("Location", "/v1/sessions/"+snap.SessionID)
	s.writeJSON(w, http.StatusCreated, importResponse{ID: snap.SessionID, Stored: len(snap.Messages)})
}

// checkImport holds an imported snapshot to what an append accepts, beyond
// the snapshot's own validation (memory.Manager.Import): the messages
// array and every message's created_at present, no metadata key with
// the server's reserved prefix, and no tool result that answers no tool
// call made before it in the snapshot.
func checkImport(snap *memory.Snapshot) *apiError {
	if snap.Messages == nil {
		return badRequest("messages is missing (a session without messages has \"messages\": [])")
	}
	msgs := make([]store.Message, len(snap.Messages))
	for i, m := range snap.Messages {
		if m.CreatedAt.IsZero() {
			return &apiError{status: http.StatusBadRequest, code: "invalid_message", msg: fmt.Sprintf("messages[%d].created_at is missing", i)}
		}
		for k := range m.Metadata {
			if strings.HasPrefix(k, msgjson.ReservedMetadataPrefix) {
				return &apiError{status: http.StatusBadRequest, code: "invalid_message",
					msg: fmt.Sprintf("messages[%d].metadata: key %q is reserved (keys starting with %q)", i, k, msgjson.ReservedMetadataPrefix)}
			}
		}
		msgs[i] = m.Stored()
	}
	if i, call := firstUnanswered(msgs, nil); i >= 0 {
		return &apiError{status: http.StatusBadRequest, code: "invalid_message",
			msg: fmt.Sprintf("messages[%d].tool_call_id %q: no tool call with this id precedes it in the snapshot", i, call)}
	}
	return nil
}
