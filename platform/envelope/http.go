package envelope

import (
	"encoding/json"
	"net/http"
)

// WriteHTTP answers an HTTP request refused before JSON-RPC handling (strict
// tenant mode, authentication) with the failure envelope of err; meta
// carries the HTTP status as the predecessor's bridge did.
func WriteHTTP(w http.ResponseWriter, status int, err error) {
	env := Failure(err)
	env.Meta.VaultHTTPStatus = status
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(env)
}
