package db

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/strata-go/strata/internal/text"
	"github.com/strata-go/strata/summary"
)

// FuzzDecodeFacts feeds arbitrary facts_json to the lenient decoder: it
// must never panic, keep only facts with a key and a known category, and
// whatever it keeps must survive an encode/decode round trip.
func FuzzDecodeFacts(f *testing.F) {
	for _, seed := range []string{
		`[]`, `null`, `{}`, `"x"`, `[1]`, `[null]`,
		`[{"key":"k","value":"v","category":"ENTITY","extractedAt":"2024-01-02T03:04:05Z"}]`,
		`[{"key":"k","value":"v","category":"nope","extra":[1,{"a":null}]}]`,
		`[{"key":5}]`, `[{"key":"a","value":"b"},{"key":"","value":"c"}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		facts, _ := decodeFacts(raw)
		for _, fc := range facts {
			if fc.Key == "" || !fc.Category.Valid() {
				t.Fatalf("kept an invalid fact %+v", fc)
			}
		}
		enc, err := encodeFacts(facts)
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid([]byte(enc)) {
			t.Fatalf("encoded facts are not JSON: %s", enc)
		}
		again, err := decodeFacts([]byte(enc))
		if err != nil || len(again) != len(facts) {
			t.Fatalf("round trip: %d facts → %d (%v)", len(facts), len(again), err)
		}
		for i := range again {
			a, b := again[i], facts[i]
			if a.Key != text.Clean(b.Key) || a.Value != text.Clean(b.Value) || a.Category != b.Category || !a.ExtractedAt.Equal(b.ExtractedAt) {
				t.Fatalf("fact %d changed: %+v → %+v", i, b, a)
			}
		}
	})
}

// FuzzRedactDSN checks that a password put into a URL or a key=value
// connection string never survives redaction: the redacted text must not
// depend on the password at all, so it is compared with the redaction of
// the same connection string carrying a different password. (Searching the
// output for the password instead gives false alarms whenever the password
// happens to occur in the surrounding text, such as the host plus "/app".)
func FuzzRedactDSN(f *testing.F) {
	f.Add("s3cr3t-P4ss", "db.example.com")
	f.Add("p@ss:w/rd?x=1", "localhost")
	f.Add("it's", "h")
	f.Add("000/", "000")
	f.Fuzz(func(t *testing.T, password, host string) {
		if password == "" || strings.ContainsAny(password+host, "\x00") {
			t.Skip()
		}
		const other = "other-password"
		url := func(p string) string {
			return "postgres://alice:" + urlEscape(p) + "@" + urlEscape(host) + "/app?sslmode=disable"
		}
		if got, want := RedactDSN(url(password)), RedactDSN(url(other)); got != want {
			t.Fatalf("RedactDSN(%q) = %q depends on the password (with another: %q)", url(password), got, want)
		}
		kv := func(p string) string {
			return "host=" + quoteKV(host) + " user=alice password=" + quoteKV(p) + " dbname=app"
		}
		if got, want := RedactDSN(kv(password)), RedactDSN(kv(other)); got != want {
			t.Fatalf("RedactDSN(%q) = %q depends on the password (with another: %q)", kv(password), got, want)
		}
	})
}

func urlEscape(s string) string {
	var b strings.Builder
	for _, c := range []byte(s) {
		if ('a' <= c && c <= 'z') || ('A' <= c && c <= 'Z') || ('0' <= c && c <= '9') || c == '-' || c == '.' || c == '_' || c == '~' {
			b.WriteByte(c)
		} else {
			b.WriteString("%" + strings.ToUpper(string("0123456789abcdef"[c>>4])+string("0123456789abcdef"[c&15])))
		}
	}
	return b.String()
}

func quoteKV(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `\'`).Replace(s) + "'"
}

func TestRedactDSN(t *testing.T) {
	cases := map[string]string{
		"postgres://alice:secret@db:5432/app?sslmode=disable":     "postgres://alice:xxxxx@db:5432/app?sslmode=disable",
		"postgres://alice@db/app?password=secret&sslmode=disable": "postgres://alice@db/app?password=xxxxx&sslmode=disable",
		"host=db user=alice password=secret dbname=app":           "host=db user=alice password=xxxxx dbname=app",
		"host=db password = 'se cr\\'et' dbname=app":              "host=db password = xxxxx dbname=app",
		"postgres://db/app":                              "postgres://db/app",
		"postgresql://alice:secret@db/app":               "postgresql://alice:xxxxx@db/app",
		"host=db user=alice password='a://b' dbname=app": "host=db user=alice password=xxxxx dbname=app",
	}
	for in, want := range cases {
		if got := RedactDSN(in); got != want {
			t.Errorf("RedactDSN(%q) = %q, want %q", in, got, want)
		}
	}
}

func TestDecodeFactsKeepsGoodOnes(t *testing.T) {
	facts, err := decodeFacts([]byte(`[{"key":"a","value":"1","category":"numeric"},"junk",{"key":"b","value":"2"}]`))
	if err == nil || len(facts) != 2 || facts[0].Category != summary.Numeric || facts[1].Category != summary.General {
		t.Errorf("decodeFacts = %+v, %v", facts, err)
	}
}

// FuzzLedgerOf checks what a fold's save caches (ledgerOf) against what a
// load decodes from the row it stored (decodeLedger of encodeLedger), for
// the facts and provenance arbitrary facts_json decodes to, with text
// PostgreSQL cannot store and empty provenance lists.
func FuzzLedgerOf(f *testing.F) {
	for _, seed := range []string{
		`[]`, `[{"key":"k","value":"v","category":"ENTITY","extractedAt":"2024-01-02T03:04:05.123+02:00","sources":[3,1]}]`,
		`[{"key":"a","value":"b\u0000c","previousValue":"x","mentions":2,"pinned":true,"stated":true},{"forgotten":{"key":"phone","digest":"00","words":1}},{"sentences":[{"digest":"d","seqs":[1]}]},{"forgetKey":"0a0b"}]`,
		`[{"key":"k","value":"v","sources":[]},{"sentences":[{"digest":"d","seqs":[]}]}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		l, _ := decodeLedger(raw)
		sm := summary.Summary{SessionID: "s", Facts: l.facts, Forgotten: l.forgotten, SentenceSources: l.sentences, ForgetKey: l.forgetKey}
		for i := range sm.Facts { // what a summarizer may hand over
			if i%2 == 0 && sm.Facts[i].Sources == nil {
				sm.Facts[i].Sources = []int64{}
			}
			sm.Facts[i].Value += "\xff"
		}
		enc, err := encodeLedger(sm)
		if err != nil {
			return // not storable: nothing is saved, nothing cached
		}
		want, _ := decodeLedger([]byte(enc))
		got, err := ledgerOf(sm)
		if err != nil {
			t.Fatalf("ledgerOf: %v (encodeLedger did not fail)", err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("ledgerOf\n%+v\ndecodeLedger(encodeLedger)\n%+v", got, want)
		}
	})
}
