package memory

import (
	"context"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// costMetrics are the OpenTelemetry metrics of what summarization costs,
// named after OpenTelemetry's GenAI semantic conventions where they fit:
// gen_ai.client.token.usage (a histogram of tokens per call, by
// gen_ai.token.type "input" or "output") and
// gen_ai.client.operation.duration (seconds per call), with the model as
// gen_ai.request.model; Strata's own attributes say which summarizer
// made the call, whether its tokens were estimated (the summarizer
// reported none) and whether it was the offline fallback of a spent
// budget. Session ids are never metric attributes.
type costMetrics struct {
	tokens    metric.Int64Histogram
	duration  metric.Float64Histogram
	calls     metric.Int64Counter
	fallbacks metric.Int64Counter
}

func newCostMetrics() *costMetrics {
	meter := otel.Meter(instrumentationName)
	tokens, _ := meter.Int64Histogram("gen_ai.client.token.usage", metric.WithUnit("{token}"),
		metric.WithDescription("Tokens of one summarizer call, by gen_ai.token.type"))
	duration, _ := meter.Float64Histogram("gen_ai.client.operation.duration", metric.WithUnit("s"),
		metric.WithDescription("Duration of one summarizer call"))
	calls, _ := meter.Int64Counter("strata.memory.summarizer.calls",
		metric.WithDescription("Summarizer calls, by summarizer, model, outcome and fallback"))
	fallbacks, _ := meter.Int64Counter("strata.memory.summarizer.budget_fallbacks",
		metric.WithDescription("Summarizer calls the offline summarizer made because a session's daily token budget was spent"))
	return &costMetrics{tokens: tokens, duration: duration, calls: calls, fallbacks: fallbacks}
}

// callObservation is one summarizer call, for the metrics.
type callObservation struct {
	summarizer, model string
	in, out           int
	estimated         bool
	fallback          string
	d                 time.Duration
	err               error
}

// observeCall records one summarizer call.
func (o *instruments) observeCall(ctx context.Context, c callObservation) {
	m := o.cost
	model := c.model
	if model == "" {
		model = "unknown"
	}
	base := []attribute.KeyValue{attribute.String("gen_ai.operation.name", "chat"),
		attribute.String("gen_ai.request.model", model), attribute.String("strata.summarizer", c.summarizer)}
	outcome := "ok"
	durAttrs := base
	if c.err != nil {
		outcome = "error"
		durAttrs = append(durAttrs[:len(durAttrs):len(durAttrs)], attribute.String("error.type", errorType(c.err)))
	}
	m.duration.Record(ctx, c.d.Seconds(), metric.WithAttributes(durAttrs...))
	m.calls.Add(ctx, 1, metric.WithAttributes(append(base[:len(base):len(base)],
		attribute.String("outcome", outcome), attribute.String("strata.fallback", c.fallback))...))
	if c.fallback != "" {
		m.fallbacks.Add(ctx, 1, metric.WithAttributes(attribute.String("strata.fallback", c.fallback)))
		return
	}
	for _, t := range []struct {
		kind string
		n    int
	}{{"input", c.in}, {"output", c.out}} {
		if t.n <= 0 {
			continue
		}
		m.tokens.Record(ctx, int64(t.n), metric.WithAttributes(append(base[:len(base):len(base)],
			attribute.String("gen_ai.token.type", t.kind), attribute.Bool("strata.tokens.estimated", c.estimated))...))
	}
}

// errorType is a call error's class for the error.type attribute.
func errorType(err error) string {
	_, class := foldOutcome(context.Background(), err)
	return class
}
