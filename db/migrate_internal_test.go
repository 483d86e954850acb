package db

import (
	"strings"
	"testing"
)

func TestSplitStatements(t *testing.T) {
	t.Parallel()
	script := `-- leading comment; with a semicolon
CREATE TABLE a (x text DEFAULT 'it''s; fine'); /* block; /* nested; */ still; */
INSERT INTO "odd;name" VALUES (E'back\'slash; here');
DO $$
BEGIN
    PERFORM 1; -- inside the body
END
$$;
CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $body$ SELECT 1; $body$;
SELECT $1x; -- not a dollar quote
-- trailing comment only
`
	got := splitStatements(script)
	want := []sqlStatement{
		{`CREATE TABLE a (x text DEFAULT 'it''s; fine');`, 2},
		{`INSERT INTO "odd;name" VALUES (E'back\'slash; here');`, 3},
		{"DO $$\nBEGIN\n    PERFORM 1; -- inside the body\nEND\n$$;", 4},
		{`CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $body$ SELECT 1; $body$;`, 9},
		{`SELECT $1x;`, 10},
	}
	if len(got) != len(want) {
		t.Fatalf("%d statements, want %d: %q", len(got), len(want), got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("statement %d = %q line %d, want %q line %d", i+1, got[i].Text, got[i].Line, want[i].Text, want[i].Line)
		}
	}
}

// TestEmbeddedMigrationsSplit: every embedded file splits into statements
// that hold all of its code, each ending with a semicolon.
func TestEmbeddedMigrationsSplit(t *testing.T) {
	t.Parallel()
	entries, err := migrationsFS.ReadDir("migrations")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		data, err := migrationsFS.ReadFile("migrations/" + e.Name())
		if err != nil {
			t.Fatal(err)
		}
		sts := splitStatements(string(data))
		if len(sts) == 0 {
			t.Errorf("%s: no statement", e.Name())
		}
		for _, st := range sts {
			if !strings.HasSuffix(st.Text, ";") {
				t.Errorf("%s:%d: statement does not end with ';': %q", e.Name(), st.Line, st.Text)
			}
			lines := strings.Split(string(data), "\n")
			first, _, _ := strings.Cut(st.Text, "\n")
			if !strings.Contains(lines[st.Line-1], first) {
				t.Errorf("%s:%d: line is %q, statement starts %q", e.Name(), st.Line, lines[st.Line-1], first)
			}
		}
		if file, _, up := identifyMigration(data); file != e.Name() || up != strings.HasSuffix(e.Name(), ".up.sql") {
			t.Errorf("identifyMigration(%s) = %q, %v", e.Name(), file, up)
		}
	}
	if previousMigration(1) != -1 || previousMigration(3) != 2 {
		t.Errorf("previousMigration(1) = %d, previousMigration(3) = %d", previousMigration(1), previousMigration(3))
	}
}

func TestMigrationErrorMessages(t *testing.T) {
	t.Parallel()
	long := "INSERT INTO t VALUES ('" + strings.Repeat("x", 1000) + "');"
	e := &MigrationError{File: "000002_catalog.up.sql", Version: 2, Up: true, Line: 7, Statement: "  " + long,
		SchemaVersion: 1, Err: errString("boom")}
	msg := e.Error()
	for _, want := range []string{"000002_catalog.up.sql failed at line 7: boom", "failed statement: INSERT INTO t VALUES ('xxx",
		"…", "still at version 1", "`strata migrate force 1`"} {
		if !strings.Contains(msg, want) {
			t.Errorf("message lacks %q: %s", want, msg)
		}
	}
	if len([]rune(msg)) > maxStatementShown+400 {
		t.Errorf("the statement is not shortened: %d characters", len(msg))
	}
	d := (&DirtySchemaError{Version: 3}).Error()
	if !strings.Contains(d, "`strata migrate force 2`") || !strings.Contains(d, "if migration 4 failed going down") {
		t.Errorf("DirtySchemaError = %s", d)
	}
}

type errString string

func (e errString) Error() string { return string(e) }
