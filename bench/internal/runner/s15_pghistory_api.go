package runner

import (
	"context"
	"errors"
	"io"
	"time"

	lcschema "github.com/tmc/langchaingo/schema"
)

// This file is the part of section 15 that a program outside this package
// drives: the peer harness in bench/peers (a module of its own, so that
// the root module never depends on langchaingo's AlloyDB/Cloud SQL
// helpers and their Google Cloud dependencies) plugs langchaingo's own
// PostgreSQL chat history in as a PGHistoryPeer and renders the section
// with RunPGHistory.

// PGHistory is one table of a chat history that another library keeps in
// PostgreSQL.
type PGHistory interface {
	// Open returns the history of one session, as the library's users
	// build it (it may query the database, e.g. to validate its table).
	Open(ctx context.Context, sessionID string) (lcschema.ChatMessageHistory, error)
	// Seed stores n messages in sessionID, alternately human and AI (the
	// first human), the g-th (1-based) with the text "message g: " +
	// filler, in the rows and format the library itself writes, in as few
	// statements as it can: the section's sessions are long.
	Seed(ctx context.Context, sessionID string, n int, filler string) error
	// Close releases the table's connections.
	Close()
}

// PGHistoryPeer is a PostgreSQL chat history supplied from outside this
// package.
type PGHistoryPeer struct {
	// Name is the history's row name in the tables.
	Name string
	// Description is Markdown saying what the history is and how it is
	// configured, rendered as one bullet of the section.
	Description string
	// Open creates the history's table (an index on (session_id, id) when
	// indexed) in schema on the database at url and returns it.
	Open func(ctx context.Context, url, schema, table string, indexed bool) (PGHistory, error)
}

// PGHistoryOptions configures RunPGHistory.
type PGHistoryOptions struct {
	// DatabaseURL is the PostgreSQL server; the run uses a throwaway
	// schema on it and drops it afterwards.
	DatabaseURL string
	// DataDir holds tau-bench/ (read in place).
	DataDir string
	// Quick is a smoke run: small sizes, short timings.
	Quick bool
	// Command is the command line shown in the section.
	Command string
	// Progress receives progress lines (nil: discarded).
	Progress io.Writer
}

// SectionReport is one section rendered by a program outside this
// package.
type SectionReport struct {
	// Body is the section's Markdown, without its heading.
	Body string `json:"body"`
	// Headlines are the section's headline lines.
	Headlines []string `json:"headlines"`
	// Files are the plots the body refers to, by file name.
	Files map[string][]byte `json:"files,omitempty"`
}

// RunPGHistory measures Strata beside peer on one PostgreSQL database and
// renders section 15.
func RunPGHistory(ctx context.Context, opts PGHistoryOptions, peer PGHistoryPeer) (*SectionReport, error) {
	if opts.DatabaseURL == "" {
		return nil, errNoPostgres
	}
	if peer.Open == nil {
		return nil, errors.New("runner: the peer has no Open")
	}
	if opts.Command == "" {
		opts.Command = "go run ./bench/cmd/strata-bench -sections 15"
	}
	r, err := newRunner(Options{DataDir: opts.DataDir, Quick: opts.Quick, Command: opts.Command, Progress: opts.Progress, DatabaseURL: opts.DatabaseURL}, time.Now())
	if err != nil {
		return nil, err
	}
	defer r.closePG()
	out := &sectionOut{}
	if err := r.pgHistoryBody(ctx, peer, out); err != nil {
		return nil, err
	}
	return &SectionReport{Body: out.body.String(), Headlines: out.headlines, Files: out.files}, nil
}
