// Package task keeps the MCP Tasks that follow approval handoffs: owner,
// awaited approval and final tool result, in bucket "tasks" keyed by the
// SHA-256 of the task id (the file never holds a presentable id).
package task

import (
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/domain/approval"
	"github.com/accordsai/accords-mcp/store"
)

// Statuses, as the extension names them.
const (
	StatusWorking       = "working"
	StatusInputRequired = "input_required"
	StatusCompleted     = "completed"
	StatusCancelled     = "cancelled"
	StatusFailed        = "failed"
)

// ErrNotFound means no task with that id belongs to the caller; missing,
// pruned and foreign are not told apart.
var ErrNotFound = errors.New("task not found")

// MaxIDLength bounds task ids read from requests.
const MaxIDLength = 128

// Owner is who may see and cancel a task: caller and tenant scope, and when
// Env is set the launch's Vault environment session (a keyed digest).
type Owner struct {
	Caller string `json:"caller"`
	Scope  string `json:"scope"`
	Env    string `json:"env,omitempty"`
}

// Event is what a task's receipt records: how it ended, or that its owner
// cancelled it.
type Event struct {
	// Kind is the task's new status: completed, failed or cancelled.
	Kind      string
	Owner     Owner
	Transport string
	Tool      string
	TaskRef   string
	// ParentCallID is the tools/call that created the task.
	ParentCallID string
	// Outcome is the envelope's outcome (ok or its error code) for a
	// completed task, else the status.
	Outcome  string
	Envelope json.RawMessage
	Duration time.Duration
}

// Task is one stored task.
type Task struct {
	// Ref is the hex SHA-256 of the task id.
	Ref   string `json:"ref"`
	Owner Owner  `json:"owner"`
	// Tool, CallID and Transport name the tools/call that created the
	// task.
	Tool      string `json:"tool"`
	CallID    string `json:"call_id,omitempty"`
	Transport string `json:"transport,omitempty"`
	// Handle is the approval the task waits on; Continuation finishes the
	// call once Vault has decided.
	Handle       approval.Handle       `json:"handle"`
	Continuation approval.Continuation `json:"continuation"`
	// Approval is the handoff's details.approval, as a client of the
	// polling path would have received it.
	Approval       json.RawMessage `json:"approval,omitempty"`
	AttestationURL string          `json:"attestation_url,omitempty"`
	// ApprovalExpiresAtUnixMS is Vault's expiry of the approval (0: none
	// given).
	ApprovalExpiresAtUnixMS int64 `json:"approval_expires_at_unix_ms"`
	PollIntervalMS          int64 `json:"poll_interval_ms"`
	// Env is the launch's environment session sealed with the server keyring,
	// so the poller resolves the Vault session after a restart too.
	Env []byte `json:"env,omitempty"`

	Status        string     `json:"status"`
	StatusMessage string     `json:"status_message,omitempty"`
	CreatedAt     time.Time  `json:"created_at"`
	UpdatedAt     time.Time  `json:"updated_at"`
	TerminalAt    *time.Time `json:"terminal_at,omitempty"`
	// Result is the CallToolResult (completed); Error the JSON-RPC error
	// (failed).
	Result json.RawMessage `json:"result,omitempty"`
	Error  json.RawMessage `json:"error,omitempty"`
	// Polls counts Vault polls; PollError is the last transient failure.
	Polls      int        `json:"polls"`
	LastPollAt *time.Time `json:"last_poll_at,omitempty"`
	PollError  string     `json:"poll_error,omitempty"`
}

// Terminal reports a task that will not change any more.
func (t Task) Terminal() bool {
	switch t.Status {
	case StatusCompleted, StatusCancelled, StatusFailed:
		return true
	}
	return false
}

// DefaultRetention is how long a finished task is kept.
const DefaultRetention = 7 * 24 * time.Hour

// Store keeps tasks. Safe for concurrent use (bbolt serialises writes).
type Store struct {
	db        *store.DB
	retention time.Duration
	now       func() time.Time
}

// NewStore returns a task store; retention <= 0 means DefaultRetention.
func NewStore(db *store.DB, retention time.Duration) *Store {
	if retention <= 0 {
		retention = DefaultRetention
	}
	return &Store{db: db, retention: retention, now: time.Now}
}

// SetClock replaces the store's time source (tests).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

// Retention is how long finished tasks are kept.
func (s *Store) Retention() time.Duration { return s.retention }

// TTLMS is the task's ttlMs from creation: the approval's expiry (or the
// retention) while waiting, then the retention of the finished task.
func (s *Store) TTLMS(t Task) int64 {
	var end time.Time
	switch {
	case t.Terminal() && t.TerminalAt != nil:
		end = t.TerminalAt.Add(s.retention)
	case t.ApprovalExpiresAtUnixMS > 0:
		end = time.UnixMilli(t.ApprovalExpiresAtUnixMS)
	default:
		end = t.UpdatedAt.Add(s.retention)
	}
	return max(end.Sub(t.CreatedAt).Milliseconds(), 0)
}

// NewID returns a fresh task id: 256 random bits, URL-safe.
func NewID() string {
	var b [32]byte
	_, _ = rand.Read(b[:]) // crypto/rand never fails on supported platforms
	return "task_" + base64.RawURLEncoding.EncodeToString(b[:])
}

