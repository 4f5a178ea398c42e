package admin

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/index"
)

// maxRequestBytes bounds a JSON request (a bundle import is the largest:
// MaxImportBytes of base64).
const maxRequestBytes = MaxImportBytes*4/3 + 64<<10

// Handler serves b on the control socket: backup and restore stream their
// bodies; every other operation is one JSON request and one JSON answer.
func Handler(b Backend) http.Handler {
	mux := http.NewServeMux()
	handle(mux, PathSearch, func(ctx context.Context, q index.Query) (any, error) { return b.Search(ctx, q) })
	handle(mux, PathList, func(ctx context.Context, f catalog.ListFilter) (any, error) { return b.ListCookbooks(ctx, f) })
	handle(mux, PathImport, func(ctx context.Context, r importRequest) (any, error) { return b.ImportBundle(ctx, r.Raw, r.Policy) })
	handle(mux, PathExport, func(ctx context.Context, r refRequest) (any, error) {
		return b.ExportBundle(ctx, r.CookbookID, r.Version)
	})
	handle(mux, PathDelete, func(ctx context.Context, r refRequest) (any, error) {
		return b.DeleteCookbook(ctx, r.CookbookID, r.Version)
	})
	handle(mux, PathRender, func(ctx context.Context, r catalog.RenderRequest) (any, error) { return b.Render(ctx, r) })
	handle(mux, PathAuditVerify, func(ctx context.Context, r AuditVerifyRequest) (any, error) { return b.AuditVerify(ctx, r) })
	handle(mux, PathAuditTail, func(ctx context.Context, r tailRequest) (any, error) { return b.AuditTail(ctx, r.N) })
	handle(mux, PathAuditCP, func(ctx context.Context, _ struct{}) (any, error) {
		n, err := b.AuditCheckpoint(ctx)
		return checkpointResult{Note: n}, err
	})
	handle(mux, PathAuditFind, func(ctx context.Context, r findRequest) (any, error) { return b.AuditFind(ctx, r.CallID) })
	handle(mux, PathAuditProve, func(ctx context.Context, r proveRequest) (any, error) { return b.AuditProve(ctx, r.Seq) })
	handle(mux, PathAuditAck, func(ctx context.Context, r ackRequest) (any, error) {
		msg, err := b.AuditAcknowledge(ctx, r.Operator, r.Note)
		return ackResult{Message: msg}, err
	})
	mux.HandleFunc("POST "+PathAuditExport, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Trailer", trailerReceipts)
		sw := &startedWriter{w: w}
		n, err := b.AuditExport(r.Context(), sw)
		if err != nil {
			if !sw.started {
				reply(w, nil, err)
				return
			}
			panic(http.ErrAbortHandler)
		}
		if !sw.started {
			w.Header().Set("Content-Type", "application/x-ndjson")
			w.WriteHeader(http.StatusOK)
		}
		w.Header().Set(trailerReceipts, strconv.Itoa(n))
	})
	handle(mux, PathSessionStatus, func(ctx context.Context, r SessionRequest) (any, error) { return b.SessionStatus(ctx, r) })
	handle(mux, PathSessionConfig, func(ctx context.Context, r SessionRequest) (any, error) { return b.SessionConfigure(ctx, r) })
	handle(mux, PathSessionClear, func(ctx context.Context, r SessionRequest) (any, error) {
		return map[string]bool{"cleared": true}, b.SessionClear(ctx, r)
	})
	handle(mux, PathDoctor, func(ctx context.Context, r doctorRequest) (any, error) {
		var env session.Defaults
		if len(r.Env) > 0 {
			if err := json.Unmarshal(r.Env, &env); err != nil {
				return nil, err
			}
		}
		return b.Doctor(ctx, r.Scope, env)
	})
	mux.HandleFunc("POST "+PathReindex, func(w http.ResponseWriter, r *http.Request) { serveReindex(w, r, b) })
	mux.HandleFunc("GET "+PathBackup, func(w http.ResponseWriter, r *http.Request) { serveBackup(w, r, b) })
	mux.HandleFunc("POST "+PathRestore, func(w http.ResponseWriter, r *http.Request) {
		res, err := b.Restore(r.Context(), r.URL.Query().Get("src"), r.Body)
		reply(w, res, err)
	})
	return mux
}

func handle[Req any](mux *http.ServeMux, path string, fn func(context.Context, Req) (any, error)) {
	mux.HandleFunc("POST "+path, func(w http.ResponseWriter, r *http.Request) {
		var req Req
		if err := json.NewDecoder(io.LimitReader(r.Body, maxRequestBytes)).Decode(&req); err != nil {
			http.Error(w, "bad request: "+err.Error(), http.StatusBadRequest)
			return
		}
		res, err := fn(r.Context(), req)
		reply(w, res, err)
	})
}

func reply(w http.ResponseWriter, res any, err error) {
	w.Header().Set("Content-Type", "application/json; charset=utf-8")
	if err != nil {
		w.WriteHeader(statusOpError)
		_ = json.NewEncoder(w).Encode(errorBody{Error: toWire(err)})
		return
	}
	w.WriteHeader(http.StatusOK)
	_ = json.NewEncoder(w).Encode(res)
}

// serveReindex streams one progress line per update, then the result.
func serveReindex(w http.ResponseWriter, r *http.Request, b Backend) {
	w.Header().Set("Content-Type", "application/x-ndjson")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	rc := http.NewResponseController(w)
	res, err := b.Reindex(r.Context(), func(done, total int) {
		_ = enc.Encode(streamLine{Progress: &progressLine{Done: done, Total: total}})
		_ = rc.Flush()
	})
	if err != nil {
		_ = enc.Encode(streamLine{Error: toWire(err)})
		return
	}
	_ = enc.Encode(streamLine{Result: &res})
}

// serveBackup streams the snapshot with its size; a break after the headers
// aborts the connection, so the client sees a short body.
func serveBackup(w http.ResponseWriter, r *http.Request, b Backend) {
	sw := &sizedWriter{w: w}
	_, err := b.Backup(r.Context(), sw)
	if err != nil {
		if !sw.started {
			reply(w, nil, err)
			return
		}
		panic(http.ErrAbortHandler)
	}
}

// sizedWriter sends the headers before the first byte of the snapshot.
type sizedWriter struct {
	w       http.ResponseWriter
	started bool
}

// Begin is called by the backend with the snapshot's size and schema
// version before it writes (see SizeAnnouncer).
func (s *sizedWriter) Begin(size int64, schema int) {
	h := s.w.Header()
	h.Set("Content-Type", "application/octet-stream")
	h.Set("Content-Length", strconv.FormatInt(size, 10))
	h.Set(HeaderSize, strconv.FormatInt(size, 10))
	h.Set(HeaderSchema, strconv.Itoa(schema))
	s.w.WriteHeader(http.StatusOK)
	s.started = true
}

func (s *sizedWriter) Write(p []byte) (int, error) {
	if !s.started {
		return 0, fmt.Errorf("admin: backup wrote before announcing its size")
	}
	return s.w.Write(p)
}

// SizeAnnouncer lets the in-process backup announce the snapshot's size and
// schema before writing, so the response carries Content-Length.
type SizeAnnouncer interface {
	Begin(size int64, schema int)
}

// startedWriter sends the success headers before the first byte.
type startedWriter struct {
	w       http.ResponseWriter
	started bool
}

func (s *startedWriter) Write(p []byte) (int, error) {
	if !s.started {
		s.w.Header().Set("Content-Type", "application/x-ndjson")
		s.w.WriteHeader(http.StatusOK)
		s.started = true
	}
	return s.w.Write(p)
}
