package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database/postgres"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/strata-go/strata/internal/text"
)

// MigrationsTable is the table in which golang-migrate records Strata's
// schema version. It is Strata's own, so it never clashes with the host
// application's schema_migrations. It lives in the connection's current
// schema (the first one of search_path), like Strata's tables.
const MigrationsTable = "strata_schema_migrations"

//go:embed migrations/*.sql
var migrationsFS embed.FS

// ErrMigrateThroughPooler is the error (wrapped) of a migration attempted
// through a connection pooler in transaction mode. golang-migrate
// serializes migrations with a session-level advisory lock and Migrate
// runs on one session without a statement timeout; a transaction-mode
// pooler keeps neither, so migrations need a direct connection to the
// server. Migrate's connection sends statement_timeout=0 as a start-up
// parameter, which such a pooler (PgBouncer with its usual
// ignore_startup_parameters) refuses: that refusal is what is reported.
var ErrMigrateThroughPooler = errors.New("migrations must run over a direct connection to PostgreSQL, " +
	"not through a transaction-mode connection pooler: give `strata migrate` (or db.Migrate's pool) " +
	"the server's own address, e.g. arc.reactor.memory.datasource.url or DATABASE_URL set to the direct URL " +
	"(and migrate-on-start=false for replicas that use the pooled URL)")

// isPoolerRefusal reports whether err is a pooler's refusal of a start-up
// parameter (PgBouncer: "unsupported startup parameter: NAME").
func isPoolerRefusal(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && strings.Contains(pqErr.Message, "unsupported startup parameter")
}

// Migrate applies every pending up migration. It is idempotent: running it
// on an up-to-date database does nothing and returns nil. Concurrent calls
// from several replicas are serialized by golang-migrate's advisory lock.
// Cancelling ctx stops between migration files.
//
// Run it over a direct connection to the server, not through a
// transaction-mode pooler: with a pool made by Open, a pooler that refuses
// start-up parameters gets ErrMigrateThroughPooler.
//
// Each migration file runs statement by statement in one transaction: a
// failure rolls the whole file back and is returned as a *MigrationError
// naming the statement that failed and the command that recovers. A
// database left dirty by an earlier failure is reported as a
// *DirtySchemaError.
//
// On a schema Distribute made a distributed one (Citus), Migrate runs
// Distribute again afterwards, so that a table a migration added is
// distributed and a function it replaced gets its Citus settings back.
func Migrate(ctx context.Context, d *sqlx.DB) error {
	return withMigrateThen(ctx, d, "migrate up", func(m *migrate.Migrate) error {
		if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
			return err
		}
		return nil
	}, func(conn *sql.Conn) error { return redistribute(ctx, conn) })
}

// MigrateDown applies every down migration, removing all of Strata's
// tables and their data. Running it on an empty schema returns nil.
func MigrateDown(ctx context.Context, d *sqlx.DB) error {
	return withMigrate(ctx, d, "migrate down", func(m *migrate.Migrate) error {
		if err := m.Down(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
			return err
		}
		return nil
	})
}

// MigrationVersion reports the applied schema version and whether the last
// migration failed half-way (dirty). It returns 0, false, nil when no
// migration has been applied. It only reads, in one statement on d's pool,
// so it also works through a transaction-mode connection pooler.
func MigrationVersion(ctx context.Context, d *sqlx.DB) (version uint, dirty bool, err error) {
	if d == nil {
		return 0, false, errors.New("db: migration version: nil database")
	}
	var v int64
	err = d.QueryRowContext(ctx, `SELECT version, dirty FROM `+pq.QuoteIdentifier(MigrationsTable)+` LIMIT 1`).Scan(&v, &dirty)
	switch {
	case IsMissingTable(err), errors.Is(err, sql.ErrNoRows):
		return 0, false, nil
	case err != nil:
		return 0, false, fmt.Errorf("db: migration version: %w", classify(ctx, err))
	case v < 0: // golang-migrate's "none" after a force to -1
		return 0, dirty, nil
	}
	return uint(v), dirty, nil
}

// MigrateForce records version as the applied schema version and clears
// the dirty flag, without running any migration. Use it to recover by hand
// after a migration failed half-way; version -1 means "none applied".
func MigrateForce(ctx context.Context, d *sqlx.DB, version int) error {
	if version < -1 {
		return fmt.Errorf("db: migrate force: version %d: want -1 (none) or a migration version", version)
	}
	return withMigrate(ctx, d, "migrate force", func(m *migrate.Migrate) error {
		return m.Force(version)
	})
}

