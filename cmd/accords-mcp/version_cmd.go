package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/accordsai/accords-mcp/migrations"
	"github.com/accordsai/accords-mcp/platform/version"
)

func init() {
	register(func(env *environment) *cobra.Command {
		var asJSON bool
		c := &cobra.Command{
			Use:   "version",
			Short: "print the version, commit, build date, Go version and database schema version",
			RunE: func(*cobra.Command, []string) error {
				if asJSON {
					return exit(printJSON(env, buildInfo()))
				}
				fmt.Fprintln(env.stdout, versionLine())
				return nil
			},
		}
		c.Flags().BoolVar(&asJSON, "json", false, "print the same as JSON")
		return c
	})
}

// versionInfo is what version prints.
type versionInfo struct {
	version.Info
	// SchemaVersion is the newest database schema this binary writes; it
	// opens older files (migrating them) and refuses newer ones.
	SchemaVersion int `json:"db_schema_version"`
}

func buildInfo() versionInfo {
	return versionInfo{Info: version.Build(), SchemaVersion: len(migrations.All())}
}

// versionLine is the text of version and --version.
func versionLine() string {
	b := buildInfo()
	commit := b.Commit
	if b.Modified {
		commit += " (modified)"
	}
	return fmt.Sprintf("accords-mcp %s\ncommit:            %s\nbuilt:             %s\ngo:                %s\ndb schema version: %d",
		b.Version, commit, b.BuildDate, b.GoVersion, b.SchemaVersion)
}
