package server

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"runtime/debug"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// RequestIDHeader carries the request id, in and out.
const RequestIDHeader = "X-Request-Id"

// maxRequestIDLength bounds an incoming request id; longer or odd ones are
// replaced.
const maxRequestIDLength = 128

// reqState is what the layers of one request learn about it, for the log
// and the span.
type reqState struct {
	id      string
	route   string
	user    string
	service string // the service key's name when a service key acts for user
	session string
}

type stateKey struct{}

func stateOf(ctx context.Context) *reqState {
	if st, ok := ctx.Value(stateKey{}).(*reqState); ok {
		return st
	}
	return &reqState{}
}

// statusWriter records the status and size of a response.
type statusWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *statusWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(b)
	w.bytes += int64(n)
	return n, err
}

// Unwrap lets http.ResponseController reach the connection.
func (w *statusWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// buildHandler assembles the middleware around the router.
func (s *Server) buildHandler() http.Handler {
	mux := http.NewServeMux()
	s.routes = s.routeTable()
	for _, rt := range s.routes {
		mux.Handle(rt.method+" "+rt.pattern, rt.handler)
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		st := &reqState{id: requestID(r.Header.Get(RequestIDHeader))}
		w.Header().Set(RequestIDHeader, st.id)
		sw := &statusWriter{ResponseWriter: w}

		ctx := otel.GetTextMapPropagator().Extract(r.Context(), propagation.HeaderCarrier(r.Header))
		ctx, span := s.tracer.Start(ctx, "HTTP "+r.Method, trace.WithSpanKind(trace.SpanKindServer),
			trace.WithAttributes(
				attribute.String("http.request.method", r.Method),
				attribute.String("url.path", r.URL.Path),
				attribute.String("url.scheme", scheme(r)),
				attribute.String("server.address", r.Host),
				attribute.String("client.address", clientIP(r)),
				attribute.String("strata.request.id", st.id),
			))
		if ua := r.UserAgent(); ua != "" {
			span.SetAttributes(attribute.String("user_agent.original", ua))
		}
		ctx = context.WithValue(ctx, stateKey{}, st)
		r = r.WithContext(ctx)

		func() {
			defer s.recoverPanic(sw, r)
			s.route(mux, sw, r)
		}()

		status := sw.status
		if status == 0 {
			status = http.StatusOK
		}
		if st.route != "" {
			span.SetName(r.Method + " " + st.route)
			span.SetAttributes(attribute.String("http.route", st.route))
		}
		span.SetAttributes(attribute.Int("http.response.status_code", status))
		if st.user != "" {
			span.SetAttributes(attribute.String("enduser.id", st.user))
		}
		if st.session != "" {
			span.SetAttributes(attribute.String("session.id", st.session))
		}
		if status >= 500 {
			span.SetStatus(codes.Error, http.StatusText(status))
		}
		span.End()
		s.accessLog(r, st, status, sw.bytes, time.Since(start))
	})
}

// route finds the handler, authenticates /v1 requests and runs it with the
// request's deadline.
func (s *Server) route(mux *http.ServeMux, w http.ResponseWriter, r *http.Request) {
	st := stateOf(r.Context())
	if uncleanPath(r.URL) {
		// ServeMux would redirect to the cleaned path, and a client that
		// follows the redirect of DELETE …/facts/.. deletes the session: a
		// path with dot segments is refused, never redirected.
		s.writeError(w, r, badRequest("path %q has an empty, \".\" or \"..\" segment (percent-encoded or not): send the path in its normal form", r.URL.EscapedPath()))
		return
	}
	h, pattern := mux.Handler(r)
	if _, p, ok := strings.Cut(pattern, " "); ok {
		st.route = p
	}
	if strings.HasPrefix(r.URL.Path, "/v1/") || r.URL.Path == "/v1" {
		keyUser, service, aerr := s.keys.keys().authenticate(r)
		if aerr != nil {
			v := `Bearer realm="strata"`
			if aerr.token {
				v += `, error="invalid_token"`
			}
			w.Header().Set("WWW-Authenticate", v)
			s.writeError(w, r, &apiError{status: http.StatusUnauthorized, code: "unauthorized", msg: aerr.msg})
			return
		}
		w.Header().Set("Cache-Control", "no-store")
		user, herr := actingUser(r, keyUser, service)
		if herr != nil {
			s.writeError(w, r, herr)
			return
		}
		st.user = user
		if service {
			st.service = keyUser
		}
	}
	if pattern == "" { // 404 or 405 from the mux: answer in JSON
		rec := &headerOnlyWriter{header: http.Header{}}
		h.ServeHTTP(rec, r)
		if allow := rec.header.Get("Allow"); allow != "" {
			w.Header().Set("Allow", allow)
		}
		switch rec.status {
		case http.StatusMethodNotAllowed:
			s.writeError(w, r, &apiError{status: rec.status, code: "method_not_allowed",
				msg: fmt.Sprintf("method %s not allowed (allowed: %s)", r.Method, rec.header.Get("Allow"))})
		default:
			s.writeError(w, r, &apiError{status: http.StatusNotFound, code: "not_found", msg: "no such endpoint: " + r.URL.Path})
		}
		return
	}
	ctx, cancel := context.WithTimeout(r.Context(), s.cfg.WriteTimeout)
	defer cancel()
	// Through the mux again: it sets the path values.
	mux.ServeHTTP(w, r.WithContext(ctx))
}

