package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progressBar shows progress on stderr only when it is a terminal.
type progressBar struct {
	w     io.Writer
	label string
	width int

	decided bool
	off     bool
	bar     *progressbar.ProgressBar
	max     int
}

// isTerminal reports whether w is a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// update shows done of total; note names the unit ("entries").
func (p *progressBar) update(done, total int, note string) {
	if total <= 0 {
		return
	}
	if !p.decided {
		p.decided, p.off = true, !isTerminal(p.w)
	}
	if p.off {
		return
	}
	if p.bar == nil {
		opts := []progressbar.Option{
			progressbar.OptionSetWriter(p.w),
			progressbar.OptionSetDescription(p.label),
			progressbar.OptionSetWidth(p.width),
			progressbar.OptionShowCount(),
			progressbar.OptionThrottle(50 * time.Millisecond),
		}
		if note != "" {
			opts = append(opts, progressbar.OptionSetItsString(note), progressbar.OptionShowIts())
		}
		p.bar, p.max = progressbar.NewOptions(total, opts...), total
	}
	if total != p.max {
		p.bar.ChangeMax(total)
		p.max = total
	}
	_ = p.bar.Set(min(done, total))
}

// finish ends the bar's line, so what follows starts on a fresh one.
func (p *progressBar) finish() {
	if p.bar == nil {
		return
	}
	_ = p.bar.Exit()
	fmt.Fprintln(p.w)
}
