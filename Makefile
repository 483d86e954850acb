# Developer shortcuts.

.PHONY: bench test

# Regenerates bench/REPORT.md and its SVG plots, offline (see bench/README.md).
# The PostgreSQL parts use $DATABASE_URL, or else a server that
# scripts/with-postgres.sh finds or starts (the same logic as the tests),
# a private one on PostgreSQL's durable defaults (fsync, synchronous_commit
# and full_page_writes on: STRATA_PG_DURABLE=1); the report says which
# settings the server had.
# Extra flags: make bench BENCH_FLAGS="-sections 1,4". A partial run
# rewrites bench/REPORT.md with only those sections: while iterating, write
# elsewhere, e.g. the reply-latency section alone (about a minute):
#   make bench BENCH_FLAGS="-sections 9 -out /tmp/strata-bench"
BENCH_FLAGS ?=
BENCH_CMD = go run ./bench/cmd/strata-bench -out bench $(BENCH_FLAGS)

# Section 16 compares Strata on Citus with plain PostgreSQL: when the
# citus extension is installed, scripts/with-citus.sh starts a throwaway
# three-node cluster (coordinator and two workers, durable) beside the
# PostgreSQL server and sets CITUS_URL; without Citus the section says it
# was skipped.
bench:
	@export STRATA_BENCH_COMMAND="make bench" STRATA_PG_DURABLE=1; \
	scripts/with-postgres.sh scripts/with-citus.sh $(BENCH_CMD)

test:
	./scripts/test.sh
