package calib

import (
	"errors"
	"fmt"
	"math"
	"sync"
	"testing"
)

// sample returns a report whose content ratio is r.
func sample(r float64, content, messages int) Sample {
	return Sample{Reported: int(math.Round(r*float64(content))) + PerMessage*messages + ReplyPriming, Content: content, Messages: messages}
}

func near(a, b float64) bool { return math.Abs(a-b) < 0.01 }

func TestFirstCallAndQuantile(t *testing.T) {
	tb := New()
	k := Key{Model: "m", Script: ScriptHangul}
	if r, n := tb.Ratio(k); r != 1 || n != 0 {
		t.Fatalf("before any report: ratio %v on %d samples, want 1 on 0", r, n)
	}
	for range Window - 1 {
		if err := tb.Observe(k, sample(2, 1000, 10)); err != nil {
			t.Fatal(err)
		}
	}
	// One outlier in a full window does not move the price.
	if err := tb.Observe(k, sample(7.5, 1000, 10)); err != nil {
		t.Fatal(err)
	}
	if r, n := tb.Ratio(k); !near(r, 2*(1+Margin)) || n != Window {
		t.Fatalf("ratio %v on %d samples, want %v", r, n, 2*(1+Margin))
	}
	// A lasting change takes over as the window turns.
	for range Window {
		if err := tb.Observe(k, sample(1.5, 1000, 10)); err != nil {
			t.Fatal(err)
		}
	}
	if r, _ := tb.Ratio(k); !near(r, 1.5*(1+Margin)) {
		t.Fatalf("ratio %v after the change, want %v", r, 1.5*(1+Margin))
	}
	// Other scripts and models are apart.
	if r, n := tb.Ratio(Key{Model: "m", Script: ScriptLatin}); r != 1 || n != 0 {
		t.Fatalf("latin of m: %v on %d", r, n)
	}
	if r, ok := tb.ModelRatio("m"); !ok || !near(r, 1.5*(1+Margin)) {
		t.Fatalf("model ratio %v %v", r, ok)
	}
}

func TestImplausibleReportsChangeNothing(t *testing.T) {
	tb := New()
	k := Key{Model: "m"}
	tb.Ratio(k)
	if err := tb.Observe(k, sample(1.2, 500, 4)); err != nil {
		t.Fatal(err)
	}
	want, _ := tb.Ratio(k)
	for _, s := range []Sample{
		{Reported: 0, Content: 500, Messages: 4},
		{Reported: -7, Content: 500, Messages: 4},
		{Reported: MaxReported + 1, Content: MaxReported, Messages: 4},
		{Reported: 600, Content: 0, Messages: 4},
		{Reported: 600, Content: 500, Messages: -1},
		{Reported: 20, Content: 500, Messages: 4},      // far below the estimate
		{Reported: 500_000, Content: 500, Messages: 4}, // far above
		{Reported: 10, Content: 500, Messages: 40},     // less than the framing alone
	} {
		if err := tb.Observe(k, s); !errors.Is(err, ErrImplausible) {
			t.Errorf("%+v: %v, want ErrImplausible", s, err)
		}
	}
	if err := tb.Observe(Key{Model: "never priced"}, sample(1, 500, 4)); !errors.Is(err, ErrUnknownModel) {
		t.Errorf("unknown model: %v", err)
	}
	if got, n := tb.Ratio(k); got != want || n != 1 {
		t.Fatalf("ratio %v on %d samples after refused reports, want %v on 1", got, n, want)
	}
	if tb.Len() != 1 {
		t.Fatalf("%d keys", tb.Len())
	}
}

func TestBounded(t *testing.T) {
	tb := New()
	long := string(make([]byte, 10*MaxModelLen))
	for i := range 4 * MaxKeys {
		k := Key{Model: fmt.Sprintf("%s-%d", long, i), Script: Script(i % int(numScripts))}
		tb.Ratio(k)
		_ = tb.Observe(k, sample(1.3, 100, 2))
	}
	if n := tb.Len(); n > MaxKeys {
		t.Fatalf("%d keys, bound %d", n, MaxKeys)
	}
	tb.mu.Lock()
	defer tb.mu.Unlock()
	for _, k := range tb.keys.Keys() {
		if len(k.Model) > MaxModelLen {
			t.Fatalf("model name of %d bytes kept", len(k.Model))
		}
	}
}

func TestScripts(t *testing.T) {
	for text, want := range map[string]Script{
		"Where is my parcel?":                        ScriptLatin,
		`{"order_id":"#A-1","status":"shipped"}`:     ScriptLatin,
		"주문하신 상품은 어제 발송되었습니다":                        ScriptHangul,
		`{"note":"주문하신 상품은 어제 발송되었습니다","id":"x"}`:    ScriptHangul,
		"ご注文の商品は昨日発送されました":                           ScriptJapanese,
		"您订购的商品昨天已经发货了":                              ScriptHan,
		"Die Kaffeemaschine ist schon wieder kaputt": ScriptLatin,
		"Привет, как дела? Посылка у двери.":         ScriptOther,
		"": ScriptLatin,
	} {
		var tl Tally
		tl.Add(text)
		if got := tl.Script(); got != want {
			t.Errorf("%q: %s, want %s", text, got, want)
		}
	}
}

// TestConcurrentUse: pricing and reports of several models from many
// goroutines (run with -race).
func TestConcurrentUse(t *testing.T) {
	tb := New()
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 500 {
				k := Key{Model: fmt.Sprintf("m%d", (g+i)%3), Script: Script(i % 2)}
				if r, _ := tb.Ratio(k); r < 1 || r > 2*(1+Margin) {
					t.Errorf("ratio %v", r)
					return
				}
				_ = tb.Observe(k, sample(1+float64(i%5)/5, 400, 3))
				tb.ModelRatio(k.Model)
			}
		}()
	}
	wg.Wait()
	if r, ok := tb.ModelRatio("m0"); !ok || !near(r, 1.8*(1+Margin)) {
		t.Fatalf("ratio %v %v", r, ok)
	}
}

func TestKnown(t *testing.T) {
	tb := New()
	if tb.Known("m") {
		t.Fatal("a new model has samples")
	}
	// Registered: a report of any script is accepted.
	if err := tb.Observe(Key{Model: "m", Script: ScriptHan}, sample(1.6, 300, 2)); err != nil {
		t.Fatal(err)
	}
	if !tb.Known("m") || tb.Known("n") {
		t.Fatal("Known does not follow the samples")
	}
	if r, n := tb.Ratio(Key{Model: "m", Script: ScriptHan}); n != 1 || !near(r, 1.6*(1+Margin)) {
		t.Fatalf("ratio %v on %d", r, n)
	}
}
