package approval

import (
	"context"
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// ParseStates trims, upper-cases and dedupes a states filter, which must be
// a non-empty subset of allowed; nil selects every allowed state.
func ParseStates(values []string, field string, allowed []string) ([]string, error) {
	if values == nil {
		return append([]string(nil), allowed...), nil
	}
	seen := map[string]bool{}
	var out []string
	for _, s := range values {
		s = strings.ToUpper(strings.TrimSpace(s))
		if s == "" || seen[s] {
			continue
		}
		if !slices.Contains(allowed, s) {
			return nil, apperr.Validation(field, "%s contains invalid value: %s", field, s).With("allowed", allowed)
		}
		seen[s] = true
		out = append(out, s)
	}
	if len(out) == 0 {
		return nil, apperr.Validation(field, "%s cannot be empty", field)
	}
	return out, nil
}

// EnrichRow adds decision_outcome and the attestation URL and markdown link
// to a copy of row.
func EnrichRow(row map[string]any) map[string]any {
	out := make(map[string]any, len(row)+3)
	maps.Copy(out, row)
	out["decision_outcome"] = PendingOutcome(row)
	u := str(row["remote_attestation_url"])
	if u == "" {
		u = str(obj(row["pending_approval"])["remote_attestation_url"])
	}
	if u != "" {
		out["remote_attestation_url"] = u
		out["remote_attestation_link_markdown"] = "[" + u + "](" + u + ")"
	}
	return out
}

// ListQuery are the filters of vaultclaw_approvals_pending_list.
type ListQuery struct {
	States                                  []string
	Limit                                   int
	ConnectorID, Verb, AgentID, ChallengeID string
}

// DefaultListLimit is the pending list's default page size.
const DefaultListLimit = 50

// Values encodes the query (blank filters are not sent).
func (q ListQuery) Values() url.Values {
	v := url.Values{}
	states := q.States
	if len(states) == 0 {
		states = AllPendingStates
	}
	v.Set("states", strings.Join(states, ","))
	limit := q.Limit
	if limit <= 0 {
		limit = DefaultListLimit
	}
	v.Set("limit", strconv.Itoa(limit))
	for k, s := range map[string]string{"connector_id": q.ConnectorID, "verb": q.Verb, "agent_id": q.AgentID, "challenge_id": q.ChallengeID} {
		if s = strings.TrimSpace(s); s != "" {
			v.Set(k, s)
		}
	}
	return v
}

// List runs E10 and returns the enriched, sorted rows and the reply.
func List(ctx context.Context, api API, q ListQuery) ([]map[string]any, Reply, error) {
	r, err := api.PendingApprovals(ctx, q.Values())
	if err != nil {
		return nil, r, err
	}
	rows := Rows(r.Body)
	SortRows(rows)
	out := make([]map[string]any, len(rows))
	for i, row := range rows {
		out[i] = EnrichRow(row)
	}
	return out, r, nil
}

// Get finds one pending approval by challenge and pending id.
func Get(ctx context.Context, api API, challengeID, pendingID string) (map[string]any, error) {
	rows, _, err := List(ctx, api, ListQuery{Limit: PendingLimit, ChallengeID: challengeID})
	if err != nil {
		return nil, err
	}
	for _, row := range rows {
		if strings.EqualFold(str(row["pending_id"]), strings.TrimSpace(pendingID)) {
			return row, nil
		}
	}
	return nil, apperr.New(apperr.CodeApprovalPendingNotFound, "pending approval item not found for challenge_id + pending_id").
		With("challenge_id", challengeID).With("pending_id", pendingID)
}
