package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"

	"github.com/accordsai/accords-mcp/gateway/audit"
	"github.com/accordsai/accords-mcp/gateway/audit/witness"
	"github.com/accordsai/accords-mcp/ops/admin"
	"golang.org/x/mod/sumdb/note"
)

// checkPolicy checks the newest checkpoint against the C2SP tlog-policy
// in file: signed by one of its logs (logKey when it names none) and
// cosigned to its quorum. 0 when it holds, 1 otherwise.
func checkPolicy(env *environment, file string, cp []byte, logKey note.Verifier) int {
	data, err := os.ReadFile(file)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit verify --policy:", err)
		return 1
	}
	p, err := witness.ParsePolicy(data)
	if err != nil {
		fmt.Fprintf(env.stderr, "accords-mcp audit verify --policy %s: %v\n", file, err)
		return 1
	}
	size, _ := audit.CheckpointSize(cp)
	v, err := p.Check(cp, logKey)
	if err != nil {
		fmt.Fprintf(env.stderr, "accords-mcp audit verify --policy %s: the newest checkpoint (%d receipts): %v\n", file, size, err)
		return 1
	}
	fmt.Fprintf(env.stdout, "policy %s: the newest checkpoint (%d receipts) is signed by %s and cosigned by %v: quorum met\n", file, size, v.Log, v.Cosigners)
	return 0
}

// policyOnBackend checks the log's newest checkpoint.
func policyOnBackend(ctx context.Context, env *environment, b admin.Backend, file string, logKey note.Verifier) int {
	cp, err := b.AuditCheckpoint(ctx)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit verify --policy:", err)
		return 1
	}
	return checkPolicy(env, file, cp, logKey)
}

// policyOnExport checks the last checkpoint of an export file.
func policyOnExport(env *environment, file, export string, logKey note.Verifier) int {
	f, err := os.Open(export)
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit verify --policy:", err)
		return 1
	}
	defer f.Close()
	var last []byte
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 1<<20), 64<<20)
	for sc.Scan() {
		var l struct {
			Type string `json:"type"`
			Note string `json:"note"`
		}
		if json.Unmarshal(sc.Bytes(), &l) == nil && l.Type == "checkpoint" {
			last = []byte(l.Note)
		}
	}
	if err := sc.Err(); err != nil || last == nil {
		fmt.Fprintln(env.stderr, "accords-mcp audit verify --policy:", errors.Join(err, errors.New("no checkpoint in the export")))
		return 1
	}
	return checkPolicy(env, file, last, logKey)
}
