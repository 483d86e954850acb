// Package owner is Strata's one mapping from a caller to the owner a
// session's data is stored under: the memory manager checks every store
// operation with it, and the conversation catalogue files titles,
// documents and listings under it, so that both always agree on whose a
// session is.
package owner

import "strings"

// Anonymous is the owner of the sessions saved without a user id
// (store.AnonymousUser is it): a missing user id never bypasses the
// ownership check.
const Anonymous = "anonymous"

// Shared is the owner recorded for shared sessions (those whose id has one
// of the configured shared prefixes), whichever user writes them.
const Shared = "shared"

// Of returns the owner that userID acts as on sessionID: Shared when the
// id starts with one of prefixes, else User(userID).
func Of(prefixes []string, sessionID, userID string) string {
	for _, p := range prefixes {
		if strings.HasPrefix(sessionID, p) {
			return Shared
		}
	}
	return User(userID)
}

// User normalizes a user id: "" is Anonymous.
func User(userID string) string {
	if userID == "" {
		return Anonymous
	}
	return userID
}
