package catalog

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/store"
)

// Benchmarks of the budgets in docs/performance.md. The catalogs
// (1,000 and 10,000 bundles of 5 entries) are built once per process:
// bundles go into bbolt in large transactions and the index is built by
// Reindex, whose duration is reported as the reindex figure.
//
//	go test ./domain/catalog -run '^$' -bench . -benchtime 200x
//
// Set ACCORDS_BENCH_KEEP=1 to keep the catalog folders (their paths are
// logged) for measuring the CLI against them.

var words = strings.Fields(`account alert archive audit backup balance billing bucket calendar campaign cancel
	card certificate channel charge check cluster comment commit contact contract convert copy create customer
	dashboard database deploy device digest disable document domain download draft email enable event export
	feed file filter folder forecast form forward gateway grant group health hook image import incident index
	invoice issue job key label lead ledger license link list lock log mail meeting member merge message metric
	monitor note notify order owner package page partner password payment permission photo pipeline plan policy
	post price print project publish queue quota receipt record refund release reminder report repository request
	reset restore review role rotate run sales schedule search secret send server session share shipment sign
	snapshot sprint status storage subscription summary sync table task team template test thread ticket token
	transfer trash update upload user vault vendor verify version video webhook weather workflow workspace`)

var connectors = []string{"google", "slack", "github", "stripe", "jira", "notion", "salesforce", "zendesk", "aws", "azure",
	"dropbox", "box", "hubspot", "twilio", "sendgrid", "shopify", "asana", "linear", "pagerduty", "generic.http"}

// The generated catalog models real cookbooks: each is about one topic
// (400 topics of 25 words drawn from a 3,000-word vocabulary, like "slack
// channels" or "github issues"), and a fifth of its words come from a
// shared list of 200 common domain words. "topic" queries are two words of
// one topic, the realistic case; "common" queries are two common words that
// match a large share of all entries, the worst case.
var (
	vocab  = makeVocab(3000)
	topics = makeTopics(400, 25)
)

func makeVocab(n int) []string {
	r := rand.New(rand.NewSource(11))
	cons := strings.Split("b c d f g h j k l m n p r s t v w z br cr dr gr pl st tr", " ")
	vows := strings.Split("a e i o u ai ea io", " ")
	seen := map[string]bool{}
	var out []string
	for len(out) < n {
		w := ""
		for k := 2 + r.Intn(2); k > 0; k-- {
			w += cons[r.Intn(len(cons))] + vows[r.Intn(len(vows))]
		}
		if !seen[w] {
			seen[w] = true
			out = append(out, w)
		}
	}
	return out
}

func makeTopics(n, size int) [][]string {
	r := rand.New(rand.NewSource(12))
	out := make([][]string, n)
	for i := range out {
		for range size {
			out[i] = append(out[i], vocab[r.Intn(len(vocab))])
		}
	}
	return out
}

func benchBundle(r *rand.Rand, id string) *Bundle {
	topic := topics[r.Intn(len(topics))]
	word := func() string {
		if r.Intn(5) == 0 {
			return words[r.Intn(len(words))]
		}
		return topic[r.Intn(len(topic))]
	}
	phrase := func(n int) string {
		p := make([]string, n)
		for i := range p {
			p[i] = word()
		}
		return strings.Join(p, " ")
	}
	conn := connectors[r.Intn(len(connectors))]
	b := &Bundle{Type: BundleType, CookbookID: id, Version: fmt.Sprintf("1.%d.0", r.Intn(5)), Title: capitalize(phrase(3)),
		Description: phrase(12), Tags: []string{word(), conn}}
	for i := range 5 {
		verb := conn + "." + word() + "." + word()
		e := Entry{EntryID: fmt.Sprintf("%s_%d_v1", word(), i),
			Title: capitalize(phrase(4)), Description: phrase(15), Tags: []string{word(), word()},
			ConnectorID: conn, Verb: verb}
		if i%2 == 0 {
			e.EntryType = TypeRecipeVerb
			e.Request = map[string]any{"id": "x", "limit": 25.0}
		} else {
			e.EntryType = TypeTemplateVerb
			e.BaseRequest = map[string]any{"connector_id": conn, "verb": verb, "request": map[string]any{"id": ""}}
			e.Bindings = []Binding{{TargetPath: "/request/id", InputKey: "id"}}
		}
		b.Entries = append(b.Entries, e)
	}
	return b
}

func capitalize(s string) string { return strings.ToUpper(s[:1]) + s[1:] }

type benchCatalog struct {
	dir     string
	db      *store.DB
	svc     *Service
	reindex time.Duration
}

var (
	benchMu   sync.Mutex
	benchCats = map[int]*benchCatalog{}
)

func (bc *benchCatalog) dbPath() string { return filepath.Join(bc.dir, "accords.db") }

