package chaos

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// The families of scenarios, in the order a campaign runs them.
var Families = []string{"crash", "outage", "damage", "fuzz"}

// Config is what a campaign does. ConfigFromEnv reads it from the
// environment that `make chaos` passes on.
type Config struct {
	// Seed seeds every random choice; each family draws from its own
	// stream, so a family run alone replays as in the whole campaign.
	Seed uint64
	// N is the number of kills of each crash operation; the outage
	// family runs max(1, N/4) rounds and the damage family max(1, N/6).
	N int
	// FuzzTime is how long each fuzz target runs.
	FuzzTime time.Duration
	// Families are the families to run (default all, in Families' order).
	Families []string
	// Out, when set, is a file the table and the failures are written to.
	Out string
	// Loch is the loch binary to run; empty: built from Repo.
	Loch string
	// Repo is the module's root: where the CLI is built and the fuzz
	// targets run.
	Repo string
	// Digest is the command line of a program that prints a dataset's
	// digest (Digest) for the URL in the environment variable DigestEnv:
	// the loader, run in a process of its own so that a panic in it is
	// seen, not suffered.
	Digest []string
	// Log receives the progress lines and the table.
	Log io.Writer
}

// The environment variables ConfigFromEnv reads.
const (
	EnvSeed     = "CHAOS_SEED"
	EnvN        = "CHAOS_N"
	EnvFuzzTime = "FUZZTIME"
	EnvFamilies = "CHAOS_FAMILIES"
	EnvOut      = "CHAOS_OUT"
	EnvLoch     = "CHAOS_LOCH"
)

// Defaults of the short form: under 30 minutes on 2 cores.
const (
	DefaultN        = 12
	DefaultFuzzTime = 20 * time.Second
)

// ConfigFromEnv reads a Config from CHAOS_SEED (random when unset),
// CHAOS_N, FUZZTIME, CHAOS_FAMILIES (comma-separated), CHAOS_OUT and
// CHAOS_LOCH. Repo, Digest and Log are left to the caller.
func ConfigFromEnv() (Config, error) {
	cfg := Config{Seed: rand.Uint64(), N: DefaultN, FuzzTime: DefaultFuzzTime, Families: Families,
		Out: os.Getenv(EnvOut), Loch: os.Getenv(EnvLoch)}
	var err error
	if v := os.Getenv(EnvSeed); v != "" {
		if cfg.Seed, err = strconv.ParseUint(v, 10, 64); err != nil {
			return cfg, fmt.Errorf("%s=%q: want an unsigned decimal integer", EnvSeed, v)
		}
	}
	if v := os.Getenv(EnvN); v != "" {
		if cfg.N, err = strconv.Atoi(v); err != nil || cfg.N < 1 {
			return cfg, fmt.Errorf("%s=%q: want a positive integer", EnvN, v)
		}
	}
	if v := os.Getenv(EnvFuzzTime); v != "" {
		if cfg.FuzzTime, err = time.ParseDuration(v); err != nil || cfg.FuzzTime <= 0 {
			return cfg, fmt.Errorf("%s=%q: want a positive duration such as 20s or 10m", EnvFuzzTime, v)
		}
	}
	if v := os.Getenv(EnvFamilies); v != "" {
		cfg.Families = strings.Split(v, ",")
		for _, f := range cfg.Families {
			if !slices.Contains(Families, f) {
				return cfg, fmt.Errorf("%s: unknown family %q (want some of %s)", EnvFamilies, f, strings.Join(Families, ","))
			}
		}
	}
	return cfg, nil
}

// campaign is one run: its configuration, its scratch directory, the CLI
// it drives and the table it fills.
type campaign struct {
	t     testing.TB // for the MinIO server of the outage family
	cfg   Config
	dir   string // scratch, removed at the end
	loch  string // the CLI binary
	table *Table
	start time.Time
}

