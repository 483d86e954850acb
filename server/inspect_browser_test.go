package server

import (
	"bytes"
	"context"
	"fmt"
	"html"
	"image/png"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// chromium finds a headless Chromium, "" when none is installed.
func chromium() string {
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	return ""
}

// runChromium runs headless Chromium on url with extra flags and returns
// its standard output. Every host but the test server's loopback address
// resolves to nothing: the page must need no network.
func runChromium(t *testing.T, bin, url string, extra ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	args := append([]string{"--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-dev-shm-usage",
		"--user-data-dir=" + t.TempDir(), "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1",
		"--window-size=1280,900", "--hide-scrollbars"}, extra...)
	cmd := exec.CommandContext(ctx, bin, append(args, url)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("chromium %v: %v\n%s", extra, err, errb.String())
	}
	return out.Bytes()
}

// TestInspectorInBrowser opens the inspector's page of a session in
// headless Chromium, served by the server behind its API-key auth (a
// proxy adds the key: Chromium's command line sends no header), picks a
// turn with ?turn=, checks the DOM Chromium built against the store, and
// checks that the screenshot is not blank. Skipped where Chromium is not
// installed (the CI script installs Debian's chromium).
func TestInspectorInBrowser(t *testing.T) {
	bin := chromium()
	if bin == "" {
		t.Skip("chromium not installed: the inspector's browser test is skipped")
	}
	// A small window, so that the page has trimming to show.
	mcfg := testMemoryConfig()
	mcfg.ContextWindowTokens, mcfg.OutputReserveTokens = 700, 200
	srv := stack{quiet: true, mcfg: &mcfg}.build(t)
	t.Cleanup(func() { _ = srv.Close() })
	ctx := context.Background()
	const session = "browser"
	for i := 1; i <= 30; i++ {
		user := fmt.Sprintf("Turn %d: could you check the delivery of kettle order ORD-%d, please?", i, 4000+i)
		if i == 3 {
			user = "My email is kim.park@example.com & my phone is +82 10-5555-0101 <b>urgent</b>."
		}
		if err := srv.mgr.SaveTurn(ctx, session, "alice", user, fmt.Sprintf("Checked: order ORD-%d ships on day %d.", 4000+i, i%7+1)); err != nil {
			t.Fatal(err)
		}
		if err := srv.mgr.Flush(ctx); err != nil {
			t.Fatal(err)
		}
	}
	h := srv.Handler()
	proxy := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		r.Header.Set("Authorization", "Bearer "+keyAlice)
		h.ServeHTTP(w, r)
	}))
	defer proxy.Close()
	// Without the key the page is refused, as every session endpoint is.
	bare := httptest.NewServer(h)
	defer bare.Close()
	resp, err := http.Get(bare.URL + "/v1/sessions/" + session + "/inspect")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without a key: %d, want 401", resp.StatusCode)
	}

	const turn = 24
	url := fmt.Sprintf("%s/v1/sessions/%s/inspect?turn=%d", proxy.URL, session, turn)
	dom := string(runChromium(t, bin, url, "--dump-dom"))
	if !strings.Contains(dom, `<span id="turn-number">24</span>`) {
		t.Fatalf("the page does not show turn %d:\n%.2000s", turn, dom)
	}
	msgs, err := srv.mgr.Messages(ctx, session, "alice", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	// Every stored message, with its seq and its text as stored.
	row := regexp.MustCompile(`<tr data-seq="(\d+)"[^>]*>.*?<td class="text">(.*?)</td></tr>`)
	shown := map[int64]string{}
	for _, m := range row.FindAllStringSubmatch(dom, -1) {
		n, _ := strconv.ParseInt(m[1], 10, 64)
		shown[n] = html.UnescapeString(m[2])
	}
	var turnSeq int64
	users := 0
	for _, m := range msgs {
		if got, ok := shown[m.Seq]; !ok || got != m.Content {
			t.Errorf("message #%d shown as %q, stored %q", m.Seq, got, m.Content)
		}
		if m.Role == "user" {
			if users++; users == turn {
				turnSeq = m.Seq
			}
		}
	}
	// The turn's prompt ends with that turn's user message, and what it
	// says it dropped is what it marks dropped.
	view := regexp.MustCompile(`<tr class="\w+-row" data-seq="(\d+)" data-fate="(\w+)" data-kind="message">`).FindAllStringSubmatch(dom, -1)
	if len(view) == 0 {
		t.Fatal("the turn's prompt shows no message")
	}
	if last, _ := strconv.ParseInt(view[len(view)-1][1], 10, 64); last != turnSeq {
		t.Errorf("turn %d's prompt ends at #%d, the turn is #%d", turn, last, turnSeq)
	}
	j, err := srv.mgr.Journal(ctx, session, "alice")
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(dom, fmt.Sprintf(`<b id="total-folds">%d</b>`, j.Totals.Folds)) || j.Totals.Folds == 0 {
		t.Errorf("the page does not show the journal's %d folds", j.Totals.Folds)
	}
	if n := strings.Count(dom, `<tr data-n="`); n != len(j.Records) {
		t.Errorf("%d journal rows, the journal has %d records", n, len(j.Records))
	}
	if !strings.Contains(dom, `id="context-chart"`) {
		t.Error("no chart")
	}

	shot := filepath.Join(t.TempDir(), "inspector.png")
	runChromium(t, bin, url, "--screenshot="+shot)
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	b := img.Bounds()
	colours := map[[3]uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[[3]uint32{r >> 8, g >> 8, bl >> 8}] = true
		}
	}
	if b.Dx() != 1280 || len(colours) < 20 {
		t.Fatalf("screenshot %dx%d with %d colours: blank", b.Dx(), b.Dy(), len(colours))
	}
	if dst := os.Getenv("STRATA_INSPECTOR_SCREENSHOT"); dst != "" {
		raw, err := os.ReadFile(shot)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, raw, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}
