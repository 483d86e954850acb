package runner

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"
)

// environment describes where and how the report was produced; every
// table of the report is headed by it.
type environment struct {
	CPU      string
	Cores    int
	MemGiB   float64
	Go       string
	Date     time.Time
	Command  string
	Postgres string // server version, "" when not used
	// Durable: the server runs with fsync, synchronous_commit and
	// full_page_writes on, as a production database does.
	Durable bool
	LoadAvg string // 1-minute load average when the run started
}

func detectEnvironment(command string, now time.Time) environment {
	return environment{
		CPU:     cpuModel(),
		Cores:   runtime.NumCPU(),
		MemGiB:  memGiB(),
		Go:      runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH,
		Date:    now.UTC(),
		Command: command,
		LoadAvg: loadAverage(),
	}
}

// cpuModel reads the first "model name" of /proc/cpuinfo.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH + " (unknown model)"
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		k, v, ok := strings.Cut(sc.Text(), ":")
		if ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH + " (unknown model)"
}

// memGiB reads MemTotal of /proc/meminfo.
func memGiB() float64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) >= 2 && fields[0] == "MemTotal:" {
			kb, err := strconv.ParseFloat(fields[1], 64)
			if err == nil {
				return kb / (1 << 20)
			}
		}
	}
	return 0
}

// loadAverage returns the 1-minute load average from /proc/loadavg, "" when
// unknown. Other work on the machine skews timings: the report says how
// busy it was.
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return ""
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return ""
	}
	return f[0]
}

// machine renders the machine in one phrase.
func (e environment) machine() string {
	mem := "unknown memory"
	if e.MemGiB > 0 {
		mem = fmt.Sprintf("%.1f GiB RAM", e.MemGiB)
	}
	return fmt.Sprintf("%s, %d cores, %s", e.CPU, e.Cores, mem)
}

// provenance is the line that heads every table.
func (e environment) provenance(withPostgres bool) string {
	s := fmt.Sprintf("<sub>machine: %s · Go: %s · date: %s · command: `%s`",
		e.machine(), e.Go, e.Date.Format("2006-01-02 15:04 MST"), e.Command)
	if withPostgres && e.Postgres != "" {
		s += " · PostgreSQL: " + e.Postgres
	}
	return s + "</sub>\n\n"
}
