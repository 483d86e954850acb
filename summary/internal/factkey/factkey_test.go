package factkey

import "testing"

func TestNumberedAndStripNumber(t *testing.T) {
	for n, want := range map[int]string{1: "price", 2: "price_2", 26: "price_26"} {
		got := Numbered("price", n)
		if got != want {
			t.Errorf("Numbered(price, %d) = %q, want %q", n, got, want)
		}
		if s := StripNumber(got); s != "price" {
			t.Errorf("StripNumber(%q) = %q, want price", got, s)
		}
	}
	for _, k := range []string{"order_id", "_2", "price_", "price_2a", "gift_card_3481935_id"} {
		if s := StripNumber(k); s != k {
			t.Errorf("StripNumber(%q) = %q, want it unchanged", k, s)
		}
	}
}

func TestStripEmbeddedIDs(t *testing.T) {
	for in, want := range map[string]string{
		"credit_card_4421486_id": "credit_card_id",
		"order_id_2":             "order_id_2", // two digits are a number, not an id
		"4421486":                "4421486",    // nothing would be left
		"email":                  "email",
	} {
		if got := StripEmbeddedIDs(in); got != want {
			t.Errorf("StripEmbeddedIDs(%q) = %q, want %q", in, got, want)
		}
	}
}
