//go:build docs

package docs

import (
	"bytes"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/test/testbin"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestMain(m *testing.M) {
	code := m.Run()
	testbin.Remove()
	os.Exit(code)
}

// checkCommandLine runs an accords-mcp command line of a service file with
// --help: the command and every flag must exist (cobra refuses an unknown
// flag before it prints help).
func checkCommandLine(t *testing.T, bin, where string, args []string) {
	t.Helper()
	cmd := exec.Command(bin, append(append([]string(nil), args...), "--help")...)
	out, err := cmd.CombinedOutput()
	assert.NoError(t, err, "%s: accords-mcp %s: %s", where, strings.Join(args, " "), out)
}

// unitKeys are the keys each section of the documented units may use
// (systemd.unit, systemd.service, systemd.exec, systemd.kill,
// systemd.timer); a misspelt key is ignored by systemd with only a log
// line, so it is refused here.
var unitKeys = map[string][]string{
	"Unit":    {"Description", "After", "Wants", "Requires", "Before", "Documentation"},
	"Service": {"Type", "User", "Group", "ExecStart", "ExecStartPost", "ExecReload", "Environment", "EnvironmentFile", "StateDirectory", "StateDirectoryMode", "UMask", "KillSignal", "TimeoutStopSec", "Restart", "NoNewPrivileges", "ProtectSystem", "ProtectHome", "PrivateTmp", "ReadWritePaths"},
	"Timer":   {"OnCalendar", "Persistent", "RandomizedDelaySec"},
	"Install": {"WantedBy"},
}

var unitSections = map[string][]string{".service": {"Unit", "Service", "Install"}, ".timer": {"Unit", "Timer", "Install"}}

// specifierRe is a % that is not a systemd specifier systemd knows
// (%% is a literal percent sign).
var specifierRe = regexp.MustCompile(`%[^%nNpPiIjJfuUgGhHsmMbBvaAltTdCEELS]`)

// unitFiles splits an ini block into the unit files it shows, each headed
// by a "# /etc/systemd/system/NAME" comment.
func unitFiles(text string) map[string]string {
	files := map[string]string{}
	name := ""
	for line := range strings.SplitSeq(text, "\n") {
		if rest, ok := strings.CutPrefix(line, "# /etc/systemd/system/"); ok {
			name = rest
			continue
		}
		if name != "" {
			files[name] += line + "\n"
		}
	}
	return files
}

// TestServiceFilesParse parses every systemd unit and launchd plist the
// documents show, and checks that the command lines they run exist.
func TestServiceFilesParse(t *testing.T) {
	root := repoRoot(t)
	bin := testbin.AccordsMCP(t)
	units, plists := 0, 0
	for _, doc := range docs(t, root) {
		for _, b := range parse(t, doc) {
			where := fmt.Sprintf("%s:%d", filepath.Base(b.file), b.line)
			switch b.lang {
			case "ini":
				files := unitFiles(b.text)
				require.NotEmpty(t, files, "%s: an ini block names its file (# /etc/systemd/system/NAME)", where)
				for name, text := range files {
					units++
					checkUnit(t, bin, where+" "+name, name, text)
				}
			case "xml":
				plists++
				checkPlist(t, bin, where, b.text)
			}
		}
	}
	assert.GreaterOrEqual(t, units, 3, "the service, the backup service and its timer (operations.md)")
	assert.GreaterOrEqual(t, plists, 1, "the launchd agent (operations.md)")
}

