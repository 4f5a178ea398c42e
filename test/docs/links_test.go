package docs

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"unicode"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// docs lists README.md and docs/*.md.
func docs(t *testing.T, root string) []string {
	files, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	require.NoError(t, err)
	return append([]string{filepath.Join(root, "README.md")}, files...)
}

func repoRoot(t *testing.T) string {
	dir, err := os.Getwd()
	require.NoError(t, err)
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		require.NotEqual(t, parent, dir, "no go.mod above the test")
		dir = parent
	}
}

var (
	linkRe       = regexp.MustCompile(`\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)
	codeSpanRe   = regexp.MustCompile("`[^`]*`")
	headingRe    = regexp.MustCompile(`^#{1,6}\s+(.*?)\s*#*\s*$`)
	htmlAnchorRe = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	mdLinkTextRe = regexp.MustCompile(`\[([^\]]*)\]\([^)]*\)`)
)

// mdLine is a line of a Markdown file outside its fenced blocks.
type mdLine struct {
	n    int
	text string
}

// prose returns the lines of a Markdown file outside fenced code blocks.
func prose(t *testing.T, path string) []mdLine {
	t.Helper()
	raw, err := os.ReadFile(path)
	require.NoError(t, err)
	var out []mdLine
	fence := ""
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimLeft(line, " ")
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		if strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~") {
			fence = trimmed[:3]
			continue
		}
		out = append(out, mdLine{n, line})
	}
	return out
}

// slug is GitHub's anchor of a heading: lower case, punctuation dropped,
// spaces turned into hyphens.
func slug(heading string) string {
	heading = mdLinkTextRe.ReplaceAllString(heading, "$1")
	var b strings.Builder
	for _, r := range strings.ToLower(heading) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}

// anchors returns the anchors a Markdown file defines: its headings'
// slugs (a repeated one numbered as GitHub does) and HTML anchors.
func anchors(t *testing.T, path string) map[string]bool {
	out := map[string]bool{}
	count := map[string]int{}
	for _, l := range prose(t, path) {
		for _, m := range htmlAnchorRe.FindAllStringSubmatch(l.text, -1) {
			out[m[1]] = true
		}
		m := headingRe.FindStringSubmatch(l.text)
		if m == nil {
			continue
		}
		s := slug(m[1])
		if c := count[s]; c > 0 {
			out[fmt.Sprintf("%s-%d", s, c)] = true
		} else {
			out[s] = true
		}
		count[s]++
	}
	return out
}

// TestRelativeLinksResolve checks that every relative link of README.md and
// docs/*.md names a file or folder of the repository and, for a Markdown
// file, an anchor it defines.
func TestRelativeLinksResolve(t *testing.T) {
	root := repoRoot(t)
	cache := map[string]map[string]bool{}
	anchorsOf := func(path string) map[string]bool {
		if a, ok := cache[path]; ok {
			return a
		}
		cache[path] = anchors(t, path)
		return cache[path]
	}
	checked := 0
	for _, doc := range docs(t, root) {
		for _, l := range prose(t, doc) {
			text := codeSpanRe.ReplaceAllString(l.text, "")
			for _, m := range linkRe.FindAllStringSubmatch(text, -1) {
				target := m[1]
				if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
					continue
				}
				checked++
				where := fmt.Sprintf("%s:%d: %s", filepath.Base(doc), l.n, target)
				file, frag, _ := strings.Cut(target, "#")
				path := doc
				if file != "" {
					path = filepath.Join(filepath.Dir(doc), file)
					if _, err := os.Stat(path); !assert.NoError(t, err, "%s: no such file or folder", where) {
						continue
					}
				}
				if frag != "" && strings.HasSuffix(path, ".md") {
					assert.True(t, anchorsOf(path)[frag], "%s: %s has no heading with the anchor #%s", where, filepath.Base(path), frag)
				}
			}
		}
	}
	require.Positive(t, checked, "no relative link found")
}

func TestSlug(t *testing.T) {
	for heading, want := range map[string]string{
		"Gateway: policy, rate limits, rules, signed audit":  "gateway-policy-rate-limits-rules-signed-audit",
		"In-process benchmarks (`go test -bench`)":           "in-process-benchmarks-go-test--bench",
		"Importing the previous accords-mcp's catalog":       "importing-the-previous-accords-mcps-catalog",
		"Scale-out: several HTTP replicas on one etcd store": "scale-out-several-http-replicas-on-one-etcd-store",
	} {
		assert.Equal(t, want, slug(heading), heading)
	}
}
