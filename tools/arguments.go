package tools

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/jsonscan"
)

// MaxArgumentValues bounds the JSON values of one call's arguments.
// Decoded JSON costs tens of bytes per value, so a message of a million
// tiny values would cost far more memory than its size; the largest
// legitimate argument, a cookbook bundle, holds a few tens of thousands.
const MaxArgumentValues = 200_000

// decodeArguments decodes a call's arguments. Unlike json.Unmarshal it
// names the field of a number out of range (1e400), refuses text that is
// not valid Unicode instead of replacing it, and refuses documents with
// more than MaxArgumentValues values before decoding them.
func decodeArguments(raw json.RawMessage) (map[string]any, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	scan := jsonscan.Scan(raw)
	if scan.Values > MaxArgumentValues {
		return nil, apperr.Validation("arguments", "arguments hold more than %d JSON values", MaxArgumentValues).
			With("max_values", MaxArgumentValues)
	}
	if scan.BadText >= 0 {
		f := fieldName(jsonscan.PathAt(raw, scan.BadText))
		return nil, apperr.Validation(f, "%s is not valid UTF-8 text (invalid bytes or an unpaired surrogate escape)", f)
	}
	var v any
	if err := json.Unmarshal(raw, &v); err != nil {
		return nil, explainDecode(raw)
	}
	args, ok := v.(map[string]any)
	if !ok {
		return nil, apperr.Validation("arguments", "arguments must be a JSON object")
	}
	return args, nil
}

// explainDecode names what made raw undecodable: a number beyond float64
// (json.Unmarshal does not say where), or else the document itself. It
// runs only on failure, so the fast path keeps one copy of the input.
func explainDecode(raw []byte) error {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err == nil {
		if err := numbersToFloat(v, ""); err != nil {
			return err
		}
	}
	return apperr.Validation("arguments", "arguments must be a JSON object")
}

// numbersToFloat converts every json.Number to float64 in place; a number
// beyond float64 is a validation error naming its field.
func numbersToFloat(v any, path string) error {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			if n, ok := e.(json.Number); ok {
				f, err := toFloat(n, child(path, k))
				if err != nil {
					return err
				}
				x[k] = f
				continue
			}
			if err := numbersToFloat(e, child(path, k)); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range x {
			at := fmt.Sprintf("%s[%d]", fieldName(path), i)
			if n, ok := e.(json.Number); ok {
				f, err := toFloat(n, at)
				if err != nil {
					return err
				}
				x[i] = f
				continue
			}
			if err := numbersToFloat(e, at); err != nil {
				return err
			}
		}
	}
	return nil
}

func toFloat(n json.Number, path string) (float64, error) {
	f, err := strconv.ParseFloat(string(n), 64)
	if err != nil {
		return 0, apperr.Validation(path, "%s is a number out of range", path).With("value", clipNumber(string(n)))
	}
	return f, nil
}

func clipNumber(s string) string {
	if len(s) > 40 {
		return s[:40] + "…"
	}
	return s
}
