package runner

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/strata-go/strata/db"
	"github.com/strata-go/strata/server"
)

// serveKey is the API key of section 12's server (loopback only).
const serveKey = "bench-serve-key-0123456789"

// serveClients, serveRequests and serveMaxTime bound section 12's load
// generator: concurrent clients, requests per endpoint and server, and the
// longest one measurement may run.
const (
	serveClients = 32
	serveMaxTime = 20 * time.Second
)

// loadResult is one endpoint × server measurement.
type loadResult struct {
	n    int
	wall time.Duration
	lat  samples
}

func (l loadResult) rps() float64 { return float64(l.n) / l.wall.Seconds() }

// hammer sends up to total requests from serveClients clients (stopping
// early at serveMaxTime), each built by req(k), and times each; any
// status other than want fails the run.
func hammer(client *http.Client, total int, want int, req func(k int) (*http.Request, error)) (loadResult, error) {
	var (
		next  atomic.Int64
		mu    sync.Mutex
		first error
		res   loadResult
		wg    sync.WaitGroup
	)
	deadline := time.Now().Add(serveMaxTime)
	began := time.Now()
	for range serveClients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var lat samples
			for time.Now().Before(deadline) {
				k := int(next.Add(1)) - 1
				if k >= total {
					break
				}
				rq, err := req(k)
				if err == nil {
					t0 := time.Now()
					var resp *http.Response
					if resp, err = client.Do(rq); err == nil {
						_, _ = io.Copy(io.Discard, resp.Body)
						_ = resp.Body.Close()
						if resp.StatusCode != want {
							err = fmt.Errorf("%s %s: status %d", rq.Method, rq.URL.Path, resp.StatusCode)
						}
						lat = append(lat, time.Since(t0))
					}
				}
				if err != nil {
					mu.Lock()
					if first == nil {
						first = err
					}
					mu.Unlock()
					return
				}
			}
			mu.Lock()
			res.lat = append(res.lat, lat...)
			mu.Unlock()
		}()
	}
	wg.Wait()
	res.wall, res.n = time.Since(began), len(res.lat)
	return res, first
}

// minimalHandler is the baseline of section 12: net/http with the same
// SQL as the raw baselines of sections 3 and 11 (a two-row transaction for
// an append, one indexed query for the context), JSON in and out, no
// authentication, no validation, no memory policy.
func minimalHandler(raw *rawWriter, tail func(ctx context.Context, session string) ([]map[string]any, error)) http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /append/{id}", func(w http.ResponseWriter, r *http.Request) {
		var t struct {
			Turn struct{ User, Assistant string } `json:"turn"`
		}
		if err := json.NewDecoder(r.Body).Decode(&t); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		if err := raw.turn(r.Context(), r.PathValue("id"), t.Turn.User, t.Turn.Assistant); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	mux.HandleFunc("GET /context/{id}", func(w http.ResponseWriter, r *http.Request) {
		msgs, err := tail(r.Context(), r.PathValue("id"))
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"messages": msgs})
	})
	return mux
}

