package main

import (
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/accordsai/accords-mcp/app"
	"github.com/accordsai/accords-mcp/platform/apperr"
	"github.com/accordsai/accords-mcp/platform/envelope"
)

// Catalog commands run against the daemon when one owns the database, else
// open it as the server does; --json prints the tool envelope.

// openCatalogApp opens the app quietly: warnings (such as an index
// rebuild) go to stderr as text, routine start-up logs are dropped.
func openCatalogApp(env *environment) (*app.App, func(), error) {
	cfg, err := env.config()
	if err != nil {
		return nil, nil, err
	}
	level := slog.LevelWarn
	if strings.EqualFold(cfg.LogLevel, "debug") {
		level = slog.LevelDebug
	}
	logger := slog.New(slog.NewTextHandler(env.stderr, &slog.HandlerOptions{Level: level}))
	a, err := app.Open(cfg, logger)
	if err != nil {
		return nil, nil, err
	}
	return a, func() {
		if err := a.Close(); err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp: closing database:", err)
		}
	}, nil
}

// output prints data (or err) as the tool envelope with asJSON, else via
// human or a one-line error; it returns the exit code.
func output(env *environment, asJSON bool, data any, err error, human func(w io.Writer)) int {
	if asJSON {
		var e envelope.Envelope
		if err != nil {
			e = envelope.Failure(err)
		} else {
			e = envelope.Success(data, envelope.Meta{})
		}
		if printJSON(env, e) != 0 || err != nil {
			return 1
		}
		return 0
	}
	if err != nil {
		printErr(env.stderr, err)
		return 1
	}
	human(env.stdout)
	return 0
}

// printJSON writes v indented on stdout.
func printJSON(env *environment, v any) int {
	enc := json.NewEncoder(env.stdout)
	enc.SetIndent("", "  ")
	if err := enc.Encode(v); err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	return 0
}

// printErr writes "accords-mcp: CODE: message (k=v, ...)" with the details
// that help a person fix the input.
func printErr(w io.Writer, err error) {
	ae := apperr.As(err)
	var parts []string
	for _, k := range []string{"field", "cookbook_id", "version", "entry_id", "template_id", "entry_index", "binding_index", "target_path", "input_key", "cause", "file"} {
		if v, ok := ae.Details[k]; ok {
			parts = append(parts, fmt.Sprintf("%s=%v", k, v))
		}
	}
	if mi, ok := ae.Details["missing_inputs"]; ok {
		raw, _ := json.Marshal(mi)
		parts = append(parts, "missing_inputs="+string(raw))
	}
	msg := ae.Code + ": " + ae.Message
	if len(parts) > 0 {
		msg += " (" + strings.Join(parts, ", ") + ")"
	}
	fmt.Fprintln(w, "accords-mcp:", msg)
}

// splitRef parses ID[@VERSION]; ids and versions cannot contain '@'.
func splitRef(ref string) (string, string) {
	id, version, _ := strings.Cut(ref, "@")
	return id, version
}