// withMigrate runs fn with a golang-migrate instance bound to one pinned
// connection. Closing that instance releases the connection and leaves d
// open (postgres.WithInstance would close the whole pool).
//
// Migrations may rewrite large tables and wait for other replicas'
// migration lock, so they run without a statement timeout and, for a pool
// made by Open, on a connection of their own outside the pool, free of
// Open's bound on waiting for the server. On any other pool they use one
// of its connections, which goes back with its start-up statement timeout
// restored (or is discarded).
func withMigrate(ctx context.Context, d *sqlx.DB, op string, fn func(*migrate.Migrate) error) (err error) {
	return withMigrateThen(ctx, d, op, fn, nil)
}

// withMigrateThen is withMigrate followed, when fn succeeded, by then on
// the same connection (without a statement timeout either).
func withMigrateThen(ctx context.Context, d *sqlx.DB, op string, fn func(*migrate.Migrate) error, then func(*sql.Conn) error) (err error) {
	if d == nil {
		return fmt.Errorf("db: %s: nil database", op)
	}
	pool := d.DB
	if own, ok := d.Driver().(*pgDriver); ok {
		// Without a statement timeout from the first statement on: the
		// pool's own (which may be shorter than the SET below takes on a
		// busy server) is replaced in the connection's start-up parameters.
		dsn, err := WithDSNParams(own.c.dsn, map[string]string{"statement_timeout": "0"})
		if err != nil {
			return fmt.Errorf("db: %s: %w", op, err)
		}
		c, err := newConnector(dsn, 0, 0, nil)
		if err != nil {
			return fmt.Errorf("db: %s: %w", op, err)
		}
		pool = sql.OpenDB(c)
		defer pool.Close() // runs last, after the migration instance released conn
	}
	conn, err := pool.Conn(ctx)
	if err == nil {
		// The first statement opens the connection: a pooler that refuses
		// the start-up parameter above says so here.
		_, err = conn.ExecContext(ctx, "SET statement_timeout = 0")
		if err != nil {
			_ = conn.Close()
		}
	}
	if err != nil {
		if isPoolerRefusal(err) {
			return fmt.Errorf("db: %s: %w: %w", op, ErrMigrateThroughPooler, err)
		}
		return fmt.Errorf("db: %s: %w", op, classify(ctx, err))
	}
	pg, err := postgres.WithConnection(ctx, conn, &postgres.Config{MigrationsTable: MigrationsTable})
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("db: %s: %w", op, err)
	}
	drv := &statementDriver{Postgres: pg, conn: conn, ctx: context.WithoutCancel(ctx)}
	src, err := iofs.New(migrationsFS, "migrations")
	if err != nil {
		_ = drv.Close()
		return fmt.Errorf("db: %s: %w", op, err)
	}
	m, err := migrate.NewWithInstance("iofs", src, "postgres", drv)
	if err != nil {
		_ = src.Close()
		_ = drv.Close()
		return fmt.Errorf("db: %s: %w", op, err)
	}
	defer func() {
		srcErr, dbErr := m.Close()
		if err == nil {
			if cerr := errors.Join(srcErr, dbErr); cerr != nil {
				err = fmt.Errorf("db: %s: close: %w", op, cerr)
			}
		}
	}()
	defer restoreStatementTimeout(conn) // runs before m.Close returns conn to the pool

	stop := make(chan struct{})
	defer close(stop)
	go func() {
		select {
		case <-ctx.Done():
			select {
			case m.GracefulStop <- true:
			default:
			}
		case <-stop:
		}
	}()

	if err := fn(m); err != nil {
		var dirty migrate.ErrDirty
		if errors.As(err, &dirty) {
			err = &DirtySchemaError{Version: dirty.Version}
		}
		return fmt.Errorf("db: %s: %w", op, classify(ctx, err))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("db: %s: %w", op, err)
	}
	if then != nil {
		if err := then(conn); err != nil {
			return fmt.Errorf("db: %s: %w", op, err)
		}
	}
	return nil
}

