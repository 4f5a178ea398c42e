package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"
)

// Logged data (a policy's [audit] log_params / log_results) is redacted by
// rule before it reaches a receipt, and bounded. The rules, in order:
//   - a field the tool marks sensitive, or whose name looks secret
//     (secretNameParts), becomes Redacted whatever its value;
//   - a string that looks like a credential (an Authorization value such
//     as "Bearer …", a JSON Web Token, a PEM private key, a URL with a
//     password) becomes Redacted;
//   - a string longer than MaxLoggedString is cut, an array or object
//     with more than MaxLoggedItems members keeps the first ones, a value
//     nested deeper than MaxLoggedDepth is dropped, and a whole value over
//     MaxLoggedBytes is replaced: each cut leaves a marker starting with
//     CutMarker that says what was cut.
//
// The keyed digests of parameters and results are computed over the data
// as sent, never over this form, so verification does not depend on it.

// Redacted replaces a secret value.
const Redacted = "[redacted]"

// CutMarker starts every marker of a cut value.
const CutMarker = "[cut"

// Bounds of logged data.
const (
	MaxLoggedString = 512
	MaxLoggedItems  = 64
	MaxLoggedDepth  = 8
	MaxLoggedBytes  = 16 << 10
)

// secretNameParts make a field name secret-looking when its lowercased
// form, without '_', '-' and '.', contains one of them.
var secretNameParts = []string{
	"token", "secret", "password", "passwd", "passphrase", "authorization", "apikey", "cookie",
	"credential", "privatekey", "accesskey", "sessionkey", "bearer", "otp", "pin",
}

// secretNameExact are secret-looking names too short to match as parts.
var secretNameExact = []string{"auth", "key", "pass", "pwd", "sig", "signature"}

// SecretName reports whether a field name looks like it holds a secret.
func SecretName(name string) bool {
	n := strings.NewReplacer("_", "", "-", "", ".", "").Replace(strings.ToLower(name))
	if slices.Contains(secretNameExact, n) {
		return true
	}
	for _, p := range secretNameParts {
		if strings.Contains(n, p) {
			// "pin" and "otp" only as a whole word part: "spinner" and
			// "footprint" are not secrets.
			if (p == "pin" || p == "otp") && !wordPart(strings.ToLower(name), p) {
				continue
			}
			return true
		}
	}
	return false
}

// wordPart reports whether part is one of name's '_'/'-'/'.'-separated words.
func wordPart(name, part string) bool {
	return slices.Contains(strings.FieldsFunc(name, func(r rune) bool { return r == '_' || r == '-' || r == '.' }), part)
}

// SecretValue reports whether a string looks like a credential.
func SecretValue(s string) bool {
	t := strings.TrimSpace(s)
	lower := strings.ToLower(t)
	for _, scheme := range []string{"bearer ", "basic ", "token ", "digest ", "negotiate "} {
		if strings.HasPrefix(lower, scheme) && len(t) > len(scheme) {
			return true
		}
	}
	if strings.Contains(t, "-----BEGIN") && strings.Contains(t, "PRIVATE KEY") {
		return true
	}
	if looksJWT(t) {
		return true
	}
	// scheme://user:password@host
	if i := strings.Index(t, "://"); i > 0 {
		rest := t[i+3:]
		if at := strings.IndexByte(rest, '@'); at > 0 {
			host := rest[:at]
			if !strings.ContainsAny(host, "/?#") && strings.Contains(host, ":") {
				return true
			}
		}
	}
	return false
}

// looksJWT reports three base64url segments, the first a JSON object.
func looksJWT(s string) bool {
	parts := strings.Split(s, ".")
	if len(parts) != 3 || !strings.HasPrefix(parts[0], "eyJ") {
		return false
	}
	for _, p := range parts[:2] {
		if len(p) < 4 || strings.Trim(p, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_=") != "" {
			return false
		}
	}
	return true
}

// Redact returns raw (a JSON value: arguments, a result's data, an event
// body) as it may be logged: secret fields and values replaced, sizes
// bounded, in encoding/json's encoding. sensitive are field names the tool
// marks sensitive, redacted at any depth. A value that is not JSON is
// logged as a marker with its size only.
func Redact(raw []byte, sensitive []string) json.RawMessage {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(trimmed))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil || dec.More() {
		return marker(fmt.Sprintf("%s: not JSON, %d bytes]", CutMarker, len(trimmed)))
	}
	out, err := json.Marshal(redactValue(v, sensitive, 0))
	if err != nil {
		return marker(fmt.Sprintf("%s: not encodable, %d bytes]", CutMarker, len(trimmed)))
	}
	if len(out) > MaxLoggedBytes {
		return marker(fmt.Sprintf("%s: %d bytes after redaction, over %d]", CutMarker, len(out), MaxLoggedBytes))
	}
	return out
}

func marker(s string) json.RawMessage {
	b, _ := json.Marshal(s)
	return b
}

func redactValue(v any, sensitive []string, depth int) any {
	if depth >= MaxLoggedDepth {
		switch v.(type) {
		case map[string]any, []any:
			return CutMarker + ": nested deeper than " + fmt.Sprint(MaxLoggedDepth) + "]"
		}
	}
	switch x := v.(type) {
	case string:
		if SecretValue(x) {
			return Redacted
		}
		return cutString(x)
	case []any:
		n := min(len(x), MaxLoggedItems)
		out := make([]any, 0, n+1)
		for _, item := range x[:n] {
			out = append(out, redactValue(item, sensitive, depth+1))
		}
		if len(x) > n {
			out = append(out, fmt.Sprintf("%s: %d more items]", CutMarker, len(x)-n))
		}
		return out
	case map[string]any:
		keys := slices.Sorted(maps.Keys(x))
		out := make(map[string]any, min(len(keys), MaxLoggedItems)+1)
		for i, k := range keys {
			if i == MaxLoggedItems {
				out[CutMarker+"]"] = fmt.Sprintf("%d more fields", len(keys)-i)
				break
			}
			if SecretName(k) || slices.Contains(sensitive, k) {
				out[cutString(k)] = Redacted
				continue
			}
			out[cutString(k)] = redactValue(x[k], sensitive, depth+1)
		}
		return out
	}
	return v // numbers, booleans, null
}

// cutString keeps the first MaxLoggedString bytes (on a rune boundary) and
// says how many were cut.
func cutString(s string) string {
	if len(s) <= MaxLoggedString {
		return s
	}
	n := MaxLoggedString
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + fmt.Sprintf("…%s: %d more bytes]", CutMarker, len(s)-n)
}
