package extractive

import (
	"reflect"
	"testing"
	"time"

	"github.com/tmc/langchaingo/llms"
)

// restart and fresh list a run's state separately: a keyer restarted after
// runs over messages in several languages equals a fresh one against the
// same ledger, so a field added to one and not the other fails here.
func TestRestartIsFresh(t *testing.T) {
	base := newKeyer([]Fact{{Key: "email", Value: "ana@example.com"}, {Key: "order_id", Value: "ORD-1"}}, nil)
	k := base.fresh()
	for _, text := range []string{
		"My new email is bo@example.com and my order ORD-2 arrived, call me at 555-123-4567.",
		"제 전화번호는 010-1234-5678 이고 주문번호는 ORD-3 입니다.",
		"電話番号は090-1234-5678です。注文番号はORD-4です。",
	} {
		k.addMessage(llms.HumanChatMessage{Content: text}, time.Time{}, scan)
		if len(k.facts) == 0 {
			t.Fatalf("no facts found in %q: the comparison would prove nothing", text)
		}
		k.restart()
		if want := base.fresh(); !reflect.DeepEqual(k, want) {
			t.Fatalf("restarted keyer %+v, want a fresh one %+v", k, want)
		}
	}
}
