package extractive

import (
	"encoding/json"
	"sort"
	"strconv"
	"strings"

	"github.com/strata-go/strata/summary/internal/factkey"
)

// maxJSONFindings caps the facts one JSON document (a tool result or a
// tool call's arguments) contributes, so a large listing cannot flood the
// ledger.
const maxJSONFindings = 40

// maxJSONListed is the most elements of one JSON array that give facts. An
// array of more records than this is a listing (flights found, products
// in a catalogue): other customers' or merely offered values that would
// flood the ledger, so none of its records gives facts.
const maxJSONListed = 3

// scanJSON extracts facts from a JSON tool result or tool-call arguments:
// scalar values under keys that name identifiers, codes, numbers, dates,
// amounts, names, contacts or a status, keyed by their JSON key (an "id"
// takes its parent's name: "payment_methods": [{"id": …}] gives
// payment_method_id, and so does an object of records keyed by their ids,
// "payment_methods": {"credit_card_4421486": {"id": …}}). ok is false
// when text is not a JSON object or array, so the caller scans it as
// prose.
func scanJSON(text string) (found []finding, ok bool) {
	t := strings.TrimSpace(text)
	if t == "" || (t[0] != '{' && t[0] != '[') {
		return nil, false
	}
	var v any
	dec := json.NewDecoder(strings.NewReader(t))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	walkJSON(v, "", func(key, value string) {
		if len(found) >= maxJSONFindings {
			return
		}
		if alias, ok := jsonKeyAliases[key]; ok {
			key = alias
		}
		if cat, mode, keep := jsonFactKind(key); keep && (cat != Numeric || strings.ContainsAny(value, "0123456789")) {
			found = append(found, finding{kind: "json:" + key, base: key, value: value, cat: cat, mode: mode})
		}
	})
	return found, true
}

// jsonKeyAliases names JSON keys the way the prose extractors do, so a tool
// result and a sentence about the same thing share a key.
var jsonKeyAliases = map[string]string{
	"flight": "flight_number", "reservation": "reservation_id", "order": "order_id",
	"booking": "booking_id", "ticket": "ticket_id", "contact": "email", "tracking": "tracking_number",
}

// walkJSON calls leaf for every scalar under an object key, in a stable
// order (object keys sorted), skipping listings and all but the first
// maxJSONListed elements of an array; the records of an object keyed by
// their ids are elements of its parent. parent is the enclosing key.
func walkJSON(v any, parent string, leaf func(key, value string)) {
	switch x := v.(type) {
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		sort.Strings(keys)
		if parent != "" && recordKeyed(x, keys) {
			// A collection keyed by its records' ids ("payment_methods":
			// {"credit_card_4421486": {…}, …}) holds the records of one
			// thing, such as the user's payment methods: its records are
			// elements of parent, so their ids share one key family
			// (payment_method_id, payment_method_id_2, …) instead of making
			// a family of each.
			for _, k := range keys {
				walkJSON(x[k], parent, leaf)
			}
			return
		}
		for _, k := range keys {
			key := factkey.Normalize(k)
			switch {
			case key == "id" && parent != "":
				key = singular(parent) + "_id"
			case key == "name":
				// A bare "name" in a record names the record (a product, a
				// flight), not the user: the user's name is the ledger's
				// identity slot.
				key = "item_name"
				if parent != "" {
					key = singular(parent) + "_name"
				}
			}
			switch c := x[k].(type) {
			case map[string]any, []any:
				walkJSON(c, key, leaf)
			default:
				if s, ok := jsonScalar(c); ok {
					leaf(key, s)
				}
			}
		}
	case []any:
		objects := 0
		for _, e := range x {
			if _, ok := e.(map[string]any); ok {
				objects++
			} else if _, ok := e.([]any); ok {
				objects++
			}
		}
		if objects > maxJSONListed {
			return // a listing (search results): incidental, not facts
		}
		for i, e := range x {
			if i == maxJSONListed {
				break
			}
			if s, ok := jsonScalar(e); ok && parent != "" {
				leaf(singular(parent), s) // e.g. "reservations": ["ZFA04Y", …]
				continue
			}
			walkJSON(e, parent, leaf)
		}
	}
}

// recordKeyed reports whether an object is a collection of records keyed
// by their ids: every value is an object or array and every key holds an
// identifier (a part with three digits or more, as FamilyOf strips).
func recordKeyed(x map[string]any, keys []string) bool {
	if len(keys) == 0 {
		return false
	}
	for _, k := range keys {
		switch x[k].(type) {
		case map[string]any, []any:
		default:
			return false
		}
		norm := factkey.Normalize(k)
		if factkey.StripEmbeddedIDs(norm) == norm {
			return false
		}
	}
	return true
}

// jsonScalar renders a string or number leaf; booleans, nulls, empty and
// very long strings are not facts.
func jsonScalar(v any) (string, bool) {
	switch x := v.(type) {
	case string:
		x = strings.TrimSpace(x)
		return x, x != "" && len(x) <= 120
	case json.Number:
		if f, err := x.Float64(); err == nil {
			return strconv.FormatFloat(f, 'f', -1, 64), true
		}
	}
	return "", false
}

// jsonFactKind decides whether a JSON key names a fact, and its category.
func jsonFactKind(key string) (Category, keyMode, bool) {
	has := func(parts ...string) bool {
		for _, p := range parts {
			if key == p || strings.HasSuffix(key, "_"+p) || strings.HasPrefix(key, p+"_") {
				return true
			}
		}
		return false
	}
	switch {
	case has("id", "code", "number", "reservation", "confirmation", "locator", "sku", "ref", "reference", "tracking", "flight", "order", "booking", "ticket"):
		return Entity, numbered, true
	case has("email", "phone", "name", "origin", "destination", "airport", "city", "address"):
		return Entity, numbered, true
	case has("date", "dob", "time", "at", "deadline", "departure", "arrival"):
		return Condition, numbered, true
	case has("amount", "price", "fare", "total", "balance", "cost", "fee", "refund", "paid", "quantity", "count", "baggages", "bags", "passengers"):
		return Numeric, numbered, true
	case has("status", "cabin", "class", "insurance", "flight_type", "type") && key != "type":
		return State, numbered, true
	}
	return General, numbered, false
}

// singular turns a plural JSON key into the name of one element.
func singular(key string) string {
	switch {
	case strings.HasSuffix(key, "ies"):
		return strings.TrimSuffix(key, "ies") + "y"
	case strings.HasSuffix(key, "ses"):
		return strings.TrimSuffix(key, "es")
	case strings.HasSuffix(key, "s") && !strings.HasSuffix(key, "ss"):
		return strings.TrimSuffix(key, "s")
	}
	return key
}
