#!/usr/bin/env bash
# Runs every Go fuzz target of the module briefly, one after the other.
#
#   scripts/fuzz.sh                 # each target for FUZZTIME (default 20000x)
#   FUZZTIME=500000x scripts/fuzz.sh  # longer
#   scripts/fuzz.sh ./summary/...   # only these packages
#
# FUZZTIME is a count of executions (Nx), not a duration: with a duration,
# Go up to 1.26 may fail a target with "context deadline exceeded" and no
# crasher when the deadline races the workers' shutdown (golang/go#75804).
# A duration still works, it is just exposed to that race.
#
# Targets are found with `go test -list '^Fuzz'`, so new ones are picked up
# without editing this file. A failing target does not stop the others; the
# script exits non-zero if any failed (the crasher is kept in the package's
# testdata/fuzz directory, ready to commit as a regression case).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

fuzztime="${FUZZTIME:-20000x}"
pkgs=("$@")
[ ${#pkgs[@]} -eq 0 ] && pkgs=(./...)

log() { printf 'fuzz.sh: %s\n' "$*" >&2; }

# `go test -list` prints each package's matching names, then a line
# "ok <import path> <time>" for that package.
listing="$(go test -list '^Fuzz' "${pkgs[@]}")"
targets=()
names=()
while IFS= read -r line; do
	case "$line" in
	Fuzz*) names+=("$line") ;;
	ok*)
		pkg="$(awk '{print $2}' <<<"$line")"
		for n in "${names[@]+"${names[@]}"}"; do targets+=("$pkg $n"); done
		names=()
		;;
	*) names=() ;;
	esac
done <<<"$listing"

if [ ${#targets[@]} -eq 0 ]; then
	log "no fuzz targets found"
	exit 0
fi

failed=()
for t in "${targets[@]}"; do
	pkg="${t% *}"
	name="${t#* }"
	log "$pkg $name for $fuzztime"
	if ! go test -run '^$' -fuzz "^${name}\$" -fuzztime "$fuzztime" "$pkg"; then
		failed+=("$pkg $name")
	fi
done

log "${#targets[@]} fuzz targets run, ${#failed[@]} failed"
if [ ${#failed[@]} -gt 0 ]; then
	printf 'fuzz.sh: FAILED %s\n' "${failed[@]}" >&2
	exit 1
fi