func checkUnit(t *testing.T, bin, where, name, text string) {
	sections, ok := unitSections[filepath.Ext(name)]
	require.True(t, ok, "%s: a unit type the test knows", where)
	section := ""
	seen := map[string]bool{}
	for i, line := range strings.Split(text, "\n") {
		at := fmt.Sprintf("%s line %d", where, i+1)
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#") || strings.HasPrefix(line, ";"):
			continue
		case strings.HasPrefix(line, "[") && strings.HasSuffix(line, "]"):
			section = strings.Trim(line, "[]")
			assert.Contains(t, sections, section, "%s: section of a %s unit", at, filepath.Ext(name))
			seen[section] = true
			continue
		}
		key, value, ok := strings.Cut(line, "=")
		if !assert.True(t, ok, "%s: key=value: %q", at, line) {
			continue
		}
		require.NotEmpty(t, section, "%s: a key before any section", at)
		assert.Contains(t, unitKeys[section], key, "%s: a key systemd knows in [%s]", at, section)
		assert.False(t, specifierRe.MatchString(strings.ReplaceAll(value, "%%", "")), "%s: a %% that is not a specifier (write %%%% for a literal one): %s", at, value)
		if strings.HasPrefix(key, "Exec") {
			checkExec(t, bin, at, value)
		}
	}
	for _, s := range sections {
		if s != "Install" || filepath.Ext(name) != ".service" || strings.Contains(name, "backup") {
			continue
		}
		assert.True(t, seen[s], "%s: [Install]", where)
	}
}

// checkExec checks an Exec line: an absolute program, and the accords-mcp
// command line it runs (directly or through /bin/sh -c '...').
func checkExec(t *testing.T, bin, at, value string) {
	value = strings.TrimLeft(value, "-@:+!")
	fields := strings.Fields(value)
	require.NotEmpty(t, fields, at)
	assert.True(t, filepath.IsAbs(fields[0]), "%s: systemd needs an absolute program path: %s", at, fields[0])
	var args []string
	switch filepath.Base(fields[0]) {
	case "accords-mcp":
		args = fields[1:]
	case "sh":
		// The shell line as systemd hands it over (%% is %), with the
		// program replaced by the one under test and --help added.
		inner := strings.TrimSpace(strings.TrimPrefix(value, fields[0]))
		require.True(t, strings.HasPrefix(inner, "-c '") && strings.HasSuffix(inner, "'"), "%s: sh -c '...': %s", at, value)
		line := strings.ReplaceAll(inner[len("-c '"):len(inner)-1], "%%", "%")
		f := strings.Fields(line)
		require.NotEmpty(t, f, at)
		if filepath.Base(f[0]) == "accords-mcp" {
			out, err := exec.Command("/bin/sh", "-c", bin+line[len(f[0]):]+" --help").CombinedOutput()
			assert.NoError(t, err, "%s: %s: %s", at, line, out)
		}
	}
	if args != nil {
		checkCommandLine(t, bin, at, args)
	}
}

// plistValue is a decoded property-list value.
type plistValue any

func decodePlist(d *xml.Decoder, start xml.StartElement) (plistValue, error) {
	switch start.Name.Local {
	case "dict":
		out := map[string]plistValue{}
		key := ""
		for {
			tok, err := d.Token()
			if err != nil {
				return nil, err
			}
			switch el := tok.(type) {
			case xml.StartElement:
				if el.Name.Local == "key" {
					var k string
					if err := d.DecodeElement(&k, &el); err != nil {
						return nil, err
					}
					if _, dup := out[k]; dup {
						return nil, fmt.Errorf("key %s twice", k)
					}
					key = k
					continue
				}
				if key == "" {
					return nil, fmt.Errorf("<%s> without a <key> in a dict", el.Name.Local)
				}
				v, err := decodePlist(d, el)
				if err != nil {
					return nil, err
				}
				out[key], key = v, ""
			case xml.EndElement:
				if key != "" {
					return nil, fmt.Errorf("key %s without a value", key)
				}
				return out, nil
			}
		}
	case "array":
		var out []plistValue
		for {
			tok, err := d.Token()
			if err != nil {
				return nil, err
			}
			switch el := tok.(type) {
			case xml.StartElement:
				v, err := decodePlist(d, el)
				if err != nil {
					return nil, err
				}
				out = append(out, v)
			case xml.EndElement:
				return out, nil
			}
		}
	case "string", "integer", "real", "date", "data":
		var s string
		if err := d.DecodeElement(&s, &start); err != nil {
			return nil, err
		}
		return s, nil
	case "true", "false":
		if err := d.Skip(); err != nil {
			return nil, err
		}
		return start.Name.Local == "true", nil
	}
	return nil, fmt.Errorf("<%s> is not a property-list element", start.Name.Local)
}