// restoreStatementTimeout gives conn back its start-up statement_timeout
// (RESET restores the value of the connection parameters); a connection
// where that fails is discarded instead of returned to the pool.
func restoreStatementTimeout(conn *sql.Conn) {
	ctx, cancel := context.WithTimeout(context.Background(), releaseTimeout)
	defer cancel()
	if _, err := conn.ExecContext(ctx, "RESET statement_timeout"); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
}

// LatestMigration returns the version of the newest embedded migration: the
// schema version Migrate brings a database to.
func LatestMigration() uint {
	entries, _ := migrationsFS.ReadDir("migrations") // embedded: cannot fail
	var latest uint
	for _, e := range entries {
		var v uint
		if _, err := fmt.Sscanf(e.Name(), "%d_", &v); err == nil && v > latest {
			latest = v
		}
	}
	return latest
}

// previousMigration returns the newest embedded migration version below
// version, or -1 when there is none.
func previousMigration(version uint) int {
	entries, _ := migrationsFS.ReadDir("migrations") // embedded: cannot fail
	prev := -1
	for _, e := range entries {
		var v uint
		if _, err := fmt.Sscanf(e.Name(), "%d_", &v); err == nil && v < version && int(v) > prev {
			prev = int(v)
		}
	}
	return prev
}

// statementDriver is golang-migrate's PostgreSQL driver with its own way
// of running a migration file: statement by statement, in one transaction
// on the migration's pinned connection. A failure rolls the file back and
// names the statement that failed (golang-migrate's driver sends the file
// as one query, and its error quotes the whole file).
type statementDriver struct {
	*postgres.Postgres
	conn *sql.Conn
	// ctx runs the statements: the migration's context without its
	// cancellation, so that cancelling stops between files, never half-way
	// through one.
	ctx context.Context
}

// Run runs one migration file.
func (d *statementDriver) Run(migration io.Reader) error {
	body, err := io.ReadAll(migration)
	if err != nil {
		return err
	}
	file, version, up := identifyMigration(body)
	fail := func(st sqlStatement, err error) error {
		if _, rerr := d.conn.ExecContext(d.ctx, "ROLLBACK"); rerr != nil {
			err = errors.Join(err, fmt.Errorf("rollback: %w", rerr))
		}
		me := &MigrationError{File: file, Version: version, Up: up, Line: st.Line,
			Statement: st.Text, Err: err, SchemaVersion: -2}
		if file != "" {
			me.SchemaVersion = int(version)
			if up {
				me.SchemaVersion = previousMigration(version)
			}
		}
		var pqErr *pq.Error
		if errors.As(err, &pqErr) && pqErr.Position != "" {
			var pos int
			if _, serr := fmt.Sscanf(pqErr.Position, "%d", &pos); serr == nil && pos > 0 {
				me.Line = st.Line + strings.Count(text.Cut(st.Text, pos-1), "\n")
			}
		}
		return me
	}
	if _, err := d.conn.ExecContext(d.ctx, "BEGIN"); err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	for _, st := range splitStatements(string(body)) {
		if _, err := d.conn.ExecContext(d.ctx, st.Text); err != nil {
			return fail(st, err)
		}
	}
	if _, err := d.conn.ExecContext(d.ctx, "COMMIT"); err != nil {
		return fail(sqlStatement{Text: "COMMIT", Line: 1 + strings.Count(string(body), "\n")}, err)
	}
	return nil
}

// identifyMigration finds the embedded migration file whose content is
// body: its name, version and direction ("" when none matches).
func identifyMigration(body []byte) (file string, version uint, up bool) {
	entries, _ := migrationsFS.ReadDir("migrations") // embedded: cannot fail
	for _, e := range entries {
		data, err := migrationsFS.ReadFile("migrations/" + e.Name())
		if err != nil || string(data) != string(body) {
			continue
		}
		if _, err := fmt.Sscanf(e.Name(), "%d_", &version); err != nil {
			continue
		}
		return e.Name(), version, strings.HasSuffix(e.Name(), ".up.sql")
	}
	return "", 0, false
}

// MigrationError is a migration statement that failed. Migrate runs each
// migration file in one transaction, so the file was rolled back as a
// whole: the schema is still at SchemaVersion, but golang-migrate has
// recorded the failed migration's target version as dirty, and refuses to
// migrate until the version is forced back (strata migrate force, or
// MigrateForce) once the cause is fixed.
type MigrationError struct {
	// File is the migration file, e.g. "000004_catalog_titles.up.sql"
	// ("" when it could not be identified).
	File string
	// Version is the file's migration version; Up its direction.
	Version uint
	Up      bool
	// Line is the line of File where the error is (where the failed
	// statement starts when PostgreSQL gives no position).
	Line int
	// Statement is the statement that failed, as written in File.
	Statement string
	// SchemaVersion is the version the schema is at after the rollback,
	// the version to force: -1 for none, -2 when unknown.
	SchemaVersion int
	// Err is the database's error.
	Err error
}

