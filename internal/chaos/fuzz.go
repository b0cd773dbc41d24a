package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"
)

// fuzzTarget is one fuzz target of the module.
type fuzzTarget struct {
	pkg  string // its package, "./internal/keys" ("." for the root)
	name string // "FuzzParse"
}

var fuzzFuncRE = regexp.MustCompile(`(?m)^func (Fuzz\w+)\(\w+ \*testing\.F\)`)

// fuzzTargets finds every fuzz target in the test files under repo.
func fuzzTargets(repo string) ([]fuzzTarget, error) {
	var out []fuzzTarget
	err := filepath.WalkDir(repo, func(path string, e os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if e.IsDir() {
			if path != repo && (strings.HasPrefix(e.Name(), ".") || e.Name() == "testdata" || e.Name() == "node_modules") {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(e.Name(), "_test.go") {
			return nil
		}
		src, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(repo, filepath.Dir(path))
		pkg := "./" + filepath.ToSlash(rel)
		if rel == "." {
			pkg = "."
		}
		for _, m := range fuzzFuncRE.FindAllSubmatch(src, -1) {
			out = append(out, fuzzTarget{pkg: pkg, name: string(m[1])})
		}
		return nil
	})
	slices.SortFunc(out, func(a, b fuzzTarget) int { return strings.Compare(a.pkg+" "+a.name, b.pkg+" "+b.name) })
	return out, err
}

// fuzzCompileTime bounds building a package's instrumented test binary,
// which takes minutes for the first package on 2 busy cores.
const fuzzCompileTime = 30 * time.Minute

var (
	failingInputRE = regexp.MustCompile(`Failing input written to (\S+)`)
	execsRE        = regexp.MustCompile(`execs: (\d+)`)
)

// fuzz runs every fuzz target for the configured time; a failure (a panic,
// a failed check) is counted as a panic and reported with the input that
// Go's fuzzer wrote to the package's testdata/fuzz, which replays it.
func (c *campaign) fuzz(*rand.Rand) {
	targets, err := fuzzTargets(c.cfg.Repo)
	c.check(err)
	for i, t := range targets {
		ctx, cancel := context.WithTimeout(context.Background(), c.cfg.FuzzTime+fuzzCompileTime)
		cmd := exec.CommandContext(ctx, "go", "test", "-run", "^$", "-fuzz", "^"+t.name+"$", "-fuzztime", c.cfg.FuzzTime.String(), t.pkg)
		cmd.Dir = c.cfg.Repo
		cmd.WaitDelay = 10 * time.Second
		p := runCmd(ctx, cmd)
		cancel()
		o, detail := OK, ""
		switch {
		case p.timedOut:
			o, detail = Hung, p.String()
		case p.code != 0:
			o = Panic
			detail = p.String()
			if m := failingInputRE.FindStringSubmatch(p.output()); m != nil {
				input := filepath.Join(t.pkg, m[1])
				detail = fmt.Sprintf("failing input %s (replay: go test -run '%s/%s' %s)\n%s", input, t.name, filepath.Base(m[1]), t.pkg, detail)
			}
		}
		execs := "?"
		if m := execsRE.FindAllStringSubmatch(p.output(), -1); m != nil {
			execs = m[len(m)-1][1]
		}
		c.table.Add("fuzz", "go test -fuzz", o, fmt.Sprintf("%s %s for %v", t.pkg, t.name, c.cfg.FuzzTime), detail)
		c.logf("fuzz %d/%d %s %s: %s (%s execs, %v)", i+1, len(targets), t.pkg, t.name, o, execs, p.elapsed.Round(time.Second))
	}
}
