package server

import (
	"context"
	"strings"
	"testing"

	"github.com/strata-go/strata/memory"
)

// "anonymous" and "shared" are the owners the stores record for sessions
// saved without a user id and for shared sessions: a key bound to either
// would read those sessions (every shared session, for "shared"). Such a
// key configuration is refused at start-up, in any case, with an error
// that says why; other user ids, even alike, are fine.
func TestReservedUserIDsRefusedAtStartUp(t *testing.T) {
	t.Parallel()
	for _, user := range []string{"anonymous", "shared", "Anonymous", "SHARED"} {
		t.Run(user, func(t *testing.T) {
			t.Parallel()
			mgr, err := memory.NewManager(memory.NewInMemoryStore(), memory.DefaultConfig())
			if err != nil {
				t.Fatal(err)
			}
			defer mgr.Close()
			// A session saved without a user id is owned by "anonymous".
			if err := mgr.SaveTurn(context.Background(), "no-user-session", "", "My PIN is 4321.", "Noted."); err != nil {
				t.Fatal(err)
			}
			keys := []APIKey{{UserID: "alice", Key: keyAlice}, {UserID: user, Key: "reserved-key-0123456789"}}
			srv, err := New(mgr, nil, Config{APIKeys: keys})
			if err == nil {
				_ = srv.Close()
				t.Fatalf("a key bound to %q was accepted", user)
			}
			if !strings.Contains(err.Error(), "reserved") || !strings.Contains(err.Error(), `"`+user+`"`) {
				t.Fatalf("error %q does not say that %q is reserved", err, user)
			}
		})
	}
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), memory.DefaultConfig())
	if err != nil {
		t.Fatal(err)
	}
	srv, err := New(mgr, nil, Config{APIKeys: []APIKey{{UserID: "anonymous-2", Key: keyAlice}, {UserID: "shared_team", Key: keyBob}}})
	if err != nil {
		t.Fatalf("user ids that only look reserved: %v", err)
	}
	_ = srv.Close()
}
