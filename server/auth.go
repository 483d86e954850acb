package server

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"
)

// UserHeader names the user a request made with a service key acts for
// (APIKey.Service). Requests made with a user key may not send it.
const UserHeader = "X-Strata-User"

// Bounds of authentication.
const (
	// maxKeyLength bounds the bearer token hashed per request.
	maxKeyLength = 1024
	// maxUserIDLength bounds the user id a service key names, in bytes.
	maxUserIDLength = 256
	// maxKeysFileBytes and maxFileKeys bound Config.KeysFile.
	maxKeysFileBytes = 1 << 20
	maxFileKeys      = 10000
)

// lookup returns the user of token and whether it is a service key. Every
// configured digest is compared, in constant time and without an early
// exit, so the time taken says neither whether nor which key matched.
func (k *keyring) lookup(token string) (user string, service, ok bool) {
	h := sha256.Sum256([]byte(token))
	found, idx := 0, 0
	for i := range k.hashes {
		eq := subtle.ConstantTimeCompare(h[:], k.hashes[i][:])
		idx = subtle.ConstantTimeSelect(eq, i, idx)
		found |= eq
	}
	if found == 0 {
		return "", false, false
	}
	return k.users[idx], k.service[idx], true
}

// authError says why a request is not authenticated.
type authError struct {
	msg   string
	token bool // a token was presented (RFC 6750 error="invalid_token")
}

