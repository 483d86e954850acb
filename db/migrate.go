package db

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"embed"
	"errors"
	"fmt"

	"github.com/golang-migrate/migrate/v4"
	"github.com/golang-migrate/migrate/v4/database/postgres"
	"github.com/golang-migrate/migrate/v4/source/iofs"
	"github.com/jmoiron/sqlx"
)

// MigrationsTable is the table in which golang-migrate records Strata's
// schema version. It is Strata's own, so it never clashes with the host
// application's schema_migrations. It lives in the connection's current
// schema (the first one of search_path), like Strata's tables.
const MigrationsTable = "strata_schema_migrations"

//go:embed migrations/*.sql
var migrationsFS embed.FS

// Migrate applies every pending up migration. It is idempotent: running it
// on an up-to-date database does nothing and returns nil. Concurrent calls
// from several replicas are serialized by golang-migrate's advisory lock.
// Cancelling ctx stops between migration files.
func Migrate(ctx context.Context, d *sqlx.DB) error {
	return withMigrate(ctx, d, "migrate up", func(m *migrate.Migrate) error {
		if err := m.Up(); err != nil && !errors.Is(err, migrate.ErrNoChange) {
			return err
		}
		return nil
	})
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
// migration has been applied.
func MigrationVersion(ctx context.Context, d *sqlx.DB) (version uint, dirty bool, err error) {
	err = withMigrate(ctx, d, "migration version", func(m *migrate.Migrate) error {
		var verr error
		version, dirty, verr = m.Version()
		if errors.Is(verr, migrate.ErrNilVersion) {
			version, dirty, verr = 0, false, nil
		}
		return verr
	})
	return version, dirty, err
}

// MigrateForce records version as the applied schema version and clears
// the dirty flag, without running any migration. Use it to recover by hand
// after a migration failed half-way; version -1 means "none applied".
func MigrateForce(ctx context.Context, d *sqlx.DB, version int) error {
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
	if d == nil {
		return fmt.Errorf("db: %s: nil database", op)
	}
	pool := d.DB
	if own, ok := d.Driver().(*pgDriver); ok {
		c, err := newConnector(own.c.dsn, 0)
		if err != nil {
			return fmt.Errorf("db: %s: %w", op, err)
		}
		pool = sql.OpenDB(c)
		defer pool.Close() // runs last, after the migration instance released conn
	}
	conn, err := pool.Conn(ctx)
	if err != nil {
		return fmt.Errorf("db: %s: %w", op, classify(ctx, err))
	}
	if _, err := conn.ExecContext(ctx, "SET statement_timeout = 0"); err != nil {
		_ = conn.Close()
		return fmt.Errorf("db: %s: %w", op, classify(ctx, err))
	}
	drv, err := postgres.WithConnection(ctx, conn, &postgres.Config{MigrationsTable: MigrationsTable})
	if err != nil {
		_ = conn.Close()
		return fmt.Errorf("db: %s: %w", op, err)
	}
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
		return fmt.Errorf("db: %s: %w", op, classify(ctx, err))
	}
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("db: %s: %w", op, err)
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
