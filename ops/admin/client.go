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

// call posts req as JSON and decodes the reply into out.
func (c *Client) call(ctx context.Context, path string, req, out any) error {
	body, err := json.Marshal(req)
	if err != nil {
		return err
	}
	resp, err := c.do(ctx, http.MethodPost, path, bytes.NewReader(body), "application/json")
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if out == nil {
		_, _ = io.Copy(io.Discard, resp.Body)
		return nil
	}
	if err := json.NewDecoder(resp.Body).Decode(out); err != nil {
		return fmt.Errorf("daemon control socket %s: %s: decode reply: %w", c.Where, path, err)
	}
	return nil
}

// Search implements Catalog.
func (c *Client) Search(ctx context.Context, q index.Query) (index.Result, error) {
	var out index.Result
	return out, c.call(ctx, PathSearch, q, &out)
}

// ListCookbooks implements Catalog.
func (c *Client) ListCookbooks(ctx context.Context, f catalog.ListFilter) (CookbookList, error) {
	var out CookbookList
	return out, c.call(ctx, PathList, f, &out)
}

// ImportBundle implements Catalog.
func (c *Client) ImportBundle(ctx context.Context, raw []byte, policy string) (*catalog.UpsertResult, error) {
	var out catalog.UpsertResult
	if err := c.call(ctx, PathImport, importRequest{Raw: raw, Policy: policy}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// ExportBundle implements Catalog.
func (c *Client) ExportBundle(ctx context.Context, id, version string) (Export, error) {
	var out Export
	return out, c.call(ctx, PathExport, refRequest{CookbookID: id, Version: version}, &out)
}

// DeleteCookbook implements Catalog.
func (c *Client) DeleteCookbook(ctx context.Context, id, version string) (*catalog.DeleteResult, error) {
	var out catalog.DeleteResult
	if err := c.call(ctx, PathDelete, refRequest{CookbookID: id, Version: version}, &out); err != nil {
		return nil, err
	}
	return &out, nil
}

// Render implements Catalog.
func (c *Client) Render(ctx context.Context, r catalog.RenderRequest) (*catalog.RenderResult, error) {
	var out catalog.RenderResult
	if err := c.call(ctx, PathRender, r, &out); err != nil {
		return nil, err
	}
	return &out, nil
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
	var out AuditVerifyResult
	return out, c.call(ctx, PathAuditVerify, r, &out)
}

// AuditCheckpoint implements Audit.
func (c *Client) AuditCheckpoint(ctx context.Context) ([]byte, error) {
	var out checkpointResult
	err := c.call(ctx, PathAuditCP, struct{}{}, &out)
	return out.Note, err
}

// AuditFind implements Audit.
func (c *Client) AuditFind(ctx context.Context, callID string) (audit.Receipt, error) {
	var out audit.Receipt
	return out, c.call(ctx, PathAuditFind, findRequest{CallID: callID}, &out)
}

// AuditProve implements Audit.
func (c *Client) AuditProve(ctx context.Context, seq uint64) (audit.Proof, error) {
	var out audit.Proof
	return out, c.call(ctx, PathAuditProve, proveRequest{Seq: seq}, &out)
}

// AuditAcknowledge implements Audit.
func (c *Client) AuditAcknowledge(ctx context.Context, operator, note string) (string, error) {
	var out ackResult
	err := c.call(ctx, PathAuditAck, ackRequest{Operator: operator, Note: note}, &out)
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
	var out []audit.Receipt
	return out, c.call(ctx, PathAuditTail, tailRequest{N: n}, &out)
}

// SessionStatus implements Sessions.
func (c *Client) SessionStatus(ctx context.Context, r SessionRequest) (session.Status, error) {
	var out session.Status
	return out, c.call(ctx, PathSessionStatus, r, &out)
}

// SessionConfigure implements Sessions.
func (c *Client) SessionConfigure(ctx context.Context, r SessionRequest) (session.Status, error) {
	var out session.Status
	return out, c.call(ctx, PathSessionConfig, r, &out)
}

// SessionClear implements Sessions.
func (c *Client) SessionClear(ctx context.Context, r SessionRequest) error {
	return c.call(ctx, PathSessionClear, r, nil)
}

// Doctor implements Maintenance.
func (c *Client) Doctor(ctx context.Context, scope string, env session.Defaults) ([]doctor.Result, error) {
	raw, err := json.Marshal(env)
	if err != nil {
		return nil, err
	}
	var out []doctor.Result
	return out, c.call(ctx, PathDoctor, doctorRequest{Scope: scope, Env: raw}, &out)
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
