package server

import (
	"context"
	"crypto/rand"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/embedded"
)

// A minimal recording tracer provider: the module has no OpenTelemetry SDK
// dependency, and the API is all a test needs.

type spanRecord struct {
	name   string
	kind   trace.SpanKind
	sc     trace.SpanContext
	parent trace.SpanContext
	attrs  map[string]attribute.Value
	status codes.Code
}

type recorder struct {
	on    atomic.Bool
	mu    sync.Mutex
	spans []spanRecord
}

var spans = &recorder{}

func installRecorder() {
	otel.SetTracerProvider(recProvider{rec: spans})
	otel.SetTextMapPropagator(propagation.TraceContext{})
}

func (r *recorder) start() {
	r.mu.Lock()
	r.spans = nil
	r.mu.Unlock()
	r.on.Store(true)
}

func (r *recorder) stop() []spanRecord {
	r.on.Store(false)
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]spanRecord(nil), r.spans...)
}

type recProvider struct {
	embedded.TracerProvider
	rec *recorder
}

func (p recProvider) Tracer(string, ...trace.TracerOption) trace.Tracer { return recTracer{rec: p.rec} }

type recTracer struct {
	embedded.Tracer
	rec *recorder
}

func (t recTracer) Start(ctx context.Context, name string, opts ...trace.SpanStartOption) (context.Context, trace.Span) {
	cfg := trace.NewSpanStartConfig(opts...)
	parent := trace.SpanContextFromContext(ctx)
	var tid trace.TraceID
	if parent.IsValid() {
		tid = parent.TraceID()
	} else {
		_, _ = rand.Read(tid[:])
	}
	var sid trace.SpanID
	_, _ = rand.Read(sid[:])
	sp := &recSpan{rec: t.rec, r: spanRecord{name: name, kind: cfg.SpanKind(), parent: parent,
		sc:    trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled}),
		attrs: map[string]attribute.Value{}}}
	sp.SetAttributes(cfg.Attributes()...)
	return trace.ContextWithSpan(ctx, sp), sp
}

type recSpan struct {
	embedded.Span
	rec *recorder
	mu  sync.Mutex
	r   spanRecord
}

func (s *recSpan) End(...trace.SpanEndOption) {
	if !s.rec.on.Load() {
		return
	}
	s.mu.Lock()
	r := s.r
	s.mu.Unlock()
	s.rec.mu.Lock()
	s.rec.spans = append(s.rec.spans, r)
	s.rec.mu.Unlock()
}
func (s *recSpan) AddEvent(string, ...trace.EventOption)   {}
func (s *recSpan) AddLink(trace.Link)                      {}
func (s *recSpan) IsRecording() bool                       { return true }
func (s *recSpan) RecordError(error, ...trace.EventOption) {}
func (s *recSpan) SpanContext() trace.SpanContext          { return s.r.sc }
func (s *recSpan) SetStatus(c codes.Code, _ string) {
	s.mu.Lock()
	s.r.status = c
	s.mu.Unlock()
}
func (s *recSpan) SetName(n string) {
	s.mu.Lock()
	s.r.name = n
	s.mu.Unlock()
}
func (s *recSpan) SetAttributes(kv ...attribute.KeyValue) {
	s.mu.Lock()
	for _, a := range kv {
		s.r.attrs[string(a.Key)] = a.Value
	}
	s.mu.Unlock()
}
func (s *recSpan) TracerProvider() trace.TracerProvider { return recProvider{rec: s.rec} }

// TestSpans checks the server span of a request and that the manager's
// spans are its children, and that an incoming traceparent is honoured.
// Not parallel: the recorder is global.
func TestSpans(t *testing.T) {
	ts := stack{}.start(t)
	id := ts.create(keyAlice, nil)
	spans.start()
	const traceID = "4bf92f3577b34da6a3ce929d0e0736aa"
	r := ts.do("POST", "/v1/sessions/"+id+"/messages", keyAlice, map[string]any{"turn": map[string]string{"user": "hi", "assistant": "hello"}},
		"traceparent: 00-"+traceID+"-00f067aa0ba902b7-01", "X-Request-Id: span-req-1")
	if r.status != 200 {
		t.Fatalf("append: %s", r)
	}
	ts.must(404, "GET", "/v1/sessions/nope-1", keyAlice, nil, nil)
	got := spans.stop()

	var server, save, notFound *spanRecord
	for i := range got {
		s := &got[i]
		switch {
		case s.name == "POST /v1/sessions/{id}/messages":
			server = s
		case s.name == "strata.memory.save" && s.attrs["session.id"].AsString() == id:
			save = s
		case s.name == "GET /v1/sessions/{id}":
			notFound = s
		}
	}
	if server == nil || save == nil || notFound == nil {
		t.Fatalf("spans missing (server %v, save %v, 404 %v) among %d", server != nil, save != nil, notFound != nil, len(got))
	}
	if server.kind != trace.SpanKindServer || server.sc.TraceID().String() != traceID {
		t.Errorf("server span: kind %v trace %s", server.kind, server.sc.TraceID())
	}
	for k, want := range map[string]any{
		"http.request.method": "POST", "http.route": "/v1/sessions/{id}/messages", "http.response.status_code": int64(200),
		"strata.request.id": "span-req-1", "enduser.id": "alice", "session.id": id, "url.path": "/v1/sessions/" + id + "/messages",
	} {
		if v := server.attrs[k].AsInterface(); v != want {
			t.Errorf("server span %s = %v, want %v", k, v, want)
		}
	}
	if save.parent.SpanID() != server.sc.SpanID() {
		t.Errorf("strata.memory.save is not a child of the server span")
	}
	if notFound.attrs["http.response.status_code"].AsInt64() != 404 || notFound.status == codes.Error {
		t.Errorf("404 span: %+v", notFound)
	}
}
