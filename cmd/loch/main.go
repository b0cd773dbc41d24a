// Command loch creates, inspects, versions, verifies and exports loch datasets.
//
// Every subcommand takes a dataset URL (a local path, s3://bucket/prefix,
// gs://bucket/prefix or az://container/prefix; mem:// is refused, as it
// would not outlive the command); run
// "loch help" for the list. Errors are one line on stderr prefixed "loch: ";
// the exit status is 0 on success, 2 for a usage error (unknown command or
// flag, wrong number of arguments) and 1 for any other failure.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"regexp"
	"strings"
	"syscall"
	"time"

	"github.com/spf13/cobra"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/decodelimit"
	"github.com/lochdata/loch/loader"
	"github.com/lochdata/loch/storage"
)

// Exit statuses.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	done := make(chan struct{})
	// After the first signal, the default handlers come back (stop), so
	// that a second Ctrl-C kills at once.
	go exitAfterInterrupt(ctx, done, interruptGrace, stop, os.Stderr, os.Exit)
	code := run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	close(done)
	stop()
	os.Exit(code)
}

// interruptGrace is how long a command may take to stop after Ctrl-C.
const interruptGrace = time.Second

// exitAfterInterrupt calls interrupted when ctx ends (Ctrl-C), and exits
// the process (exit(exitError), "loch: interrupted") if the command has not
// returned (done) within grace: a command that waits on a store that
// stopped answering, or on uploads that a slow link holds, stops within a
// second all the same. Nothing is lost that was not already: a commit is
// one atomic write, and what was written before it is left for gc, as
// after any process that dies (crash_test.go).
func exitAfterInterrupt(ctx context.Context, done <-chan struct{}, grace time.Duration, interrupted func(), stderr io.Writer, exit func(int)) {
	select {
	case <-ctx.Done():
	case <-done:
		return
	}
	interrupted()
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-t.C:
		fmt.Fprintln(stderr, "loch: interrupted")
		exit(exitError)
	case <-done:
	}
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
	defer decodelimit.Save()() // --max-decode-bytes sets it for this run
	root := newRootCmd()
	root.SetArgs(args)
	root.SetIn(stdin)
	root.SetOut(stdout)
	root.SetErr(stderr)
	// The library's warnings (a reference that is also a version id
	// prefix) are lines on standard error, beside the command's output.
	ctx = loch.WithWarnings(ctx, func(msg string) { printWarnings(stderr, msg) })
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

// printWarnings prints each warning on w, one line each, as
// "loch: warning: MSG".
func printWarnings(w io.Writer, msgs ...string) {
	for _, msg := range msgs {
		fmt.Fprintf(w, "loch: warning: %s\n", oneLine(msg))
	}
}

