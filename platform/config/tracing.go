package config

import (
	"fmt"
	"net/url"
	"strings"
)

// Tracing is where OpenTelemetry spans go, read from the standard OTLP
// variables. The zero value is tracing off: no exporter, no spans.
type Tracing struct {
	// TracesURL is the OTLP/HTTP traces endpoint ("" = off).
	TracesURL string
	// ServiceName is OTEL_SERVICE_NAME ("" = accords-mcp).
	ServiceName string
}

// Enabled reports whether spans are exported.
func (t Tracing) Enabled() bool { return t.TracesURL != "" }

// tracingVars are the OpenTelemetry variables, appended to Vars.
var tracingVars = []Var{
	{"OTEL_EXPORTER_OTLP_ENDPOINT", "(none: tracing off)", "OTLP/HTTP collector base URL, e.g. http://127.0.0.1:4318: spans of tool calls and Vault requests are sent to its /v1/traces (docs/operations.md#tracing)"},
	{"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "(none)", "full OTLP/HTTP traces URL, used as is; wins over OTEL_EXPORTER_OTLP_ENDPOINT"},
	{"OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf", "OTLP protocol; only http/protobuf is supported (also read as OTEL_EXPORTER_OTLP_TRACES_PROTOCOL)"},
	{"OTEL_SERVICE_NAME", "accords-mcp", "service.name of the exported spans"},
	{"OTEL_SDK_DISABLED", "false", "true turns tracing off even with an endpoint set"},
}

func init() { Vars = append(Vars, tracingVars...) }

// readTracing resolves the traces endpoint as the OTLP exporter
// specification does: the signal-specific URL as is, otherwise the base
// URL with /v1/traces appended.
func readTracing(get func(string) string) (Tracing, error) {
	var off bool
	if err := setVar(get, "OTEL_SDK_DISABLED", &off, isBool, "true or false"); err != nil || off {
		return Tracing{}, err
	}
	t := Tracing{ServiceName: get("OTEL_SERVICE_NAME")}
	name, raw := "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
	if raw == "" {
		name, raw = "OTEL_EXPORTER_OTLP_ENDPOINT", get("OTEL_EXPORTER_OTLP_ENDPOINT")
	}
	if raw == "" {
		return Tracing{}, nil
	}
	for _, pv := range []string{"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"} {
		if p := get(pv); p != "" {
			if p != "http/protobuf" {
				return Tracing{}, fmt.Errorf("%s %q is not supported: accords-mcp exports OTLP over http/protobuf only", pv, p)
			}
			break
		}
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" || u.Fragment != "" {
		return Tracing{}, fmt.Errorf("%s must be an http:// or https:// URL such as http://127.0.0.1:4318, got %q", name, raw)
	}
	if name == "OTEL_EXPORTER_OTLP_ENDPOINT" {
		u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/traces"
	}
	t.TracesURL = u.String()
	return t, nil
}
