package audit

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/transparency-dev/formats/log"
	"golang.org/x/mod/sumdb/note"
)

// Signed notes (golang.org/x/mod/sumdb/note, Ed25519): C2SP checkpoints,
// and base notes that move the start of verification forward (retention,
// acknowledgement, adoption; only the key can write one, so deleting the
// oldest receipts is told apart from retention) or record a restore.

// Base kinds.
const (
	BaseRetention    = "retention"
	BaseAcknowledged = "acknowledged"
	BaseAdopted      = "adopted"
	BaseRestored     = "restored" // records a restore; does not move the start
)

const baseHeader = "accords-mcp audit base v1"

// Checkpoint is a signed tree head.
type Checkpoint struct {
	Origin string `json:"origin"`
	Size   uint64 `json:"size"`
	Root   []byte `json:"root"`
	// Note is the whole signed note.
	Note []byte `json:"-"`
}

// Base is a signed start of verification.
type Base struct {
	Origin string    `json:"origin"`
	Kind   string    `json:"kind"`
	Size   uint64    `json:"size"`
	Root   []byte    `json:"root"`
	Chain  string    `json:"chain"` // hash of receipt Size (Genesis for 0)
	Time   time.Time `json:"time"`
	Text   string    `json:"note,omitempty"`
	Signed []byte    `json:"-"`
}

func signCheckpoint(k *Key, origin string, size uint64, root []byte) (Checkpoint, error) {
	body := log.Checkpoint{Origin: origin, Size: size, Hash: root}.Marshal()
	signed, err := note.Sign(&note.Note{Text: string(body)}, k.Signer())
	if err != nil {
		return Checkpoint{}, err
	}
	return Checkpoint{Origin: origin, Size: size, Root: root, Note: signed}, nil
}

// ErrSignature marks notes whose signature does not verify under the key.
var ErrSignature = errors.New("signature does not verify")

// OpenCheckpoint verifies a signed checkpoint with v (nil: parse only). An
// empty origin accepts any.
func OpenCheckpoint(raw []byte, origin string, v note.Verifier) (Checkpoint, error) {
	text, err := noteText(raw, v)
	if err != nil {
		return Checkpoint{}, err
	}
	var cp log.Checkpoint
	if _, err := cp.Unmarshal([]byte(text)); err != nil {
		return Checkpoint{}, err
	}
	if origin != "" && cp.Origin != origin {
		return Checkpoint{}, fmt.Errorf("checkpoint of log %q, not of this log (%q)", cp.Origin, origin)
	}
	if len(cp.Hash) != hashSize {
		return Checkpoint{}, fmt.Errorf("checkpoint root hash has %d bytes", len(cp.Hash))
	}
	return Checkpoint{Origin: cp.Origin, Size: cp.Size, Root: cp.Hash, Note: raw}, nil
}

// noteText is the text of a signed note, verified with v; with v nil it is
// read without checking the signature.
func noteText(raw []byte, v note.Verifier) (string, error) {
	if v == nil {
		text, _, ok := strings.Cut(string(raw), "\n\n")
		if !ok {
			return "", errors.New("not a signed note")
		}
		return text + "\n", nil
	}
	n, err := note.Open(raw, note.VerifierList(v))
	if err != nil {
		return "", fmt.Errorf("%w: %w", ErrSignature, err)
	}
	return n.Text, nil
}

func oneLine(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > 1000 {
		s = s[:1000]
	}
	if s == "" {
		s = "-"
	}
	return s
}

func signBase(k *Key, b Base) (Base, error) {
	b.Text = oneLine(b.Text)
	text := fmt.Sprintf("%s\n%s\n%s\n%d\n%s\n%s\n%s\n%s\n", baseHeader, b.Origin, b.Kind, b.Size,
		base64.StdEncoding.EncodeToString(b.Root), b.Chain, b.Time.UTC().Format(time.RFC3339Nano), b.Text)
	signed, err := note.Sign(&note.Note{Text: text}, k.Signer())
	if err != nil {
		return Base{}, err
	}
	b.Signed = signed
	return b, nil
}

// openBase verifies a base note (v nil: parse only).
func openBase(raw []byte, v note.Verifier) (Base, error) {
	text, err := noteText(raw, v)
	if err != nil {
		return Base{}, err
	}
	lines := strings.Split(strings.TrimSuffix(text, "\n"), "\n")
	if len(lines) != 8 || lines[0] != baseHeader {
		return Base{}, errors.New("not an accords-mcp audit base note")
	}
	b := Base{Origin: lines[1], Kind: lines[2], Chain: lines[5], Text: lines[7], Signed: raw}
	if b.Size, err = strconv.ParseUint(lines[3], 10, 64); err != nil {
		return Base{}, fmt.Errorf("base size: %w", err)
	}
	if b.Root, err = base64.StdEncoding.DecodeString(lines[4]); err != nil || len(b.Root) != hashSize {
		return Base{}, errors.New("base root hash malformed")
	}
	if b.Time, err = time.Parse(time.RFC3339Nano, lines[6]); err != nil {
		return Base{}, fmt.Errorf("base time: %w", err)
	}
	switch b.Kind {
	case BaseRetention, BaseAcknowledged, BaseAdopted, BaseRestored:
	default:
		return Base{}, fmt.Errorf("unknown base kind %q", b.Kind)
	}
	return b, nil
}

// SplitNotes splits concatenated signed notes (an anchor file) into notes:
// text lines, a blank line, then signature lines starting with an em dash.
func SplitNotes(data []byte) [][]byte {
	var out [][]byte
	var cur bytes.Buffer
	state := 0 // 0: before a note, 1: in text, 2: in signatures
	for line := range bytes.Lines(data) {
		trimmed := bytes.TrimRight(line, "\r\n")
		isSig := bytes.HasPrefix(trimmed, []byte("— "))
		switch {
		case state == 0 && len(trimmed) == 0:
		case state == 0:
			cur.Write(trimmed)
			cur.WriteByte('\n')
			state = 1
		case state == 1 && len(trimmed) == 0:
			cur.WriteByte('\n')
			state = 2
		case state == 1:
			cur.Write(trimmed)
			cur.WriteByte('\n')
		case state == 2 && isSig:
			cur.Write(trimmed)
			cur.WriteByte('\n')
		default: // the note ended
			out = append(out, append([]byte(nil), cur.Bytes()...))
			cur.Reset()
			state = 0
			if len(trimmed) > 0 {
				cur.Write(trimmed)
				cur.WriteByte('\n')
				state = 1
			}
		}
	}
	if state == 2 {
		out = append(out, append([]byte(nil), cur.Bytes()...))
	}
	return out
}