// plistTypes are the launchd.plist keys the documents use, with the type
// launchd wants.
var plistTypes = map[string]string{
	"Label": "string", "ProgramArguments": "array", "EnvironmentVariables": "dict", "RunAtLoad": "bool",
	"KeepAlive": "dict", "ExitTimeOut": "integer", "StandardErrorPath": "string", "StandardOutPath": "string",
	"StartCalendarInterval": "dict", "WorkingDirectory": "string",
}

func checkPlist(t *testing.T, bin, where, text string) {
	require.True(t, strings.HasPrefix(text, "<?xml "), "%s: the XML declaration comes first (nothing may precede it)", where)
	d := xml.NewDecoder(strings.NewReader(text))
	d.Strict = true
	var root plistValue
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err, "%s: well-formed XML", where)
		if el, ok := tok.(xml.StartElement); ok {
			require.Equal(t, "plist", el.Name.Local, where)
			require.Contains(t, el.Attr, xml.Attr{Name: xml.Name{Local: "version"}, Value: "1.0"}, where)
			inner, err := d.Token()
			for err == nil {
				if s, ok := inner.(xml.StartElement); ok {
					root, err = decodePlist(d, s)
					require.NoError(t, err, where)
					break
				}
				inner, err = d.Token()
			}
			require.NoError(t, err, where)
			require.NoError(t, d.Skip(), where)
		}
	}
	require.True(t, bytes.Contains([]byte(text), []byte(`<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN"`)), "%s: the plist DOCTYPE", where)
	dict, ok := root.(map[string]plistValue)
	require.True(t, ok, "%s: the plist holds a dict", where)
	for k, v := range dict {
		want, known := plistTypes[k]
		if !assert.True(t, known, "%s: %s is a launchd key the test knows", where, k) {
			continue
		}
		switch want {
		case "string", "integer":
			_, ok = v.(string)
		case "bool":
			_, ok = v.(bool)
		case "array":
			_, ok = v.([]plistValue)
		case "dict":
			_, ok = v.(map[string]plistValue)
		}
		assert.True(t, ok, "%s: %s is a %s", where, k, want)
	}
	assert.NotEmpty(t, dict["Label"], where)
	args, _ := dict["ProgramArguments"].([]plistValue)
	require.NotEmpty(t, args, "%s: ProgramArguments", where)
	var argv []string
	for _, a := range args {
		s, ok := a.(string)
		require.True(t, ok, "%s: ProgramArguments are strings", where)
		argv = append(argv, s)
	}
	assert.True(t, filepath.IsAbs(argv[0]), "%s: launchd needs an absolute program path", where)
	assert.Equal(t, "accords-mcp", filepath.Base(argv[0]), where)
	checkCommandLine(t, bin, where, argv[1:])
}

// TestSameShape: the comparison of a shown output with a printed one
// tolerates generated values only.
func TestSameShape(t *testing.T) {
	decode := func(s string) any {
		var v any
		require.NoError(t, json.Unmarshal([]byte(s), &v))
		return v
	}
	for _, c := range []struct {
		want, got string
		ok        bool
	}{
		{`{"code":"MCP_APPROVAL_REQUIRED","pending":"apj_4_bef43f"}`, `{"code":"MCP_APPROVAL_REQUIRED","pending":"apj_7_0a1b2c"}`, true},
		{`{"code":"MCP_APPROVAL_REQUIRED"}`, `{"code":"MCP_VALIDATION_ERROR"}`, false},
		{`{"a":1}`, `{"a":1,"b":2}`, false},
		{`{"a":1,"b":2}`, `{"a":1}`, false},
		{`{"to":["bob@example.com"]}`, `{"to":["bob@example.com","eve@example.com"]}`, false},
		{`{"ok":true}`, `{"ok":false}`, false},
		{`{"n":3}`, `{"n":4}`, true},
		{`{"handle":{"job_id":"job_2_1264f5","run_id":""}}`, `{"handle":{"job_id":"job_9_ffffff","run_id":""}}`, true},
		{`"MCP_APPROVAL_REQUIRED"`, `null`, false},
	} {
		err := sameShape(decode(c.want), decode(c.got), "$")
		assert.Equal(t, c.ok, err == nil, "%s vs %s: %v", c.want, c.got, err)
	}
}
