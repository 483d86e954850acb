package db

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/strata-go/strata/memory"
	"github.com/strata-go/strata/memory/snapshot"
	"github.com/strata-go/strata/summary"
)

// FuzzDecodeArcReactorFacts feeds arbitrary facts_json to the decoder of
// arc-reactor's facts: it never panics, every element is either a fact or
// counted as undecodable, and the facts it keeps always pass a snapshot's
// validation, so a session is never refused for its facts.
func FuzzDecodeArcReactorFacts(f *testing.F) {
	for _, seed := range []string{
		`[]`, `null`, ``, `{}`, `"x"`, `[1]`, `[null]`, `not json`,
		`[{"key":"k","value":"v","category":"ENTITY","extractedAt":"2024-01-02T03:04:05.123Z"}]`,
		`[{"key":"k","value":3.5,"category":"nope","extractedAt":1735787045.123456789}]`,
		`[{"key":"\u0000","value":"\u0000x"},{"key":"a","extractedAt":-1},{"key":"b","extractedAt":"1e3"}]`,
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		facts, bad := decodeArcReactorFacts(raw)
		var elems []json.RawMessage
		if json.Unmarshal(raw, &elems) == nil && len(facts)+bad != len(elems) {
			t.Fatalf("%d elements: %d facts + %d undecodable", len(elems), len(facts), bad)
		}
		for _, fc := range facts {
			if strings.TrimSpace(fc.Key) == "" || !summary.Category(fc.Category).Valid() {
				t.Fatalf("kept an invalid fact %+v", fc)
			}
		}
		snap := memory.Snapshot{Version: snapshot.Version, SessionID: "s", UserID: "u",
			Summary: &snapshot.Summary{Narrative: "n", Facts: facts}}
		if err := snap.Validate(0); err != nil {
			t.Fatalf("the decoded facts do not validate: %v", err)
		}
	})
}

// FuzzWithPreferredTLS: adding sslmode=prefer never panics, never touches
// a data source name that sets an sslmode, and otherwise only adds it.
func FuzzWithPreferredTLS(f *testing.F) {
	for _, seed := range []string{
		"postgres://u:p@h:5432/d", "postgres://h/d?sslmode=require", "host=h dbname=d", "host=h sslmode=disable",
		"postgres://%zz", "postgres://h/d?sslrootcert=system", "", "user=a password='x y'",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, dsn string) {
		out := withPreferredTLS(dsn)
		if hasSSLMode(dsn) && out != dsn {
			t.Fatalf("%q sets an sslmode but became %q", dsn, out)
		}
		if out != dsn && !hasSSLMode(out) {
			t.Fatalf("%q became %q without an sslmode", dsn, out)
		}
	})
}
