package db

import "github.com/strata-go/strata/memory/store"

// CitusStatement is one statement of a load, an append or a fold, with
// arguments about one session, for the Citus tests, which check that
// Citus plans each of them on one shard.
type CitusStatement struct {
	Name string
	SQL  string
	Args []any
}

// CitusStatements are the statements of a load (Snapshot, Tail and the
// read after a summary: strata_snapshot; Range), an append
// (strata_append) and a fold (the lease's take, renewal and release, the
// summary's read, save, save with the lease's release, and with the
// journal's append) about session
// as user.
func CitusStatements(session, user string) []CitusStatement {
	b, err := newBatch([]store.Message{{Role: store.RoleUser, Content: "plan"}})
	if err != nil {
		panic(err)
	}
	const token, micros = "token", int64(60_000_000)
	rec, err := appendOf(store.JournalRecord{Kind: "fold", Outcome: "saved", InputTokens: 1}, 200)
	if err != nil {
		panic(err)
	}
	return []CitusStatement{
		{"append", appendSQL, appendArgs(session, user, b)},
		{"load", loadSQL, []any{session, user, 20, false, true, nil, nil, nil, nil, nil, nil, nil, nil}},
		{"load after summary", loadSQL, []any{session, user, 20, true, true, nil, nil, nil, nil, nil, nil, nil, nil}},
		{"load, tail held", loadSQL, []any{session, user, 20, true, true, nil, nil, nil, int64(1), int64(1), int64(0), int64(0), 20}},
		{"held load check", heldSQL, []any{session}},
		{"delete summary", deleteSummarySQL, []any{session}},
		{"range", rangeSQL, []any{session, int64(0), int64(1 << 40), nil, user}},
		{"take lease", takeLeaseSQL, []any{session, micros, token}},
		{"renew lease", renewLeaseSQL, []any{session, token, micros}},
		{"release lease", releaseLeaseSQL, []any{session, token}},
		{"read summary", getSummarySQL, []any{session}},
		{"save summary", saveSummarySQL, []any{session, int64(1), "narrative", "[]", int64(1)}},
		{"save summary, release lease", saveReleaseSQL, []any{session, int64(1), "narrative", "[]", int64(1), token}},
		{"journal append", journalAppendSQL, []any{session, int64(1), rec.record, rec.counts, rec.day, rec.spent, 200}},
		{"save summary, release lease, journal", saveJournaledSQL, []any{session, int64(1), "narrative", "[]", int64(1), token,
			rec.record, rec.counts, rec.day, rec.spent, 200}},
	}
}
