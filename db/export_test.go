package db

import (
	"context"
	"errors"

	"github.com/golang-migrate/migrate/v4"
	"github.com/jmoiron/sqlx"
)

// TailSQL exposes the Tail query to the external tests, which inspect its
// plan.
const TailSQL = tailSQL

// SnapshotSQL exposes the Snapshot query to the external tests, which
// inspect its plan.
const SnapshotSQL = snapshotSQL

// MigrateTo migrates d up or down to version, for the tests of a
// migration's handling of existing data.
func MigrateTo(ctx context.Context, d *sqlx.DB, version uint) error {
	return withMigrate(ctx, d, "migrate to", func(m *migrate.Migrate) error {
		if err := m.Migrate(version); err != nil && !errors.Is(err, migrate.ErrNoChange) {
			return err
		}
		return nil
	})
}
