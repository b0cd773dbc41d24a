// Command loch creates, inspects, verifies and exports loch datasets.
//
// Every subcommand takes a dataset URL (a local path, mem://name,
// s3://bucket/prefix, gs://bucket/prefix or az://container/prefix); run
// "loch help" for the list. Errors are one line on stderr prefixed "loch: ";
// the exit status is 0 on success, 2 for a usage error (unknown command or
// flag, wrong number of arguments) and 1 for any other failure.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		// After the first signal, restore the default handlers so that a
		// second Ctrl-C kills a command that does not stop quickly.
		<-ctx.Done()
		stop()
	}()
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// run executes the command line args and returns the exit status. It never
// panics: a panic in a command is reported as one line.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) (code int) {
	defer func() {
		if r := recover(); r != nil {
			fmt.Fprintf(stderr, "loch: internal error: %s\n", oneLine(fmt.Sprint(r)))
			code = exitError
		}
	}()
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	cmd, err := root.ExecuteContextC(ctx)
	if err == nil {
		return exitOK
	}
	code, msg := describe(ctx, cmd, err)
	fmt.Fprintf(stderr, "loch: %s\n", oneLine(msg))
	return code
}

// describe turns the error of a command into an exit status and a message.
func describe(ctx context.Context, cmd *cobra.Command, err error) (int, string) {
	if ctx.Err() != nil && errors.Is(err, context.Canceled) {
		return exitError, "interrupted"
	}
	var re *runError
	if errors.As(err, &re) {
		var ue *usageError
		if errors.As(re.err, &ue) {
			return exitUsage, usageMessage(cmd, ue.err)
		}
		return exitError, re.err.Error()
	}
	// Everything cobra reports before a command runs (unknown command or
	// flag, bad flag value, wrong arguments, missing required flag) is a
	// usage error.
	var ue *usageError
	if errors.As(err, &ue) {
		err = ue.err
	}
	return exitUsage, usageMessage(cmd, err)
}

func usageMessage(cmd *cobra.Command, err error) string {
	path := "loch"
	if cmd != nil {
		path = cmd.CommandPath()
	}
	return fmt.Sprintf("%v (see '%s --help')", err, path)
}

// oneLine folds a message onto one line.
func oneLine(s string) string {
	return strings.Join(strings.Fields(strings.TrimSpace(s)), " ")
}

// usageError marks an error in how a command was invoked (exit status 2).
type usageError struct{ err error }

func (e *usageError) Error() string { return e.err.Error() }
func (e *usageError) Unwrap() error { return e.err }

func usagef(format string, a ...any) error {
	return &usageError{fmt.Errorf(format, a...)}
}

// runError marks an error returned by a command's RunE, as opposed to one
// cobra found while parsing the command line.
type runError struct{ err error }

func (e *runError) Error() string { return e.err.Error() }
func (e *runError) Unwrap() error { return e.err }

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "loch",
		Short: "Create, inspect, verify and export loch datasets",
		Long: `loch manages loch datasets: versioned, tensor-native stores of multimodal
rows (images, labels, tensors, text, json) on local disk or object storage.

A dataset URL is a local path, mem://name, s3://bucket/prefix,
gs://bucket/prefix or az://container/prefix. Cloud credentials come from each
cloud's standard environment, never from the URL.

Exit status: 0 on success, 2 for a usage error, 1 for any other error.`,
		Example: `  loch create ./pets --schema schema.yaml
  loch info ./pets
  loch show ./pets --row 0 --out row0
  loch log ./pets`,
		SilenceUsage:               true,
		SilenceErrors:              true,
		DisableAutoGenTag:          true,
		SuggestionsMinimumDistance: 2,
		// The root runs only when no subcommand matched: it prints help, or
		// reports an unknown command as a usage error.
		Args: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			msg := fmt.Sprintf("unknown command %q", args[0])
			if s := cmd.SuggestionsFor(args[0]); len(s) > 0 {
				msg += fmt.Sprintf("; did you mean %q?", s[0])
			}
			return usagef("%s", msg)
		},
		RunE: func(cmd *cobra.Command, args []string) error {
			return cmd.Help()
		},
	}
	root.CompletionOptions.DisableDefaultCmd = true
	root.AddCommand(
		newCreateCmd(),
		newIngestCmd(),
		newInfoCmd(),
		newShowCmd(),
		newVerifyCmd(),
		newLogCmd(),
		newExportCmd(),
		newScanCmd(),
		newBenchCmd(),
		newOrderCmd(),
		newVersionCmd(),
	)
	prepare(root)
	return root
}

// prepare applies the conventions shared by every command: silenced cobra
// output, flag errors as usage errors, and errors from RunE marked so that
// run can tell them from command-line errors.
func prepare(c *cobra.Command) {
	c.SilenceUsage = true
	c.SilenceErrors = true
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &usageError{err}
	})
	if f := c.RunE; f != nil {
		c.RunE = func(cmd *cobra.Command, args []string) error {
			if err := f(cmd, args); err != nil {
				return &runError{err}
			}
			return nil
		}
	}
	if f := c.Run; f != nil && c.RunE == nil {
		c.Run = nil
		c.RunE = func(cmd *cobra.Command, args []string) error {
			f(cmd, args)
			return nil
		}
	}
	for _, sub := range c.Commands() {
		prepare(sub)
	}
}

// exactArgs is cobra.ExactArgs with named arguments in its message.
func exactArgs(names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if len(args) == len(names) {
			return nil
		}
		if len(args) < len(names) {
			return usagef("missing %s", strings.Join(names[len(args):], " and "))
		}
		return usagef("too many arguments: want %s, got %d", strings.Join(names, " "), len(args))
	}
}

// openDataset opens the dataset at url, at version when it is not empty.
func openDataset(ctx context.Context, url, version string) (*loch.Dataset, error) {
	var opts []loch.Option
	if version != "" {
		opts = append(opts, loch.WithVersion(version))
	}
	return loch.Open(ctx, url, opts...)
}

// checkOrderFlags validates the flags that choose a loader order, shared by
// bench and order.
func checkOrderFlags(batch, world, rank int, shuffle string) error {
	if batch < 1 || world < 1 || rank < 0 || rank >= world {
		return usagef("need --batch-size >= 1 and 0 <= --rank < --world-size (got %d, %d, %d)", batch, rank, world)
	}
	switch shuffle {
	case "none", "block", "full":
		return nil
	}
	return usagef("--shuffle %q: want none, block or full", shuffle)
}
