package server

import (
	"context"
	"fmt"
	"regexp"
	"sync"
	"testing"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/db/dbtest"
)

// TestPooledLoadThroughPgBouncer: strata serve on PostgreSQL reached
// through PgBouncer in transaction mode (schema migrated over the direct
// URL), 24 concurrent sessions × 30 turns with background folds and, beside
// them, sessions created, loaded and deleted: zero failed calls, zero loads
// showing another session's text, every message stored, folds complete.
func TestPooledLoadThroughPgBouncer(t *testing.T) {
	p := dbtest.NewPooled(t)
	runPooledLoad(t, p.PooledURL)
}

// TestPooledLoadDirect is TestPooledLoadThroughPgBouncer on a direct
// connection to the same kind of database.
func TestPooledLoadDirect(t *testing.T) {
	p := dbtest.NewPooled(t)
	runPooledLoad(t, p.DirectURL)
}

var sessionMarker = regexp.MustCompile(`sess-(\d+)-`)

func runPooledLoad(t *testing.T, url string) {
	const sessions, turns = 24, 30
	d := dbtest.Open(t, url)
	d.SetMaxOpenConns(20)
	d.SetMaxIdleConns(20)
	sums := db.NewSummaryStore(d)
	ts := stack{store: db.NewMessageStore(d), sums: sums, idx: db.NewCatalogIndex(d),
		srvOpts: []Option{WithReadiness("postgres", d.PingContext)}}.start(t)

	keyOf := func(i int) string {
		if i%2 == 0 {
			return keyAlice
		}
		return keyBob
	}
	ids := make([]string, sessions)
	for i := range ids {
		ids[i] = ts.create(keyOf(i), nil)
	}

	var (
		mu   sync.Mutex
		errs []string
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		if len(errs) < 20 {
			errs = append(errs, fmt.Sprintf(format, args...))
		}
	}
	// foreign reports the first marker in body of a session other than i.
	foreign := func(i int, body []byte) string {
		for _, m := range sessionMarker.FindAllSubmatch(body, -1) {
			if string(m[1]) != fmt.Sprint(i) {
				return string(m[0])
			}
		}
		return ""
	}
	call := func(key, method, path string, body any, want int) (reply, bool) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		r, err := ts.try(ctx, method, path, key, body)
		if err != nil {
			fail("%s %s: %v", method, path, err)
			return r, false
		}
		if r.status != want {
			fail("%s %s: %s, want %d", method, path, r, want)
			return r, false
		}
		return r, true
	}

	var wg sync.WaitGroup
	for i := range sessions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			key, id := keyOf(i), ids[i]
			for n := range turns {
				body := turn(fmt.Sprintf("sess-%d- turn %d: what about order #L-%d?", i, n, n),
					fmt.Sprintf("sess-%d- turn %d: noted, order #L-%d.", i, n, n))
				call(key, "POST", "/v1/sessions/"+id+"/messages", body, 200)
				if r, ok := call(key, "GET", "/v1/sessions/"+id+"/context?budget=2000", nil, 200); ok {
					if f := foreign(i, r.body); f != "" {
						fail("session %d: context shows %q", i, f)
					}
				}
				if n%10 == 5 { // a short-lived session beside the long one
					tmp := ts.create(key, nil)
					call(key, "POST", "/v1/sessions/"+tmp+"/messages",
						turn(fmt.Sprintf("sess-%d- scratch", i), fmt.Sprintf("sess-%d- ok", i)), 200)
					if r, ok := call(key, "GET", "/v1/sessions/"+tmp+"/context?budget=2000", nil, 200); ok {
						if f := foreign(i, r.body); f != "" {
							fail("scratch session of %d: context shows %q", i, f)
						}
					}
					call(key, "DELETE", "/v1/sessions/"+tmp, nil, 204)
				}
			}
		}()
	}
	wg.Wait()
	for _, e := range errs {
		t.Error(e)
	}
	ts.flush()

	stats := ts.srv.mgr.Stats()
	t.Logf("%s: %+v", db.RedactDSN(url), stats)
	if stats.Folds == 0 || stats.FoldFailures != 0 || stats.SaveErrors != 0 || stats.LoadErrors != 0 {
		t.Errorf("stats %+v: want folds, and no fold failure, save or load error", stats)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for i, id := range ids {
		var page wireSession
		ts.must(200, "GET", "/v1/sessions/"+id+"?limit=1", keyOf(i), nil, &page)
		if page.MessageCount != 2*turns {
			t.Errorf("session %d: %d messages stored, want %d", i, page.MessageCount, 2*turns)
		}
		sm, err := sums.Get(ctx, id)
		if err != nil || sm == nil || sm.UpToSeq == 0 {
			t.Errorf("session %d: summary %+v, %v; want a completed fold", i, sm, err)
		}
	}
}
