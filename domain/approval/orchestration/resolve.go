package orchestration

import (
	"context"
	"net/url"
	"sort"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// ProfileAPI is the session-bound slice of the Vaultclaw client orchestration
// needs; each method returns the decoded body or a normalised *apperr.Error.
type ProfileAPI interface {
	// ProfilesList is E15 GET /v0/connectors/unbounded/profiles/list.
	ProfilesList(ctx context.Context, q url.Values) (map[string]any, error)
	// ProfileGet is E16 GET /v0/connectors/unbounded/profiles/get.
	ProfileGet(ctx context.Context, profileID string) (map[string]any, error)
	// ProfileUpsert is E17 POST /v0/connectors/unbounded/profiles/upsert
	// with body {"profile": profile} and the given Idempotency-Key.
	ProfileUpsert(ctx context.Context, profile any, idempotencyKey string) (map[string]any, error)
}

// Resolution is the outcome of profile resolution.
type Resolution struct {
	ProfileID    string
	Created      bool
	Match        Match
	Profile      Profile
	Requirements []Requirement
}

// Data is the data of vaultclaw_unbounded_profile_resolve.
func (r Resolution) Data() map[string]any {
	return map[string]any{
		"profile_id":    r.ProfileID,
		"created":       r.Created,
		"profile_match": r.Match.AsMap(),
		"profile":       r.Profile.AsMap(),
	}
}

// Resolver matches requirements against the scope's unbounded profiles and
// auto-creates a minimal one when allowed.
type Resolver struct {
	API ProfileAPI
	// candidates lists the profiles once per Resolver (one tool call); profiles
	// auto-created are added to it.
	candidates []Profile
	loaded     bool
}

// NewResolver returns a resolver for one tool call.
func NewResolver(api ProfileAPI) *Resolver { return &Resolver{API: api} }

// Candidates lists the generic.http profiles: E15, then E16 for
// every id. A failed list propagates; a failed get skips that profile.
func (r *Resolver) Candidates(ctx context.Context) ([]Profile, error) {
	if r.loaded {
		return r.candidates, nil
	}
	q := url.Values{"connector_id": {GenericConnector}, "verb": {GenericVerb}}
	body, err := r.API.ProfilesList(ctx, q)
	if err != nil {
		return nil, err
	}
	items, _ := body["items"].([]any)
	seen := map[string]bool{}
	var out []Profile
	for _, it := range items {
		m, _ := it.(map[string]any)
		id := str(m["profile_id"])
		if id == "" || seen[id] {
			continue
		}
		seen[id] = true
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		got, err := r.API.ProfileGet(ctx, id)
		if err != nil {
			continue
		}
		p := DecodeProfile(got["profile"])
		if p.ProfileID == "" {
			p.ProfileID = id
		}
		out = append(out, p)
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].ProfileID < out[j].ProfileID })
	r.candidates, r.loaded = out, true
	return out, nil
}

// Resolve finds the best qualifying profile for reqs, or auto-creates one
// when autoCreate is set.
func (r *Resolver) Resolve(ctx context.Context, reqs []Requirement, autoCreate bool) (Resolution, error) {
	if len(reqs) == 0 {
		return Resolution{}, apperr.New(apperr.CodeUnboundedProfileRequired, "no unbounded requirements found")
	}
	cands, err := r.Candidates(ctx)
	if err != nil {
		return Resolution{}, err
	}
	if best, matches := Best(cands, reqs); best >= 0 {
		return Resolution{ProfileID: cands[best].ProfileID, Match: matches[best], Profile: cands[best], Requirements: reqs}, nil
	}
	if !autoCreate {
		return Resolution{}, apperr.New(apperr.CodeUnboundedProfileRequired, "no compatible unbounded profile found").
			With("requirements", reqs)
	}
	return r.autoCreate(ctx, reqs)
}

func (r *Resolver) autoCreate(ctx context.Context, reqs []Requirement) (Resolution, error) {
	local := MinimalProfile(reqs)
	key := AutoIdempotencyKey(reqs)
	if _, err := r.API.ProfileUpsert(ctx, local, key); err != nil {
		if ae, ok := err.(*apperr.Error); ok && strings.EqualFold(strings.TrimSpace(ae.VaultCode), "INSUFFICIENT_SCOPE") {
			return Resolution{}, apperr.New(apperr.CodeUnboundedProfileRequired,
				"profile auto-create requires connectors.unbounded.profiles.write scope").
				With("requirements", reqs).With("idempotency_key", key).WithCause(err)
		}
		return Resolution{}, err
	}
	profile := local
	// Read back what Vault stored; on any failure use the local profile.
	if got, err := r.API.ProfileGet(ctx, local.ProfileID); err == nil {
		if p := DecodeProfile(got["profile"]); p.ProfileID != "" {
			profile = p
		}
	}
	if r.loaded {
		r.candidates = append(r.candidates, profile)
		sort.SliceStable(r.candidates, func(i, j int) bool { return r.candidates[i].ProfileID < r.candidates[j].ProfileID })
	}
	return Resolution{ProfileID: profile.ProfileID, Created: true, Match: Score(profile, reqs), Profile: profile, Requirements: reqs}, nil
}

// Options are the orchestration flags of execute_job and plan_execute.
type Options struct {
	UnboundedProfiles bool
	AutoCreate        bool
}

// DefaultOptions are the documented defaults (both true).
func DefaultOptions() Options { return Options{UnboundedProfiles: true, AutoCreate: true} }

// PrepareJobRequest runs execute-job orchestration, writing profile_id into
// request.request in place, and returns the preflight's orchestration keys.
func (r *Resolver) PrepareJobRequest(ctx context.Context, request map[string]any, opts Options) (map[string]any, error) {
	if !opts.UnboundedProfiles {
		return map[string]any{"orchestrated": false}, nil
	}
	if !IsGeneric(str(request["connector_id"]), str(request["verb"])) {
		return map[string]any{"orchestrated": false, "reason": "connector is not generic.http.request.v1"}, nil
	}
	payload, ok := request["request"].(map[string]any)
	if !ok {
		return nil, apperr.Validation("request.request", "request.request object is required")
	}
	if id := str(payload["profile_id"]); id != "" {
		return map[string]any{"orchestrated": true, "reason": "profile_id already provided", "profile_id": id}, nil
	}
	reqs, err := DeriveRequirements(payload, "request.request")
	if err != nil {
		return nil, err
	}
	if len(reqs) == 0 {
		return map[string]any{"orchestrated": true, "reason": "no unbounded requirements derived"}, nil
	}
	res, err := r.Resolve(ctx, reqs, opts.AutoCreate)
	if err != nil {
		return nil, err
	}
	payload["profile_id"] = res.ProfileID
	status := "resolved"
	if res.Created {
		status = "created"
	}
	return map[string]any{
		"orchestrated":  true,
		"status":        status,
		"profile_id":    res.ProfileID,
		"requirements":  res.Requirements,
		"profile_match": res.Match.AsMap(),
	}, nil
}
