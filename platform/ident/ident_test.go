package ident

import (
	"math/rand/v2"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// shapes are the rules the project defines, with the expressions they
// replaced, written out so that a change to New's pattern text shows here.
var shapes = []struct {
	first, rest string
	max         int
	literal     string
}{
	{"A-Za-z0-9", "A-Za-z0-9._-", 128, `^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`},
	{"A-Za-z0-9", "A-Za-z0-9._@:-", 128, `^[A-Za-z0-9][A-Za-z0-9._@:-]{0,127}$`},
	{"A-Za-z0-9", "A-Za-z0-9._:-", 64, `^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$`},
	{"A-Za-z0-9", "A-Za-z0-9._:-", 128, `^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`},
	{"A-Za-z_", "A-Za-z0-9_", 128, `^[A-Za-z_][A-Za-z0-9_]{0,127}$`},
	{"a", "b", 1, `^[a][b]{0,0}$`},
}

func TestPatternText(t *testing.T) {
	for _, s := range shapes {
		r := New(s.first, s.rest, s.max)
		assert.Equal(t, s.literal, r.String())
		assert.Equal(t, s.max, r.Max())
	}
}

// The bytes the random strings are made of: every class member and
// neighbour of a range's ends, controls, a newline (which `$` must not
// accept before), and the bytes of non-ASCII runes.
const alphabet = "AZaz09@[`{/:._-+ !\"'\\\x00\n\t\x7f\xc3\xa9\xe2\x82\xac\xff"

func TestAgreesWithRegexp(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, s := range shapes {
		r := New(s.first, s.rest, s.max)
		re := regexp.MustCompile(s.literal)
		check := func(in string) {
			t.Helper()
			require.Equal(t, re.MatchString(in), r.Valid(in), "rule %s on %q", s.literal, in)
		}
		for _, in := range []string{"", "a", "A", "0", "_", "-", ".", "a-", "a.b_c-d", "a@b:c", "a\n", "\na",
			"é", "aé", "a\xff", strings.Repeat("a", s.max), strings.Repeat("a", s.max+1),
			strings.Repeat("a", s.max-1) + "\n", "a b", "a/b", "a[b]", "a\\b"} {
			check(in)
		}
		for range 20000 {
			n := rng.IntN(s.max + 3)
			b := make([]byte, n)
			for i := range b {
				b[i] = alphabet[rng.IntN(len(alphabet))]
			}
			check(string(b))
			// Mostly valid strings with one byte changed reach past the first byte.
			if n > 0 {
				for i := range b {
					b[i] = "aZ9._-:@"[rng.IntN(8)]
				}
				b[rng.IntN(n)] = alphabet[rng.IntN(len(alphabet))]
				check(string(b))
			}
		}
	}
}

func FuzzAgreesWithRegexp(f *testing.F) {
	f.Add("net.http", 0)
	f.Add("a\n", 1)
	f.Add(strings.Repeat("x", 128), 2)
	f.Add("_ENV", 4)
	rules := make([]Rule, len(shapes))
	res := make([]*regexp.Regexp, len(shapes))
	for i, s := range shapes {
		rules[i], res[i] = New(s.first, s.rest, s.max), regexp.MustCompile(s.literal)
	}
	f.Fuzz(func(t *testing.T, in string, which int) {
		i := (which%len(shapes) + len(shapes)) % len(shapes)
		if got, want := rules[i].Valid(in), res[i].MatchString(in); got != want {
			t.Fatalf("rule %s on %q: Valid %v, regexp %v", shapes[i].literal, in, got, want)
		}
	})
}

func TestZeroRuleAcceptsNothing(t *testing.T) {
	var r Rule
	for _, in := range []string{"", "a", "0"} {
		assert.False(t, r.Valid(in), in)
	}
}

func TestNewRefusesWhatItCannotRead(t *testing.T) {
	for _, c := range []struct{ first, rest string }{
		{"", "a"}, {"a", ""}, {"z-a", "a"}, {"a", "-a"}, {"a", "a-"}, {"\\d", "a"}, {"[a]", "a"}, {"^a", "a"}, {"é", "a"},
	} {
		if c.rest == "a-" {
			// '-' last is a literal, as in a regular expression.
			assert.NotPanics(t, func() { New(c.first, c.rest, 4) })
			continue
		}
		assert.Panics(t, func() { New(c.first, c.rest, 4) }, "%q %q", c.first, c.rest)
	}
	assert.Panics(t, func() { New("a", "a", 0) })
}

// BenchmarkValid sets the byte check against the expression it replaced,
// on a typical cookbook id; BenchmarkCompile is what each such expression
// cost every process at start.
func BenchmarkValid(b *testing.B) {
	r := New("A-Za-z0-9", "A-Za-z0-9._-", 128)
	re := regexp.MustCompile(r.String())
	const id = "google.workspace.gmail-send_v2"
	b.Run("rule", func(b *testing.B) {
		for b.Loop() {
			if !r.Valid(id) {
				b.Fatal("refused")
			}
		}
	})
	b.Run("regexp", func(b *testing.B) {
		for b.Loop() {
			if !re.MatchString(id) {
				b.Fatal("refused")
			}
		}
	})
}

func BenchmarkCompile(b *testing.B) {
	b.Run("rule", func(b *testing.B) {
		for b.Loop() {
			_ = New("A-Za-z0-9", "A-Za-z0-9._-", 128)
		}
	})
	b.Run("regexp", func(b *testing.B) {
		for b.Loop() {
			_ = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`)
		}
	})
}
