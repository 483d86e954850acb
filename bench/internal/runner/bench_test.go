package runner

import (
	"bytes"
	"context"
	"encoding/xml"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/strata-go/strata/bench/internal/data"
)

// dataDir finds the shared data directory (../shared/data from the
// repository root), or skips the test.
func dataDir(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("go.mod not found above the test's directory")
		}
		dir = parent
	}
	d := filepath.Join(dir, "..", "shared", "data")
	for _, f := range []string{data.LoCoMoFile, data.TauBenchFile} {
		if _, err := os.Stat(filepath.Join(d, f)); err != nil {
			t.Skipf("benchmark data not available (%v): the runner reads it in place from ../shared/data", err)
		}
	}
	return d
}

// TestQuickRun runs every section in -quick mode on tiny subsets and
// checks the report's structure and the plots' validity. It asserts no
// timing. The PostgreSQL parts run when DATABASE_URL is set
// (scripts/test.sh sets it) and are reported as skipped otherwise.
func TestQuickRun(t *testing.T) {
	dir := dataDir(t)
	out := t.TempDir()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var progress bytes.Buffer
	res, err := Run(ctx, Options{
		OutDir:      out,
		DataDir:     dir,
		DatabaseURL: os.Getenv("DATABASE_URL"),
		Quick:       true,
		Command:     "go test ./bench/...",
		Progress:    &progress,
	})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, progress.String())
	}
	report, err := os.ReadFile(filepath.Join(out, ReportFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Failed) > 0 {
		t.Fatalf("sections %v failed:\n%s", res.Failed, report)
	}
	text := string(report)
	for _, want := range []string{"# Strata benchmark report", "## Headline numbers", "machine", "Go", "date", "command", "Quick mode"} {
		if !strings.Contains(text, want) {
			t.Errorf("report lacks %q", want)
		}
	}
	for _, s := range allSections {
		heading := fmt.Sprintf("## %d. %s", s.num, s.title)
		if !strings.Contains(text, heading) {
			t.Errorf("report lacks section heading %q", heading)
		}
	}
	// Every table is headed by the provenance line.
	if n, m := strings.Count(text, "<sub>machine: "), strings.Count(text, "\n| --- |"); n == 0 || m == 0 {
		t.Errorf("report has %d provenance lines and %d tables", n, m)
	}
	if os.Getenv("DATABASE_URL") == "" && !strings.Contains(text, "PostgreSQL: skipped") {
		t.Error("without DATABASE_URL the report must say the PostgreSQL parts were skipped")
	}
	plots := []string{"context-locomo.svg", "context-taubench.svg", "load-latency.svg", "trim-cost.svg", "reply-latency.svg"}
	for _, name := range plots {
		if !strings.Contains(text, "]("+name+")") {
			t.Errorf("report does not link %s", name)
		}
		checkSVG(t, filepath.Join(out, name))
	}
	if !strings.Contains(text, "Reply latency with a") || !strings.Contains(text, "first fold-trigger turn") {
		t.Error("report lacks the reply-latency headline or table")
	}
	if len(res.Headlines) < 8 {
		t.Errorf("got %d headlines, want one per section at least for 1–7 and 9:\n%s", len(res.Headlines), strings.Join(res.Headlines, "\n"))
	}
}

// checkSVG checks that path is well-formed XML with an <svg> root holding
// at least one line.
func checkSVG(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Error(err)
		return
	}
	dec := xml.NewDecoder(bytes.NewReader(b))
	root, lines := "", 0
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Errorf("%s: invalid XML: %v", path, err)
			return
		}
		if se, ok := tok.(xml.StartElement); ok {
			if root == "" {
				root = se.Name.Local
				if se.Name.Space != "http://www.w3.org/2000/svg" {
					t.Errorf("%s: root namespace %q", path, se.Name.Space)
				}
			}
			if se.Name.Local == "polyline" {
				lines++
			}
		}
	}
	if root != "svg" || lines == 0 {
		t.Errorf("%s: root <%s>, %d polylines", path, root, lines)
	}
}

func TestRunRejectsUnknownSection(t *testing.T) {
	if _, err := Run(context.Background(), Options{OutDir: t.TempDir(), Sections: []int{99}}); err == nil {
		t.Fatal("Run accepted section 99")
	}
}

func TestContainsValue(t *testing.T) {
	for _, c := range []struct {
		text, value string
		want        bool
	}{
		{"reservation NM1VX1 confirmed", "NM1VX1", true},
		{"reservation nm1vx1 confirmed", "NM1VX1", true},
		{"code XNM1VX1", "NM1VX1", false},
		{"total $150.00", "50", false},
		{"total $50.00", "50", true},
		{"from ATL to LAX", "ATL", true},
		{"Atlanta", "ATL", false},
		{"Las Vegas", "LAS", false},
		{`"user_id": "mia_li_3668"`, "mia_li_3668", true},
		{"flight on 2024-05-20.", "2024-05-20", true},
	} {
		if got := containsValue(c.text, c.value); got != c.want {
			t.Errorf("containsValue(%q, %q) = %v, want %v", c.text, c.value, got, c.want)
		}
	}
}

func TestPlotAxes(t *testing.T) {
	a := newAxis([]float64{100, 100_000}, true, false, 0, 100)
	if len(a.ticks) != 4 || a.ticks[0] != 100 || a.ticks[3] != 100_000 {
		t.Errorf("log ticks = %v", a.ticks)
	}
	if p := a.pos(1000); p < 33 || p > 34 {
		t.Errorf("pos(1000) = %v, want a third of the way", p)
	}
	l := newAxis([]float64{3, 97}, false, true, 0, 100)
	if l.ticks[0] != 0 || l.ticks[len(l.ticks)-1] < 97 {
		t.Errorf("linear ticks = %v", l.ticks)
	}
	for _, c := range []struct {
		v    float64
		want string
	}{{0, "0"}, {1500, "1.5k"}, {100_000, "100k"}, {2e6, "2M"}, {0.01, "0.01"}, {12.5, "12.5"}} {
		if got := tickLabel(c.v); got != c.want {
			t.Errorf("tickLabel(%v) = %q, want %q", c.v, got, c.want)
		}
	}
}
