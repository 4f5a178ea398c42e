package reliability

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/test/mcpproc"
	"github.com/accordsai/accords-mcp/test/mcptest"
	"github.com/accordsai/accords-mcp/test/workload"
	"github.com/stretchr/testify/require"
)

// write is one upsert of a (cookbook, version) key; writes to one key are
// issued one at a time, so the key's history is a sequence.
type write struct {
	hash  string
	acked bool
}

type key struct{ id, version string }

// crashLog is what the writers did, for the checker.
type crashLog struct {
	mu      sync.Mutex
	history map[key][]write
	busy    map[key]bool
	keys    []key
}

// begin records a write of hash to k unless another writer holds k; the
// check and the claim are one step so two writers never race on a key.
func (l *crashLog) begin(k key, hash string) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.busy[k] {
		return 0, false
	}
	if _, ok := l.history[k]; !ok {
		l.keys = append(l.keys, k)
	}
	l.history[k] = append(l.history[k], write{hash: hash})
	l.busy[k] = true
	return len(l.history[k]) - 1, true
}

func (l *crashLog) end(k key, i int, acked bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.history[k][i].acked = acked
	delete(l.busy, k)
}

// pickIdle returns an earlier key no writer is using, if any.
func (l *crashLog) pickIdle(r *rand.Rand) (key, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	for range 8 {
		if len(l.keys) == 0 {
			return key{}, false
		}
		k := l.keys[r.IntN(len(l.keys))]
		if !l.busy[k] {
			l.busy[k] = true
			return k, true
		}
	}
	return key{}, false
}

func (l *crashLog) release(k key) {
	l.mu.Lock()
	delete(l.busy, k)
	l.mu.Unlock()
}

// allowed returns the hashes the store may hold for k after a crash ("" is
// absent): the last acknowledged write, or any later write that was in
// flight at one of the kills since (a write cut off by a kill may or may not
// have committed, and a later kill can cut off the next write too).
func (l *crashLog) allowed(k key) map[string]bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	h := l.history[k]
	out := map[string]bool{}
	i := len(h) - 1
	for ; i >= 0 && !h[i].acked; i-- {
		out[h[i].hash] = true
	}
	if i >= 0 {
		out[h[i].hash] = true
	} else {
		out[""] = true
	}
	return out
}

