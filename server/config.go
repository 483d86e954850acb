package server

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/strata-go/strata/internal/owner"
	"github.com/strata-go/strata/memory/store"
)

// Defaults of a Config's zero fields. Configuration layers (package
// autoconfig) take their defaults from these.
const (
	// DefaultMaxBodyBytes caps request bodies: 1 MiB.
	DefaultMaxBodyBytes = 1 << 20
	// DefaultReadHeaderTimeout bounds reading a request's headers: 10 s.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds reading a whole request: 30 s.
	DefaultReadTimeout = 30 * time.Second
	// DefaultWriteTimeout bounds handling a request and writing its
	// response: 90 s, above a summarizer's usual timeout (a context load
	// may fold synchronously).
	DefaultWriteTimeout = 90 * time.Second
	// DefaultIdleTimeout closes idle keep-alive connections: 2 min.
	DefaultIdleTimeout = 2 * time.Minute
	// DefaultShutdownTimeout bounds a graceful shutdown: 30 s.
	DefaultShutdownTimeout = 30 * time.Second
	// DefaultMaxHistoryBytes caps the messages of one page of
	// GET /v1/sessions/{id}: 8 MiB of JSON.
	DefaultMaxHistoryBytes = 8 << 20
	// MinKeyLength is the shortest API key accepted.
	MinKeyLength = 16
	// DefaultKeysFileInterval is how often, at most, the keys file
	// (Config.KeysFile) is read again to pick up added and removed keys: 5 s.
	DefaultKeysFileInterval = 5 * time.Second
)

// Config configures a Server. Zero durations and sizes mean the defaults
// above; Addr is used by ListenAndServe only.
type Config struct {
	// Addr is the TCP address ListenAndServe listens on.
	Addr string
	// APIKeys are the accepted keys, each bound to one user id (or, for a
	// service key, acting for the user each request names). At least one
	// key, here or in KeysFile, is required.
	APIKeys []APIKey
	// KeysFile names a file of more keys, added to APIKeys: one key per
	// line, "USER-ID SHA256-HEX" for a user key or "NAME SHA256-HEX
	// service" for a service key (blank lines and lines starting with #
	// are skipped; only digests, never keys, are written there). The
	// server reads it at New, which fails when it cannot, and again at
	// most every KeysFileInterval, on the next request after the interval:
	// keys added to it work, and keys removed from it stop working,
	// without a restart. A file that no longer reads or parses is logged
	// and the keys loaded before stay in force. At most 1 MiB and 10000
	// keys.
	KeysFile string
	// KeysFileInterval is how often, at most, KeysFile is read again; 0
	// means DefaultKeysFileInterval.
	KeysFileInterval time.Duration
	// MaxBodyBytes caps request bodies (413 beyond).
	MaxBodyBytes int64
	// ReadHeaderTimeout, ReadTimeout, WriteTimeout and IdleTimeout are
	// net/http's. WriteTimeout also bounds each request's context, so a
	// slow store call is abandoned when the response could no longer be
	// written.
	ReadHeaderTimeout time.Duration
	ReadTimeout       time.Duration
	WriteTimeout      time.Duration
	IdleTimeout       time.Duration
	// ShutdownTimeout bounds a graceful shutdown: in-flight requests, then
	// background folds.
	ShutdownTimeout time.Duration
	// ContextBudget is the token budget of GET /v1/sessions/{id}/context
	// when the request has no budget parameter. 0 (or a value above it)
	// means the manager's budget: its context window minus its output
	// reserve. No context is ever larger than the manager's budget.
	ContextBudget int
	// MaxHistoryBytes caps the JSON of the messages of one page of
	// GET /v1/sessions/{id}, beside the page's count limit: a page ends
	// before the message that would take it past the cap, and its
	// next_after_seq gets the rest. A page holds at least one message, so a
	// single message larger than the cap (up to the manager's
	// MaxMessageBytes) is still served, alone. Pages are read from the store
	// in chunks sized from this cap and the manager's MaxMessageBytes, so a
	// request holds a bounded amount of memory. 0 means
	// DefaultMaxHistoryBytes.
	MaxHistoryBytes int64
}

// APIKey is one accepted key: either the key itself (Key) or the hex
// SHA-256 digest of it (SHA256), and the user id it authenticates. The
// Server keeps only digests; Key is hashed by New and never stored.
type APIKey struct {
	// UserID is the user every request made with the key acts as; for a
	// service key, the name of the service (logged, never acted as).
	UserID string
	// Service makes the key a service key, for a backend that
	// authenticates its own users: each request acts for the user it names
	// in the UserHeader header, with the same ownership checks as that
	// user's own key. A user key (Service false) may not send the header.
	Service bool
	// Key is the key itself (at least MinKeyLength characters).
	Key string
	// SHA256 is the key's hex SHA-256 digest (HashKey), instead of Key.
	SHA256 string
	// Plaintext marks a key written in plain text in a configuration file;
	// New logs a warning for it.
	Plaintext bool
}

