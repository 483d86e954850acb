package memory

import (
	"context"
	"fmt"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"
)

// instrumentationName names Strata's tracer and meter.
const instrumentationName = "github.com/strata-go/strata/memory"

// instruments are the OpenTelemetry metrics of a Manager. They come from the
// global MeterProvider when the manager is built: no-ops unless the
// application installed an SDK. Session ids are span attributes only, never
// metric labels (unbounded cardinality).
type instruments struct {
	tracer       trace.Tracer
	loads        metric.Int64Counter
	saves        metric.Int64Counter
	folds        metric.Int64Counter
	foldFailures metric.Int64Counter
	foldTokens   metric.Int64Histogram
	foldMessages metric.Int64Histogram
	cost         *costMetrics // costs.go
}

func newInstruments() *instruments {
	meter := otel.Meter(instrumentationName)
	// Instrument creation only fails for invalid names; ours are constant.
	loads, _ := meter.Int64Counter("strata.memory.loads", metric.WithDescription("History loads, by assembly mode"))
	saves, _ := meter.Int64Counter("strata.memory.saves", metric.WithDescription("Message appends, by outcome"))
	folds, _ := meter.Int64Counter("strata.memory.folds", metric.WithDescription("Successful folds, by trigger"))
	failures, _ := meter.Int64Counter("strata.memory.fold_failures", metric.WithDescription("Failed folds, by trigger"))
	tokens, _ := meter.Int64Histogram("strata.memory.fold.input_tokens", metric.WithUnit("{token}"),
		metric.WithDescription("Estimated tokens of summary plus folded messages sent to the summarizer"))
	msgs, _ := meter.Int64Histogram("strata.memory.fold.messages", metric.WithDescription("Messages folded per fold"))
	return &instruments{tracer: otel.Tracer(instrumentationName), loads: loads, saves: saves, folds: folds,
		foldFailures: failures, foldTokens: tokens, foldMessages: msgs, cost: newCostMetrics()}
}

// startSpan starts a span for one manager operation on a session.
func (o *instruments) startSpan(ctx context.Context, name, sessionID string) (context.Context, trace.Span) {
	return o.tracer.Start(ctx, name, trace.WithAttributes(attribute.String("session.id", sessionID)))
}

// endSpan records err (if any) on span and ends it.
func endSpan(span trace.Span, err error) {
	if err != nil {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

func (m *Manager) observeLoad(ctx context.Context, h History) {
	m.otel.loads.Add(ctx, 1, metric.WithAttributes(attribute.String("mode", string(h.Mode))))
	trace.SpanFromContext(ctx).SetAttributes(attribute.String("memory.mode", string(h.Mode)),
		attribute.Int("memory.message.count", len(h.Messages)))
}

func (m *Manager) observeSave(ctx context.Context, n int, err error) {
	outcome := "ok"
	if err != nil {
		outcome = "error"
	}
	m.otel.saves.Add(ctx, 1, metric.WithAttributes(attribute.String("outcome", outcome)))
	trace.SpanFromContext(ctx).SetAttributes(attribute.Int("memory.message.count", n))
}

func (o *instruments) observeFold(ctx context.Context, r foldRecord, err error) {
	attrs := metric.WithAttributes(attribute.String("trigger", string(r.trigger)))
	if err != nil {
		o.foldFailures.Add(ctx, 1, attrs)
		return
	}
	o.folds.Add(ctx, 1, attrs)
	o.foldTokens.Record(ctx, int64(r.tokensBefore), attrs)
	o.foldMessages.Record(ctx, int64(r.messages), attrs)
}

// observeDelete runs one delete observer; its panic is logged, never
// propagated: the session is already deleted.
func (m *Manager) observeDelete(ctx context.Context, fn func(context.Context, string), sessionID string) {
	defer func() {
		if p := recover(); p != nil {
			m.log.ErrorContext(ctx, "strata: delete observer panicked", "session_id", sessionID, "panic", fmt.Sprint(p))
		}
	}()
	fn(ctx, sessionID)
}
