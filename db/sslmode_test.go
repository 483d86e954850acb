package db

import (
	"strings"
	"testing"
)

func TestWithPreferredTLS(t *testing.T) {
	cases := []struct{ dsn, want string }{
		{"postgres://u:p@h:5432/d", "postgres://u:p@h:5432/d?sslmode=prefer"},
		{"postgres://u:p@h/d?application_name=x", "sslmode=prefer"},
		{"host=h dbname=d", "host=h dbname=d sslmode='prefer'"},
		{"postgres://h/d?sslmode=require", "postgres://h/d?sslmode=require"},
		{"postgres://h/d?sslmode=disable", "postgres://h/d?sslmode=disable"},
		{"host=h sslmode=verify-full", "host=h sslmode=verify-full"},
		{"postgres://h/d?sslrootcert=system", "postgres://h/d?sslrootcert=system"},
		{"postgres://h/d?sslnegotiation=direct", "postgres://h/d?sslnegotiation=direct"},
		{"postgres://%zz", "postgres://%zz"},
		{"postgres://h/sslmode_db?search_path=no_sslmode", "postgres://h/sslmode_db?search_path=no_sslmode&sslmode=prefer"},
		{"host=h dbname=sslmode_db", "host=h dbname=sslmode_db sslmode='prefer'"},
		{"host=h SSLMODE = disable", "host=h SSLMODE = disable"},
	}
	for _, c := range cases {
		if got := withPreferredTLS(c.dsn); !strings.Contains(got, c.want) {
			t.Errorf("withPreferredTLS(%q) = %q, want %q", c.dsn, got, c.want)
		}
	}
	t.Setenv("PGSSLMODE", "require")
	if got := withPreferredTLS("postgres://h/d"); got != "postgres://h/d" {
		t.Errorf("with PGSSLMODE set: %q, want the URL unchanged", got)
	}
}