// HashKey returns the hex SHA-256 digest of an API key, the form APIKey's
// SHA256 takes (the same as `printf %s KEY | sha256sum`).
func HashKey(key string) string {
	h := sha256.Sum256([]byte(key))
	return hex.EncodeToString(h[:])
}

// withDefaults fills the zero fields.
func (c Config) withDefaults() Config {
	def := func(d *time.Duration, v time.Duration) {
		if *d == 0 {
			*d = v
		}
	}
	if c.MaxBodyBytes == 0 {
		c.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if c.MaxHistoryBytes == 0 {
		c.MaxHistoryBytes = DefaultMaxHistoryBytes
	}
	def(&c.ReadHeaderTimeout, DefaultReadHeaderTimeout)
	def(&c.ReadTimeout, DefaultReadTimeout)
	def(&c.WriteTimeout, DefaultWriteTimeout)
	def(&c.IdleTimeout, DefaultIdleTimeout)
	def(&c.ShutdownTimeout, DefaultShutdownTimeout)
	def(&c.KeysFileInterval, DefaultKeysFileInterval)
	return c
}

// validate checks a Config after withDefaults.
func (c Config) validate() error {
	switch {
	case c.MaxBodyBytes < 1024:
		return fmt.Errorf("server: MaxBodyBytes = %d, want >= 1024", c.MaxBodyBytes)
	case c.ReadHeaderTimeout < 0 || c.ReadTimeout < 0 || c.WriteTimeout < 0 || c.IdleTimeout < 0 || c.ShutdownTimeout < 0 || c.KeysFileInterval < 0:
		return errors.New("server: timeouts must be > 0")
	case c.MaxHistoryBytes < 1024:
		return fmt.Errorf("server: MaxHistoryBytes = %d, want >= 1024", c.MaxHistoryBytes)
	case c.ContextBudget < 0:
		return fmt.Errorf("server: ContextBudget = %d, want >= 0", c.ContextBudget)
	case len(c.APIKeys) == 0 && c.KeysFile == "":
		return errors.New("server: no API keys configured")
	}
	return nil
}

// reservedUser reports whether id is, in any case, an owner the stores
// record for sessions of no single user: a key (or a request) acting as
// it would read the sessions saved without a user id, or every shared
// session.
func reservedUser(id string) bool {
	return strings.EqualFold(id, store.AnonymousUser) || strings.EqualFold(id, owner.Shared)
}

// keyring holds the SHA-256 digests of the accepted keys, their users and
// which are service keys.
type keyring struct {
	hashes  [][sha256.Size]byte
	users   []string
	service []bool
}

func newKeyring(keys []APIKey) (*keyring, error) {
	kr := &keyring{}
	seen := map[[sha256.Size]byte]int{}
	for i, k := range keys {
		if strings.TrimSpace(k.UserID) == "" || strings.IndexFunc(k.UserID, unicode.IsControl) >= 0 {
			return nil, fmt.Errorf("server: API key %d: missing or invalid user id", i+1)
		}
		if reservedUser(k.UserID) {
			return nil, fmt.Errorf("server: API key %d: user id %q is reserved (%q owns the sessions saved without a user id, %q the shared sessions); choose another", i+1, k.UserID, store.AnonymousUser, owner.Shared)
		}
		var h [sha256.Size]byte
		switch {
		case k.Key != "" && k.SHA256 != "":
			return nil, fmt.Errorf("server: API key %d (user %q): set Key or SHA256, not both", i+1, k.UserID)
		case k.Key != "":
			if len(k.Key) < MinKeyLength {
				return nil, fmt.Errorf("server: API key %d (user %q): shorter than %d characters", i+1, k.UserID, MinKeyLength)
			}
			h = sha256.Sum256([]byte(k.Key))
		case k.SHA256 != "":
			b, err := hex.DecodeString(strings.TrimSpace(k.SHA256))
			if err != nil || len(b) != sha256.Size {
				return nil, fmt.Errorf("server: API key %d (user %q): SHA256 must be 64 hexadecimal characters", i+1, k.UserID)
			}
			copy(h[:], b)
		default:
			return nil, fmt.Errorf("server: API key %d (user %q): no key", i+1, k.UserID)
		}
		if j, ok := seen[h]; ok {
			return nil, fmt.Errorf("server: API keys %d and %d are the same key", j+1, i+1)
		}
		seen[h] = i
		kr.hashes = append(kr.hashes, h)
		kr.users = append(kr.users, k.UserID)
		kr.service = append(kr.service, k.Service)
	}
	return kr, nil
}
