package main

import (
	"fmt"
	"io"
	"os"
	"strings"
	"time"
)

// progressMinTurns is the smallest replay that gets a progress bar.
const progressMinTurns = 50

// progress draws a one-line progress bar on a terminal. Before anything is
// written to stdout (possibly the same terminal) the line is cleared, and it
// is redrawn at most ten times a second.
type progress struct {
	w      io.Writer
	on     bool
	shared bool // stdout is a terminal too: clear before each report

	total int    // 0: unknown, only the count is drawn
	unit  string // what is counted ("turns")
	drawn bool
	last  time.Time
}

func newProgress(w, stdout io.Writer, total int, want bool) *progress {
	return &progress{w: w, on: want && isTerminal(w), shared: isTerminal(stdout), total: total, unit: "turns"}
}

// withUnit names what the progress counts.
func (p *progress) withUnit(unit string) *progress {
	p.unit = unit
	return p
}

// isTerminal reports whether w is a terminal: a character device other
// than the null device. (golang.org/x/term is not a direct dependency;
// this is enough to tell a terminal from a pipe, a file or /dev/null.)
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	if err != nil || st.Mode()&os.ModeCharDevice == 0 {
		return false
	}
	if null, err := os.Stat(os.DevNull); err == nil && os.SameFile(st, null) {
		return false
	}
	return true
}

func (p *progress) update(done int, label string) {
	if !p.on {
		return
	}
	now := time.Now()
	if p.drawn && now.Sub(p.last) < 100*time.Millisecond && done < p.total {
		return
	}
	p.erase()
	if p.total <= 0 {
		fmt.Fprintf(p.w, "\r%d %s %s", done, p.unit, label)
		p.drawn, p.last = true, now
		return
	}
	const width = 30
	filled := width * done / max(p.total, 1)
	bar := strings.Repeat("█", filled) + strings.Repeat("░", width-filled)
	fmt.Fprintf(p.w, "\r%s %d/%d %s %3d%% %s", bar, done, p.total, p.unit, 100*done/max(p.total, 1), label)
	p.drawn, p.last = true, now
}

// clear erases the bar, when stdout shares the terminal, so that the
// report starts on a clean line.
func (p *progress) clear() {
	if p.shared {
		p.erase()
	}
}

func (p *progress) erase() {
	if p.on && p.drawn {
		fmt.Fprint(p.w, "\r\033[K")
		p.drawn = false
	}
}

func (p *progress) finish() {
	p.erase()
	p.on = false
}
