#!/usr/bin/env bash
# Static checks beyond gofmt and go vet, on the module and on bench/peers
# (a module of its own); scripts/test.sh runs them on a full run:
#
#   staticcheck   honnef.co/go/tools, every default check
#   imports       three groups — standard library, third-party, strata —
#                 in that order (gci), each as goimports -local leaves it
#   go mod tidy   go.mod and go.sum as tidy writes them
#
# The tools are pinned in scripts/tools/go.mod (a module of their own, by
# its tool directives) and built from the module cache by `go tool`: the
# first run fetches them from the module proxy, later runs work offline.
# They stay out of the library's go.mod: staticcheck needs go 1.26, and
# its dependencies (golang.org/x/tools, x/mod, x/sync) would join the
# library's module graph, where they can raise the versions it builds with.
# Update with: cd scripts/tools && go get -tool PKG@VERSION && go mod tidy
#
# Prints what each check would change and exits 1 when any would.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

LOCAL=github.com/strata-go/strata

# tool NAME prints the path of the tool's binary, building it if need be.
tool() { (cd scripts/tools && GOWORK=off go tool -n "$1"); }
STATICCHECK="$(tool staticcheck)"
GOIMPORTS="$(tool goimports)"
GCI="$(tool gci)"

status=0
fail() {
	printf 'lint.sh: %s\n' "$*" >&2
	status=1
}

for mod in . bench/peers scripts/tools; do
	if [ "$mod" != scripts/tools ]; then
		echo "lint.sh: staticcheck ($mod)" >&2
		(cd "$mod" && GOWORK=off "$STATICCHECK" ./...) || fail "staticcheck found problems in $mod"
	fi
	echo "lint.sh: go mod tidy -diff ($mod)" >&2
	(cd "$mod" && GOWORK=off go mod tidy -diff) || fail "go mod tidy would change $mod/go.mod or go.sum"
done

echo "lint.sh: import grouping (goimports -local $LOCAL, gci)" >&2
out="$("$GOIMPORTS" -l -local "$LOCAL" .)"
if [ -n "$out" ]; then
	fail "goimports -local $LOCAL would change:"$'\n'"$out"
fi
out="$("$GCI" list -s standard -s default -s "prefix($LOCAL)" . 2>&1)"
if [ -n "$out" ]; then
	fail "imports not in three groups (standard, third-party, $LOCAL); fix with
  $GCI write -s standard -s default -s 'prefix($LOCAL)' .
$out"
fi

exit "$status"