// authenticate returns the user of the request's bearer key and whether
// it is a service key.
func (k *keyring) authenticate(r *http.Request) (string, bool, *authError) {
	vals := r.Header.Values("Authorization")
	if len(vals) == 0 {
		return "", false, &authError{msg: "missing API key: send Authorization: Bearer <key>"}
	}
	if len(vals) > 1 {
		return "", false, &authError{msg: "malformed Authorization header: sent more than once", token: true}
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(vals[0]), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || len(token) > maxKeyLength || strings.ContainsAny(token, " \t") {
		return "", false, &authError{msg: "malformed Authorization header: want Bearer <key>", token: true}
	}
	user, service, ok := k.lookup(token)
	if !ok {
		return "", false, &authError{msg: "invalid API key", token: true}
	}
	return user, service, nil
}

// errUserHeaderForbidden is the one answer to a user key sending
// UserHeader, whatever it names: the caller learns nothing of the target.
var errUserHeaderForbidden = &apiError{status: http.StatusForbidden, code: "forbidden",
	msg: "this API key acts for its own user: only a service key may send " + UserHeader}

// actingUser returns the user the request acts for: a user key's own
// user, or the valid user a service key names in UserHeader.
func actingUser(r *http.Request, keyUser string, service bool) (string, *apiError) {
	vals := r.Header.Values(UserHeader)
	if !service {
		if len(vals) > 0 {
			return "", errUserHeaderForbidden
		}
		return keyUser, nil
	}
	switch {
	case len(vals) == 0 || (len(vals) == 1 && vals[0] == ""):
		return "", &apiError{status: http.StatusBadRequest, code: "bad_request",
			msg: "a service key acts for the user named in " + UserHeader + ": the header is missing or empty"}
	case len(vals) > 1:
		return "", &apiError{status: http.StatusBadRequest, code: "bad_request", msg: UserHeader + " sent more than once"}
	}
	if err := checkUserID(vals[0]); err != nil {
		return "", &apiError{status: http.StatusBadRequest, code: "bad_request", msg: UserHeader + ": " + err.Error()}
	}
	return vals[0], nil
}

// checkUserID checks a user id named by a service key: at most
// maxUserIDLength bytes of UTF-8, without whitespace or control (or other
// invisible format) characters, and not one of the owners the stores
// reserve (store.AnonymousUser, the shared-session owner), in any case.
func checkUserID(id string) error {
	switch {
	case id == "":
		return errors.New("user id is empty")
	case len(id) > maxUserIDLength:
		return fmt.Errorf("user id longer than %d bytes", maxUserIDLength)
	case !utf8.ValidString(id):
		return errors.New("user id is not valid UTF-8")
	case strings.IndexFunc(id, func(r rune) bool {
		return unicode.IsSpace(r) || unicode.IsControl(r) || unicode.Is(unicode.Cf, r)
	}) >= 0:
		return errors.New("user id has whitespace or control characters")
	case reservedUser(id):
		return fmt.Errorf("user id %q is reserved", id)
	}
	return nil
}

// keySource is the server's keyring: the configured keys plus those of the
// keys file, which it reads again at most every interval. Requests read
// the current keyring without a lock; one request at a time re-reads the
// file while the others go on with the keyring they have.
type keySource struct {
	static   []APIKey
	path     string
	interval time.Duration
	log      *slog.Logger
	now      func() time.Time

	cur      atomic.Pointer[keyring]
	mu       sync.Mutex // held while reading the file
	last     []byte     // the file's content behind cur
	bad      []byte     // the last content refused (reported once)
	checked  time.Time  // when the file was last read
	checking atomic.Bool
}

// newKeySource builds the keyring of keys and, when path is set, of the
// keys file, which must read and parse.
func newKeySource(keys []APIKey, path string, interval time.Duration, log *slog.Logger) (*keySource, error) {
	ks := &keySource{static: keys, path: path, interval: interval, log: log, now: time.Now}
	if path == "" {
		kr, err := newKeyring(keys)
		if err != nil {
			return nil, err
		}
		ks.cur.Store(kr)
		return ks, nil
	}
	if _, err := ks.reload(); err != nil {
		return nil, err
	}
	return ks, nil
}

// keys returns the current keyring, first reading the keys file again when
// the interval has passed since it was last read (by one request; the
// others do not wait for it).
func (ks *keySource) keys() *keyring {
	if ks.path != "" && ks.checking.CompareAndSwap(false, true) {
		func() {
			defer ks.checking.Store(false)
			ks.mu.Lock()
			due := ks.now().Sub(ks.checked) >= ks.interval
			ks.mu.Unlock()
			if !due {
				return
			}
			if changed, err := ks.reload(); err != nil {
				ks.log.Warn("strata serve: keys file not reloaded; the keys loaded before stay in force", "file", ks.path, "error", err)
			} else if changed {
				ks.log.Info("strata serve: keys file reloaded", "file", ks.path, "keys", len(ks.cur.Load().hashes))
			}
		}()
	}
	return ks.cur.Load()
}

// reload reads the keys file and, when its content changed, replaces the
// keyring with the configured keys plus the file's. On error the keyring
// stays as it was.
func (ks *keySource) reload() (changed bool, err error) {
	ks.mu.Lock()
	defer ks.mu.Unlock()
	ks.checked = ks.now()
	b, err := readKeysFile(ks.path)
	if err != nil {
		return false, err
	}
	if ks.cur.Load() != nil && (bytes.Equal(b, ks.last) || bytes.Equal(b, ks.bad)) {
		return false, nil // unchanged, or refused and reported already
	}
	fileKeys, err := parseKeysFile(b)
	var kr *keyring
	if err == nil {
		kr, err = newKeyring(append(append([]APIKey(nil), ks.static...), fileKeys...))
	}
	if err != nil {
		ks.bad = b
		return false, fmt.Errorf("server: keys file %s: %w", ks.path, err)
	}
	ks.cur.Store(kr)
	ks.last = b
	return true, nil
}

// readKeysFile reads at most maxKeysFileBytes of the keys file.
func readKeysFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("server: keys file: %w", err)
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxKeysFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("server: keys file %s: %w", path, err)
	}
	if len(b) > maxKeysFileBytes {
		return nil, fmt.Errorf("server: keys file %s: larger than %d bytes", path, maxKeysFileBytes)
	}
	return b, nil
}

// parseKeysFile parses the keys file's lines (see Config.KeysFile).
func parseKeysFile(b []byte) ([]APIKey, error) {
	var out []APIKey
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 0, 4096), maxKeysFileBytes)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Fields(line)
		if len(f) < 2 || len(f) > 3 || (len(f) == 3 && f[2] != "service") {
			return nil, fmt.Errorf("line %d: want USER-ID SHA256-HEX, or NAME SHA256-HEX service", n)
		}
		if len(out) == maxFileKeys {
			return nil, fmt.Errorf("more than %d keys", maxFileKeys)
		}
		out = append(out, APIKey{UserID: f[0], SHA256: f[1], Service: len(f) == 3})
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	return out, nil
}
