package runner

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"sync"
	"time"
)

// samples is a list of measured durations.
type samples []time.Duration

// sorted returns a sorted copy.
func (s samples) sorted() samples {
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// pct returns the p-th percentile (0 < p <= 100, nearest rank).
func (s samples) pct(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	c := s.sorted()
	i := int(math.Ceil(p/100*float64(len(c)))) - 1
	return c[min(max(i, 0), len(c)-1)]
}

// mean returns the arithmetic mean.
func (s samples) mean() time.Duration {
	if len(s) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return sum / time.Duration(len(s))
}

// measure runs fn at least minIters times and until minTime has passed,
// at most maxIters times (0 = no cap), after warm warm-up calls, and returns
// the duration of every timed call.
func measure(warm, minIters, maxIters int, minTime time.Duration, fn func()) samples {
	for range warm {
		fn()
	}
	var out samples
	began := time.Now()
	for len(out) < minIters || time.Since(began) < minTime {
		if maxIters > 0 && len(out) >= maxIters {
			break
		}
		t0 := time.Now()
		fn()
		out = append(out, time.Since(t0))
	}
	return out
}

// meanInt returns the mean of xs.
func meanInt(xs []int) float64 {
	if len(xs) == 0 {
		return 0
	}
	sum := 0
	for _, x := range xs {
		sum += x
	}
	return float64(sum) / float64(len(xs))
}

// maxInt returns the largest of xs (0 for none).
func maxInt(xs []int) int {
	m := 0
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

// ratio returns a/b, NaN when b is 0.
func ratio(a, b float64) float64 {
	if b == 0 {
		return math.NaN()
	}
	return a / b
}

// fmtRatio renders a ratio as "0.42×".
func fmtRatio(r float64) string {
	switch {
	case math.IsNaN(r) || math.IsInf(r, 0):
		return "n/a"
	case r >= 100:
		return fmt.Sprintf("%.0f×", r)
	case r >= 10:
		return fmt.Sprintf("%.1f×", r)
	case r >= 0.01:
		return fmt.Sprintf("%.2f×", r)
	default:
		return fmt.Sprintf("%.2g×", r)
	}
}

// fmtDur renders a duration with 3 significant digits in a fitting unit.
func fmtDur(d time.Duration) string {
	ns := float64(d)
	switch {
	case ns < 1e3:
		return fmt.Sprintf("%.0f ns", ns)
	case ns < 1e6:
		return sig3(ns/1e3) + " µs"
	case ns < 1e9:
		return sig3(ns/1e6) + " ms"
	default:
		return sig3(ns/1e9) + " s"
	}
}

func sig3(v float64) string {
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f", v)
	case v >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

// fmtInt renders an integer with thin thousands separators ("12 345").
func fmtInt(n int) string {
	s := fmt.Sprint(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteString(" ")
		}
		b.WriteRune(c)
	}
	if neg {
		return "-" + b.String()
	}
	return b.String()
}

// fmtFloat renders v with one decimal and thousands separators.
func fmtFloat(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	whole := int(math.Round(v * 10))
	return fmt.Sprintf("%s.%d", fmtInt(whole/10), abs(whole%10))
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// pctStr renders a fraction as a percentage with one decimal.
func pctStr(f float64) string {
	if math.IsNaN(f) {
		return "n/a"
	}
	return fmt.Sprintf("%.1f %%", 100*f)
}

// mdTable renders a Markdown table.
func mdTable(headers []string, rows [][]string) string {
	var b strings.Builder
	b.WriteString("| " + strings.Join(headers, " | ") + " |\n|")
	for range headers {
		b.WriteString(" --- |")
	}
	b.WriteString("\n")
	for _, r := range rows {
		b.WriteString("| " + strings.Join(r, " | ") + " |\n")
	}
	return b.String()
}

// parallel calls fn(0..n-1) on up to workers goroutines and returns the
// errors joined. It is for work whose wall time is not measured.
func parallel(n, workers int, fn func(i int) error) error {
	errs := make([]error, n)
	next := make(chan int)
	var wg sync.WaitGroup
	for range max(1, min(workers, n)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				errs[i] = fn(i)
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}
