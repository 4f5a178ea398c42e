package main

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/accordsai/accords-mcp/domain/routing"
)

func init() {
	register("skill", "skill export DIR: write the agent skill (SKILL.md + references) generated from the route registry", runSkill)
}

func runSkill(_ context.Context, env *environment, args []string) int {
	if len(args) != 2 || args[0] != "export" {
		fmt.Fprintln(env.stderr, "usage: accords-mcp skill export DIR")
		return 2
	}
	reg, err := routing.Default()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	files, err := reg.SkillFiles()
	if err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp: render skill:", err)
		return 1
	}
	if err := writeSkill(args[1], files); err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	for _, n := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintln(env.stdout, filepath.Join(args[1], n))
	}
	return 0
}

// writeSkill writes each file through a temporary file and a rename, so a
// reader never sees a half-written skill file.
func writeSkill(dir string, files map[string][]byte) error {
	for name, data := range files {
		path := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			return err
		}
		tmp, err := os.CreateTemp(filepath.Dir(path), ".skill-*")
		if err != nil {
			return err
		}
		_, werr := tmp.Write(data)
		cerr := tmp.Close()
		if werr == nil {
			werr = cerr
		}
		if werr == nil {
			werr = os.Chmod(tmp.Name(), 0o644)
		}
		if werr == nil {
			werr = os.Rename(tmp.Name(), path)
		}
		if werr != nil {
			os.Remove(tmp.Name())
			return fmt.Errorf("write %s: %w", path, werr)
		}
	}
	return nil
}
