package witness

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// Policy is a C2SP tlog-policy: the logs whose signature is accepted, the
// witnesses, and the quorum of cosignatures a checkpoint needs.
type Policy struct {
	Logs      []note.Verifier
	Witnesses map[string]Witness // by policy name
	groups    map[string]group
	quorum    string // a witness, a group, or "none"
}

type group struct {
	k       int
	members []string
}

// ErrQuorum means a checkpoint lacks the cosignatures the policy asks for.
var ErrQuorum = errors.New("witness quorum not met")

// ParsePolicy reads a tlog-policy file: "log VKEY [URL]", "witness NAME
// VKEY [URL]", "group NAME all|any|K MEMBER...", one "quorum NAME";
// blank lines and # comments are ignored; names are defined before use.
func ParsePolicy(data []byte) (*Policy, error) {
	p := &Policy{Witnesses: map[string]Witness{}, groups: map[string]group{}}
	keys := map[string]bool{}
	for i, line := range strings.Split(string(data), "\n") {
		f := strings.FieldsFunc(line, func(r rune) bool { return r == ' ' || r == '\t' })
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		if err := p.line(f, keys); err != nil {
			return nil, fmt.Errorf("policy line %d: %w", i+1, err)
		}
	}
	if p.quorum == "" {
		return nil, errors.New("policy has no quorum line")
	}
	return p, nil
}

func (p *Policy) defined(n string) bool {
	_, w := p.Witnesses[n]
	_, g := p.groups[n]
	return w || g
}

// line reads one policy line split into fields.
func (p *Policy) line(f []string, keys map[string]bool) error {
	newKey := func(vkey string) error {
		if keys[keyOf(vkey)] {
			return errors.New("duplicate key")
		}
		keys[keyOf(vkey)] = true
		return nil
	}
	switch f[0] {
	case "log":
		if len(f) < 2 || len(f) > 3 {
			return errors.New("write log VKEY [URL]")
		}
		v, err := NewVerifier(f[1])
		if err != nil {
			return err
		}
		p.Logs = append(p.Logs, v)
		return newKey(f[1])
	case "witness":
		if len(f) < 3 || len(f) > 4 {
			return errors.New("write witness NAME VKEY [URL]")
		}
		if f[1] == "none" || p.defined(f[1]) {
			return fmt.Errorf("name %q is taken", f[1])
		}
		v, err := NewVerifier(f[2])
		if err != nil {
			return err
		}
		w := Witness{VKey: f[2], Verifier: v}
		if len(f) == 4 {
			w.URL = strings.TrimRight(f[3], "/")
		}
		p.Witnesses[f[1]] = w
		return newKey(f[2])
	case "group":
		return p.group(f)
	case "quorum":
		if len(f) != 2 || p.quorum != "" {
			return errors.New("exactly one quorum NAME line")
		}
		if f[1] != "none" && !p.defined(f[1]) {
			return fmt.Errorf("quorum %q is not defined on an earlier line", f[1])
		}
		p.quorum = f[1]
		return nil
	}
	return fmt.Errorf("unknown keyword %q", f[0])
}

// group reads "group NAME all|any|K MEMBER...".
func (p *Policy) group(f []string) error {
	if len(f) < 4 {
		return errors.New("write group NAME all|any|K MEMBER…")
	}
	if f[1] == "none" || p.defined(f[1]) {
		return fmt.Errorf("name %q is taken", f[1])
	}
	members := f[3:]
	seen := map[string]bool{}
	for _, m := range members {
		if !p.defined(m) || seen[m] {
			return fmt.Errorf("member %q is not defined on an earlier line, or listed twice", m)
		}
		seen[m] = true
	}
	k := 0
	switch f[2] {
	case "all":
		k = len(members)
	case "any":
		k = 1
	default:
		n, err := strconv.Atoi(f[2])
		if err != nil || n < 1 || n > len(members) || f[2] != strconv.Itoa(n) {
			return fmt.Errorf("threshold %q must be all, any or 1..%d", f[2], len(members))
		}
		k = n
	}
	p.groups[f[1]] = group{k: k, members: members}
	return nil
}

// keyOf is the key material of a vkey (duplicates wrap the same key).
func keyOf(vkey string) string {
	i := strings.LastIndex(vkey, "+")
	return vkey[i+1:]
}

// Verdict is the outcome of checking one checkpoint.
type Verdict struct {
	Log       string   `json:"log"`       // the log key that signed
	Cosigners []string `json:"cosigners"` // policy names of witnesses whose cosignature verified
}

// Check opens a signed checkpoint: signed by one of the policy's logs
// (any when it lists none, then logKey must be given) and cosigned to the
// quorum. A signature of a known key that does not verify is an error.
func (p *Policy) Check(signed []byte, logKey note.Verifier) (Verdict, error) {
	logs := p.Logs
	if len(logs) == 0 && logKey != nil {
		logs = []note.Verifier{logKey}
	}
	if len(logs) == 0 {
		return Verdict{}, errors.New("the policy names no log and no log key was given")
	}
	n, err := note.Open(signed, note.VerifierList(logs...))
	if err != nil {
		return Verdict{}, fmt.Errorf("the checkpoint is not signed by the policy's log: %w", err)
	}
	v := Verdict{Log: n.Sigs[0].Name}
	cosigned := map[string]bool{}
	for name, w := range p.Witnesses {
		_, err := note.Open(signed, note.VerifierList(w.Verifier))
		var unverified *note.UnverifiedNoteError
		switch {
		case errors.As(err, &unverified):
			continue
		case err != nil:
			return v, fmt.Errorf("witness %s: %w", name, err)
		}
		cosigned[name] = true
		v.Cosigners = append(v.Cosigners, name)
	}
	sort.Strings(v.Cosigners)
	if !p.satisfied(p.quorum, cosigned) {
		return v, fmt.Errorf("%w: quorum %q, cosigned by %d witness(es) %v", ErrQuorum, p.quorum, len(v.Cosigners), v.Cosigners)
	}
	return v, nil
}

func (p *Policy) satisfied(name string, cosigned map[string]bool) bool {
	if name == "none" {
		return true
	}
	if _, ok := p.Witnesses[name]; ok {
		return cosigned[name]
	}
	g := p.groups[name]
	n := 0
	for _, m := range g.members {
		if p.satisfied(m, cosigned) {
			n++
		}
	}
	return n >= g.k
}
