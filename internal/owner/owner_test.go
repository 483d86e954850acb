package owner

import "testing"

func TestOf(t *testing.T) {
	shared := []string{"slack-", "team-"}
	for _, tc := range []struct {
		prefixes            []string
		session, user, want string
	}{
		{shared, "slack-C1", "alice", Shared},
		{shared, "team-7", "", Shared},
		{shared, "dm-slack-1", "alice", "alice"}, // a prefix, not a substring
		{shared, "dm-1", "", Anonymous},
		{nil, "slack-C1", "bob", "bob"}, // nothing shared unless configured
	} {
		if got := Of(tc.prefixes, tc.session, tc.user); got != tc.want {
			t.Errorf("Of(%q, %q, %q) = %q, want %q", tc.prefixes, tc.session, tc.user, got, tc.want)
		}
	}
}
