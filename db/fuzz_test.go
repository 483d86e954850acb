package db

import (
	"encoding/json"
	"strings"
	"testing"

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
			if a.Key != cleanText(b.Key) || a.Value != cleanText(b.Value) || a.Category != b.Category || !a.ExtractedAt.Equal(b.ExtractedAt) {
				t.Fatalf("fact %d changed: %+v → %+v", i, b, a)
			}
		}
	})
}

// FuzzRedactDSN checks that a password put into a URL or a key=value
// connection string never survives redaction.
func FuzzRedactDSN(f *testing.F) {
	f.Add("s3cr3t-P4ss", "db.example.com")
	f.Add("p@ss:w/rd?x=1", "localhost")
	f.Add("it's", "h")
	f.Fuzz(func(t *testing.T, password, host string) {
		// A password that also appears in the host (raw, escaped or quoted)
		// cannot be told apart from it in the output.
		if len(password) < 4 || strings.ContainsAny(password, "\x00") || strings.Contains(host, password) ||
			strings.Contains(urlEscape(host), password) || strings.Contains(quoteKV(host), password) ||
			strings.Contains(urlEscape(host), urlEscape(password)) || strings.Contains(quoteKV(host), quoteKV(password)) ||
			strings.Contains("postgres://alice:@/app?sslmode=disable host= user=alice password='' dbname=app", password) {
			t.Skip()
		}
		u := "postgres://alice:" + urlEscape(password) + "@" + urlEscape(host) + "/app?sslmode=disable"
		if got := RedactDSN(u); strings.Contains(got, password) || strings.Contains(got, urlEscape(password)) {
			t.Fatalf("RedactDSN(%q) = %q leaks the password", u, got)
		}
		kv := "host=" + quoteKV(host) + " user=alice password=" + quoteKV(password) + " dbname=app"
		if got := RedactDSN(kv); strings.Contains(got, password) || strings.Contains(got, quoteKV(password)) {
			t.Fatalf("RedactDSN(%q) = %q leaks the password", kv, got)
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
		"postgres://db/app": "postgres://db/app",
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
