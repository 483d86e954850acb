package summary

import (
	"errors"
	"reflect"
	"strings"
	"testing"
)

const validReply = `{"narrative": "Customer wants a refund.", "facts": [{"key": "order_number", "value": "#1234", "category": "ENTITY"}]}`

var validResult = Result{
	Narrative: "Customer wants a refund.",
	Facts:     []Fact{{Key: "order_number", Value: "#1234", Category: Entity}},
}

func TestParseReplyFences(t *testing.T) {
	cases := map[string]string{
		"unfenced":              validReply,
		"json fence":            "```json\n" + validReply + "\n```",
		"upper-case JSON fence": "```JSON\n" + validReply + "\n```",
		"mixed-case fence":      "```Json\n" + validReply + "\n```",
		"plain fence":           "```\n" + validReply + "\n```",
		"fence on one line":     "```json " + validReply + "```",
		"prose before fence":    "Here is the summary:\n```json\n" + validReply + "\n```",
		"text after fence":      "```json\n" + validReply + "\n```\nLet me know if you need anything else.",
		"prose around object":   "Sure! " + validReply + " Hope this helps.",
		"unclosed fence":        "```json\n" + validReply,
		"surrounding space":     "\n\n   " + validReply + "   \n",
		"byte order mark":       "\uFEFF" + validReply,
		"crlf fence":            "```json\r\n" + validReply + "\r\n```",
		"fence tag then brace":  "```json{" + validReply[1:] + "```",
		"fence with other code": validReply + "\nExample: ```go\nfmt.Println()\n```",
	}
	for name, reply := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseReply(reply)
			if err != nil {
				t.Fatalf("ParseReply: %v", err)
			}
			if !reflect.DeepEqual(got, validResult) {
				t.Fatalf("got %#v\nwant %#v", got, validResult)
			}
		})
	}
}

