package main

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// readmeSection returns the README's section under the "## name" heading.
func readmeSection(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(data), "\n## "+name+"\n")
	if !ok {
		t.Fatalf("README has no %q section", name)
	}
	if i := strings.Index(rest, "\n## "); i >= 0 {
		rest = rest[:i]
	}
	return rest
}

// TestREADMEListsEveryExample: every entry of examples/ is in the README's
// Examples section with the command that runs it, and so is every package
// with runnable documentation examples.
func TestREADMEListsEveryExample(t *testing.T) {
	t.Parallel()
	section := readmeSection(t, "Examples")
	entries, err := os.ReadDir("../../examples")
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := "examples/" + e.Name()
		if !strings.Contains(section, "`"+name+"`") {
			t.Errorf("README's Examples section does not list %s", name)
		}
		run := "go run ./" + name
		if !e.IsDir() {
			run = "go run ./cmd/strata replay " + name
		}
		if !strings.Contains(section, "`"+run+"`") {
			t.Errorf("README's Examples section does not say how to run %s (%s)", name, run)
		}
	}
	exampleFunc := regexp.MustCompile(`(?m)^func Example`)
	seen := map[string]bool{}
	err = filepath.WalkDir("../..", func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "bench" || d.Name() == "testdata") && path != "../.." {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		if exampleFunc.Match(data) {
			seen[filepath.ToSlash(filepath.Dir(strings.TrimPrefix(path, "../../")))] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) == 0 {
		t.Fatal("no documentation example found")
	}
	for pkg := range seen {
		if !strings.Contains(section, "`"+pkg+"`") {
			t.Errorf("README's Examples section does not mention %s, which has documentation examples", pkg)
		}
	}
}

// TestREADMEFirstCommand: the README's first command is the replay this
// package tests (TestReplaySampleReport).
func TestREADMEFirstCommand(t *testing.T) {
	t.Parallel()
	section := readmeSection(t, "Set up")
	if !strings.Contains(section, "go run ./cmd/strata replay examples/support-chat.jsonl") {
		t.Fatalf("the README's first command changed:\n%s", section)
	}
}