func benchCatalogOf(b *testing.B, n int) *benchCatalog {
	benchMu.Lock()
	defer benchMu.Unlock()
	if bc, ok := benchCats[n]; ok {
		return bc
	}
	// ACCORDS_BENCH_DIR reuses catalogs built by an earlier run (with
	// ACCORDS_BENCH_KEEP=1), which saves minutes while iterating.
	if base := os.Getenv("ACCORDS_BENCH_DIR"); base != "" {
		bc := &benchCatalog{dir: filepath.Join(base, fmt.Sprint(n))}
		if _, err := os.Stat(bc.dbPath()); err == nil {
			var err error
			if bc.db, err = store.Open(bc.dbPath(), store.Options{}); err != nil {
				b.Fatal(err)
			}
			if bc.svc, err = Open(context.Background(), bc.db, bc.dbPath()+".index", Options{}); err != nil {
				b.Fatal(err)
			}
			benchCats[n] = bc
			return bc
		}
	}
	dir, err := os.MkdirTemp("", fmt.Sprintf("accords-bench-%d-", n))
	if err != nil {
		b.Fatal(err)
	}
	if base := os.Getenv("ACCORDS_BENCH_DIR"); base != "" {
		dir = filepath.Join(base, fmt.Sprint(n))
		if err := os.MkdirAll(dir, 0o700); err != nil {
			b.Fatal(err)
		}
	}
	bc := &benchCatalog{dir: dir}
	if bc.db, err = store.Open(bc.dbPath(), store.Options{}); err != nil {
		b.Fatal(err)
	}
	if bc.svc, err = Open(context.Background(), bc.db, bc.dbPath()+".index", Options{}); err != nil {
		b.Fatal(err)
	}
	r := rand.New(rand.NewSource(int64(n)))
	const perTx = 1000
	for start := 0; start < n; start += perTx {
		err := bc.db.Update(func(tx store.Tx) error {
			root := tx.Bucket(store.BucketCatalog)
			w := &writeTx{tx: tx, root: root, touched: map[string]bool{}, created: map[string]bool{}}
			for i := start; i < start+perTx && i < n; i++ {
				bd := benchBundle(r, fmt.Sprintf("cookbook-%05d", i))
				canonical, hash, err := Prepare(bd)
				if err != nil {
					return err
				}
				if err := w.put(bd, canonical, hash); err != nil {
					return err
				}
			}
			return root.Put(keyRev, store.U64(readU64(root.Get(keyRev))+1))
		})
		if err != nil {
			b.Fatal(err)
		}
	}
	bc.svc.storeRev.Store(uint64((n + perTx - 1) / perTx))
	t0 := time.Now()
	if err := bc.svc.Reindex(context.Background(), nil); err != nil {
		b.Fatal(err)
	}
	bc.reindex = time.Since(t0)
	benchCats[n] = bc
	if os.Getenv("ACCORDS_BENCH_KEEP") != "" {
		b.Logf("catalog of %d bundles kept at %s", n, bc.dbPath())
	}
	return bc
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, bc := range benchCats {
		if bc.svc != nil {
			bc.svc.Close()
		}
		bc.db.Close()
		if os.Getenv("ACCORDS_BENCH_KEEP") == "" && os.Getenv("ACCORDS_BENCH_DIR") == "" {
			os.RemoveAll(bc.dir)
		}
	}
	os.Exit(code)
}

// timings collects per-operation durations and reports percentiles.
type timings []time.Duration

func (t timings) report(b *testing.B) {
	if len(t) == 0 {
		return
	}
	slices.Sort(t)
	ms := func(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
	b.ReportMetric(ms(t[len(t)/2]), "p50-ms")
	b.ReportMetric(ms(t[len(t)*95/100]), "p95-ms")
}

func BenchmarkSearch(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		bc := benchCatalogOf(b, n)
		b.Run(fmt.Sprintf("topic/bundles=%d", n), func(b *testing.B) {
			r := rand.New(rand.NewSource(7))
			ts := make(timings, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t := topics[r.Intn(len(topics))]
				q := index.Query{Text: t[r.Intn(len(t))] + " " + t[r.Intn(len(t))], Limit: 20}
				t0 := time.Now()
				if _, err := bc.svc.Search(context.Background(), q); err != nil {
					b.Fatal(err)
				}
				ts = append(ts, time.Since(t0))
			}
			ts.report(b)
		})
		b.Run(fmt.Sprintf("common/bundles=%d", n), func(b *testing.B) {
			r := rand.New(rand.NewSource(7))
			ts := make(timings, 0, b.N)
			b.ResetTimer()
			for range b.N {
				q := index.Query{Text: words[r.Intn(len(words))] + " " + words[r.Intn(len(words))], Limit: 20}
				t0 := time.Now()
				if _, err := bc.svc.Search(context.Background(), q); err != nil {
					b.Fatal(err)
				}
				ts = append(ts, time.Since(t0))
			}
			ts.report(b)
		})
		b.Run(fmt.Sprintf("filtered/bundles=%d", n), func(b *testing.B) {
			r := rand.New(rand.NewSource(8))
			ts := make(timings, 0, b.N)
			b.ResetTimer()
			for range b.N {
				t := topics[r.Intn(len(topics))]
				q := index.Query{Text: t[r.Intn(len(t))], ConnectorID: connectors[r.Intn(len(connectors))], EntryType: TypeTemplateVerb, Limit: 20}
				t0 := time.Now()
				if _, err := bc.svc.Search(context.Background(), q); err != nil {
					b.Fatal(err)
				}
				ts = append(ts, time.Since(t0))
			}
			ts.report(b)
		})
		b.Run(fmt.Sprintf("filter-only/bundles=%d", n), func(b *testing.B) {
			r := rand.New(rand.NewSource(9))
			ts := make(timings, 0, b.N)
			b.ResetTimer()
			for range b.N {
				q := index.Query{ConnectorID: connectors[r.Intn(len(connectors))], Limit: 20}
				t0 := time.Now()
				if _, err := bc.svc.Search(context.Background(), q); err != nil {
					b.Fatal(err)
				}
				ts = append(ts, time.Since(t0))
			}
			ts.report(b)
		})
	}
}

