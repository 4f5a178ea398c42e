package admin

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"

	"github.com/accordsai/accords-mcp/domain/catalog"
	"github.com/accordsai/accords-mcp/domain/session"
	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/index"
	"github.com/accordsai/accords-mcp/ops/doctor"
)

// Client asks a running daemon to run the operations (its control socket's
// Handler). HC dials the socket; Where names it in transport errors.
type Client struct {
	HC    *http.Client
	Where string
}

var _ Backend = (*Client)(nil)

const base = "http://accords-mcp"

func (c *Client) do(ctx context.Context, method, path string, body io.Reader, contentType string) (*http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, method, base+path, body)
	if err != nil {
		return nil, err
	}
	if contentType != "" {
		req.Header.Set("Content-Type", contentType)
	}
	resp, err := c.HC.Do(req)
	if err != nil {
		return nil, fmt.Errorf("daemon control socket %s: %w", c.Where, err)
	}
	switch resp.StatusCode {
	case http.StatusOK:
		return resp, nil
	case statusOpError:
		defer resp.Body.Close()
		var eb errorBody
		if err := json.NewDecoder(resp.Body).Decode(&eb); err != nil || eb.Error == nil {
			return nil, fmt.Errorf("daemon control socket %s: %s: undecodable error reply", c.Where, path)
		}
		return nil, eb.Error.err()
	}
	defer resp.Body.Close()
	msg, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
	return nil, fmt.Errorf("daemon control socket %s: %s %s: %s", c.Where, path, resp.Status, bytes.TrimSpace(msg))
}

// call posts req as JSON and decodes the reply as a T.
func call[T any](ctx context.Context, c *Client, path string, req any) (T, error) {
	var out T
	body, err := json.Marshal(req)
	if err != nil {
		return out, err
	}
	resp, err := c.do(ctx, http.MethodPost, path, bytes.NewReader(body), "application/json")
	if err != nil {
		return out, err
	}
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return out, fmt.Errorf("daemon control socket %s: %s: decode reply: %w", c.Where, path, err)
	}
	return out, nil
}

// Search implements Catalog.
func (c *Client) Search(ctx context.Context, q index.Query) (index.Result, error) {
	return call[index.Result](ctx, c, PathSearch, q)
}

// ListCookbooks implements Catalog.
func (c *Client) ListCookbooks(ctx context.Context, f catalog.ListFilter) (CookbookList, error) {
	return call[CookbookList](ctx, c, PathList, f)
}

// ImportBundle implements Catalog.
func (c *Client) ImportBundle(ctx context.Context, raw []byte, policy string) (*catalog.UpsertResult, error) {
	return call[*catalog.UpsertResult](ctx, c, PathImport, importRequest{Raw: raw, Policy: policy})
}

// ExportBundle implements Catalog.
func (c *Client) ExportBundle(ctx context.Context, id, version string) (Export, error) {
	return call[Export](ctx, c, PathExport, refRequest{CookbookID: id, Version: version})
}

// DeleteCookbook implements Catalog.
func (c *Client) DeleteCookbook(ctx context.Context, id, version string) (*catalog.DeleteResult, error) {
	return call[*catalog.DeleteResult](ctx, c, PathDelete, refRequest{CookbookID: id, Version: version})
}

// Render implements Catalog.
func (c *Client) Render(ctx context.Context, r catalog.RenderRequest) (*catalog.RenderResult, error) {
	return call[*catalog.RenderResult](ctx, c, PathRender, r)
}

// Reindex implements Catalog: progress arrives as the daemon rebuilds.
func (c *Client) Reindex(ctx context.Context, progress func(done, total int)) (ReindexResult, error) {
	resp, err := c.do(ctx, http.MethodPost, PathReindex, http.NoBody, "")
	if err != nil {
		return ReindexResult{}, err
	}
	defer resp.Body.Close()
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var l streamLine
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil {
			return ReindexResult{}, fmt.Errorf("daemon control socket %s: reindex: %w", c.Where, err)
		}
		switch {
		case l.Error != nil:
			return ReindexResult{}, l.Error.err()
		case l.Result != nil:
			return *l.Result, nil
		case l.Progress != nil && progress != nil:
			progress(l.Progress.Done, l.Progress.Total)
		}
	}
	if err := sc.Err(); err != nil {
		return ReindexResult{}, fmt.Errorf("daemon control socket %s: reindex stream broke: %w", c.Where, err)
	}
	return ReindexResult{}, fmt.Errorf("daemon control socket %s: reindex stream ended without a result", c.Where)
}

