// Command strata-bench regenerates Strata's benchmark report: it measures
// context size, summarizer cost, load latency, trim cost, token
// estimation, save latency, retention, concurrent load, an agent's reply
// latency, fact fidelity, write throughput, strata serve under load and
// peers on the same replay against their baselines, and writes REPORT.md
// plus SVG plots.
//
// From the repository root:
//
//	go run ./bench/cmd/strata-bench -out bench            # everything (make bench)
//	go run ./bench/cmd/strata-bench -out /tmp/b -quick    # smoke run, tiny subsets
//	go run ./bench/cmd/strata-bench -out bench -sections 1,4
//	go run ./bench/cmd/strata-bench -out /tmp/b -sections 9   # reply latency only (≈ 1 minute)
//
// The data sets are read in place from -data (default ../shared/data).
// The PostgreSQL parts (sections 3, 6, 8, 11 and 12) use -database-url (default
// $DATABASE_URL) and are skipped, with a note in the report, without one.
// Progress goes to standard error.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"runtime/pprof"
	"strconv"
	"strings"
	"syscall"

	"github.com/strata-go/strata/bench/internal/runner"
)

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("strata-bench", flag.ContinueOnError)
	out := fs.String("out", "bench", "directory that receives REPORT.md and the SVG plots")
	dataDir := fs.String("data", "../shared/data", "directory holding locomo/ and taubench_airline/ (read in place)")
	dbURL := fs.String("database-url", os.Getenv("DATABASE_URL"), "PostgreSQL server for sections 3, 6, 8, 11 and 12 (default $DATABASE_URL; empty skips them)")
	poolerURL := fs.String("pgbouncer-url", os.Getenv("STRATA_PGBOUNCER_URL"), "PgBouncer in transaction mode in front of the PostgreSQL server, for the pooled measurements of sections 3 and 11 (default $STRATA_PGBOUNCER_URL, which scripts/with-postgres.sh sets; empty skips them)")
	citusURL := fs.String("citus-url", os.Getenv("CITUS_URL"), "Citus coordinator on the same machine, for section 16 (default $CITUS_URL, which scripts/with-citus.sh sets; empty skips it)")
	sections := fs.String("sections", "", "comma-separated section numbers to run (default all: 1-16)")
	quick := fs.Bool("quick", false, "smoke run: tiny subsets and short timings (numbers are meaningless)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "strata-bench: unexpected arguments %q\n", fs.Args())
		return 2
	}
	var nums []int
	for _, s := range strings.Split(*sections, ",") {
		if s = strings.TrimSpace(s); s == "" {
			continue
		}
		n, err := strconv.Atoi(s)
		if err != nil {
			fmt.Fprintf(os.Stderr, "strata-bench: -sections: %q is not a number\n", s)
			return 2
		}
		nums = append(nums, n)
	}

	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err != nil {
			fmt.Fprintf(os.Stderr, "strata-bench: %v\n", err)
			return 1
		}
		defer f.Close()
		if err := pprof.StartCPUProfile(f); err != nil {
			fmt.Fprintf(os.Stderr, "strata-bench: %v\n", err)
			return 1
		}
		defer pprof.StopCPUProfile()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res, err := runner.Run(ctx, runner.Options{
		OutDir:      *out,
		DataDir:     *dataDir,
		DatabaseURL: *dbURL,
		PoolerURL:   *poolerURL,
		CitusURL:    *citusURL,
		Sections:    nums,
		Quick:       *quick,
		Command:     commandLine(args),
		Progress:    os.Stderr,
	})
	if err != nil {
		fmt.Fprintf(os.Stderr, "strata-bench: %v\n", err)
		return 1
	}
	for _, f := range res.Files {
		fmt.Fprintf(os.Stderr, "strata-bench: wrote %s\n", f)
	}
	fmt.Fprintf(os.Stderr, "strata-bench: done in %s\n", res.Elapsed.Round(1e6))
	if len(res.Failed) > 0 {
		fmt.Fprintf(os.Stderr, "strata-bench: sections %v failed (see the report)\n", res.Failed)
		return 1
	}
	return 0
}

// commandLine is the command shown in the report: $STRATA_BENCH_COMMAND
// (the Makefile sets "make bench") followed by the go run invocation.
func commandLine(args []string) string {
	cmd := "go run ./bench/cmd/strata-bench"
	for _, a := range args {
		if strings.Contains(strings.ToLower(a), "database-url") || strings.Contains(a, "://") {
			a = "<redacted>"
		}
		cmd += " " + a
	}
	if outer := strings.TrimSpace(os.Getenv("STRATA_BENCH_COMMAND")); outer != "" {
		return outer + " (" + cmd + ")"
	}
	return cmd
}