func TestParseReplyTolerance(t *testing.T) {
	cases := []struct {
		name  string
		reply string
		want  Result
	}{
		{
			name:  "unknown fields at every level",
			reply: `{"narrative":"N","confidence":0.9,"meta":{"a":[1,{"b":2}]},"facts":[{"key":"k","value":"v","category":"STATE","source":"turn 3","extra":{"x":null}}]}`,
			want:  Result{Narrative: "N", Facts: []Fact{{Key: "k", Value: "v", Category: State}}},
		},
		{
			name:  "nulls are defaults",
			reply: `{"narrative":null,"facts":[{"key":"k","value":null,"category":null},{"key":null,"value":"x"},{"key":"c","value":"v","category":null}]}`,
			want:  Result{Facts: []Fact{{Key: "c", Value: "v", Category: General}}},
		},
		{
			name:  "null facts",
			reply: `{"narrative":"only prose","facts":null}`,
			want:  Result{Narrative: "only prose"},
		},
		{
			name:  "missing facts",
			reply: `{"narrative":"only prose"}`,
			want:  Result{Narrative: "only prose"},
		},
		{
			name:  "facts not an array",
			reply: `{"narrative":"kept","facts":{"order_id":"1234"}}`,
			want:  Result{Narrative: "kept"},
		},
		{
			name:  "facts as a string",
			reply: `{"narrative":"kept","facts":"order 1234"}`,
			want:  Result{Narrative: "kept"},
		},
		{
			name:  "numbers and booleans coerced",
			reply: `{"facts":[{"key":"amount","value":50000,"category":"numeric"},{"key":"vip","value":true},{"key":42,"value":1.50},{"key":"ratio","value":-1e3}]}`,
			want: Result{Facts: []Fact{
				{Key: "amount", Value: "50000", Category: Numeric},
				{Key: "vip", Value: "true", Category: General},
				{Key: "42", Value: "1.50", Category: General},
				{Key: "ratio", Value: "-1e3", Category: General},
			}},
		},
		{
			name:  "object value kept as compact JSON",
			reply: `{"facts":[{"key":"address","value":{ "city" : "Seoul" }},{"key":"items","value":[1, 2]}]}`,
			want: Result{Facts: []Fact{
				{Key: "address", Value: `{"city":"Seoul"}`, Category: General},
				{Key: "items", Value: `[1,2]`, Category: General},
			}},
		},
		{
			name:  "category case-insensitive, unknown is GENERAL",
			reply: `{"facts":[{"key":"a","value":"1","category":"entity"},{"key":"b","value":"2","category":" Decision "},{"key":"c","value":"3","category":"MONEY"},{"key":"d","value":"4","category":7}]}`,
			want: Result{Facts: []Fact{
				{Key: "a", Value: "1", Category: Entity},
				{Key: "b", Value: "2", Category: Decision},
				{Key: "c", Value: "3", Category: General},
				{Key: "d", Value: "4", Category: General},
			}},
		},
		{
			name:  "empty keys and empty values dropped, strings trimmed",
			reply: `{"narrative":"  spaced out \n","facts":[{"key":"","value":"x"},{"key":"   ","value":"y"},{"value":"z"},{"key":" gone ","value":""},{"key":"k","value":"  v  "}, "not an object", 3, null]}`,
			want: Result{Narrative: "spaced out", Facts: []Fact{
				{Key: "k", Value: "v", Category: General},
			}},
		},
		{
			name: "placeholders mean no change",
			reply: `{"narrative":"n","facts":[{"key":"order_id","value":"not mentioned"},{"key":"phone","value":"N/A"},` +
				`{"key":"email","value":"Unknown."},{"key":"name","value":"(none)"},{"key":"sku"},{"key":"k","value":"kept"}]}`,
			want: Result{Narrative: "n", Facts: []Fact{{Key: "k", Value: "kept", Category: General}}},
		},
		{
			name: "explicit removal and replaces",
			reply: `{"narrative":"n","facts":[{"key":"coupon","remove":true},{"key":"gift","value":"x","remove":"true"},` +
				`{"key":"phone_number","value":"555-2222","previous":"555-1111"},{"key":"kept","value":"v","remove":false}]}`,
			want: Result{Narrative: "n", Facts: []Fact{
				{Key: "coupon", Category: General, Remove: true},
				{Key: "gift", Category: General, Remove: true},
				{Key: "phone_number", Value: "555-2222", Category: General, Replaces: "555-1111"},
				{Key: "kept", Value: "v", Category: General},
			}},
		},
		{
			name: "stated by the user",
			reply: `{"narrative":"n","facts":[{"key":"email","value":"a@b.example","stated":true},{"key":"order_id","value":"#1","Stated_By_User":"true"},` +
				`{"key":"other_email","value":"c@d.example","stated":false},{"key":"x","value":"y","stated":null}]}`,
			want: Result{Narrative: "n", Facts: []Fact{
				{Key: "email", Value: "a@b.example", Category: General, Stated: true},
				{Key: "order_id", Value: "#1", Category: General, Stated: true},
				{Key: "other_email", Value: "c@d.example", Category: General},
				{Key: "x", Value: "y", Category: General},
			}},
		},
		{
			name:  "field names case-insensitive",
			reply: `{"Narrative":"N","FACTS":[{"Key":"k","VALUE":"v","Category":"State"}]}`,
			want:  Result{Narrative: "N", Facts: []Fact{{Key: "k", Value: "v", Category: State}}},
		},
		{
			name:  "braces and quotes inside strings",
			reply: `{"narrative":"User typed \"}{\" and {curly} text","facts":[{"key":"note","value":"a } b { c \\\" }"}]} trailing }`,
			want: Result{Narrative: `User typed "}{" and {curly} text`, Facts: []Fact{
				{Key: "note", Value: `a } b { c \" }`, Category: General},
			}},
		},
		{
			name:  "unicode",
			reply: `{"narrative":"고객이 주문 #1234의 환불을 요청함 🙂","facts":[{"key":"환불_금액","value":"50,000원","category":"NUMERIC"},{"key":"name","value":"Zoë \u00e9"}]}`,
			want: Result{Narrative: "고객이 주문 #1234의 환불을 요청함 🙂", Facts: []Fact{
				{Key: "환불_금액", Value: "50,000원", Category: Numeric},
				{Key: "name", Value: "Zoë é", Category: General},
			}},
		},
		{
			name:  "first balanced object wins",
			reply: `{"narrative":"first"} {"narrative":"second"}`,
			want:  Result{Narrative: "first"},
		},
		{
			name:  "prose braces skipped",
			reply: `I filled in the {template} for you: {"narrative":"real"}`,
			want:  Result{Narrative: "real"},
		},
		{
			name:  "object with reply fields preferred over an earlier one",
			reply: `Input was {"id": 1}. Result: {"narrative":"real","facts":[]}`,
			want:  Result{Narrative: "real", Facts: nil},
		},
		{
			name:  "object without reply fields",
			reply: `{"summary":"something else"}`,
			want:  Result{},
		},
		{
			name:  "double-encoded narrative",
			reply: `{"narrative":"{\"narrative\":\"inner\",\"facts\":[{\"key\":\"k\",\"value\":\"v\"}]}"}`,
			want:  Result{Narrative: "inner", Facts: []Fact{{Key: "k", Value: "v", Category: General}}},
		},
		{
			name:  "JSON-looking narrative dropped",
			reply: `{"narrative":"{not json","facts":[{"key":"k","value":"v"}]}`,
			want:  Result{Facts: []Fact{{Key: "k", Value: "v", Category: General}}},
		},
		{
			name:  "array narrative dropped",
			reply: `{"narrative":"[1, 2, 3]"}`,
			want:  Result{},
		},
		{
			name:  "non-string narrative",
			reply: `{"narrative":{"text":"nested"},"facts":[{"key":"k","value":"v"}]}`,
			want:  Result{Facts: []Fact{{Key: "k", Value: "v", Category: General}}},
		},
		{
			name:  "duplicate keys are kept for the merge to collapse",
			reply: `{"facts":[{"key":"k","value":"1"},{"key":"k","value":"2"}]}`,
			want:  Result{Facts: []Fact{{Key: "k", Value: "1", Category: General}, {Key: "k", Value: "2", Category: General}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := ParseReply(tc.reply)
			if err != nil {
				t.Fatalf("ParseReply: %v", err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("got  %#v\nwant %#v", got, tc.want)
			}
		})
	}
}

func TestParseReplyProseIsAnError(t *testing.T) {
	// Prose never becomes the narrative: it would replace the summary so far
	// with something that is not one.
	cases := map[string]string{
		"plain prose":       "  The customer asked about a refund.  ",
		"fenced prose":      "```\nThe customer asked about a refund.\n```",
		"upper-case fenced": "```TEXT\nThe customer asked about a refund.\n```",
		"prose then fence":  "Summary:\n```\nThe customer asked about a refund.\n```",
		"refusal":           "I'm sorry, but I can't help with that.",
		"prose with braces": "User said {hello} and left",
	}
	for name, reply := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseReply(reply)
			if !errors.Is(err, ErrNotJSON) {
				t.Fatalf("err = %v, want ErrNotJSON", err)
			}
			if !got.IsEmpty() {
				t.Fatalf("result not empty: %#v", got)
			}
		})
	}
}

