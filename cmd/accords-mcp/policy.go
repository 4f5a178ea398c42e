package main

import (
	"bufio"
	"context"
	"fmt"
	"strings"

	"github.com/accordsai/accords-mcp/gateway/policy"
)

func init() {
	register("policy", "policy file helpers: policy hash-token (reads a token on stdin, prints its token_sha256)", runPolicy)
}

func runPolicy(_ context.Context, env *environment, args []string) int {
	if len(args) != 1 || args[0] != "hash-token" {
		fmt.Fprintln(env.stderr, "usage: accords-mcp policy hash-token < token-file")
		return 2
	}
	// Read from stdin, never argv: command lines are visible to other users.
	line, err := bufio.NewReader(env.stdin).ReadString('\n')
	token := strings.TrimSpace(line)
	if token == "" {
		if err != nil {
			fmt.Fprintln(env.stderr, "accords-mcp policy hash-token: no token on stdin")
		}
		return 1
	}
	fmt.Fprintln(env.stdout, policy.HashToken(token))
	return 0
}