// AuditVerify implements Audit.
func (c *Client) AuditVerify(ctx context.Context, r AuditVerifyRequest) (AuditVerifyResult, error) {
	return call[AuditVerifyResult](ctx, c, PathAuditVerify, r)
}

// AuditCheckpoint implements Audit.
func (c *Client) AuditCheckpoint(ctx context.Context) ([]byte, error) {
	out, err := call[checkpointResult](ctx, c, PathAuditCP, struct{}{})
	return out.Note, err
}

// AuditFind implements Audit.
func (c *Client) AuditFind(ctx context.Context, callID string) (audit.Receipt, error) {
	return call[audit.Receipt](ctx, c, PathAuditFind, findRequest{CallID: callID})
}

// AuditProve implements Audit.
func (c *Client) AuditProve(ctx context.Context, seq uint64) (audit.Proof, error) {
	return call[audit.Proof](ctx, c, PathAuditProve, proveRequest{Seq: seq})
}

// AuditAcknowledge implements Audit.
func (c *Client) AuditAcknowledge(ctx context.Context, operator, note string) (string, error) {
	out, err := call[ackResult](ctx, c, PathAuditAck, ackRequest{Operator: operator, Note: note})
	return out.Message, err
}

// AuditExport implements Audit: the daemon streams the export; its
// receipt count comes last, as a trailer, so a broken stream is an error.
func (c *Client) AuditExport(ctx context.Context, w io.Writer) (int, error) {
	resp, err := c.do(ctx, http.MethodPost, PathAuditExport, http.NoBody, "")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if _, err := io.Copy(w, resp.Body); err != nil {
		return 0, fmt.Errorf("audit export stream from the daemon broke: %w", err)
	}
	n, err := strconv.Atoi(resp.Trailer.Get(trailerReceipts))
	if err != nil {
		return 0, errors.New("audit export stream from the daemon ended early (no receipt count)")
	}
	return n, nil
}

// AuditTail implements Audit.
func (c *Client) AuditTail(ctx context.Context, n int) ([]audit.Receipt, error) {
	return call[[]audit.Receipt](ctx, c, PathAuditTail, tailRequest{N: n})
}

// SessionStatus implements Sessions.
func (c *Client) SessionStatus(ctx context.Context, r SessionRequest) (session.Status, error) {
	return call[session.Status](ctx, c, PathSessionStatus, r)
}

// SessionConfigure implements Sessions.
func (c *Client) SessionConfigure(ctx context.Context, r SessionRequest) (session.Status, error) {
	return call[session.Status](ctx, c, PathSessionConfig, r)
}

// SessionClear implements Sessions.
func (c *Client) SessionClear(ctx context.Context, r SessionRequest) error {
	_, err := call[struct{}](ctx, c, PathSessionClear, r)
	return err
}

// Doctor implements Maintenance.
func (c *Client) Doctor(ctx context.Context, scope string, env session.Defaults) ([]doctor.Result, error) {
	raw, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	return call[[]doctor.Result](ctx, c, PathDoctor, doctorRequest{Scope: scope, Env: raw})
}

// Backup implements Maintenance: the daemon streams a snapshot; a stream
// shorter than announced is an error.
func (c *Client) Backup(ctx context.Context, w io.Writer) (int64, error) {
	resp, err := c.do(ctx, http.MethodGet, PathBackup, nil, "")
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	n, err := io.Copy(w, resp.Body)
	if err != nil {
		return n, fmt.Errorf("snapshot stream from the daemon broke after %d bytes: %w", n, err)
	}
	if resp.ContentLength >= 0 && n != resp.ContentLength {
		return n, fmt.Errorf("snapshot stream from the daemon ended after %d of %d bytes", n, resp.ContentLength)
	}
	return n, nil
}

// Restore implements Maintenance: the backup is streamed to the daemon,
// which checks it while it serves and swaps it in with every call held.
func (c *Client) Restore(ctx context.Context, src string, r io.Reader) (RestoreResult, error) {
	if src != "-" {
		f, err := openRegular(src)
		if err != nil {
			return RestoreResult{}, err
		}
		defer f.Close()
		r = f
	}
	if r == nil {
		return RestoreResult{}, errors.New("restore: no input")
	}
	resp, err := c.do(ctx, http.MethodPost, PathRestore+"?src="+url.QueryEscape(src), r, "application/octet-stream")
	if err != nil {
		return RestoreResult{}, err
	}
	defer resp.Body.Close()
	var out RestoreResult
	if err := json.NewDecoder(resp.Body).Decode(&out); err != nil {
		return RestoreResult{}, fmt.Errorf("daemon control socket %s: restore: decode reply: %w", c.Where, err)
	}
	return out, nil
}
