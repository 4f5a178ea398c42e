package envelope

import (
	"encoding/json"
	"net/http"
)

// WriteHTTP answers a request refused before JSON-RPC handling with err's
// failure envelope; meta carries the HTTP status.
func WriteHTTP(w http.ResponseWriter, status int, err error) {
	env := Failure(err)
	env.Meta.VaultHTTPStatus = status
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(env)
}