// maxStatementShown caps the statement quoted by MigrationError.Error.
const maxStatementShown = 400

// Error names the file, line and statement, the database's error, and the
// commands that recover.
func (e *MigrationError) Error() string {
	stmt := strings.TrimSuffix(strings.Join(strings.Fields(e.Statement), " "), ";")
	stmt = text.Truncate(stmt, maxStatementShown, "…")
	file := e.File
	if file == "" {
		file = "a migration"
	}
	msg := fmt.Sprintf("%s failed at line %d: %v; failed statement: %s", file, e.Line, e.Err, stmt)
	if e.SchemaVersion < -1 {
		return msg + "; the file was rolled back but the schema is recorded as dirty: check `strata migrate version`, then force the version the schema is at with `strata migrate force VERSION`"
	}
	at := "none"
	if e.SchemaVersion >= 0 {
		at = fmt.Sprint(e.SchemaVersion)
	}
	return msg + fmt.Sprintf("; the file was rolled back, so the schema is still at version %s but is recorded as dirty: "+
		"fix the cause, then run `strata migrate force %d` and `strata migrate up` again", at, e.SchemaVersion)
}

// Unwrap returns the database's error.
func (e *MigrationError) Unwrap() error { return e.Err }

// DirtySchemaError reports a schema version recorded as dirty by an
// earlier failed migration: migrations refuse to run until the version is
// forced to the one the schema is at.
type DirtySchemaError struct {
	// Version is the dirty version recorded.
	Version int
}

// Error says how to recover.
func (e *DirtySchemaError) Error() string {
	prev := -1
	if e.Version >= 0 {
		prev = previousMigration(uint(e.Version))
	}
	at := "none"
	if prev >= 0 {
		at = fmt.Sprint(prev)
	}
	msg := fmt.Sprintf("the schema is recorded as dirty at version %d: an earlier migration failed and was rolled back. "+
		"If it was migration %d going up, the schema is still at version %s: fix the cause, then run `strata migrate force %d` and `strata migrate up`",
		e.Version, e.Version, at, prev)
	if next := nextMigration(e.Version); next > 0 {
		msg += fmt.Sprintf(" (if migration %d failed going down, it is at version %d: `strata migrate force %d`)", next, next, next)
	}
	return msg
}

// nextMigration returns the oldest embedded migration version above
// version, or -1 when there is none.
func nextMigration(version int) int {
	entries, _ := migrationsFS.ReadDir("migrations") // embedded: cannot fail
	next := -1
	for _, e := range entries {
		var v int
		if _, err := fmt.Sscanf(e.Name(), "%d_", &v); err == nil && v > version && (next < 0 || v < next) {
			next = v
		}
	}
	return next
}

// sqlStatement is one statement of a migration file and the line it starts
// on.
type sqlStatement struct {
	Text string
	Line int
}

// splitStatements splits a PostgreSQL script at the semicolons that end
// statements, skipping those in quotes ('…', E'…', "…", $tag$…$tag$) and
// comments (--, nested /* */). Statements are returned without their
// leading comments; pieces holding only comments and spaces are dropped.
func splitStatements(script string) []sqlStatement {
	var out []sqlStatement
	start := 0
	flush := func(end int) {
		piece := script[start:end]
		skip := skipSpaceAndComments(piece)
		if text := strings.TrimSpace(piece[skip:]); text != "" && text != ";" {
			out = append(out, sqlStatement{Text: text, Line: 1 + strings.Count(script[:start+skip], "\n")})
		}
		start = end
	}
	n := len(script)
	for i := 0; i < n; {
		c := script[i]
		switch {
		case c == '-' && i+1 < n && script[i+1] == '-':
			i = skipLineComment(script, i)
		case c == '/' && i+1 < n && script[i+1] == '*':
			i = skipBlockComment(script, i)
		case c == '\'':
			escapes := i > 0 && (script[i-1] == 'E' || script[i-1] == 'e') && (i < 2 || !isIdentByte(script[i-2]))
			i = skipQuoted(script, i, '\'', escapes)
		case c == '"':
			i = skipQuoted(script, i, '"', false)
		case c == '$' && (i == 0 || !isIdentByte(script[i-1])):
			if tag := dollarTag(script[i:]); tag != "" {
				if end := strings.Index(script[i+len(tag):], tag); end >= 0 {
					i += len(tag) + end + len(tag)
				} else {
					i = n
				}
			} else {
				i++
			}
		case c == ';':
			i++
			flush(i)
		default:
			i++
		}
	}
	flush(n)
	return out
}

