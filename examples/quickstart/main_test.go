package main

import (
	"bytes"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The README's quick start is this program, as pasted: its Go block must
// be main.go, byte for byte.
func TestREADMEQuickStartIsThisProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	text := string(readme)
	i := strings.Index(text, "## Quick start")
	if i < 0 {
		t.Fatal("README has no Quick start section")
	}
	const open = "```go\n"
	j := strings.Index(text[i:], open)
	if j < 0 {
		t.Fatal("the Quick start section has no Go block")
	}
	block := text[i+j+len(open):]
	block = block[:strings.Index(block, "```\n")]
	if block != string(src) {
		t.Fatalf("the README's quick start differs from examples/quickstart/main.go:\n%s", block)
	}
}

// Offline (no OPENAI_API_KEY) the program answers through the tool.
func TestQuickStartRunsOffline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the program")
	}
	cmd := exec.Command("go", "run", ".")
	cmd.Env = append(os.Environ(), "OPENAI_API_KEY=")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		t.Fatalf("go run: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "shipped with UPS on May 2") {
		t.Fatalf("output %q does not carry the tool's answer", out.String())
	}
}
