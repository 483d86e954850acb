package store_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// goList runs go list with args and returns its output's fields.
func goList(t *testing.T, args ...string) []string {
	t.Helper()
	goBin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found: cannot list dependencies")
	}
	out, err := exec.Command(goBin, append([]string{"list"}, args...)...).Output()
	if err != nil {
		t.Fatalf("go list %v: %v", args, err)
	}
	return strings.Fields(string(out))
}

// TestContractDependsOnlyOnTheVocabulary: a store author who imports the
// store contract compiles the vocabulary (package record), the owner
// mapping (internal/owner, standard library only) and langchaingo's llms,
// never a summarizer, the fact ledger or the trimmer; the vocabulary
// itself imports only the standard library and llms; the in-memory store
// compiles no summarizer either.
func TestContractDependsOnlyOnTheVocabulary(t *testing.T) {
	t.Parallel()
	const mod = "github.com/strata-go/strata"
	deps := goList(t, "-deps", mod+"/memory/store")
	own := 0
	for _, pkg := range deps {
		if pkg == mod || strings.HasPrefix(pkg, mod+"/") {
			own++
			if pkg != mod+"/memory/store" && pkg != mod+"/record" && pkg != mod+"/internal/owner" {
				t.Errorf("the store contract depends on %s", pkg)
			}
		}
		if strings.HasPrefix(pkg, "github.com/tmc/langchaingo/") && pkg != "github.com/tmc/langchaingo/llms" &&
			!strings.HasPrefix(pkg, "github.com/tmc/langchaingo/internal/") {
			t.Errorf("the store contract depends on %s", pkg)
		}
	}
	if own != 3 {
		t.Fatalf("go list -deps printed %d of this module's packages, want memory/store, record and internal/owner: %q", own, deps)
	}
	// The in-memory store, a whole implementation of the contract, needs
	// no more than it either (and the module's text helpers).
	for _, pkg := range goList(t, "-deps", mod+"/memory/memstore") {
		if strings.HasPrefix(pkg, mod+"/") && !slices.Contains([]string{mod + "/memory/store", mod + "/record", mod + "/internal/text", mod + "/internal/owner", mod + "/memory/memstore"}, pkg) {
			t.Errorf("the in-memory store depends on %s", pkg)
		}
	}
	for _, imp := range goList(t, "-f", `{{join .Imports " "}}`, mod+"/record") {
		if strings.Contains(strings.Split(imp, "/")[0], ".") && imp != "github.com/tmc/langchaingo/llms" {
			t.Errorf("the vocabulary imports %s", imp)
		}
	}
}
