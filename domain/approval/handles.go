package approval

import (
	"encoding/json"
	"errors"
	"sort"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/store"
)

// Handle record states (the handles list filter accepts these).
const (
	StatePendingApproval = "PENDING_APPROVAL"
	StateRunning         = "RUNNING"
	StateSucceeded       = "SUCCEEDED"
	StateDenied          = "DENIED"
	StateFailed          = "FAILED"
	StateExpired         = "EXPIRED"
	StateCanceled        = "CANCELED"
)

// HandleStates lists every record state.
var HandleStates = []string{StatePendingApproval, StateRunning, StateSucceeded, StateDenied, StateFailed, StateExpired, StateCanceled}

// DefaultRetention is how long terminal handles are kept.
const DefaultRetention = 7 * 24 * time.Hour

// Record is a durable handle (D4): what was handed off, when, and the last
// state a wait saw.
type Record struct {
	Handle                 Handle     `json:"handle"`
	State                  string     `json:"state"`
	VaultState             string     `json:"vault_state,omitempty"`
	DecisionOutcome        string     `json:"decision_outcome"`
	Terminal               bool       `json:"terminal"`
	Expired                bool       `json:"expired"`
	PendingExpiresAtUnixMS int64      `json:"pending_expires_at_unix_ms"`
	RemoteAttestationURL   string     `json:"remote_attestation_url,omitempty"`
	Source                 string     `json:"source,omitempty"`
	CreatedAt              time.Time  `json:"created_at"`
	UpdatedAt              time.Time  `json:"updated_at"`
	TerminalAt             *time.Time `json:"terminal_at,omitempty"`
	// Task is set when a Tasks-extension task follows this handle.
	Task *TaskLink `json:"task,omitempty"`
}

// TaskLink is the task that follows a handle, as the handles list shows it.
// The task id is its owner's secret and is not kept here.
type TaskLink struct {
	Status        string    `json:"status"`
	StatusMessage string    `json:"status_message,omitempty"`
	UpdatedAt     time.Time `json:"updated_at"`
}

// LinkTask records the state of the task following h; a handle the store
// does not hold is left alone.
func (s *Store) LinkTask(scope string, h Handle, link TaskLink) error {
	return s.db.Update(func(tx store.Tx) error {
		root := tx.Bucket(store.BucketHandles)
		if root == nil {
			return errors.New("handles bucket missing")
		}
		b := root.Bucket(scopeKey(scope))
		if b == nil {
			return nil
		}
		var r Record
		ok, err := store.GetJSON(b, []byte(h.Key()), &r)
		if err != nil || !ok {
			return err
		}
		r.Task = &link
		return store.PutJSON(b, []byte(h.Key()), r)
	})
}

// Store keeps handles per scope in the "handles" bucket: one nested bucket
// per scope, keyed by Handle.Key().
type Store struct {
	db        *store.DB
	retention time.Duration
	now       func() time.Time
}

// NewStore returns a handle store; retention <= 0 means DefaultRetention.
func NewStore(db *store.DB, retention time.Duration) *Store {
	if retention <= 0 {
		retention = DefaultRetention
	}
	return &Store{db: db, retention: retention, now: time.Now}
}

// SetClock replaces the store's time source (tests).
func (s *Store) SetClock(now func() time.Time) { s.now = now }

func scopeKey(scope string) []byte {
	if strings.TrimSpace(scope) == "" {
		scope = "default"
	}
	return []byte(scope)
}

func recordState(vaultState, outcome string) string {
	st := strings.ToUpper(vaultState)
	switch {
	case st == "CANCELLED":
		return StateCanceled
	case IsTerminal(st):
		return st
	case outcome == OutcomePending || st == "":
		return StatePendingApproval
	}
	return StateRunning
}

func (s *Store) update(scope string, key string, fn func(r *Record, exists bool)) (Record, error) {
	var out Record
	err := s.db.Update(func(tx store.Tx) error {
		root := tx.Bucket(store.BucketHandles)
		if root == nil {
			return errors.New("handles bucket missing")
		}
		b, err := root.CreateBucketIfNotExists(scopeKey(scope))
		if err != nil {
			return err
		}
		var r Record
		exists, err := store.GetJSON(b, []byte(key), &r)
		if err != nil {
			exists = false
			r = Record{}
		}
		fn(&r, exists)
		if err := store.PutJSON(b, []byte(key), r); err != nil {
			return err
		}
		out = r
		// A bounded share of the scope's stale records goes with each save
		// (all of them on bbolt); Prune takes the rest.
		_, err = s.pruneBucket(b, s.db.WriteBudget()/2)
		return err
	})
	return out, err
}

// Save records a new handoff (or refreshes an existing handle with the same
// job/run id, keeping its creation time).
func (s *Store) Save(scope string, h *Handoff, source string) (Record, error) {
	now := s.now().UTC()
	return s.update(scope, h.Key(), func(r *Record, exists bool) {
		if !exists {
			r.CreatedAt = now
		}
		r.Handle = mergeHandle(r.Handle, h.Handle)
		r.State = StatePendingApproval
		r.VaultState = ""
		r.DecisionOutcome = OutcomePending
		r.Terminal, r.Expired, r.TerminalAt = false, false, nil
		r.PendingExpiresAtUnixMS = h.ExpiresAtUnixMS
		r.RemoteAttestationURL = h.RemoteAttestationURL
		r.Source = source
		r.UpdatedAt = now
	})
}

func mergeHandle(old, h Handle) Handle {
	if h.ChallengeID == "" {
		h.ChallengeID = old.ChallengeID
	}
	if h.PendingID == "" {
		h.PendingID = old.PendingID
	}
	if h.JobID == "" {
		h.JobID = old.JobID
	}
	if h.RunID == "" {
		h.RunID = old.RunID
	}
	return h
}