// TestCrashSafetyUnderSIGKILL kills the real server with SIGKILL at random
// points while four writers import, overwrite and add versions of bundles
// (and, every fourth round, during start-up). After every kill the database
// must open, every bundle must be whole (its stored content hashes to one
// that was written) or absent, acknowledged writes must have survived, and
// the search index must agree with the store.
func TestCrashSafetyUnderSIGKILL(t *testing.T) {
	rounds := 2
	if heavy {
		rounds = 20
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d (rounds %d)", seed, rounds)
	r := rand.New(rand.NewPCG(seed, 1))
	dir := t.TempDir()
	dbPath := filepath.Join(dir, "accords.db")
	corpus := workload.Corpus{Seed: seed}
	log := &crashLog{history: map[key][]write{}, busy: map[key]bool{}}
	next := 0
	var nextMu sync.Mutex

	for round := range rounds {
		if round%4 == 3 {
			killDuringStartup(t, dbPath, time.Duration(r.IntN(150))*time.Millisecond)
		}
		srv := startStdio(t, dbPath)
		cs := srv.Sessions[0]
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		var unexpected []string
		var umu sync.Mutex
		for w := range 4 {
			wg.Go(func() {
				wr := rand.New(rand.NewPCG(seed, uint64(round*16+w+2)))
				for ctx.Err() == nil {
					var bundle map[string]any
					var k key
					policy := "FAIL"
					switch x := wr.IntN(8); {
					case x < 2: // overwrite an existing key with new content
						ek, ok := log.pickIdle(wr)
						if !ok {
							continue
						}
						log.release(ek)
						idx := indexOf(ek.id)
						bundle, _ = corpus.Bundle(idx, ek.version)
						bundle["title"] = fmt.Sprintf("%s (round %d rev %d)", bundle["title"], round, wr.IntN(1_000_000))
						k, policy = ek, "OVERWRITE"
					case x < 3: // a new version of an existing cookbook
						ek, ok := log.pickIdle(wr)
						if !ok {
							continue
						}
						log.release(ek)
						v := fmt.Sprintf("1.%d.%d", round+1, wr.IntN(1_000_000))
						bundle, _ = corpus.Bundle(indexOf(ek.id), v)
						k = key{ek.id, v}
					default:
						nextMu.Lock()
						i := next
						next++
						nextMu.Unlock()
						var info workload.BundleInfo
						bundle, info = corpus.Bundle(i, "1.0.0")
						k = key{info.CookbookID, "1.0.0"}
					}
					hash := expectedHash(t, bundle)
					wi, ok := log.begin(k, hash)
					if !ok {
						continue
					}
					env, err := mcptest.TryCall(ctx, cs, workload.ToolUpsert, map[string]any{"bundle": bundle, "conflict_policy": policy})
					acked := err == nil && env.OK
					if acked {
						got, _ := env.Data.(map[string]any)["content_hash"].(string)
						if got != hash {
							umu.Lock()
							unexpected = append(unexpected, fmt.Sprintf("%v: content_hash %s, want %s", k, got, hash))
							umu.Unlock()
						}
					}
					log.end(k, wi, acked)
					if err != nil && !errors.Is(err, mcptest.ErrNoEnvelope) {
						return // the exchange failed: the kill
					}
					if !acked {
						umu.Lock()
						unexpected = append(unexpected, fmt.Sprintf("%v: %s %v %+v", k, env.Code(), err, env.Error))
						umu.Unlock()
					}
				}
			})
		}
		time.Sleep(time.Duration(50+r.IntN(750)) * time.Millisecond)
		srv.Kill()
		cancel()
		wg.Wait()
		require.Empty(t, unexpected, "round %d: writes failed other than by the kill", round)

		// The db opens and the index is repaired during start-up.
		check := startStdio(t, dbPath)
		verify(t, check, log)
		require.NoError(t, check.Close())
	}
	total, acked := 0, 0
	for _, h := range log.history {
		for _, w := range h {
			total++
			if w.acked {
				acked++
			}
		}
	}
	t.Logf("%d rounds, %d writes issued, %d acknowledged, %d keys", rounds, total, acked, len(log.keys))
	require.Greater(t, acked, 0, "no write was ever acknowledged: the test exercised nothing")
}

// indexOf recovers the corpus index from a generated cookbook id.
func indexOf(id string) int {
	var n int
	_, _ = fmt.Sscanf(id[strings.LastIndex(id, "-")+1:], "%d", &n)
	return n
}

// killDuringStartup starts the binary (serving in its own process, so the
// kill hits the process opening the database) and kills it after d, before
// or while it opens and repairs the database.
func killDuringStartup(t *testing.T, dbPath string, d time.Duration) {
	t.Helper()
	cmd := exec.Command(binary(t))
	cmd.Env = mcpproc.Env(dbPath, []string{"ACCORDS_MCP_STANDALONE=true"})
	stdin, err := cmd.StdinPipe()
	require.NoError(t, err)
	defer stdin.Close()
	require.NoError(t, cmd.Start())
	time.Sleep(d)
	_ = cmd.Process.Signal(os.Kill)
	_ = cmd.Wait()
}

// verify checks every key ever written: earlier rounds' keys too, since a
// later crash or repair must not damage them.
func verify(t *testing.T, srv *mcpproc.Server, log *crashLog) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cs := srv.Sessions[0]
	log.mu.Lock()
	keys := append([]key(nil), log.keys...)
	log.mu.Unlock()
	present := map[string]map[string]bool{}
	ids := map[string]bool{}
	for _, k := range keys {
		ids[k.id] = true
		got := storedHash(t, cs, ctx, k.id, k.version)
		allowed := log.allowed(k)
		require.True(t, allowed[got], "%s@%s: stored hash %q, allowed %v", k.id, k.version, got, allowed)
		if got != "" {
			if present[k.id] == nil {
				present[k.id] = map[string]bool{}
			}
			present[k.id][k.version] = true
		}
	}
	for _, id := range slices.Sorted(maps.Keys(ids)) {
		want := present[id]
		if want == nil {
			want = map[string]bool{}
		}
		require.Equal(t, want, indexedVersions(t, ctx, cs, id), "index and store disagree on %s", id)
	}
}
