package dbtest

import (
	"context"
	"strings"
	"testing"

	"github.com/strata-go/strata/db"
)

func TestWithParams(t *testing.T) {
	got, err := db.WithDSNParams("postgres://u:p@h:5432/db?sslmode=disable", map[string]string{"search_path": "s1"})
	if err != nil || !strings.Contains(got, "search_path=s1") || !strings.Contains(got, "sslmode=disable") {
		t.Errorf("URL: %q, %v", got, err)
	}
	got, err = db.WithDSNParams("host=h dbname=db", map[string]string{"application_name": `it's`})
	if err != nil || got != `host=h dbname=db application_name='it\'s'` {
		t.Errorf("key=value: %q, %v", got, err)
	}
}

func TestSchemaName(t *testing.T) {
	a, b := schemaName(t), schemaName(t)
	if a == b || len(a) > 63 || strings.ToLower(a) != a {
		t.Errorf("schema names %q, %q", a, b)
	}
}

// TestSchemasAreIsolatedAndDropped checks that two tests' schemas do not
// see each other's tables and that a schema is gone after its test.
func TestSchemasAreIsolatedAndDropped(t *testing.T) {
	ctx := context.Background()
	var name string
	t.Run("inner", func(t *testing.T) {
		s1, s2 := NewSchema(t), NewSchema(t)
		name = s1.Name
		d1, d2 := Open(t, s1.URL), Open(t, s2.URL)
		if _, err := d1.ExecContext(ctx, `INSERT INTO strata_sessions (session_id, user_id) VALUES ('x', 'u')`); err != nil {
			t.Fatal(err)
		}
		var n int
		if err := d2.GetContext(ctx, &n, `SELECT count(*) FROM strata_sessions`); err != nil || n != 0 {
			t.Errorf("second schema sees %d rows (%v)", n, err)
		}
		var cur string
		if err := d1.GetContext(ctx, &cur, `SELECT current_schema()`); err != nil || cur != s1.Name {
			t.Errorf("current_schema = %q (%v), want %q", cur, err, s1.Name)
		}
	})
	var exists bool
	if err := Admin(t).GetContext(ctx, &exists, `SELECT EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = $1)`, name); err != nil || exists {
		t.Errorf("schema %s still exists after its test (%v)", name, err)
	}
}
