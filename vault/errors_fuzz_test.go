package vault

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/envelope"
)

// FuzzErrorDecoding decodes an arbitrary Vault error response body with an
// arbitrary status, as Client.Do does, and normalizes it. Properties: no
// panic; the result always has a code whose category matches, a message and
// a vault code; transport failures (status 0) are MCP_NETWORK_ERROR and
// retryable (D2); 5xx and 429 are retryable; a mapped vault code maps as the
// table says; the envelope marshals and carries the HTTP status in meta.
func FuzzErrorDecoding(f *testing.F) {
	for _, s := range []struct {
		status int
		body   string
	}{
		{400, `{"error":{"code":"INVALID_ARGUMENT","message":"bad","details":{"field":"x"}}}`},
		{409, `{"error":{"code":"CONNECTOR_APPROVAL_GRANT_REQUIRED","message":"needs approval","details":{"pending_approval_id":"p1"}}}`},
		{403, `{"error":{"code":"plan_approval_denied"}}`},
		{500, `<html>oops</html>`},
		{502, ``},
		{429, `{"error":"slow down"}`},
		{404, `{"error":{"code":7,"message":["x"],"details":"str"}}`},
		{0, ``},
		{418, `{"error":null}`},
		{401, `{"error":{"code":"  UNAUTHENTICATED  ","message":""}}`},
		{999, `{"error":{"details":{"nested":{"deep":[1,2,{"a":null}]}}}}`},
	} {
		f.Add(s.status, []byte(s.body))
	}
	mapped := MappedVaultCodes()
	f.Fuzz(func(t *testing.T, status int, body []byte) {
		if status < 0 || status > 999 {
			return
		}
		code, msg, details := parseErrorBody(body)
		e := APIError{Status: status, Code: code, Message: msg, Details: details, RequestID: "req-1"}
		if status == 0 {
			e.Code = CodeNetworkError
		}
		err := MapError(e)
		if err.Code == "" || err.Category == "" || err.Category != apperr.CategoryOf(err.Code) {
			t.Fatalf("code %q category %q", err.Code, err.Category)
		}
		if strings.TrimSpace(err.Message) == "" || strings.TrimSpace(err.VaultCode) == "" {
			t.Fatalf("blank message or vault code: %#v", err)
		}
		switch {
		case status == 0:
			if err.Code != apperr.CodeNetwork || !err.Retryable || err.VaultCode != CodeNetworkError {
				t.Fatalf("transport failure mapped to %s retryable=%v vault_code=%s", err.Code, err.Retryable, err.VaultCode)
			}
		case status >= 500 || status == 429:
			if !err.Retryable {
				t.Fatalf("status %d not retryable", status)
			}
		}
		if want, ok := mapped[strings.ToUpper(strings.TrimSpace(code))]; ok && status != 0 && err.Code != want {
			t.Fatalf("vault code %q mapped to %s, table says %s", code, err.Code, want)
		}
		env := envelope.Failure(err)
		raw, jerr := json.Marshal(env)
		if jerr != nil {
			t.Fatalf("envelope does not marshal: %v", jerr)
		}
		var back struct {
			Meta struct {
				Status int    `json:"vault_http_status"`
				ID     string `json:"request_id"`
			} `json:"meta"`
		}
		if json.Unmarshal(raw, &back) != nil || back.Meta.Status != status || back.Meta.ID != "req-1" {
			t.Fatalf("meta lost status or request id: %s", raw)
		}
	})
}