// Run runs the campaign that cfg describes and returns its table, which
// it has printed to cfg.Log (and written to cfg.Out) with the failed and
// unclear scenarios. Setup failures (the CLI does not build, a fixture
// cannot be made) fail t; t is also what starts and stops MinIO.
func Run(t testing.TB, cfg Config) *Table {
	t.Helper()
	c := &campaign{t: t, cfg: cfg, table: &Table{}, start: time.Now()}
	dir, err := os.MkdirTemp("", "loch-chaos-")
	if err != nil {
		t.Fatal(err)
	}
	defer os.RemoveAll(dir)
	c.dir = dir
	c.logf("chaos: seed %d (replay with %s=%d), N %d, fuzz time %v, families %s", cfg.Seed, EnvSeed, cfg.Seed, cfg.N, cfg.FuzzTime, strings.Join(cfg.Families, ","))
	c.loch = cfg.Loch
	if c.loch == "" {
		c.loch = filepath.Join(dir, "loch")
		c.logf("building %s", c.loch)
		build := exec.Command("go", "build", "-o", c.loch, "./cmd/loch")
		build.Dir = cfg.Repo
		if out, err := build.CombinedOutput(); err != nil {
			t.Fatalf("go build ./cmd/loch: %v\n%s", err, out)
		}
	}
	families := map[string]func(r *rand.Rand){
		"crash": c.crashes, "outage": c.outages, "damage": c.damages, "fuzz": c.fuzz,
	}
	for i, f := range Families {
		if !slices.Contains(cfg.Families, f) {
			continue
		}
		c.logf("== %s", f)
		families[f](rand.New(rand.NewPCG(cfg.Seed, uint64(i))))
	}
	var out bytes.Buffer
	fmt.Fprintf(&out, "seed %d, N %d, fuzz time %v, %s\n\n", cfg.Seed, cfg.N, cfg.FuzzTime, time.Since(c.start).Round(time.Second))
	c.table.Print(&out)
	if fs := c.table.Failures(); len(fs) > 0 {
		fmt.Fprintf(&out, "\n%d failed or unclear scenarios:\n", len(fs))
		c.table.PrintFailures(&out)
	}
	c.logf("== table\n%s", out.String())
	if cfg.Out != "" {
		if err := os.WriteFile(cfg.Out, out.Bytes(), 0o644); err != nil {
			t.Errorf("write %s: %v", cfg.Out, err)
		}
	}
	return c.table
}

// logf writes a progress line, prefixed with the time since the start.
func (c *campaign) logf(format string, args ...any) {
	if c.cfg.Log == nil {
		return
	}
	d := time.Since(c.start).Round(time.Second)
	fmt.Fprintf(c.cfg.Log, "[%3dm%02ds] %s\n", int(d.Minutes()), int(d.Seconds())%60, fmt.Sprintf(format, args...))
}

// fatalf stops the campaign on a setup failure.
func (c *campaign) fatalf(format string, args ...any) {
	c.t.Helper()
	c.t.Fatalf(format, args...)
}

// proc is how a command ended.
type proc struct {
	args           []string
	code           int // exit status; -1 when killed or not started
	stdout, stderr string
	timedOut       bool
	elapsed        time.Duration
}

// output is everything the command printed, for panic detection.
func (p proc) output() string { return p.stdout + "\n" + p.stderr }

// String describes the command and its result for a failure's detail.
func (p proc) String() string {
	s := fmt.Sprintf("$ %s\nexit %d after %v", shellQuote(p.args), p.code, p.elapsed.Round(time.Millisecond))
	if p.timedOut {
		s += " (timed out)"
	}
	if out := strings.TrimSpace(p.stdout); out != "" {
		s += "\nstdout: " + cut(out, 2000)
	}
	if e := strings.TrimSpace(p.stderr); e != "" {
		s += "\nstderr: " + cut(e, 2000)
	}
	return s
}

