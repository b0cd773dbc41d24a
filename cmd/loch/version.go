package main

import (
	"fmt"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/version"
)

// cliVersion is the CLI's version: loch's release version (package
// version), the same as the Python package's.
func cliVersion() string { return version.String() }

func newVersionCmd() *cobra.Command {
	var asJSON bool
	cmd := &cobra.Command{
		Use:   "version",
		Short: "Print the CLI version and the storage format version it writes",
		Long: `Version prints the CLI's version (also 'loch --version'), the storage format
version it writes and the Go toolchain it was built with. With --json it
prints one JSON object with the fields version, format, go, os and arch.`,
		Example: "  loch version\n  loch --version",
		Args:    exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			if asJSON {
				return printJSON(w, map[string]string{"version": cliVersion(), "format": fmt.Sprintf("%d.%d", manifest.Major, manifest.Newest),
					"go": runtime.Version(), "os": runtime.GOOS, "arch": runtime.GOARCH})
			}
			fmt.Fprintf(w, "loch %s\n", cliVersion())
			fmt.Fprintf(w, "format %d.%d\n", manifest.Major, manifest.Newest)
			fmt.Fprintf(w, "built with %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
	cmd.Flags().BoolVar(&asJSON, "json", false, "print one JSON object")
	return cmd
}