func TestParseReplyUnparseable(t *testing.T) {
	cases := map[string]string{
		"truncated object":      `{"narrative": "The customer asked about`,
		"truncated fenced":      "```json\n{\"narrative\": \"x\", \"facts\": [{\"key\": \"a\"",
		"truncated inner fact":  `{"narrative":"x","facts":[{"key":"a","value":"b"}`,
		"trailing comma":        `{"narrative": "x", "facts": [],}`,
		"single quotes":         `{'narrative': 'x'}`,
		"array of facts":        `[1, 2, 3]`,
		"bare array of strings": `["a", "b"]`,
		"prose with JSON keys":  `The "narrative" is that the customer wants a refund and "facts" are none`,
		"fenced broken JSON":    "Here you go:\n```json\n{narrative: x}\n```",
		"lone brace":            "{",
	}
	for name, reply := range cases {
		t.Run(name, func(t *testing.T) {
			got, err := ParseReply(reply)
			if !errors.Is(err, ErrUnparseable) {
				t.Fatalf("err = %v, want ErrUnparseable (result %#v)", err, got)
			}
			if !got.IsEmpty() {
				t.Fatalf("result not empty: %#v", got)
			}
		})
	}
}

func TestParseReplyEmpty(t *testing.T) {
	for _, reply := range []string{"", "   ", "\n\t\n", "```json\n```", "```", "\uFEFF"} {
		_, err := ParseReply(reply)
		if !errors.Is(err, ErrEmptyReply) {
			t.Errorf("ParseReply(%q) err = %v, want ErrEmptyReply", reply, err)
		}
	}
}