// headerOnlyWriter captures the status and headers of the mux's own 404 and
// 405 answers.
type headerOnlyWriter struct {
	header http.Header
	status int
}

func (w *headerOnlyWriter) Header() http.Header { return w.header }
func (w *headerOnlyWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
}
func (w *headerOnlyWriter) Write(b []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	return len(b), nil
}

// recoverPanic turns a handler's panic into a 500 with the request id.
func (s *Server) recoverPanic(w *statusWriter, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	st := stateOf(r.Context())
	s.log.ErrorContext(r.Context(), "strata serve: panic", "request_id", st.id, "panic", fmt.Sprint(v), "stack", string(debug.Stack()))
	trace.SpanFromContext(r.Context()).RecordError(fmt.Errorf("panic: %v", v))
	if w.status == 0 {
		s.writeError(w, r, &apiError{status: http.StatusInternalServerError, code: "internal", msg: "internal error"})
	}
}

// accessLog writes one line per request: at debug level, since serving
// requests is normal operation, and at error level for a 5xx answer, which
// is a real problem.
func (s *Server) accessLog(r *http.Request, st *reqState, status int, bytes int64, d time.Duration) {
	level := slog.LevelDebug
	if status >= 500 {
		level = slog.LevelError
	}
	if !s.log.Enabled(r.Context(), level) {
		return
	}
	route := st.route
	if route == "" {
		route = "unmatched"
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("route", route),
		slog.Int("status", status),
		slog.Float64("duration_ms", float64(d.Microseconds())/1000),
		slog.Int64("bytes", bytes),
		slog.String("request_id", st.id),
		slog.String("remote", clientIP(r)),
	}
	if st.user != "" {
		attrs = append(attrs, slog.String("user_id", st.user))
	}
	if st.service != "" {
		attrs = append(attrs, slog.String("service", st.service))
	}
	if st.session != "" {
		attrs = append(attrs, slog.String("session_id", st.session))
	}
	s.log.LogAttrs(r.Context(), level, "http request", attrs...)
}

// writeJSON writes v with status.
func (s *Server) writeJSON(w http.ResponseWriter, status int, v any) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		s.log.Error("strata serve: encode response", "error", err)
		status = http.StatusInternalServerError
		buf.Reset()
		buf.WriteString(`{"error":"internal error","code":"internal"}` + "\n")
	}
	h := w.Header()
	h.Set("Content-Type", "application/json; charset=utf-8")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// writeError writes an error response with the request id.
func (s *Server) writeError(w http.ResponseWriter, r *http.Request, e *apiError) {
	if e.code == "body_too_large" {
		// The rest of the body is not read: do not reuse the connection.
		w.Header().Set("Connection", "close")
	}
	s.writeJSON(w, e.status, errorBody{Error: e.msg, Code: e.code, RequestID: stateOf(r.Context()).id})
}

// requestID returns the client's request id when it is reasonable, else a
// new random one.
func requestID(in string) string {
	if in != "" && len(in) <= maxRequestIDLength && strings.IndexFunc(in, func(c rune) bool {
		return !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.ContainsRune("-_.:/+=@", c))
	}) < 0 {
		return in
	}
	var b [12]byte
	_, _ = rand.Read(b[:])
	return hex.EncodeToString(b[:])
}

func scheme(r *http.Request) string {
	if r.TLS != nil {
		return "https"
	}
	return "http"
}

func clientIP(r *http.Request) string {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		return r.RemoteAddr
	}
	return host
}

// uncleanPath reports whether the path has a segment that is empty (but
// for a trailing slash), "." or "..", literally or percent-encoded (as
// python-requests sends %2E%2E), or one that is not validly escaped: the
// paths ServeMux would answer with a redirect to their cleaned form.
func uncleanPath(u *url.URL) bool {
	p := u.EscapedPath()
	if !strings.HasPrefix(p, "/") {
		return true
	}
	segs := strings.Split(p[1:], "/")
	for i, seg := range segs {
		if seg == "" && i == len(segs)-1 {
			continue // "/" or a trailing slash: no route, 404
		}
		dec, err := url.PathUnescape(seg)
		if err != nil || dec == "" || dec == "." || dec == ".." {
			return true
		}
	}
	return false
}
