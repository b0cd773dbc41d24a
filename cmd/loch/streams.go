package main

import (
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

// streams are where a command reads and writes: cobra's, which run sets
// (the process's standard streams, or a test's buffers). A command's
// run<Cmd> function takes them in its options instead of the
// *cobra.Command.
type streams struct {
	stdin          io.Reader
	stdout, stderr io.Writer
}

// streamsOf returns the streams of cmd.
func streamsOf(cmd *cobra.Command) streams {
	return streams{stdin: cmd.InOrStdin(), stdout: cmd.OutOrStdout(), stderr: cmd.ErrOrStderr()}
}

// outWriter is where a command writes its result: the file of --out
// (created) when path is not "", else stdout. close closes it.
func outWriter(stdout io.Writer, path string) (w io.Writer, close func(), err error) {
	if path == "" {
		return stdout, func() {}, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("--out: %w", err)
	}
	return f, func() { f.Close() }, nil
}

// seedIf is the value of the uint64 flag name (bound to v) when it was
// given, nil when not: a seed the library then chooses (or defaults).
func seedIf(cmd *cobra.Command, name string, v uint64) *uint64 {
	if !cmd.Flags().Changed(name) {
		return nil
	}
	return &v
}
