package memory_test

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
)

// The manager reports through the global providers: spans carry the
// session id, metrics never do (unbounded cardinality).
func TestOpenTelemetrySpansAndMetrics(t *testing.T) {
	spans := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(spans))
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	prevT, prevM := otel.GetTracerProvider(), otel.GetMeterProvider()
	otel.SetTracerProvider(tp)
	otel.SetMeterProvider(mp)
	t.Cleanup(func() {
		otel.SetTracerProvider(prevT)
		otel.SetMeterProvider(prevM)
		_ = tp.Shutdown(context.Background())
		_ = mp.Shutdown(context.Background())
	})

	f := newFixture(t, hierConfig())
	ctx := context.Background()
	seed(t, f.store, "secret-session", "alice", 16)
	if err := f.mgr.SaveTurn(ctx, "secret-session", "alice", "q", "a"); err != nil {
		t.Fatal(err)
	}
	_ = f.mgr.Flush(ctx)
	if _, err := f.mgr.LoadHistory(ctx, "secret-session", "alice"); err != nil {
		t.Fatal(err)
	}

	seen := map[string]bool{}
	for _, s := range spans.Ended() {
		seen[s.Name()] = true
		found := false
		for _, a := range s.Attributes() {
			if a.Key == "session.id" && a.Value.AsString() == "secret-session" {
				found = true
			}
		}
		if !found {
			t.Errorf("span %s lacks session.id", s.Name())
		}
	}
	for _, name := range []string{"strata.memory.save", "strata.memory.fold", "strata.memory.load"} {
		if !seen[name] {
			t.Errorf("no %s span (saw %v)", name, seen)
		}
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	metrics := map[string]bool{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			metrics[m.Name] = true
			for _, set := range attributeSets(m.Data) {
				if _, ok := set.Value(attribute.Key("session.id")); ok {
					t.Errorf("metric %s is labelled with the session id", m.Name)
				}
			}
		}
	}
	for _, name := range []string{"strata.memory.loads", "strata.memory.saves", "strata.memory.folds", "strata.memory.fold.input_tokens"} {
		if !metrics[name] {
			t.Errorf("metric %s not recorded (have %v)", name, metrics)
		}
	}
}

func attributeSets(data metricdata.Aggregation) []attribute.Set {
	var out []attribute.Set
	switch d := data.(type) {
	case metricdata.Sum[int64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes)
		}
	case metricdata.Histogram[int64]:
		for _, p := range d.DataPoints {
			out = append(out, p.Attributes)
		}
	}
	return out
}
