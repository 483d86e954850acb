package main

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/strata-go/strata/inspector"
	"github.com/strata-go/strata/memory"
)

// writeInspectHTML writes the inspector's page of the session to path,
// replacing the file only once the page is whole.
func writeInspectHTML(ctx context.Context, mgr *memory.Manager, session, user string, turn int, path string, stdout io.Writer) error {
	var buf bytes.Buffer
	if err := inspector.Write(ctx, &buf, mgr, session, user, inspector.Options{Turn: turn}); err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	tmp, err := os.CreateTemp(filepath.Dir(path), ".strata-inspect-*.html")
	if err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	defer func() { _ = os.Remove(tmp.Name()) }()
	if _, err := tmp.Write(buf.Bytes()); err != nil {
		_ = tmp.Close()
		return fmt.Errorf("inspect: write %s: %w", path, err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("inspect: write %s: %w", path, err)
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return fmt.Errorf("inspect: %w", err)
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return fmt.Errorf("inspect: write %s: %w", path, err)
	}
	_, err = fmt.Fprintf(stdout, "wrote %s (%d bytes)\n", path, buf.Len())
	return err
}
