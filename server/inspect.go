package server

import (
	"bytes"
	"errors"
	"math"
	"net/http"

	"github.com/strata-go/strata/inspector"
)

// inspectRoutes are the inspector's endpoints.
func (s *Server) inspectRoutes() []route {
	return []route{{"GET", "/v1/sessions/{id}/inspect", http.HandlerFunc(s.handleInspect)}}
}

// inspectCSP keeps the inspector's page from loading or running anything:
// it needs no network (inline styles, SVG charts) and has no script.
const inspectCSP = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"

// --- GET /v1/sessions/{id}/inspect ---------------------------------------------

func (s *Server) handleInspect(w http.ResponseWriter, r *http.Request) {
	id, e := sessionID(r)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	turn, e := intParam(r, "turn", 0, 0, math.MaxInt32)
	if e != nil {
		s.writeError(w, r, e)
		return
	}
	var buf bytes.Buffer
	err := inspector.Write(r.Context(), &buf, s.mgr, id, stateOf(r.Context()).user, inspector.Options{Turn: int(turn)})
	switch {
	case errors.Is(err, inspector.ErrNoSuchTurn):
		s.writeError(w, r, badRequest("turn %d: the session has no such user turn", turn))
		return
	case err != nil:
		s.fail(w, r, err)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", inspectCSP)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(buf.Bytes())
}
