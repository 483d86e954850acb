#!/usr/bin/env bash
# Builds the smallest program that uses Strata as a library — memory and
# agent over the in-memory store — stripped (-ldflags='-s -w'), prints its
# size, and fails if it links the Gemini SDK or gRPC: those come only with a
# provider package (providers/gemini), never through memory or agent.
#
# Usage: scripts/binary-size.sh            (from anywhere in the repository)
# Works offline: the program is built in a temporary module that replaces
# github.com/strata-go/strata with this checkout and reuses its go.sum.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cat >"$tmp/main.go" <<'GO'
// Command minimal is a memory-backed agent over a model chosen at run
// time; it exists to measure what Strata adds to a binary.
package main

import (
	"context"
	"fmt"
	"os"

	"github.com/tmc/langchaingo/llms"

	"github.com/strata-go/strata/agent"
	"github.com/strata-go/strata/memory"
)

func run(model llms.Model) error {
	mgr, err := memory.NewManager(memory.NewInMemoryStore(), memory.DefaultConfig())
	if err != nil {
		return err
	}
	defer mgr.Close()
	bot, err := agent.New(model, mgr, agent.WithSystemPrompt("You are helpful."))
	if err != nil {
		return err
	}
	res, err := bot.Run(context.Background(), "s", "u", "hello")
	if err != nil {
		return err
	}
	fmt.Println(res.Text)
	return nil
}

func main() {
	if err := run(nil); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}
GO
mod=$(sed -n 's/^module //p' "$root/go.mod")
goversion=$(sed -n 's/^go //p' "$root/go.mod")
cat >"$tmp/go.mod" <<MOD
module minimal

go $goversion

require $mod v0.0.0

replace $mod => $root
MOD
cp "$root/go.sum" "$tmp/go.sum"

cd "$tmp"
export GOFLAGS=-mod=mod GOWORK=off
go build -trimpath -ldflags='-s -w' -o minimal . 2>&1
deps=$(go list -deps .)
if bad=$(grep -E '^(github\.com/google/generative-ai-go|google\.golang\.org/genai|google\.golang\.org/grpc)' <<<"$deps"); then
	echo "binary-size: the minimal program links provider SDKs:" >&2
	echo "$bad" >&2
	exit 1
fi
bytes=$(wc -c <minimal | tr -d ' ')
awk -v b="$bytes" -v p="$(go env GOOS)/$(go env GOARCH), $(go env GOVERSION)" \
	'BEGIN { printf "minimal memory + agent binary (go build -ldflags=-s -w, %s): %d bytes (%.1f MiB)\n", p, b, b / 1048576 }'