func BenchmarkUpsert(b *testing.B) {
	for _, n := range []int{1000, 10000} {
		bc := benchCatalogOf(b, n)
		b.Run(fmt.Sprintf("bundles=%d", n), func(b *testing.B) {
			r := rand.New(rand.NewSource(int64(n) + 1))
			bundles := make([]*Bundle, b.N)
			for i := range bundles {
				bundles[i] = benchBundle(r, fmt.Sprintf("new-%d-%d-%d", n, time.Now().UnixNano(), i))
			}
			ts := make(timings, 0, b.N)
			b.ResetTimer()
			for i := range b.N {
				t0 := time.Now()
				if _, err := bc.svc.Upsert(context.Background(), bundles[i], UpsertOptions{}); err != nil {
					b.Fatal(err)
				}
				ts = append(ts, time.Since(t0))
			}
			ts.report(b)
		})
	}
}

func BenchmarkGet(b *testing.B) {
	bc := benchCatalogOf(b, 10000)
	r := rand.New(rand.NewSource(3))
	ts := make(timings, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if _, err := bc.svc.Get(context.Background(), fmt.Sprintf("cookbook-%05d", r.Intn(10000)), ""); err != nil {
			b.Fatal(err)
		}
		ts = append(ts, time.Since(t0))
	}
	ts.report(b)
}

func BenchmarkReindex(b *testing.B) {
	n := 10000
	if s := os.Getenv("ACCORDS_BENCH_REINDEX_N"); s != "" {
		if _, err := fmt.Sscan(s, &n); err != nil {
			b.Fatalf("ACCORDS_BENCH_REINDEX_N=%q: %v", s, err)
		}
	}
	bc := benchCatalogOf(b, n)
	ts := make(timings, 0, b.N)
	b.ResetTimer()
	for range b.N {
		t0 := time.Now()
		if err := bc.svc.Reindex(context.Background(), nil); err != nil {
			b.Fatal(err)
		}
		ts = append(ts, time.Since(t0))
	}
	ts.report(b)
	b.ReportMetric(float64(ts[len(ts)/2])/float64(time.Second), "p50-s")
}

// BenchmarkOpen measures start-up on an existing, up-to-date 10,000-bundle
// catalog: opening bbolt, opening the index, checking its revision and the
// built-in manifest. It fails if start-up rebuilt the index.
func BenchmarkOpen(b *testing.B) {
	bc := benchCatalogOf(b, 10000)
	seed := []*Bundle{sample("seed.bench", "1.0.0", 2)}
	if _, err := bc.svc.SeedBuiltins(context.Background(), seed); err != nil {
		b.Fatal(err)
	}
	ts := make(timings, 0, b.N)
	b.ResetTimer()
	for range b.N {
		b.StopTimer()
		bc.svc.Close()
		bc.db.Close()
		b.StartTimer()
		t0 := time.Now()
		db, err := store.Open(bc.dbPath(), store.Options{})
		if err != nil {
			b.Fatal(err)
		}
		svc, err := Open(context.Background(), db, bc.dbPath()+".index", Options{})
		if err != nil {
			b.Fatal(err)
		}
		rep, err := svc.SeedBuiltins(context.Background(), seed)
		if err != nil {
			b.Fatal(err)
		}
		ts = append(ts, time.Since(t0))
		if svc.Report().Rebuilt || !rep.Unchanged {
			b.Fatalf("start-up did work it should not: %+v %+v", svc.Report(), rep)
		}
		bc.db, bc.svc = db, svc
	}
	ts.report(b)
}