// Time limits of a reader and of a write operation.
const (
	readTimeout  = 90 * time.Second
	writeTimeout = 5 * time.Minute
)

// command makes an exec.Cmd of the loch CLI with env added to this
// process's environment.
func (c *campaign) command(ctx context.Context, env []string, args ...string) *exec.Cmd {
	cmd := exec.CommandContext(ctx, c.loch, args...)
	cmd.Env = append(os.Environ(), env...)
	cmd.Dir = c.dir
	cmd.WaitDelay = 5 * time.Second
	return cmd
}

// runCmd runs cmd, made with ctx, to its end or to ctx's.
func runCmd(ctx context.Context, cmd *exec.Cmd) proc {
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	err := cmd.Run()
	p := proc{args: cmd.Args, stdout: stdout.String(), stderr: stderr.String(), elapsed: time.Since(t0)}
	p.code = exitCode(err)
	p.timedOut = ctx.Err() != nil
	return p
}

func exitCode(err error) int {
	var ee *exec.ExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee) && ee.Exited():
		return ee.ExitCode()
	default:
		return -1
	}
}

// runWhile runs the CLI with args and env added, within writeTimeout, and
// calls during once it has started, with its process and a channel closed
// when it has ended; it returns when both have.
func (c *campaign) runWhile(env, args []string, during func(p *os.Process, ended <-chan struct{})) proc {
	ctx, cancel := context.WithTimeout(context.Background(), writeTimeout)
	defer cancel()
	cmd := c.command(ctx, env, args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	t0 := time.Now()
	if err := cmd.Start(); err != nil {
		return proc{args: cmd.Args, code: -1, stderr: err.Error()}
	}
	ended, done := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(done)
		during(cmd.Process, ended)
	}()
	err := cmd.Wait()
	elapsed := time.Since(t0)
	close(ended)
	<-done
	return proc{args: cmd.Args, code: exitCode(err), stdout: stdout.String(), stderr: stderr.String(),
		timedOut: ctx.Err() != nil, elapsed: elapsed}
}

// lochEnv runs the CLI with env added, within limit.
func (c *campaign) lochEnv(limit time.Duration, env []string, args ...string) proc {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	return runCmd(ctx, c.command(ctx, env, args...))
}

// lochRead runs a reading command of the CLI.
func (c *campaign) lochRead(args ...string) proc { return c.lochEnv(readTimeout, nil, args...) }

// must runs a setup command of the CLI and stops the campaign if it fails.
func (c *campaign) must(env []string, args ...string) proc {
	c.t.Helper()
	p := c.lochEnv(writeTimeout, env, args...)
	if p.code != 0 {
		c.fatalf("setup failed:\n%s", p)
	}
	return p
}

// digest reads the dataset at url through the loader in a process of its
// own (Config.Digest) and returns what it printed.
func (c *campaign) digest(env []string, url string) proc {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, c.cfg.Digest[0], c.cfg.Digest[1:]...)
	cmd.Env = append(append(os.Environ(), env...), DigestEnv+"="+url)
	cmd.Dir = c.dir
	cmd.WaitDelay = 5 * time.Second
	p := runCmd(ctx, cmd)
	p.args = []string{DigestEnv + "=" + url, "digest"}
	return p
}

// copyDir replaces dst with a copy of src.
func copyDir(src, dst string) error {
	if err := os.RemoveAll(dst); err != nil {
		return err
	}
	return filepath.WalkDir(src, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		to := filepath.Join(dst, rel)
		if e.IsDir() {
			return os.MkdirAll(to, 0o755)
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return os.WriteFile(to, b, 0o644)
	})
}

// shellQuote writes args as a shell command line.
func shellQuote(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		if a != "" && strings.Trim(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=,@") == "" {
			q[i] = a
		} else {
			q[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
		}
	}
	return strings.Join(q, " ")
}

// cut shortens s to about n bytes.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + fmt.Sprintf("... (%d bytes)", len(s))
}
