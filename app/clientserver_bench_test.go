package app_test

import (
	"testing"

	"github.com/accordsai/accords-mcp/gateway"
	"github.com/accordsai/accords-mcp/test/testenv"
)

// BenchmarkClientServer is what each attach pays for a server of its own
// (so that list_changed reaches that client alone): building the go-sdk
// server with every tool and the middleware.
func BenchmarkClientServer(b *testing.B) {
	a := testenv.Open(b, testenv.Config(b))
	for _, v := range []struct {
		name string
		view gateway.View
	}{{"plain", gateway.View{}}, {"dynamic", gateway.View{Dynamic: true}}} {
		b.Run(v.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				_ = a.Gateway.ClientServer(v.view)
			}
		})
	}
}