// Ref is the storage key of id.
func Ref(id string) string {
	sum := sha256.Sum256([]byte(id))
	return hex.EncodeToString(sum[:])
}

// Create stores t as a new working task (committed before it returns) and
// returns its id.
func (s *Store) Create(t Task) (string, Task, error) {
	now := s.now().UTC()
	t.Status = StatusWorking
	t.CreatedAt, t.UpdatedAt = now, now
	for {
		id := NewID()
		t.Ref = Ref(id)
		taken := false
		err := s.db.Update(func(tx store.Tx) error {
			b, err := bucket(tx)
			if err != nil {
				return err
			}
			if b.Get([]byte(t.Ref)) != nil {
				taken = true
				return nil
			}
			return store.PutJSON(b, []byte(t.Ref), t)
		})
		if err != nil {
			return "", Task{}, err
		}
		if !taken {
			return id, t, nil
		}
	}
}

func bucket(tx store.Tx) (store.Bucket, error) {
	b := tx.Bucket(store.BucketTasks)
	if b == nil {
		return nil, errors.New("tasks bucket missing")
	}
	return b, nil
}

// Get returns the task id names when o owns it.
func (s *Store) Get(id string, o Owner) (Task, error) {
	if id = strings.TrimSpace(id); id == "" || len(id) > MaxIDLength {
		return Task{}, ErrNotFound
	}
	t, ok, err := s.Load(Ref(id))
	if err != nil {
		return Task{}, err
	}
	if !ok || t.Owner != o {
		return Task{}, ErrNotFound
	}
	return t, nil
}

// Load returns the task stored under ref, unless it is past retention.
func (s *Store) Load(ref string) (Task, bool, error) {
	var t Task
	var ok bool
	err := s.db.View(func(tx store.Tx) error {
		b, err := bucket(tx)
		if err != nil {
			return err
		}
		ok, err = store.GetJSON(b, []byte(ref), &t)
		return err
	})
	if err != nil || !ok || s.stale(t, s.now()) {
		return Task{}, false, err
	}
	return t, true, nil
}

// ErrTerminal is returned by Update when the task has already finished;
// a finished task never changes again.
var ErrTerminal = errors.New("task already finished")

// Update applies fn to the task in one transaction and stamps UpdatedAt (and
// TerminalAt); an error from fn writes nothing.
func (s *Store) Update(ref string, fn func(t *Task) error) (Task, error) {
	var out Task
	err := s.db.Update(func(tx store.Tx) error {
		b, err := bucket(tx)
		if err != nil {
			return err
		}
		var t Task
		ok, err := store.GetJSON(b, []byte(ref), &t)
		if err != nil {
			return err
		}
		if !ok {
			return ErrNotFound
		}
		if t.Terminal() {
			out = t
			return ErrTerminal
		}
		if err := fn(&t); err != nil {
			out = t
			return err
		}
		now := s.now().UTC()
		t.UpdatedAt = now
		if t.Terminal() && t.TerminalAt == nil {
			t.TerminalAt = &now
		}
		out = t
		return store.PutJSON(b, []byte(ref), t)
	})
	return out, err
}

// Working lists the tasks still waiting, for the runner to pick up (at
// start and after a restart).
func (s *Store) Working() ([]Task, error) {
	var out []Task
	now := s.now()
	err := s.db.View(func(tx store.Tx) error {
		b, err := bucket(tx)
		if err != nil {
			return err
		}
		return b.ForEach(func(_, v []byte) error {
			var t Task
			if json.Unmarshal(v, &t) == nil && !t.Terminal() && !s.stale(t, now) {
				out = append(out, t)
			}
			return nil
		})
	})
	return out, err
}

// stale reports a task past retention: after it finished, or after the
// later of its last update and the approval's expiry.
func (s *Store) stale(t Task, now time.Time) bool {
	if t.Terminal() && t.TerminalAt != nil {
		return now.Sub(*t.TerminalAt) > s.retention
	}
	last := t.UpdatedAt
	if t.ApprovalExpiresAtUnixMS > 0 {
		if exp := time.UnixMilli(t.ApprovalExpiresAtUnixMS); exp.After(last) {
			last = exp
		}
	}
	return now.Sub(last) > s.retention
}

// Prune deletes stale tasks and reports how many went; it writes only when
// something is stale.
func (s *Store) Prune() (int, error) {
	now := s.now()
	var dead [][]byte
	err := s.db.View(func(tx store.Tx) error {
		b, err := bucket(tx)
		if err != nil {
			return err
		}
		return b.ForEach(func(k, v []byte) error {
			var t Task
			if json.Unmarshal(v, &t) != nil || s.stale(t, now) {
				dead = append(dead, append([]byte(nil), k...))
			}
			return nil
		})
	})
	if err != nil || len(dead) == 0 {
		return 0, err
	}
	// In transactions of the store's write budget (etcd's op limit).
	chunk := s.db.WriteBudget()
	if chunk <= 0 {
		chunk = len(dead)
	}
	for from := 0; from < len(dead); from += chunk {
		part := dead[from:min(from+chunk, len(dead))]
		err = s.db.Update(func(tx store.Tx) error {
			b, err := bucket(tx)
			if err != nil {
				return err
			}
			for _, k := range part {
				if err := b.Delete(k); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return from, err
		}
	}
	return len(dead), nil
}
