package runner

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/jmoiron/sqlx"
	"github.com/lib/pq"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
)

// errNoPostgres marks PostgreSQL parts skipped for want of a server.
var errNoPostgres = errors.New("no PostgreSQL: DATABASE_URL is unset")

// pgEnv is the run's PostgreSQL: a fresh schema, migrated, on the server
// of Options.DatabaseURL, dropped when the run ends.
type pgEnv struct {
	admin  *sqlx.DB
	schema string
	url    string
	d      *sqlx.DB
}

// postgres opens the run's schema on first use.
func (r *runner) postgres(ctx context.Context) (*pgEnv, error) {
	if r.pg != nil || r.pgErr != nil {
		return r.pg, r.pgErr
	}
	if strings.TrimSpace(r.opts.DatabaseURL) == "" {
		r.pgErr = errNoPostgres
		return nil, r.pgErr
	}
	r.pg, r.pgErr = openPG(ctx, r.opts.DatabaseURL, "strata_bench_")
	if r.pgErr == nil {
		var v, fsync, sync, fpw string
		if err := r.pg.d.GetContext(ctx, &v, "SHOW server_version"); err == nil {
			r.env.Postgres = v
			// Durability settings change write latency a lot: say which.
			_ = r.pg.d.GetContext(ctx, &fsync, "SHOW fsync")
			_ = r.pg.d.GetContext(ctx, &sync, "SHOW synchronous_commit")
			_ = r.pg.d.GetContext(ctx, &fpw, "SHOW full_page_writes")
			r.env.Postgres += fmt.Sprintf(" (fsync=%s, synchronous_commit=%s, full_page_writes=%s)", fsync, sync, fpw)
			r.env.Durable = fsync == "on" && sync != "off" && fpw == "on"
		}
		r.progress("PostgreSQL %s, schema %s", r.env.Postgres, r.pg.schema)
	}
	return r.pg, r.pgErr
}

func (r *runner) closePG() {
	if r.pg != nil {
		r.pg.close()
	}
}

// pgSummary describes the PostgreSQL used, for the report header.
func (r *runner) pgSummary() string {
	switch {
	case r.pg != nil:
		return r.env.Postgres + " (DATABASE_URL; a throwaway schema, dropped afterwards)"
	case r.pgErr != nil && !errors.Is(r.pgErr, errNoPostgres):
		return "unavailable: " + r.pgErr.Error()
	case strings.TrimSpace(r.opts.DatabaseURL) == "":
		return "not used: DATABASE_URL is unset, so the PostgreSQL parts (sections 3, 6, 8) were skipped"
	default:
		return "not needed by the selected sections"
	}
}

// openPG creates a schema of its own, named prefix and random hex digits,
// on the server of base and migrates it.
func openPG(ctx context.Context, base, prefix string) (*pgEnv, error) {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	adminURL, err := db.WithDSNParams(base, map[string]string{"application_name": "strata-bench-admin"})
	if err != nil {
		return nil, err
	}
	admin, err := db.Open(ctx, adminURL)
	if err != nil {
		return nil, err
	}
	var b [6]byte
	_, _ = rand.Read(b[:])
	p := &pgEnv{admin: admin, schema: prefix + hex.EncodeToString(b[:])}
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+pq.QuoteIdentifier(p.schema)); err != nil {
		_ = admin.Close()
		return nil, fmt.Errorf("create schema: %w", err)
	}
	p.url, err = db.WithDSNParams(base, map[string]string{"search_path": p.schema, "application_name": p.schema})
	if err == nil {
		p.d, err = db.Open(ctx, p.url)
	}
	if err == nil {
		err = db.Migrate(ctx, p.d)
	}
	if err != nil {
		p.close()
		return nil, err
	}
	return p, nil
}

// checkpoint writes out the dirty pages of whatever ran before, so that
// flushing them does not land inside the next measurement. It reports
// whether the server accepted (CHECKPOINT needs a superuser or the
// pg_checkpoint role; without them measurements go on unsettled).
func (p *pgEnv) checkpoint(ctx context.Context) bool {
	_, err := p.admin.ExecContext(ctx, "CHECKPOINT")
	return err == nil
}