func runServeLoad(ctx context.Context, r *runner, out *sectionOut) error {
	pg, err := r.postgres(ctx)
	if err != nil {
		out.printf("> %s\n", pgSkipNote(err))
		return nil
	}
	locomo, err := r.loadLoCoMo()
	if err != nil {
		return err
	}
	pairs := locomo.Pairs()
	d, err := pg.pool(ctx)
	if err != nil {
		return err
	}
	defer d.Close()
	store := db.NewMessageStore(d, db.WithLogger(r.quiet))
	mgr, err := r.newManager(store, nil, nil, takeLastConfig())
	if err != nil {
		return err
	}
	defer mgr.Close()
	srv, err := server.New(mgr, nil, server.Config{APIKeys: []server.APIKey{{UserID: benchUser, Key: serveKey}}}, server.WithLogger(r.quiet))
	if err != nil {
		return err
	}
	raw := &rawWriter{d: d, counter: true}
	cfg := takeLastConfig()
	rows := 2 * cfg.MaxConversationTurns
	tailStmt, err := d.PreparexContext(ctx, fmt.Sprintf(rawTailSQL, strconv.Itoa(rows)))
	if err != nil {
		return err
	}
	defer tailStmt.Close()
	tail := func(ctx context.Context, session string) ([]map[string]any, error) {
		rs, err := tailStmt.QueryContext(ctx, session)
		if err != nil {
			return nil, err
		}
		defer rs.Close()
		var msgs []map[string]any
		for rs.Next() {
			var (
				seq                               int64
				role, content, callID, name, user string
				calls, meta                       []byte
				at                                time.Time
			)
			if err := rs.Scan(&seq, &role, &content, &calls, &callID, &name, &meta, &user, &at); err != nil {
				return nil, err
			}
			msgs = append(msgs, map[string]any{"role": role, "content": content})
		}
		return msgs, rs.Err()
	}

	sessions := r.p.concSessions
	for s := range sessions {
		if err := store.Create(ctx, fmt.Sprint("s12-", s), benchUser); err != nil {
			return err
		}
	}

	serve := func(h http.Handler) (string, func(), error) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return "", nil, err
		}
		hs := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
		done := make(chan struct{})
		go func() { defer close(done); _ = hs.Serve(ln) }()
		return "http://" + ln.Addr().String(), func() { _ = hs.Close(); <-done }, nil
	}
	sctx, cancel := context.WithCancel(ctx)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		cancel()
		return err
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(sctx, ln) }()
	defer func() {
		cancel()
		if err := <-served; err != nil && !errors.Is(err, http.ErrServerClosed) {
			r.progress("  serve: %v", err)
		}
	}()
	strataURL := "http://" + ln.Addr().String()
	minURL, stopMin, err := serve(minimalHandler(raw, tail))
	if err != nil {
		return err
	}
	defer stopMin()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: serveClients, MaxConnsPerHost: serveClients}, Timeout: 30 * time.Second}
	defer client.CloseIdleConnections()
	body := func(k int) []byte {
		p := pairs[k%len(pairs)]
		b, _ := json.Marshal(map[string]any{"turn": map[string]string{"user": p[0], "assistant": p[1]}})
		return b
	}
	session := func(k int) string { return fmt.Sprint("s12-", k%sessions) }
	total := max(sessions*r.p.concTurns/3, serveClients)
	type target struct {
		name, endpoint string
		want           int
		req            func(k int) (*http.Request, error)
	}
	auth := func(rq *http.Request, err error) (*http.Request, error) {
		if err == nil {
			rq.Header.Set("Authorization", "Bearer "+serveKey)
			rq.Header.Set("Content-Type", "application/json")
		}
		return rq, err
	}
	targets := []target{
		{"minimal handler", "append", http.StatusOK, func(k int) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, "POST", minURL+"/append/"+session(k), bytes.NewReader(body(k)))
		}},
		{"`strata serve`", "append", http.StatusOK, func(k int) (*http.Request, error) {
			return auth(http.NewRequestWithContext(ctx, "POST", strataURL+"/v1/sessions/"+session(k)+"/messages", bytes.NewReader(body(k))))
		}},
		{"minimal handler", "context", http.StatusOK, func(k int) (*http.Request, error) {
			return http.NewRequestWithContext(ctx, "GET", minURL+"/context/"+session(k), nil)
		}},
		{"`strata serve`", "context", http.StatusOK, func(k int) (*http.Request, error) {
			return auth(http.NewRequestWithContext(ctx, "GET", strataURL+"/v1/sessions/"+session(k)+"/context", nil))
		}},
	}
	results := make([]loadResult, len(targets))
	const rounds = 2
	for round := range rounds {
		for i, t := range targets {
			if round == 0 {
				r.progress("  serve: %s %s, %d clients", t.name, t.endpoint, serveClients)
			}
			res, err := hammer(client, total/rounds, t.want, t.req)
			if err != nil {
				return fmt.Errorf("%s %s: %w", t.name, t.endpoint, err)
			}
			results[i].n += res.n
			results[i].wall += res.wall
			results[i].lat = append(results[i].lat, res.lat...)
		}
	}

	out.printf("A bounded load on loopback from a Go load generator in the same process: %d concurrent HTTP/1.1 clients (keep-alive), at most %s requests per endpoint and server (in %d interleaved rounds; a round stops after %s at the latest), over %d sessions created beforehand. *strata serve* is `server.New` over a manager with the `db` stores (summaries off, `db.Open`'s pool) with its API-key authentication and validation: appends are `POST /v1/sessions/{id}/messages` with a `turn` (a LoCoMo user/assistant pair), context is `GET /v1/sessions/{id}/context`. The *minimal handler* is bare `net/http` on the same pool doing the same SQL as the raw baselines above (a prepared two-row transaction; one prepared indexed query for the newest %d messages, JSON-encoded), with no authentication, validation or memory policy.\n\n",
		serveClients, fmtInt(total), rounds, serveMaxTime, sessions, rows)
	out.printf("%s", r.env.provenance(true))
	var tbl [][]string
	for i, t := range targets {
		res := results[i]
		base := results[i-i%2]
		tbl = append(tbl, []string{t.endpoint, t.name, fmtInt(res.n), fmtFloat(res.rps()), fmtRatio(ratio(res.rps(), base.rps())), fmtDur(res.lat.pct(50)), fmtDur(res.lat.pct(99))})
	}
	out.printf("%s\n", mdTable([]string{"endpoint", "server", "requests", "requests/s", "÷ minimal handler", "p50", "p99"}, tbl))
	out.headline("`strata serve` under load (§12, PostgreSQL%s, %d clients on loopback): appends %s req/s (%s a minimal net/http handler doing the same SQL), p50 %s / p99 %s; context %s req/s (%s), p50 %s / p99 %s.",
		durableLabel(r), serveClients, fmtFloat(results[1].rps()), fmtRatio(ratio(results[1].rps(), results[0].rps())), fmtDur(results[1].lat.pct(50)), fmtDur(results[1].lat.pct(99)),
		fmtFloat(results[3].rps()), fmtRatio(ratio(results[3].rps(), results[2].rps())), fmtDur(results[3].lat.pct(50)), fmtDur(results[3].lat.pct(99)))
	return nil
}