// skipSpaceAndComments returns the offset of the first character of s that
// is neither space nor inside a comment.
func skipSpaceAndComments(s string) int {
	i := 0
	for i < len(s) {
		switch {
		case s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r' || s[i] == '\f':
			i++
		case strings.HasPrefix(s[i:], "--"):
			i = skipLineComment(s, i)
		case strings.HasPrefix(s[i:], "/*"):
			i = skipBlockComment(s, i)
		default:
			return i
		}
	}
	return i
}

func skipLineComment(s string, i int) int {
	if j := strings.IndexByte(s[i:], '\n'); j >= 0 {
		return i + j + 1
	}
	return len(s)
}

// skipBlockComment skips a /* */ comment, which nests in PostgreSQL.
func skipBlockComment(s string, i int) int {
	depth := 0
	for i < len(s) {
		switch {
		case strings.HasPrefix(s[i:], "/*"):
			depth++
			i += 2
		case strings.HasPrefix(s[i:], "*/"):
			depth--
			i += 2
			if depth == 0 {
				return i
			}
		default:
			i++
		}
	}
	return i
}

// skipQuoted skips a quoted string or identifier starting at s[i] == q; a
// doubled quote is part of it, as is a backslash-escaped character when
// escapes (E'…' strings).
func skipQuoted(s string, i int, q byte, escapes bool) int {
	for i++; i < len(s); i++ {
		switch {
		case escapes && s[i] == '\\':
			i++
		case s[i] == q:
			if i+1 < len(s) && s[i+1] == q {
				i++
				continue
			}
			return i + 1
		}
	}
	return len(s)
}

// dollarTag returns the dollar-quote tag s starts with ("$$", "$body$"), or
// "" when s does not start with one.
func dollarTag(s string) string {
	for j := 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '$':
			return s[:j+1]
		case c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= 0x80:
		case c >= '0' && c <= '9' && j > 1:
		default:
			return ""
		}
	}
	return ""
}

func isIdentByte(c byte) bool {
	return c == '_' || c == '$' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

// ErrSchemaNotMigrated means that the database lacks Strata's schema, or
// holds an older version of it than this build needs.
var ErrSchemaNotMigrated = errors.New("the database schema is missing or not migrated: run `strata migrate up` (or db.Migrate)")

// CheckSchema returns nil when d's schema is at LatestMigration or newer
// and clean. Otherwise it returns an error wrapping ErrSchemaNotMigrated
// (no migration applied, or an older version), or a *DirtySchemaError. It
// only reads: golang-migrate's version table is not created when missing.
func CheckSchema(ctx context.Context, d *sqlx.DB) error {
	if d == nil {
		return errors.New("db: check schema: nil database")
	}
	var version int64
	var dirty bool
	err := d.QueryRowContext(ctx, `SELECT version, dirty FROM `+pq.QuoteIdentifier(MigrationsTable)+` LIMIT 1`).Scan(&version, &dirty)
	switch {
	case IsMissingTable(err), errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("db: no migration applied: %w", ErrSchemaNotMigrated)
	case err != nil:
		return fmt.Errorf("db: check schema: %w", classify(ctx, err))
	case dirty:
		return fmt.Errorf("db: %w", &DirtySchemaError{Version: int(version)})
	case version < int64(LatestMigration()):
		return fmt.Errorf("db: schema version %d, this build needs %d: %w", version, LatestMigration(), ErrSchemaNotMigrated)
	}
	return nil
}

// IsMissingTable reports whether err is PostgreSQL's undefined_table
// (SQLSTATE 42P01): a query ran against a database that lacks one of the
// tables it names, typically one Strata's migrations were never applied to.
func IsMissingTable(err error) bool {
	var pqErr *pq.Error
	return errors.As(err, &pqErr) && pqErr.Code == "42P01"
}
