package audit

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/store"
	"github.com/transparency-dev/merkle/compact"
)

// Cadence is when checkpoints are signed: every Every receipts or, when
// receipts were added, every Interval; zero fields take the defaults.
type Cadence struct {
	Every    uint64
	Interval time.Duration
}

// ParseCadence reads ACCORDS_MCP_AUDIT_CHECKPOINT: a count ("1000"), an
// interval ("30s"), or both comma-separated; "" is the default.
func ParseCadence(s string) (Cadence, error) {
	c := Cadence{Every: DefaultCheckpointEvery, Interval: DefaultCheckpointInterval}
	for part := range strings.SplitSeq(strings.TrimSpace(strings.ToLower(s)), ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if n, err := strconv.ParseUint(part, 10, 64); err == nil && n > 0 {
			c.Every = n
			continue
		}
		d, err := parseAge(part)
		if err != nil || d < time.Second {
			return c, fmt.Errorf("audit checkpoint cadence %q: use a receipt count such as 1000, an interval of at least 1s such as 30s, or both", part)
		}
		c.Interval = d
	}
	return c, nil
}

// signIfDue signs and stores a checkpoint of rng when one is due (forced,
// the first, or Cadence.Every receipts since the last); nil when not.
func (l *Log) signIfDue(b buckets, rng *compact.Range, force bool) (*Checkpoint, error) {
	due := rng.End() > l.lastCP && (force || l.lastCP == 0 || rng.End()-l.lastCP >= l.opts.Cadence.Every)
	if !due {
		return nil, nil
	}
	c, err := signCheckpoint(l.key, l.origin, rng.End(), rootOf(rng))
	if err != nil {
		return nil, err
	}
	if err := b.checkpoints.Put(store.U64(c.Size), c.Note); err != nil {
		return nil, err
	}
	// Keep one checkpoint per Every receipts (the last of each block) and
	// the newest: every checkpoint still goes to the anchor.
	if prev := l.lastCP; prev > l.base.Size && prev/l.opts.Cadence.Every == c.Size/l.opts.Cadence.Every {
		if err := b.checkpoints.Delete(store.U64(prev)); err != nil {
			return nil, err
		}
	}
	return &c, nil
}
