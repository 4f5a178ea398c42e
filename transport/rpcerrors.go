package transport

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// jsonRPCErrors makes the refusals go-sdk writes as text/plain 400 before a
// request reaches the server (an unknown method, a call without params, a
// malformed message) JSON-RPC error objects, as every JSON-RPC client
// expects and as the predecessor's bridge answered: HTTP 200 with
// {"jsonrpc":"2.0","id":…,"error":{code,message}}. Bodies over max get 413
// (the SDK would refuse them too, after reading them).
func jsonRPCErrors(next http.Handler, max int64) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.Body == nil {
			next.ServeHTTP(w, r)
			return
		}
		body, err := io.ReadAll(io.LimitReader(r.Body, max+1))
		if err != nil {
			http.Error(w, "failed to read body", http.StatusBadRequest)
			return
		}
		if int64(len(body)) > max {
			http.Error(w, "request body too large", http.StatusRequestEntityTooLarge)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		id, ok := callID(body)
		if !ok {
			next.ServeHTTP(w, r)
			return
		}
		cw := &refusalWriter{ResponseWriter: w}
		next.ServeHTTP(cw, r)
		if cw.refused {
			writeRPCError(w, id, strings.TrimSpace(cw.buf.String()))
		}
	})
}

// callID returns the id of a body holding one JSON-RPC call.
func callID(body []byte) (json.RawMessage, bool) {
	var msg struct {
		ID json.RawMessage `json:"id"`
	}
	b := bytes.TrimSpace(body)
	if len(b) == 0 || b[0] != '{' || json.Unmarshal(b, &msg) != nil || len(msg.ID) == 0 || string(msg.ID) == "null" {
		return nil, false
	}
	return msg.ID, true
}

// writeRPCError answers the SDK's refusal text as a JSON-RPC error.
func writeRPCError(w http.ResponseWriter, id json.RawMessage, text string) {
	code, msg := -32600, "invalid request"
	switch {
	case strings.Contains(text, "not handled"):
		code, msg = -32601, "method not found"
	case strings.HasPrefix(text, "malformed payload"):
		code, msg = -32700, "parse error"
	}
	if text != "" {
		msg += ": " + text
	}
	body, _ := json.Marshal(map[string]any{"jsonrpc": "2.0", "id": id, "error": map[string]any{"code": code, "message": msg}})
	w.Header().Set("Content-Type", "application/json")
	w.Header().Del("X-Content-Type-Options")
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(body)
}

// refusalWriter holds back a text/plain 400 (the SDK's http.Error) and
// passes everything else through unchanged, streams included.
type refusalWriter struct {
	http.ResponseWriter
	refused bool
	decided bool
	buf     bytes.Buffer
}

func (rw *refusalWriter) WriteHeader(status int) {
	if rw.decided {
		return
	}
	rw.decided = true
	if status == http.StatusBadRequest && strings.HasPrefix(rw.Header().Get("Content-Type"), "text/plain") {
		rw.refused = true
		return
	}
	rw.ResponseWriter.WriteHeader(status)
}

func (rw *refusalWriter) Write(p []byte) (int, error) {
	if !rw.decided {
		rw.WriteHeader(http.StatusOK)
	}
	if rw.refused {
		return rw.buf.Write(p)
	}
	return rw.ResponseWriter.Write(p)
}

// Unwrap lets http.ResponseController reach the connection (SSE flushes).
func (rw *refusalWriter) Unwrap() http.ResponseWriter { return rw.ResponseWriter }

// Flush passes flushes through for streamed answers.
func (rw *refusalWriter) Flush() {
	if rw.refused {
		return
	}
	if f, ok := rw.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}
