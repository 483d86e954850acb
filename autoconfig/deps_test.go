package autoconfig

import (
	"os/exec"
	"strings"
	"testing"
)

// TestNoProviderSDKDependencies: the Gemini SDK and gRPC are linked only
// into programs that import a provider package, never through memory,
// agent or autoconfig.
func TestNoProviderSDKDependencies(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found")
	}
	cmd := exec.Command(goBin, "list", "-deps",
		"github.com/strata-go/strata/autoconfig", "github.com/strata-go/strata/agent", "github.com/strata-go/strata/memory")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, pkg := range strings.Fields(string(out)) {
		if strings.HasPrefix(pkg, "github.com/google/generative-ai-go") || strings.HasPrefix(pkg, "google.golang.org/grpc") {
			t.Errorf("%s is a dependency", pkg)
		}
	}
}

// TestProvidersDependOnlyOnSummary: a program that imports only the
// summarizer providers links what a summarizer needs — never the database
// driver, the migrations, the stores, the HTTP server or autoconfig, to
// which the providers register through package summary.
func TestProvidersDependOnlyOnSummary(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found: cannot list the providers' dependencies")
	}
	out, err := exec.Command(goBin, "list", "-deps",
		"github.com/strata-go/strata/providers/gemini", "github.com/strata-go/strata/providers/openai").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	deps := strings.Fields(string(out))
	if !slicesContains(deps, "github.com/strata-go/strata/summary") {
		t.Fatalf("go list -deps printed no summary package: %q", out)
	}
	for _, pkg := range deps {
		for _, banned := range []string{"github.com/lib/pq", "github.com/golang-migrate/", "github.com/strata-go/strata/db",
			"github.com/strata-go/strata/server", "github.com/strata-go/strata/autoconfig"} {
			if pkg == banned || strings.HasPrefix(pkg, strings.TrimSuffix(banned, "/")+"/") {
				t.Errorf("a provider depends on %s", pkg)
			}
		}
	}
}

// TestInternalImportsPointDown: the packages under internal/ are the
// bottom layer — helpers every other package may use — so none of them
// imports a Strata package above it (memory and its subpackages, db,
// server, catalog, agent, autoconfig, cmd). Test files may (they test
// across packages).
func TestInternalImportsPointDown(t *testing.T) {
	t.Parallel()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found: cannot list the internal packages' imports")
	}
	const mod = "github.com/strata-go/strata/"
	out, err := exec.Command(goBin, "list", "-f", `{{.ImportPath}}{{range .Imports}} {{.}}{{end}}`, mod+"internal/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	// None known: msgjson converts to the vocabulary's Message (record).
	known := map[string]bool{}
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) < 5 {
		t.Fatalf("go list printed %d internal packages: %q", len(lines), out)
	}
	for _, line := range lines {
		f := strings.Fields(line)
		for _, imp := range f[1:] {
			for _, above := range []string{"memory", "db", "server", "catalog", "agent", "autoconfig", "cmd"} {
				if (imp == mod+above || strings.HasPrefix(imp, mod+above+"/")) && !known[f[0]+" "+imp] {
					t.Errorf("%s imports %s, a package above it", f[0], imp)
				}
			}
		}
	}
}