// Observe records the latest state a wait saw. A handle the store does not
// know (for example one copied from another client) is created.
func (s *Store) Observe(scope string, res WaitResult) (Record, error) {
	now := s.now().UTC()
	return s.update(scope, res.Handle.Key(), func(r *Record, exists bool) {
		if !exists {
			r.CreatedAt = now
			r.Source = "vaultclaw_approval_wait"
		}
		r.Handle = mergeHandle(r.Handle, res.Handle)
		if res.State == "" {
			// No poll succeeded: nothing new is known.
			if !exists {
				r.State, r.DecisionOutcome = StatePendingApproval, OutcomePending
			}
			r.UpdatedAt = now
			return
		}
		r.VaultState = res.State
		r.State = recordState(res.State, res.Outcome)
		r.DecisionOutcome = res.Outcome
		if IsTerminal(res.State) && r.DecisionOutcome == OutcomePending {
			r.DecisionOutcome = OutcomeUnknown
		}
		r.Expired = res.Expired
		r.Terminal = IsTerminal(res.State)
		if r.Terminal && r.TerminalAt == nil {
			t := now
			r.TerminalAt = &t
		}
		if exp := int64Of(res.Job["pending_expires_at_unix_ms"]); exp > 0 {
			r.PendingExpiresAtUnixMS = exp
		}
		r.UpdatedAt = now
	})
}

// stale reports a record past retention: terminal ones after they finished,
// pending ones after the later of their last update and Vault expiry.
func (s *Store) stale(r Record, now time.Time) bool {
	if r.Terminal && r.TerminalAt != nil {
		return now.Sub(*r.TerminalAt) > s.retention
	}
	last := r.UpdatedAt
	if r.PendingExpiresAtUnixMS > 0 {
		if exp := time.UnixMilli(r.PendingExpiresAtUnixMS); exp.After(last) {
			last = exp
		}
	}
	return now.Sub(last) > s.retention
}

func (s *Store) pruneBucket(b store.Bucket, budget int) (int, error) {
	now := s.now()
	var dead [][]byte
	err := b.ForEach(func(k, v []byte) error {
		if budget > 0 && len(dead) >= budget {
			return nil
		}
		var r Record
		if json.Unmarshal(v, &r) != nil || s.stale(r, now) {
			dead = append(dead, append([]byte(nil), k...))
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	for _, k := range dead {
		if err := b.Delete(k); err != nil {
			return 0, err
		}
	}
	return len(dead), nil
}

// Prune deletes stale records in every scope and reports how many went.
func (s *Store) Prune() (int, error) {
	budget := s.db.WriteBudget()
	total := 0
	for {
		n, err := s.prunePass(budget)
		total += n
		if err != nil || budget == 0 || n < budget {
			return total, err
		}
	}
}

func (s *Store) prunePass(budget int) (int, error) {
	n := 0
	err := s.db.Update(func(tx store.Tx) error {
		n = 0
		root := tx.Bucket(store.BucketHandles)
		if root == nil {
			return nil
		}
		var scopes [][]byte
		_ = root.ForEach(func(k, v []byte) error {
			if v == nil {
				scopes = append(scopes, append([]byte(nil), k...))
			}
			return nil
		})
		for _, sc := range scopes {
			left := 0
			if budget > 0 {
				if left = budget - n; left <= 0 {
					break
				}
			}
			d, err := s.pruneBucket(root.Bucket(sc), left)
			if err != nil {
				return err
			}
			n += d
		}
		return nil
	})
	return n, err
}

// Get returns the scope's record for h, if any.
func (s *Store) Get(scope string, h Handle) (Record, bool, error) {
	var r Record
	var ok bool
	err := s.db.View(func(tx store.Tx) error {
		b := tx.Bucket(store.BucketHandles).Bucket(scopeKey(scope))
		if b == nil {
			return nil
		}
		var err error
		ok, err = store.GetJSON(b, []byte(h.Key()), &r)
		return err
	})
	if ok && s.stale(r, s.now()) {
		return Record{}, false, err
	}
	return r, ok, err
}

// MaxListLimit bounds the handles list.
const MaxListLimit = 500

// List returns the scope's live handles, newest first, filtered by state
// (nil means all) and cut to limit.
func (s *Store) List(scope string, states []string, limit int) ([]Record, error) {
	if limit <= 0 {
		limit = DefaultListLimit
	}
	limit = min(limit, MaxListLimit)
	want := map[string]bool{}
	for _, st := range states {
		want[st] = true
	}
	now := s.now()
	out := []Record{}
	err := s.db.View(func(tx store.Tx) error {
		b := tx.Bucket(store.BucketHandles).Bucket(scopeKey(scope))
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var r Record
			if json.Unmarshal(v, &r) != nil || s.stale(r, now) {
				return nil
			}
			if len(want) > 0 && !want[r.State] {
				return nil
			}
			out = append(out, r)
			return nil
		})
	})
	sort.SliceStable(out, func(i, j int) bool {
		if !out[i].CreatedAt.Equal(out[j].CreatedAt) {
			return out[i].CreatedAt.After(out[j].CreatedAt)
		}
		return out[i].Handle.Key() < out[j].Handle.Key()
	})
	if len(out) > limit {
		out = out[:limit]
	}
	return out, err
}

// Scopes lists the scopes that hold handles.
func (s *Store) Scopes() ([]string, error) {
	var out []string
	err := s.db.View(func(tx store.Tx) error {
		root := tx.Bucket(store.BucketHandles)
		if root == nil {
			return nil
		}
		return root.ForEach(func(k, v []byte) error {
			if v == nil { // nested bucket: a scope
				out = append(out, string(k))
			}
			return nil
		})
	})
	return out, err
}