// plural is one when n is 1, many otherwise: "1 shard", "2 shards".
func plural[N int | int64](n N, one, many string) string {
	if n == 1 {
		return one
	}
	return many
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

// rootLong is the help text of loch.
const rootLong = `loch manages loch datasets: versioned, tensor-native stores of multimodal
rows (images, labels, tensors, text, json) on local disk or object storage.

A dataset URL is a local path, s3://bucket/prefix, gs://bucket/prefix or
az://container/prefix. Cloud credentials come from each cloud's standard
environment, never from the URL. mem://name, the library's in-process memory
store, is refused: it lives only as long as one process, so a dataset made
there by one loch command would be gone before the next.

Sizes (--chunk-bytes, --cache-bytes, ...) take 8388608, 8MiB (binary, 1024²),
8MB or 8M (decimal, 1000²); sizes are printed with binary units (8.0 MiB).

Inspecting commands take --json and then print one JSON object on standard
output; long-running ones show progress on standard error when it is a
terminal (--progress forces it, --quiet turns it off). 'loch completion
bash|zsh|fish|powershell' prints a shell completion script.

Versions work like git: every commit is a version with a stable id; branch
main is the default; 'loch branch', 'tag', 'diff', 'merge', 'revert' and
'gc' manage them, and the read commands take --ref and --as-of.

Exit status: 0 on success, 2 for a usage error, 1 for any other error.`

func newRootCmd() *cobra.Command {
	root := &cobra.Command{
		Use:   "loch",
		Short: "Create, inspect, version, verify and export loch datasets",
		Long:  rootLong,
		Example: `  loch create ./pets --schema schema.yaml
  loch info ./pets
  loch show ./pets --row 0 --out row0
  loch branch ./pets dev
  loch info ./pets --ref dev
  loch merge ./pets dev
  loch log ./pets`,
		Version:                    cliVersion(),
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
	addMaxDecodeFlag(root)
	// "loch --version" prints the first line of "loch version".
	root.SetVersionTemplate("loch {{.Version}}\n")
	root.AddCommand(
		newCreateCmd(),
		newIngestCmd(),
		newInfoCmd(),
		newShowCmd(),
		newVerifyCmd(),
		newLogCmd(),
		newBranchCmd(),
		newTagCmd(),
		newDiffCmd(),
		newMergeCmd(),
		newRevertCmd(),
		newCommitCmd(),
		newGCCmd(),
		newCompactCmd(),
		newTablesCmd(),
		newSQLCmd(),
		newExportCmd(),
		newScanCmd(),
		newBenchCmd(),
		newOrderCmd(),
		newQueryCmd(),
		newSelectionsCmd(),
		newIndexCmd(),
		newSearchCmd(),
		newServeCmd(),
		newUserCmd(),
		newVersionCmd(),
	)
	addCompletionCmd(root)
	prepare(root)
	return root
}

// addMaxDecodeFlag adds --max-decode-bytes, which every command takes.
func addMaxDecodeFlag(root *cobra.Command) {
	var maxDecode sizeFlag
	root.PersistentFlags().Var(&maxDecode, "max-decode-bytes", "the most bytes one decode of an image, video clip or audio may produce; larger files are refused from their header (default 512MiB or $"+decodelimit.Env+"; 0: no limit)")
	root.PersistentPreRunE = func(cmd *cobra.Command, _ []string) error {
		if !cmd.Flags().Changed("max-decode-bytes") {
			return nil
		}
		_, err := loch.SetMaxDecodeBytes(int64(maxDecode))
		return err
	}
}

// addCompletionCmd adds cobra's "completion bash|zsh|fish|powershell", now
// (rather than when the root runs) so that prepare sees it, with an unknown
// shell a usage error.
func addCompletionCmd(root *cobra.Command) {
	root.InitDefaultCompletionCmd()
	if c, _, err := root.Find([]string{"completion"}); err == nil && c != root {
		c.Args = func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return nil
			}
			return usagef("unknown shell %q (want bash, zsh, fish or powershell)", args[0])
		}
		c.RunE = func(cmd *cobra.Command, args []string) error { return cmd.Help() }
	}
}

// flagParseError matches pflag's message for a value its parser refused:
// `invalid argument "abc" for "--row" flag: strconv.ParseInt: parsing "abc": invalid syntax`.
var flagParseError = regexp.MustCompile(`^(invalid argument ".*" for ".*" flag): (strconv\.Parse(Int|Uint|Float|Bool)|time: )\b.*?(value out of range)?$`)

// plainFlagError says what a flag wants instead of which Go parser refused
// its value: `invalid argument "abc" for "--row" flag: want a whole number`.
func plainFlagError(err error) error {
	m := flagParseError.FindStringSubmatch(err.Error())
	if m == nil {
		return err
	}
	want := map[string]string{"Int": "a whole number", "Uint": "a whole number, 0 or more", "Float": "a number",
		"Bool": "true or false", "": "a duration such as 90s, 5m or 1h30m"}[m[3]]
	if m[4] != "" {
		want += " in range"
	}
	return fmt.Errorf("%s: want %s", m[1], want)
}

// prepare applies the conventions shared by every command: silenced cobra
// output, flag errors as usage errors, and errors from RunE marked so that
// run can tell them from command-line errors.
func prepare(c *cobra.Command) {
	c.SilenceUsage = true
	c.SilenceErrors = true
	c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &usageError{plainFlagError(err)}
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
	return rangeArgs(len(names), names...)
}

// rangeArgs accepts the first n of the named arguments, followed by any of
// the others, with named arguments in its messages.
func rangeArgs(n int, names ...string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) < n:
			return usagef("missing %s", strings.Join(names[len(args):n], " and "))
		case len(args) > len(names):
			want := strings.Join(names[:n], " ")
			if n < len(names) {
				want += " [" + strings.Join(names[n:], " ") + "]"
			}
			return usagef("too many arguments: want %s, got %d", want, len(args))
		}
		return nil
	}
}

// refFlags are the flags that choose the version a command reads: --ref,
// --as-of and the hidden --version, the old spelling of --ref for a full
// version id.
type refFlags struct {
	ref, asOf, version string
}

