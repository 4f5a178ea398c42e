package witness

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/store"
	"golang.org/x/mod/sumdb/note"
)

// Submitter is an audit.Anchor that offers each signed checkpoint to one
// witness with add-checkpoint (C2SP tlog-witness) and keeps the verified
// cosignature with the stored checkpoint. It runs on the log's anchor
// queue, so a slow or unreachable witness delays only its cosignature.
type Submitter struct {
	db      *store.DB
	w       Witness
	client  *http.Client
	now     func() time.Time
	mu      sync.Mutex
	known   uint64 // the size the witness is believed to hold
	started bool
}

// DefaultTimeout bounds one add-checkpoint request.
const DefaultTimeout = 10 * time.Second

// maxResponse bounds what is read of a witness's answer.
const maxResponse = 64 << 10

// NewSubmitter submits to w, storing cosignatures in db; hc nil uses a
// client with DefaultTimeout.
func NewSubmitter(db *store.DB, w Witness, hc *http.Client) *Submitter {
	if hc == nil {
		hc = &http.Client{Timeout: DefaultTimeout}
	}
	return &Submitter{db: db, w: w, client: hc, now: time.Now}
}

// Target is "witness:URL".
func (s *Submitter) Target() string { return "witness:" + s.w.URL }

// Errors of a submission.
var (
	// ErrWitnessAhead: the witness holds a larger tree than the checkpoint
	// offered, so this log is behind what the witness saw (an older copy
	// of the database, or another holder of the key signing more).
	ErrWitnessAhead = errors.New("the witness has cosigned a larger tree of this log")
	// ErrRefused: the witness does not accept checkpoints of this log.
	ErrRefused = errors.New("the witness refused the checkpoint")
)

// Anchor submits cp, retrying once from the size a 409 Conflict names.
func (s *Submitter) Anchor(ctx context.Context, cp audit.Checkpoint) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	st := audit.WitnessState{Name: s.w.Name(), URL: s.w.URL, Submitted: cp.Size}
	if !s.started {
		s.started = true
		if states, err := audit.WitnessStates(s.db); err == nil {
			for _, o := range states {
				if o.URL == s.w.URL && o.Name == s.w.Name() {
					s.known = o.Cosigned
				}
			}
		}
	}
	st.Cosigned = s.known
	err := s.submit(ctx, cp)
	if err == nil {
		s.known = cp.Size
		st.Cosigned = cp.Size
	} else {
		st.Error = err.Error()
	}
	st.At = s.now().UTC()
	if serr := audit.SaveWitnessState(s.db, st); err == nil {
		err = serr
	}
	return err
}

func (s *Submitter) submit(ctx context.Context, cp audit.Checkpoint) error {
	old := s.known
	for attempt := 0; ; attempt++ {
		if old > cp.Size {
			return fmt.Errorf("%w (%d receipts; this checkpoint covers %d)", ErrWitnessAhead, old, cp.Size)
		}
		status, body, err := s.post(ctx, old, cp)
		if err != nil {
			return err
		}
		switch status {
		case http.StatusOK:
			return s.keep(cp, body)
		case http.StatusConflict:
			n, perr := strconv.ParseUint(strings.TrimSpace(string(body)), 10, 64)
			if perr != nil {
				return fmt.Errorf("witness answered 409 Conflict without its tree size: %q", clip(body))
			}
			if attempt > 0 || n == old {
				return fmt.Errorf("witness answered 409 Conflict twice (its size %d)", n)
			}
			old = n
			s.known = n
		case http.StatusForbidden:
			return fmt.Errorf("%w: 403 Forbidden (it does not know this log's origin or key; add the log and the key that accords-mcp audit key prints): %s", ErrRefused, clip(body))
		case http.StatusNotFound:
			return fmt.Errorf("%w: 404 Not Found (no add-checkpoint at %s, or the log is unknown to it): %s", ErrRefused, s.w.URL, clip(body))
		case http.StatusUnprocessableEntity:
			return fmt.Errorf("%w: 422 (the consistency proof from %d to %d does not verify against what it saw: a fork of this log, or a rewritten database): %s", ErrRefused, old, cp.Size, clip(body))
		default:
			return fmt.Errorf("witness answered %d: %s", status, clip(body))
		}
	}
}

// post sends add-checkpoint: "old N", the consistency proof's hashes, a
// blank line, then the signed checkpoint.
func (s *Submitter) post(ctx context.Context, old uint64, cp audit.Checkpoint) (int, []byte, error) {
	proof, err := audit.ConsistencyProof(s.db, old, cp.Size)
	if err != nil {
		return 0, nil, fmt.Errorf("consistency proof from %d to %d: %w", old, cp.Size, err)
	}
	var b bytes.Buffer
	fmt.Fprintf(&b, "old %d\n", old)
	for _, h := range proof {
		b.WriteString(base64.StdEncoding.EncodeToString(h) + "\n")
	}
	b.WriteString("\n")
	b.Write(cp.Note)
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, s.w.URL+"/add-checkpoint", &b)
	if err != nil {
		return 0, nil, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, nil, fmt.Errorf("witness unreachable: %w", err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse))
	if err != nil {
		return 0, nil, fmt.Errorf("reading the witness's answer: %w", err)
	}
	return resp.StatusCode, body, nil
}

// keep verifies the returned signature lines against the checkpoint text
// with the witness key and stores the ones that verify.
func (s *Submitter) keep(cp audit.Checkpoint, sigs []byte) error {
	text, _, ok := bytes.Cut(cp.Note, []byte("\n\n"))
	if !ok {
		return errors.New("checkpoint is not a signed note")
	}
	n, err := note.Open(append(append(append([]byte(nil), text...), "\n\n"...), sigs...), note.VerifierList(s.w.Verifier))
	if err != nil || len(n.Sigs) == 0 {
		return fmt.Errorf("%w in its answer: %q", ErrNoCosignature, clip(sigs))
	}
	var lines bytes.Buffer
	for _, sig := range n.Sigs {
		fmt.Fprintf(&lines, "— %s %s\n", sig.Name, sig.Base64)
	}
	_, err = audit.AddCosignatures(s.db, cp, lines.Bytes())
	return err
}

func clip(b []byte) string {
	s := strings.TrimSpace(string(b))
	if len(s) > 300 {
		s = s[:300] + "…"
	}
	return s
}
