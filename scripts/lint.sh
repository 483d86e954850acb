#!/usr/bin/env bash
# Static checks beyond gofmt and go vet, on the module and on bench/peers
# (a module of its own); scripts/test.sh runs them on a full run:
#
#   staticcheck   honnef.co/go/tools, every default check
#   imports       three groups — standard library, third-party, strata —
#                 in that order (gci), each as goimports -local leaves it
#   go mod tidy   go.mod and go.sum as tidy writes them
#
# The tools run at the versions pinned below through `go run pkg@version`:
# the first run fetches them from the module proxy into the module cache,
# later runs work offline. They stay out of go.mod: a tool directive would
# put their dependencies (golang.org/x/tools, x/mod, x/sync) in the module
# graph, where they can raise the versions the library itself builds with.
#
# Prints what each check would change and exits 1 when any would.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

STATICCHECK=honnef.co/go/tools/cmd/staticcheck@v0.8.2
GOIMPORTS=golang.org/x/tools/cmd/goimports@v0.51.0
GCI=github.com/daixiang0/gci@v0.14.0
LOCAL=github.com/strata-go/strata

status=0
fail() {
	printf 'lint.sh: %s\n' "$*" >&2
	status=1
}

for mod in . bench/peers; do
	echo "lint.sh: staticcheck ($mod)" >&2
	(cd "$mod" && GOWORK=off go run "$STATICCHECK" ./...) || fail "staticcheck found problems in $mod"
	echo "lint.sh: go mod tidy -diff ($mod)" >&2
	(cd "$mod" && GOWORK=off go mod tidy -diff) || fail "go mod tidy would change $mod/go.mod or go.sum"
done

echo "lint.sh: import grouping (goimports -local $LOCAL, gci)" >&2
out="$(go run "$GOIMPORTS" -l -local "$LOCAL" .)"
if [ -n "$out" ]; then
	fail "goimports -local $LOCAL would change:"$'\n'"$out"
fi
out="$(go run "$GCI" list -s standard -s default -s "prefix($LOCAL)" . 2>&1)"
if [ -n "$out" ]; then
	fail "imports not in three groups (standard, third-party, $LOCAL); fix with
  go run $GCI write -s standard -s default -s 'prefix($LOCAL)' .
$out"
fi

exit "$status"