func FuzzParseReply(f *testing.F) {
	seeds := []string{
		validReply,
		"```json\n" + validReply + "\n```",
		"```JSON\n" + validReply + "\n```",
		"Here is the summary:\n```\n" + validReply + "\n```\nDone.",
		"```json " + validReply,
		`{"narrative":null,"facts":null}`,
		`{"narrative":"x","facts":[{"key":null,"value":null,"category":null}]}`,
		`{"narrative":"x","unknown":{"deep":[{"a":1}]},"facts":[{"key":"k","value":"v","zzz":true}]}`,
		`{"narrative":"a } b { \" c","facts":[{"key":"{","value":"}"}]}`,
		`{"narrative":"고객 🙂 Zoë","facts":[{"key":"금액","value":"50,000원","category":"numeric"}]}`,
		`{"narrative": "The customer asked about`,
		`{"narrative":"{\"narrative\":\"{\\\"narrative\\\":\\\"x\\\"}\"}"}`,
		`{"narrative":"[x"}`,
		`{"facts":{"a":"b"}}`,
		`{"facts":[1,"x",null,{"key":1e400,"value":[{}]}]}`,
		"plain prose about {things}",
		"",
		"```",
		"{{{{{{{{{{",
		`"\`,
	}
	for _, s := range seeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, reply string) {
		res, err := ParseReply(reply)
		if err != nil {
			if !res.IsEmpty() {
				t.Fatalf("error %v with a non-empty result %#v", err, res)
			}
			if !errors.Is(err, ErrUnparseable) && !errors.Is(err, ErrEmptyReply) && !errors.Is(err, ErrNotJSON) {
				t.Fatalf("unexpected error kind: %v", err)
			}
			return
		}
		n := strings.TrimSpace(res.Narrative)
		if strings.HasPrefix(n, "{") || strings.HasPrefix(n, "[") {
			t.Fatalf("narrative looks like JSON: %q", res.Narrative)
		}
		if n != res.Narrative {
			t.Fatalf("narrative not trimmed: %q", res.Narrative)
		}
		// The narrative only ever comes from a JSON object's field.
		if n != "" && !strings.Contains(reply, "{") {
			t.Fatalf("narrative %q from a reply without a JSON object", n)
		}
		for _, fact := range res.Facts {
			if strings.TrimSpace(fact.Key) == "" {
				t.Fatalf("fact with empty key: %#v", fact)
			}
			if !fact.Remove && IsPlaceholder(fact.Value) {
				t.Fatalf("placeholder value kept: %#v", fact)
			}
			if !fact.Category.Valid() {
				t.Fatalf("invalid category: %#v", fact)
			}
		}
	})
}
