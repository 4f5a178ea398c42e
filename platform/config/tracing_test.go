package config

import (
	"maps"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestTracingVariables(t *testing.T) {
	base := map[string]string{"ACCORDS_MCP_DB": "/tmp/x.db"}
	with := func(kv ...string) map[string]string {
		m := maps.Clone(base)
		for i := 0; i < len(kv); i += 2 {
			m[kv[i]] = kv[i+1]
		}
		return m
	}
	ok := []struct {
		env  map[string]string
		want Tracing
	}{
		{with(), Tracing{}},
		{with("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"), Tracing{TracesURL: "http://127.0.0.1:4318/v1/traces"}},
		{with("OTEL_EXPORTER_OTLP_ENDPOINT", "https://otel.example/base/"), Tracing{TracesURL: "https://otel.example/base/v1/traces"}},
		{with("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://b:9/custom"), Tracing{TracesURL: "http://b:9/custom"}},
		{with("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318", "OTEL_SERVICE_NAME", "mcp-team", "OTEL_EXPORTER_OTLP_PROTOCOL", "http/protobuf"),
			Tracing{TracesURL: "http://a:4318/v1/traces", ServiceName: "mcp-team"}},
		{with("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318", "OTEL_SDK_DISABLED", "true"), Tracing{}},
		{with("OTEL_SERVICE_NAME", "alone"), Tracing{}},
	}
	for _, c := range ok {
		got, err := FromEnv(envOf(c.env))
		require.NoError(t, err, c.env)
		assert.Equal(t, c.want, got.Tracing, c.env)
		assert.Equal(t, c.want.TracesURL != "", got.Tracing.Enabled())
	}
	bad := map[string]map[string]string{
		"OTEL_EXPORTER_OTLP_ENDPOINT must be an http:// or https:// URL":        with("OTEL_EXPORTER_OTLP_ENDPOINT", "127.0.0.1:4318"),
		"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT must be an http:// or https:// URL": with("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "grpc://x:4317"),
		`OTEL_EXPORTER_OTLP_PROTOCOL "grpc" is not supported`:                   with("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318", "OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
		`OTEL_EXPORTER_OTLP_TRACES_PROTOCOL "http/json" is not supported`:       with("OTEL_EXPORTER_OTLP_ENDPOINT", "http://a:4318", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
		"OTEL_SDK_DISABLED must be true or false":                               with("OTEL_SDK_DISABLED", "maybe"),
	}
	for want, env := range bad {
		_, err := FromEnv(envOf(env))
		require.Error(t, err, want)
		assert.Contains(t, err.Error(), want)
	}
}