// add adds the version-choosing flags to a read command; what is the verb
// of its flag help ("read", "export", ...).
func (r *refFlags) add(cmd *cobra.Command, what string) {
	f := cmd.Flags()
	f.StringVar(&r.ref, "ref", "", what+" this branch, tag, version id or unique version id prefix (6+ digits) instead of main")
	f.StringVar(&r.asOf, "as-of", "", what+" the version the reference (default main) named at this time: RFC 3339, 'YYYY-MM-DD HH:MM:SS' (UTC) or YYYY-MM-DD (00:00 UTC)")
	f.StringVar(&r.version, "version", "", "deprecated spelling of --ref for a full version id")
	f.Lookup("version").Hidden = true
}

// options turns the flags into dataset options.
func (r *refFlags) options() ([]loch.Option, error) {
	var opts []loch.Option
	switch {
	case r.ref != "" && r.version != "":
		return nil, usagef("give --ref or --version, not both (--version is the old spelling of --ref)")
	case r.ref != "":
		opts = append(opts, loch.WithRef(r.ref))
	case r.version != "":
		opts = append(opts, loch.WithVersion(r.version))
	}
	if r.asOf != "" {
		t, err := loch.ParseTime(r.asOf)
		if err != nil {
			return nil, usagef("--as-of: %v", err)
		}
		opts = append(opts, loch.WithAsOf(t))
	}
	return opts, nil
}

// checkURL refuses a dataset URL that the CLI cannot use: mem:// stores
// live in one process, so a dataset there would vanish when the command
// exits (and a read finds nothing there).
func checkURL(url string) error {
	if strings.HasPrefix(strings.ToLower(url), "mem://") {
		return fmt.Errorf("%s: mem:// is the library's in-process memory store and would be gone when this command exits; use a local path or object storage", url)
	}
	return nil
}

// storageOptionsEnv names the environment variable that holds storage
// options for the datasets a command opens by URL: a JSON object of the
// names storage.ParseOptions takes (those of Python's storage_options).
// The Python SDK passes a dataset's own options to the commands it runs
// (ds.query, ds.sql) this way: an argument would show secrets in ps.
const storageOptionsEnv = "LOCH_STORAGE_OPTIONS"

// storageOptions is the dataset option that LOCH_STORAGE_OPTIONS gives, if
// any. Its errors never quote the variable's value.
func storageOptions() ([]loch.Option, error) {
	raw := os.Getenv(storageOptionsEnv)
	if raw == "" {
		return nil, nil
	}
	var m map[string]string
	if err := json.Unmarshal([]byte(raw), &m); err != nil {
		return nil, fmt.Errorf("%s: want a JSON object of option names to strings: %w", storageOptionsEnv, loch.ErrInvalidArgument)
	}
	s, err := storage.ParseOptions(m)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", storageOptionsEnv, err)
	}
	return []loch.Option{loch.WithStorageSettings(s)}, nil
}

// openDataset opens the dataset at url at the version the flags name (r
// may be nil: the head of main), with the storage options of
// LOCH_STORAGE_OPTIONS and extra.
func openDataset(ctx context.Context, url string, r *refFlags, extra ...loch.Option) (*loch.Dataset, error) {
	if err := checkURL(url); err != nil {
		return nil, err
	}
	opts, err := storageOptions()
	if err != nil {
		return nil, err
	}
	if r != nil {
		ro, err := r.options()
		if err != nil {
			return nil, err
		}
		opts = append(opts, ro...)
	}
	return loch.Open(ctx, url, append(opts, extra...)...)
}

// openBranch opens the dataset at url on branch, for a command that
// writes there; a tag or version is refused.
func openBranch(ctx context.Context, url, branch string) (*loch.Dataset, error) {
	d, err := openDataset(ctx, url, nil, loch.WithRef(branch))
	if err != nil {
		return nil, err
	}
	if d.ReadOnly() {
		d.Close()
		return nil, fmt.Errorf("%s: %q is not a branch (tags and versions are read-only): %w", d.URL(), branch, loch.ErrReadOnly)
	}
	return d, nil
}

// printJSON writes v as indented JSON, the form of every --json output.
func printJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// checkConfig validates the loader settings that bench and order take from
// flags, before anything is opened: a bad value is a usage error.
func checkConfig(cfg loader.Config) error {
	// The library reads 0 as "the default"; the flags have their defaults
	// already, so a 0 here was typed, and is refused rather than replaced.
	switch {
	case cfg.BatchSize == 0:
		return usagef("--batch-size 0: want at least 1")
	case cfg.WorldSize == 0:
		return usagef("--world-size 0: want at least 1")
	}
	if err := cfg.Validate(); err != nil {
		return usagef("%v", err)
	}
	return nil
}
