package calib

import (
	"fmt"
	"sync"
	"testing"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/trimmer"
)

// TestBPEFeatures: the BPE features of a text are the o200k_base tokens of
// its Hangul, kana and Han runs and of the rest, adding up to about the
// text's own count; a text without those scripts has only the rest; a nil
// BPE adds nothing; counting concurrently gives the same counts, and the
// memo stays within BPEMemo.
func TestBPEFeatures(t *testing.T) {
	b, err := NewBPE()
	if err != nil {
		t.Fatal(err)
	}
	exact, err := trimmer.NewTiktokenEstimator(trimmer.EncodingO200kBase)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		text string
		want [numBPE]bool // which features are positive
	}{
		{"주문하신 상품은 내일 도착합니다. Thanks!", [numBPE]bool{true, false, false, true}},
		{"ご注文の商品は明日届きます。 Order #A-12", [numBPE]bool{false, true, true, true}},
		{"您的订单明天到达", [numBPE]bool{false, false, true, false}},
		{"Your order arrives tomorrow, {\"id\": 42}", [numBPE]bool{false, false, false, true}},
	}
	for _, c := range cases {
		x := ClassFeatures([]llms.ChatMessage{llms.HumanChatMessage{Content: c.text}}, "", b)
		sum := 0.0
		for i := range numBPE {
			if got := x[FeatBPE+i] > 0; got != c.want[i] {
				t.Errorf("%q: BPE feature %d = %v, want positive: %v", c.text, i, x[FeatBPE+i], c.want[i])
			}
			sum += x[FeatBPE+i]
		}
		if n := float64(exact.Estimate(c.text)); sum < 0.8*n || sum > 1.2*n {
			t.Errorf("%q: BPE features add up to %v, the text is %v tokens", c.text, sum, n)
		}
		if y := ClassFeatures([]llms.ChatMessage{llms.HumanChatMessage{Content: c.text}}, "", nil); [numBPE]float64(y[FeatBPE:FeatBase]) != [numBPE]float64{} {
			t.Errorf("%q: nil BPE gives features %v", c.text, y[FeatBPE:FeatBase])
		}
		w := Prior()
		w[FeatBPE+numBPE-1] = 1
		if got, want := w.Text(c.text, b), x.Content(w); got != want {
			t.Errorf("%q: Text %v, features priced at %v", c.text, got, want)
		}
	}

	var wg sync.WaitGroup
	want := ClassFeatures([]llms.ChatMessage{llms.HumanChatMessage{Content: cases[1].text}}, "", b)
	for g := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 300 {
				s := fmt.Sprintf("%d-%d 가나다라 %d", g, i, i*i)
				_ = Prior().Text(s, b)
				if got := ClassFeatures([]llms.ChatMessage{llms.HumanChatMessage{Content: cases[1].text}}, "", b); got != want {
					t.Errorf("concurrent count %v, want %v", got, want)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.mu.Lock()
	n := b.memo.Len()
	b.mu.Unlock()
	if n > BPEMemo || n < 1200 {
		t.Errorf("memo holds %d texts, want 1 200 to %d", n, BPEMemo)
	}
}
