package main

import (
	"fmt"
	"runtime"
	"runtime/debug"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch/internal/manifest"
)

// version is the CLI's version; release builds set it with
// -ldflags "-X main.version=v1.2.3". Otherwise it is the module version
// recorded in the binary, or "devel".
var version = ""

func cliVersion() string {
	if version != "" {
		return version
	}
	if info, ok := debug.ReadBuildInfo(); ok && info.Main.Version != "" && info.Main.Version != "(devel)" {
		return info.Main.Version
	}
	return "devel"
}

func newVersionCmd() *cobra.Command {
	return &cobra.Command{
		Use:     "version",
		Short:   "Print the CLI version and the storage format version it writes",
		Example: "  loch version",
		Args:    exactArgs(),
		RunE: func(cmd *cobra.Command, args []string) error {
			w := cmd.OutOrStdout()
			fmt.Fprintf(w, "loch %s\n", cliVersion())
			fmt.Fprintf(w, "format %d.%d\n", manifest.Major, manifest.Minor)
			fmt.Fprintf(w, "built with %s %s/%s\n", runtime.Version(), runtime.GOOS, runtime.GOARCH)
			return nil
		},
	}
}
