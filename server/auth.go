package server

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"
)

// maxKeyLength bounds the bearer token hashed per request.
const maxKeyLength = 1024

// lookup returns the user of token. Every configured digest is compared,
// in constant time and without an early exit, so the time taken says
// neither whether nor which key matched.
func (k *keyring) lookup(token string) (string, bool) {
	h := sha256.Sum256([]byte(token))
	found, idx := 0, 0
	for i := range k.hashes {
		eq := subtle.ConstantTimeCompare(h[:], k.hashes[i][:])
		idx = subtle.ConstantTimeSelect(eq, i, idx)
		found |= eq
	}
	if found == 0 {
		return "", false
	}
	return k.users[idx], true
}

// authError says why a request is not authenticated.
type authError struct {
	msg   string
	token bool // a token was presented (RFC 6750 error="invalid_token")
}

// authenticate returns the user of the request's bearer key.
func (k *keyring) authenticate(r *http.Request) (string, *authError) {
	vals := r.Header.Values("Authorization")
	if len(vals) == 0 {
		return "", &authError{msg: "missing API key: send Authorization: Bearer <key>"}
	}
	if len(vals) > 1 {
		return "", &authError{msg: "malformed Authorization header: sent more than once", token: true}
	}
	scheme, token, ok := strings.Cut(strings.TrimSpace(vals[0]), " ")
	token = strings.TrimSpace(token)
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" || len(token) > maxKeyLength || strings.ContainsAny(token, " \t") {
		return "", &authError{msg: "malformed Authorization header: want Bearer <key>", token: true}
	}
	user, ok := k.lookup(token)
	if !ok {
		return "", &authError{msg: "invalid API key", token: true}
	}
	return user, nil
}
