// Package session keeps the Vaultclaw session of each scope in bbolt. The
// token is sealed with the keyring; it leaves this package only inside a
// Session value handed to the vault client, and is masked everywhere else.
package session

import (
	"context"
	"encoding/json"
	"net/url"
	"strings"
	"time"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/keyring"
	"github.com/accordsai/accords-mcp/store"
	"github.com/accordsai/accords-mcp/vault"
)

// Limits and defaults.
const (
	DefaultBaseURL   = vault.DefaultBaseURL
	DefaultTimeoutMS = int(vault.DefaultTimeout / time.Millisecond)
	MinTimeoutMS     = 100
	MaxTimeoutMS     = 600000
)

// Session is what a Vault call needs. Token is the secret: never log it.
type Session struct {
	BaseURL    string
	Token      string
	TimeoutMS  int
	UnixSocket string
	// Source is "configured" or "env".
	Source string
}

// Timeout returns the request timeout.
func (s Session) Timeout() time.Duration { return time.Duration(s.TimeoutMS) * time.Millisecond }

// Endpoint is where and as whom the session's Vault requests go.
func (s Session) Endpoint() vault.Endpoint {
	return vault.Endpoint{BaseURL: s.BaseURL, Token: s.Token, Timeout: s.Timeout(), UnixSocket: s.UnixSocket}
}

// Defaults is the environment session (VC_* variables).
type Defaults struct {
	Token      string `json:"token,omitempty"`
	BaseURL    string `json:"base_url,omitempty"`
	TimeoutMS  int    `json:"timeout_ms,omitempty"`
	UnixSocket string `json:"unix_socket,omitempty"`
}

type defaultsKey struct{}

// WithDefaults returns ctx carrying the environment session of the client a
// call comes from. A daemon serves several launches, each with its own VC_*
// variables; their calls resolve against their own defaults, not the
// daemon's.
func WithDefaults(ctx context.Context, d Defaults) context.Context {
	return context.WithValue(ctx, defaultsKey{}, normalize(d))
}

// DefaultsFrom returns the environment session WithDefaults put in ctx:
// set when the call comes from an attached launch, unset when the process
// serves with its own environment.
func DefaultsFrom(ctx context.Context) (Defaults, bool) {
	d, ok := ctx.Value(defaultsKey{}).(Defaults)
	return d, ok
}

// envFor is the environment session in force for ctx.
func (s *Service) envFor(ctx context.Context) Defaults {
	if d, ok := ctx.Value(defaultsKey{}).(Defaults); ok {
		return d
	}
	return s.env
}

func normalize(env Defaults) Defaults {
	if env.BaseURL == "" {
		env.BaseURL = DefaultBaseURL
	}
	if env.TimeoutMS <= 0 {
		env.TimeoutMS = DefaultTimeoutMS
	}
	return env
}

// Status is the tool-facing view of a session; Token is masked.
type Status struct {
	Configured bool   `json:"configured"`
	BaseURL    string `json:"base_url,omitempty"`
	TimeoutMS  int    `json:"timeout_ms,omitempty"`
	Token      string `json:"token,omitempty"`
	Source     string `json:"source,omitempty"`
}

// record is the stored form. A cleared record is a tombstone that keeps the
// environment default from coming back after vaultclaw_session_clear.
type record struct {
	BaseURL     string    `json:"base_url,omitempty"`
	TimeoutMS   int       `json:"timeout_ms,omitempty"`
	SealedToken []byte    `json:"sealed_token,omitempty"`
	Cleared     bool      `json:"cleared,omitempty"`
	UpdatedAt   time.Time `json:"updated_at"`
}

// Service manages sessions.
type Service struct {
	db   *store.DB
	keys *keyring.Keyring
	env  Defaults
	now  func() time.Time
}

// New returns a service over db.
func New(db *store.DB, keys *keyring.Keyring, env Defaults) *Service {
	return &Service{db: db, keys: keys, env: normalize(env), now: time.Now}
}

