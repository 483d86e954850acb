package autoconfig

import (
	"errors"
	"strings"

	"github.com/strata-go/strata/db"
)

// ErrInvalidConfig is wrapped by every *Error: an unknown key, a value of
// the wrong type, or a value outside its allowed range.
var ErrInvalidConfig = errors.New("invalid config")

// Error reports a configuration problem with one key. Its message names the
// key, the value, where the value came from and what is allowed, on one
// line:
//
//	invalid config: arc.reactor.memory.summary.recent-message-count = 0 (from strata.yaml): must be >= 1
type Error struct {
	// Key is the configuration key, or the environment variable for an
	// unknown ARC_REACTOR_MEMORY_* variable.
	Key string
	// Value is the offending value as text ("" when not relevant); secrets
	// are masked.
	Value string
	// Source says where the value came from: a file name, "environment
	// variable NAME", "override" or "default".
	Source string
	// Msg says what is wrong and what is allowed.
	Msg string
}

// Error implements error.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("invalid config: ")
	b.WriteString(e.Key)
	if e.Value != "" {
		b.WriteString(" = ")
		b.WriteString(e.Value)
	}
	if e.Source != "" && e.Source != "default" {
		b.WriteString(" (from ")
		b.WriteString(e.Source)
		b.WriteString(")")
	}
	b.WriteString(": ")
	b.WriteString(e.Msg)
	return oneLine(b.String())
}

// Unwrap returns ErrInvalidConfig.
func (e *Error) Unwrap() error { return ErrInvalidConfig }

func newError(key, value, source, msg string) *Error {
	return &Error{Key: key, Value: value, Source: source, Msg: msg}
}

// oneLine collapses white space runs (including newlines from YAML parser
// errors) into single spaces.
func oneLine(s string) string { return strings.Join(strings.Fields(s), " ") }

// redact masks the password of a connection string.
func redact(dsn string) string { return db.RedactDSN(dsn) }
