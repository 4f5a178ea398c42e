// Package reliability holds end-to-end reliability tests of accords-mcp:
// crash safety under SIGKILL, concurrent HTTP clients, Vault faults. They
// drive the server as clients do (the built binary over stdio, or the HTTP
// handler in-process when goroutine leaks must be checked). Short variants
// run in the normal suite; the full ones need -tags=reliability.
package reliability