// Mask hides a token: first three and last three characters of tokens of six
// or more, "***" otherwise.
func Mask(token string) string {
	if len(token) >= 6 {
		return token[:3] + "***" + token[len(token)-3:]
	}
	return "***"
}

// ValidateBaseURL accepts http, https, unix and http+unix URLs. Socket URLs
// are checked by hand: their percent-encoded socket path in the host part
// (http+unix://%2Frun%2Fvc.sock) is not a valid URL host for net/url.
func ValidateBaseURL(raw string) error {
	for _, prefix := range []string{"unix://", "http+unix://"} {
		if strings.HasPrefix(strings.ToLower(raw), prefix) {
			if strings.Trim(raw[len(prefix):], "/") == "" {
				return apperr.Validation("base_url", "base_url must name the socket path, e.g. unix:///run/vaultclaw.sock")
			}
			return nil
		}
	}
	u, err := url.Parse(raw)
	if err != nil {
		return apperr.Validation("base_url", "base_url is not a valid URL")
	}
	switch u.Scheme {
	case "http", "https":
		if u.Host == "" {
			return apperr.Validation("base_url", "base_url must include a host")
		}
		if u.User != nil {
			// Credentials in the URL would be sent to Vault, stored in clear
			// and shown by session_status; the token has its own argument.
			return apperr.Validation("base_url", "base_url must not contain credentials (user:password@); pass the agent token as token")
		}
	default:
		return apperr.Validation("base_url", "base_url scheme must be http, https, unix or http+unix")
	}
	return nil
}

func aad(scope string) []byte { return []byte("accords-mcp/session/" + scope) }

// Configure stores a session for scope. It does not contact Vault.
func (s *Service) Configure(ctx context.Context, scope, baseURL, token string, timeoutMS int) (Status, error) {
	token = strings.TrimSpace(token)
	baseURL = strings.TrimSpace(baseURL)
	if token == "" {
		return Status{}, apperr.Validation("token", "token is required")
	}
	if baseURL == "" {
		baseURL = DefaultBaseURL
	}
	if err := ValidateBaseURL(baseURL); err != nil {
		return Status{}, err
	}
	switch {
	case timeoutMS == 0:
		timeoutMS = DefaultTimeoutMS
	case timeoutMS < MinTimeoutMS || timeoutMS > MaxTimeoutMS:
		return Status{}, apperr.Validation("timeout_ms", "timeout_ms must be between %d and %d", MinTimeoutMS, MaxTimeoutMS)
	}
	rec := record{
		BaseURL:     baseURL,
		TimeoutMS:   timeoutMS,
		SealedToken: s.keys.Seal([]byte(token), aad(scope)),
		UpdatedAt:   s.now().UTC(),
	}
	if err := s.db.Update(func(tx store.Tx) error {
		return store.PutJSON(tx.Bucket(store.BucketSessions), []byte(scope), rec)
	}); err != nil {
		return Status{}, apperr.Internal("store session", err)
	}
	return Status{Configured: true, BaseURL: baseURL, TimeoutMS: timeoutMS, Token: Mask(token), Source: "configured"}, nil
}

// Clear forgets the scope's session; the environment default stays off for
// this scope until the next Configure.
func (s *Service) Clear(ctx context.Context, scope string) error {
	rec := record{Cleared: true, UpdatedAt: s.now().UTC()}
	if err := s.db.Update(func(tx store.Tx) error {
		return store.PutJSON(tx.Bucket(store.BucketSessions), []byte(scope), rec)
	}); err != nil {
		return apperr.Internal("clear session", err)
	}
	return nil
}

// Status reports the scope's session with the token masked.
func (s *Service) Status(ctx context.Context, scope string) (Status, error) {
	sess, err := s.Resolve(ctx, scope)
	if apperr.Is(err, apperr.CodeSessionNotConfigured) && apperr.As(err).Details["reason"] == nil {
		return Status{Configured: false}, nil
	}
	if err != nil {
		return Status{}, err
	}
	return Status{Configured: true, BaseURL: redactURL(sess.BaseURL), TimeoutMS: sess.TimeoutMS, Token: Mask(sess.Token), Source: sess.Source}, nil
}

