package app

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/ops/admin"
	"github.com/accordsai/accords-mcp/ops/backup"
	"github.com/accordsai/accords-mcp/store"
)

// RestoreDrain bounds how long a restore waits for the calls in flight
// (an approval wait can last minutes); past it the restore changes nothing
// and says which calls are still running.
const RestoreDrain = 30 * time.Second

// ErrRestoreFailed marks a restore that got as far as the swap and could
// not reopen any database: the process cannot serve and should exit.
var ErrRestoreFailed = errors.New("the database could not be reopened after the restore")

// Restore swaps the backup read from src (a path, or "-" with r) in for
// the database this process serves, without restarting: the backup is
// copied and checked while calls go on; then new calls are held, the ones
// in flight finish, the audit log is flushed and closed, the catalog index
// closed, the file swapped (the current one kept as a .bak), everything
// reopened on the restored file (the index rebuilt), and the held calls go
// on against it. Clients see a pause, never an error; a backup that does
// not verify, or calls that do not finish within RestoreDrain, change
// nothing. The result says how many audit receipts of the replaced log
// the restore discards, and the restored log records the restore (a
// signed restored note and a receipt) before it serves.
func (a *App) Restore(ctx context.Context, src string, r io.Reader) (admin.RestoreResult, error) {
	a.restoreMu.Lock()
	defer a.restoreMu.Unlock()
	out := admin.RestoreResult{DBPath: a.Config.DBPath, Daemon: true}
	o := backup.RestoreOptions{DBPath: a.Config.DBPath, IndexDir: a.Config.IndexDir()}
	st, res, err := backup.Stage(src, r, o)
	out.Result = res
	if err != nil {
		return out, err
	}
	defer st.Discard()

	resume, err := a.Gate.Pause(ctx, RestoreDrain)
	if err != nil {
		return out, fmt.Errorf("the daemon could not hold its clients for the swap: %w", err)
	}
	defer resume()
	held := time.Now()

	// Every receipt written so far belongs to the old file.
	a.Gateway.FlushRefusals()
	if err := a.Audit.Flush(); err != nil {
		a.Logger.Warn("flushing audit receipts before the restore", "error", err.Error())
	}
	out.CompareAudit(st, a.DB, nil, src, nil)
	a.Audit.Close()
	if err := a.Catalog.Close(); err != nil {
		a.Logger.Warn("closing the catalog index before the restore", "error", err.Error())
	}
	var prev string
	swapErr := a.DB.Replace(func() error {
		var err error
		prev, err = st.Swap(o)
		return err
	}, func() error { return backup.Unswap(o.DBPath, prev) })
	if swapErr != nil {
		a.Logger.Error("restore failed; serving the previous database", "error", swapErr.Error())
	}
	// Whatever file is open now (the restored one, or the old one put
	// back), the catalog and the audit log are reopened on it.
	_, ierr := a.Catalog.Reopen(ctx)
	if ierr == nil {
		ierr = a.seedBuiltins(ctx)
	}
	if swapErr == nil {
		// Recorded before the log serves, so that its start-up check finds
		// the anchor's newest checkpoint accounted for.
		out.RecordAudit(a.DB, func(db *store.DB, d audit.RestoreDiff) (audit.Ref, error) {
			return audit.RecordRestoreIn(db, a.auditOpts, d, "daemon")
		})
		if out.AuditRecordError != "" {
			a.Logger.Error("the restore is not recorded in the audit log", "error", out.AuditRecordError)
		}
	}
	l, aerr := audit.Open(a.DB, a.auditOpts)
	if aerr != nil {
		a.Logger.Error("reopening the audit log after the restore", "error", aerr.Error())
		return out, fmt.Errorf("%w: audit log: %w", ErrRestoreFailed, aerr)
	}
	a.Audit = l
	a.audit.set(l)
	// Tasks waiting in the file now open are followed (those already
	// followed go on; one the restored file lacks ends when its poller
	// next writes).
	if err := a.Tasks.Start(); err != nil {
		a.Logger.Warn("resuming tasks after the restore", "error", err.Error())
	}
	if swapErr != nil {
		return out, swapErr
	}
	out.Previous = prev
	if ierr != nil {
		out.IndexError = ierr.Error()
	} else {
		docs, _, _, _ := a.Catalog.IndexStats()
		out.Reindexed, out.IndexDocs = true, int(docs)
	}
	out.Warnings = admin.SessionWarnings(ctx, a.DB, a.Config.SecretKey, a.Config.KeyFile())
	args := []any{"from", src, "previous", prev, "schema_version", out.SchemaVersion, "held_ms", time.Since(held).Milliseconds()}
	if d := out.AuditRestore; d != nil {
		args = append(args, "audit_discarded", d.Discarded, "audit", d.Summary())
	}
	a.Logger.Info("database restored through the daemon", args...)
	return out, nil
}
