package main

import (
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/domain/routing"
)

func init() {
	register(func(env *environment) *cobra.Command {
		c := &cobra.Command{
			Use:   "skill",
			Short: "the agent skill generated from the route registry: skill export DIR",
		}
		c.AddCommand(&cobra.Command{
			Use:     "export DIR",
			Short:   "write the agent skill (SKILL.md + references) into DIR",
			Example: "  accords-mcp skill export ~/.claude/skills/accords-vaultclaw",
			Args:    cobra.ExactArgs(1),
			RunE:    func(_ *cobra.Command, args []string) error { return exit(exportSkill(env, args[0])) },
		})
		return c
	})
}

func exportSkill(env *environment, dir string) int {
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
	if err := writeSkill(dir, files); err != nil {
		fmt.Fprintln(env.stderr, "accords-mcp:", err)
		return 1
	}
	for _, n := range slices.Sorted(maps.Keys(files)) {
		fmt.Fprintln(env.stdout, filepath.Join(dir, n))
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