// pool opens another pool on the run's schema (closed by the caller).
func (p *pgEnv) pool(ctx context.Context) (*sqlx.DB, error) { return db.Open(ctx, p.url) }

func (p *pgEnv) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if p.d != nil {
		_ = p.d.Close()
	}
	_, _ = p.admin.ExecContext(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
		WHERE application_name = $1 AND pid <> pg_backend_pid()`, p.schema)
	_, _ = p.admin.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+pq.QuoteIdentifier(p.schema)+" CASCADE")
	_ = p.admin.Close()
}

// seedPG stores n alternating user/assistant messages in a new session with
// one INSERT … SELECT generate_series (bypassing Append, for speed), with
// the same texts as the in-memory seeding (seedText), numbered 1…n as the
// session's counter (seq_counter) records, so that later appends go on
// from n.
func seedPG(ctx context.Context, d *sqlx.DB, session string, n int) error {
	const (
		sessionSQL  = `INSERT INTO strata_sessions (session_id, user_id, message_count, seq_counter) VALUES ($1, $2, $3, $3)`
		messagesSQL = `
			INSERT INTO strata_messages (seq, session_id, role, content, user_id)
			SELECT g, $1, CASE WHEN g % 2 = 1 THEN 'user' ELSE 'assistant' END,
			       'message ' || g || ': ' || $3, $2
			  FROM generate_series(1, $4::int) AS g
			 ORDER BY g`
	)
	if _, err := d.ExecContext(ctx, sessionSQL, session, benchUser, n); err != nil {
		return fmt.Errorf("seed %s: %w", session, err)
	}
	if _, err := d.ExecContext(ctx, messagesSQL, session, benchUser, seedFiller, n); err != nil {
		return fmt.Errorf("seed %s: %w", session, err)
	}
	if _, err := d.ExecContext(ctx, `ANALYZE strata_sessions, strata_messages`); err != nil {
		return fmt.Errorf("seed %s: analyze: %w", session, err)
	}
	return nil
}

// benchUser owns every session the benchmarks create.
const benchUser = "bench-user"

// seedFiller pads seeded messages to a typical chat message length.
var seedFiller = strings.Repeat("lorem ipsum dolor sit amet ", 8)

// seedText is the text of the g-th seeded message (1-based).
func seedText(g int) string { return fmt.Sprintf("message %d: %s", g, seedFiller) }

// benchDB is a database of its own on the run's server, migrated over the
// direct URL, reachable directly and, when the run has a pooler, through it.
type benchDB struct {
	name           string
	direct, pooled string // URLs; pooled is "" without a pooler
	admin          *sqlx.DB
}

// newDatabase creates a fresh database named after purpose on the run's
// server (the role must be allowed to create databases) and migrates it
// over the direct URL. Its drop method removes it.
func (r *runner) newDatabase(ctx context.Context, purpose string) (*benchDB, error) {
	pg, err := r.postgres(ctx)
	if err != nil {
		return nil, err
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	name := "strata_bench_" + purpose + "_" + hex.EncodeToString(b[:])
	if _, err := pg.admin.ExecContext(ctx, "CREATE DATABASE "+pq.QuoteIdentifier(name)); err != nil {
		return nil, fmt.Errorf("create database: %w", err)
	}
	bd := &benchDB{name: name, admin: pg.admin}
	if bd.direct, err = dbtest.WithDatabase(r.opts.DatabaseURL, name); err == nil && r.opts.PoolerURL != "" {
		bd.pooled, err = dbtest.WithDatabase(r.opts.PoolerURL, name)
	}
	if err != nil {
		bd.drop()
		return nil, err
	}
	d, err := db.Open(ctx, bd.direct)
	if err == nil {
		err = db.Migrate(ctx, d)
		_ = d.Close()
	}
	if err != nil {
		bd.drop()
		return nil, err
	}
	return bd, nil
}

// drop removes the database, disconnecting whatever is still connected.
func (bd *benchDB) drop() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _ = bd.admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+pq.QuoteIdentifier(bd.name)+" WITH (FORCE)")
}