// redactURL hides credentials in a base URL stored before they were
// refused.
func redactURL(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.User != nil {
		return u.Redacted()
	}
	return raw
}

func notConfigured() *apperr.Error {
	return apperr.New(apperr.CodeSessionNotConfigured, "session not configured")
}

// Resolve returns the session Vault calls of scope must use: the stored one,
// else the environment default, else MCP_SESSION_NOT_CONFIGURED.
func (s *Service) Resolve(ctx context.Context, scope string) (Session, error) {
	var rec record
	var found bool
	err := s.db.View(func(tx store.Tx) error {
		var err error
		found, err = store.GetJSON(tx.Bucket(store.BucketSessions), []byte(scope), &rec)
		return err
	})
	if err != nil {
		return Session{}, apperr.Internal("read session", err)
	}
	env := s.envFor(ctx)
	if !found {
		if env.Token == "" {
			return Session{}, notConfigured()
		}
		return Session{BaseURL: env.BaseURL, Token: env.Token, TimeoutMS: env.TimeoutMS, UnixSocket: env.UnixSocket, Source: "env"}, nil
	}
	if rec.Cleared {
		// Said in the details: VC_AGENT_TOKEN is set, yet not used.
		return Session{}, notConfigured().With("cleared", true)
	}
	tok, err := s.keys.Open(rec.SealedToken, aad(scope))
	if err != nil {
		e := apperr.New(apperr.CodeSessionNotConfigured, "stored session token cannot be decrypted: the secret key (%s) is not the one it was stored with; set the original ACCORDS_MCP_SECRET_KEY or configure the session again", s.keys.Source)
		e.Details["reason"] = "secret_key_mismatch"
		return Session{}, e.WithCause(err)
	}
	return Session{BaseURL: rec.BaseURL, Token: string(tok), TimeoutMS: rec.TimeoutMS, UnixSocket: env.UnixSocket, Source: "configured"}, nil
}

// Scopes lists the scopes that hold a session record (tombstones
// included).
func (s *Service) Scopes() ([]string, error) {
	var out []string
	err := s.db.View(func(tx store.Tx) error {
		b := tx.Bucket(store.BucketSessions)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, _ []byte) error {
			out = append(out, string(k))
			return nil
		})
	})
	return out, err
}

// SealedCount counts the stored sessions whose token is sealed with the
// secret key (the ones a lost key file makes unreadable).
func SealedCount(db *store.DB) (int, error) {
	n := 0
	err := db.View(func(tx store.Tx) error {
		b := tx.Bucket(store.BucketSessions)
		if b == nil {
			return nil
		}
		return b.ForEach(func(k, v []byte) error {
			var rec record
			if json.Unmarshal(v, &rec) == nil && len(rec.SealedToken) > 0 {
				n++
			}
			return nil
		})
	})
	return n, err
}

// ForgetUnreadable deletes the stored sessions keys cannot open (sealed
// with a key that is lost: they can never be read again) and reports how
// many it deleted. Readable sessions and cleared tombstones stay.
func ForgetUnreadable(db *store.DB, keys *keyring.Keyring) (int, error) {
	n := 0
	err := db.Update(func(tx store.Tx) error {
		b := tx.Bucket(store.BucketSessions)
		if b == nil {
			return nil
		}
		var doomed [][]byte
		if err := b.ForEach(func(k, v []byte) error {
			var rec record
			if json.Unmarshal(v, &rec) != nil || len(rec.SealedToken) == 0 {
				return nil
			}
			if _, err := keys.Open(rec.SealedToken, aad(string(k))); err != nil {
				doomed = append(doomed, append([]byte(nil), k...))
			}
			return nil
		}); err != nil {
			return err
		}
		for _, k := range doomed {
			if err := b.Delete(k); err != nil {
				return err
			}
		}
		n = len(doomed)
		return nil
	})
	return n, err
}
