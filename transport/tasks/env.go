package tasks

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"

	"github.com/accordsai/accords-mcp/domain/approval/task"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/platform/caller"
	"github.com/accordsai/accords-mcp/platform/keyring"
)

// A daemon serves several stdio launches as one local caller, each with
// its own Vault environment session (its VC_* variables). A task is bound
// to the launch's environment as well as to the caller and tenant, and
// keeps that environment (sealed) so its poller asks Vault as the call
// did, after a restart too.

// envKeyPurpose and envAAD separate these uses of the server keyring.
const (
	envKeyPurpose = "accords-mcp task owner env v1"
	envAAD        = "accords-mcp task env v1"
)

// EnvDigest is the binding of the environment session ctx carries (set for
// attached launches; "" otherwise): a keyed digest of where and as whom
// the launch calls Vault, never the token itself.
func EnvDigest(key []byte, ctx context.Context) string {
	d, ok := session.DefaultsFrom(ctx)
	if !ok {
		return ""
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte(d.BaseURL + "\x00" + d.UnixSocket + "\x00" + d.Token))
	return "env1:" + hex.EncodeToString(m.Sum(nil))
}

// EnvKey derives the digest key of EnvDigest from the server keyring.
func EnvKey(k *keyring.Keyring) []byte { return k.Derive(envKeyPurpose) }

// ownerOf is the caller of ctx and the owner its tasks get.
func (x *Extension) ownerOf(ctx context.Context) (caller.Principal, task.Owner) {
	p := caller.From(ctx)
	return p, task.Owner{Caller: p.ID, Scope: p.Scope, Env: EnvDigest(x.envKey, ctx)}
}

// sealEnv is the environment session of ctx, sealed for the store (nil
// when ctx carries none).
func (x *Extension) sealEnv(ctx context.Context) ([]byte, error) {
	d, ok := session.DefaultsFrom(ctx)
	if !ok {
		return nil, nil
	}
	raw, err := json.Marshal(d)
	if err != nil {
		return nil, err
	}
	return x.o.Keys.Seal(raw, []byte(envAAD)), nil
}

// withEnv is ctx carrying the task's environment session, if it has one.
func (x *Extension) withEnv(ctx context.Context, t task.Task) (context.Context, error) {
	if len(t.Env) == 0 {
		return ctx, nil
	}
	raw, err := x.o.Keys.Open(t.Env, []byte(envAAD))
	if err != nil {
		return ctx, errors.New("the task's environment session cannot be decrypted: the secret key is not the one it was stored with")
	}
	var d session.Defaults
	if err := json.Unmarshal(raw, &d); err != nil {
		return ctx, err
	}
	return session.WithDefaults(ctx, d), nil
}
