package orchestration

import (
	"context"
	"encoding/json"
	"net/url"
	"sync"

	"github.com/accordsai/accords-mcp/platform/apperr"
)

// fakeAPI is an in-memory ProfileAPI that records calls.
type fakeAPI struct {
	mu        sync.Mutex
	profiles  map[string]map[string]any
	listErr   error
	getErr    map[string]error
	upsertErr error
	// noReadBack makes get after upsert fail.
	noReadBack bool
	calls      []string
	upserts    []upsertCall
}

type upsertCall struct {
	Body string
	Key  string
}

func newFake(profiles ...map[string]any) *fakeAPI {
	f := &fakeAPI{profiles: map[string]map[string]any{}, getErr: map[string]error{}}
	for _, p := range profiles {
		f.profiles[p["profile_id"].(string)] = p
	}
	return f
}

func (f *fakeAPI) ProfilesList(_ context.Context, q url.Values) (map[string]any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "list?"+q.Encode())
	if f.listErr != nil {
		return nil, f.listErr
	}
	items := []any{}
	for id := range f.profiles {
		items = append(items, map[string]any{"profile_id": id})
	}
	return map[string]any{"items": items}, nil
}

func (f *fakeAPI) ProfileGet(_ context.Context, id string) (map[string]any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, "get:"+id)
	if err := f.getErr[id]; err != nil {
		return nil, err
	}
	p, ok := f.profiles[id]
	if !ok || (f.noReadBack && len(f.upserts) > 0) {
		return nil, &apperr.Error{Code: apperr.CodeInternal, VaultCode: "NOT_FOUND"}
	}
	return map[string]any{"profile": p}, nil
}

func (f *fakeAPI) ProfileUpsert(_ context.Context, profile any, key string) (map[string]any, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	body, _ := json.Marshal(map[string]any{"profile": profile})
	f.calls = append(f.calls, "upsert")
	f.upserts = append(f.upserts, upsertCall{Body: string(body), Key: key})
	if f.upsertErr != nil {
		return nil, f.upsertErr
	}
	var m map[string]any
	raw, _ := json.Marshal(profile)
	_ = json.Unmarshal(raw, &m)
	f.profiles[m["profile_id"].(string)] = m
	return map[string]any{"ok": true}, nil
}

func mustJSON(s string) map[string]any {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		panic(err)
	}
	return m
}
