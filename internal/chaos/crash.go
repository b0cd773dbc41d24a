package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"time"
)

// crashOp is a write the crash family kills: the command, run in a copy
// of a working directory made once by setup, and how its result is read
// back.
type crashOp struct {
	name string
	work string // the working directory; the template is work + ".template"
	// setup makes the working directory's dataset (or catalog) and the
	// files the command reads.
	setup func(c *campaign, op *crashOp)
	args  []string // the command killed
	next  []string // the next writer, which must succeed
	// url is the dataset read back (by the loader's digest), or with
	// readSQL the catalog's root, read back by that query.
	url     string
	readSQL string
	// table is the URL of the catalog table the operation writes, found
	// by setup; "" for a dataset.
	table string
}

// headURL is the dataset whose head the operation moves.
func (op *crashOp) headURL() string {
	if op.table != "" {
		return op.table
	}
	return op.url
}

// crashes kills each operation N times at a random moment and checks what
// it left: a sound dataset holding the rows of the version before the
// operation or after it (after, when the command acknowledged it), on
// which the next writer succeeds.
func (c *campaign) crashes(r *rand.Rand) {
	root := filepath.Join(c.dir, "crash")
	src := filepath.Join(root, "src")
	for _, f := range []struct {
		name     string
		from, to int
	}{{"base.jsonl", 0, 2000}, {"more.jsonl", 2000, 32000}, {"small.jsonl", 40000, 40020}, {"one.jsonl", 50000, 50001}} {
		c.check(os.MkdirAll(src, 0o755))
		c.check(writeJSONL(filepath.Join(src, f.name), f.from, f.to))
	}
	c.check(writeImages(filepath.Join(src, "imgs-base"), 0, 10, 32))
	c.check(writeImages(filepath.Join(src, "imgs-more"), 1000, 100, 32))
	c.check(writeImages(filepath.Join(src, "imgs-one"), 2000, 1, 32))
	in := func(name string) string { return filepath.Join(src, name) }
	ingest := func(file string, ds string, more ...string) []string {
		return append([]string{"ingest", "jsonl", in(file), ds, "-q"}, more...)
	}

	var ops []*crashOp
	dataset := func(name string, setup func(c *campaign, op *crashOp), args func(ds string) []string, next func(ds string) []string) {
		work := filepath.Join(root, name)
		ds := filepath.Join(work, "ds")
		ops = append(ops, &crashOp{name: name, work: work, url: ds, setup: setup, args: args(ds), next: next(ds)})
	}
	nextJSONL := func(ds string) []string { return ingest("one.jsonl", ds, "--append") }
	dataset("ingest jsonl", func(c *campaign, op *crashOp) { c.must(nil, ingest("base.jsonl", op.url)...) },
		func(ds string) []string { return ingest("more.jsonl", ds, "--append") }, nextJSONL)
	dataset("ingest imagefolder", func(c *campaign, op *crashOp) {
		c.must(nil, "ingest", "imagefolder", in("imgs-base"), op.url, "-q")
	}, func(ds string) []string {
		return []string{"ingest", "imagefolder", in("imgs-more"), ds, "--append", "-q"}
	}, func(ds string) []string {
		return []string{"ingest", "imagefolder", in("imgs-one"), ds, "--append", "-q"}
	})
	dataset("commit staged", func(c *campaign, op *crashOp) {
		c.must(nil, ingest("base.jsonl", op.url)...)
		c.must(nil, ingest("more.jsonl", op.url, "--append", "--stage-only", "--out", filepath.Join(op.work, "desc.json"))...)
	}, func(ds string) []string {
		return []string{"commit", ds, filepath.Join(filepath.Dir(ds), "desc.json"), "--json"}
	}, nextJSONL)
	dataset("compact", func(c *campaign, op *crashOp) {
		c.must(nil, ingest("base.jsonl", op.url)...)
		for range 30 {
			c.must(nil, ingest("small.jsonl", op.url, "--append")...)
		}
	}, func(ds string) []string { return []string{"compact", ds, "--json", "-q"} }, nextJSONL)
	dataset("merge", func(c *campaign, op *crashOp) {
		c.must(nil, ingest("base.jsonl", op.url)...)
		c.must(nil, "branch", op.url, "dev")
		c.must(nil, ingest("more.jsonl", op.url, "--append", "--branch", "dev")...)
		c.must(nil, ingest("small.jsonl", op.url, "--append")...)
	}, func(ds string) []string { return []string{"merge", ds, "dev", "--json", "-q"} }, nextJSONL)
	for _, stmt := range []struct{ name, sql string }{
		{"sql insert", "INSERT INTO t SELECT i, i * 0.5, 'row ' || i FROM range(20000, 80000) r(i)"},
		{"sql update", "UPDATE t SET x = x + 1, name = name || '+' WHERE id % 3 = 0"},
		{"sql delete", "DELETE FROM t WHERE id % 5 = 0"},
	} {
		work := filepath.Join(root, strings.ReplaceAll(stmt.name, " ", "-"))
		lake := filepath.Join(work, "lake")
		ops = append(ops, &crashOp{name: stmt.name, work: work, url: lake,
			readSQL: "SELECT count(*), sum(id), sum(x), sum(hash(name) % 1000003) FROM t",
			setup: func(c *campaign, op *crashOp) {
				c.must(nil, "sql", op.url, "CREATE TABLE t (id BIGINT, x DOUBLE, name TEXT)")
				c.must(nil, "sql", op.url, "INSERT INTO t SELECT i, i * 0.5, 'row ' || i FROM range(0, 20000) r(i)")
				op.table = c.tableURL(op.url, "t")
			},
			args: []string{"sql", lake, stmt.sql, "--json"},
			next: []string{"sql", lake, "INSERT INTO t VALUES (99999, 1.5, 'next')"},
		})
	}
	for _, op := range ops {
		c.crash(r, op)
	}
}

// crash runs one operation's kills.
func (c *campaign) crash(r *rand.Rand, op *crashOp) {
	c.check(os.MkdirAll(op.work, 0o755))
	op.setup(c, op)
	template := op.work + ".template"
	c.check(copyDir(op.work, template))
	pre := c.readBack(op)
	if pre.code != 0 {
		c.fatalf("crash %s: read back before the operation:\n%s", op.name, pre)
	}
	// The operation unkilled, three times: the rows after it, and how
	// long it takes (the quickest run: the first pays for cold caches).
	var took time.Duration
	var post proc
	for k := range 3 {
		if k > 0 {
			c.check(copyDir(template, op.work))
		}
		unkilled := c.lochEnv(writeTimeout, nil, op.args...)
		if unkilled.code != 0 {
			c.fatalf("crash %s: the operation fails unkilled:\n%s", op.name, unkilled)
		}
		if post = c.readBack(op); post.code != 0 {
			c.fatalf("crash %s: read back after the operation:\n%s", op.name, post)
		}
		if k == 0 || unkilled.elapsed < took {
			took = unkilled.elapsed
		}
	}
	acked := 0
	for i := range c.cfg.N {
		c.check(copyDir(template, op.work))
		// Half the kills fall anywhere in the command's life, half near
		// its end, where it commits.
		share := r.Float64()
		if r.IntN(2) == 1 {
			share = 0.6 + 0.45*r.Float64()
		}
		delay := time.Duration(share * float64(took))
		p, killed := c.killAfter(delay, op.args)
		ack := !killed && p.code == 0
		if ack {
			acked++
		}
		scenario := fmt.Sprintf("kill -9 after %v (unkilled it takes %v)", delay.Round(time.Millisecond), took.Round(time.Millisecond))
		o, state, detail := c.afterCrash(op, p, ack, pre.stdout, post.stdout)
		c.table.Add("crash", op.name, o, scenario, detail)
		c.logf("crash %s %d/%d: %s, acknowledged %v, left the version %s: %s", op.name, i+1, c.cfg.N, scenario, ack, state, o)
	}
	c.logf("crash %s: %d of %d kills came after the command had finished", op.name, acked, c.cfg.N)
	c.check(os.RemoveAll(template))
	c.check(os.RemoveAll(op.work))
}

// killAfter runs the CLI with args and kills it (SIGKILL) after delay
// unless it has ended by then; killed says whether it was killed.
func (c *campaign) killAfter(delay time.Duration, args []string) (p proc, killed bool) {
	p = c.runWhile(nil, args, func(cmd *os.Process, ended <-chan struct{}) {
		select {
		case <-ended:
		case <-time.After(delay):
			killed = cmd.Kill() == nil
		}
	})
	return p, killed
}

// afterCrash checks what a killed (or finished) command left; state says
// whether it holds the version before the operation or after it.
func (c *campaign) afterCrash(op *crashOp, p proc, ack bool, pre, post string) (o Outcome, state, detail string) {
	state = "?"
	if panicked(p.output()) {
		return Panic, state, p.String()
	}
	verify := c.lochRead("verify", op.url)
	switch {
	case panicked(verify.output()):
		return Panic, state, verify.String()
	case verify.code != 0:
		return Wrong, state, "verify fails after the kill:\n" + verify.String()
	}
	got := c.readBack(op)
	switch {
	case panicked(got.output()):
		return Panic, state, got.String()
	case got.code != 0:
		return Wrong, state, "reading back fails after the kill:\n" + got.String()
	}
	switch got.stdout {
	case post:
		state = "after"
		if pre == post {
			state = "before or after (the same rows)"
		}
	case pre:
		state = "before"
	}
	if ack {
		printed := printedVersion(p.stdout)
		head, _, err := c.head(nil, op.headURL())
		switch {
		case err != nil:
			return Wrong, state, fmt.Sprintf("the head after an acknowledged commit: %v", err)
		case head != printed:
			return Lost, state, fmt.Sprintf("acknowledged version %s is not the head %s\n%s", printed, head, p)
		case got.stdout != post:
			return Lost, state, fmt.Sprintf("acknowledged, but read back:\n%s\nwant:\n%s\n%s", got.stdout, post, p)
		}
	} else if got.stdout != pre && got.stdout != post {
		return Wrong, state, fmt.Sprintf("read back neither the version before nor the one after:\n%s\nbefore:\n%s\nafter:\n%s", got.stdout, pre, post)
	}
	next := c.lochEnv(writeTimeout, nil, op.next...)
	switch {
	case panicked(next.output()):
		return Panic, state, next.String()
	case next.code != 0:
		return Wrong, state, "the next writer fails:\n" + next.String()
	}
	return OK, state, ""
}

// readBack reads what the operation's dataset or catalog holds.
func (c *campaign) readBack(op *crashOp) proc {
	if op.readSQL != "" {
		return c.lochRead("sql", op.url, op.readSQL)
	}
	return c.digest(nil, op.url)
}

// versionRE finds the version a write prints: "version <id>" in text,
// "version" or "commit" in JSON.
var versionRE = regexp.MustCompile(`(?:version|"version":|"commit":) "?([0-9a-f]{32})`)

// printedVersion is the version id a write printed, "" if none.
func printedVersion(stdout string) string {
	m := versionRE.FindAllStringSubmatch(stdout, -1)
	if len(m) == 0 {
		return ""
	}
	return m[len(m)-1][1]
}

// head returns the version of main's head of the dataset at url, and its
// number of rows.
func (c *campaign) head(env []string, url string) (version string, rows int, err error) {
	p := c.lochEnv(readTimeout, env, "info", url, "--json")
	if p.code != 0 {
		return "", 0, fmt.Errorf("%s", p)
	}
	var info struct {
		Version string
		Rows    int
	}
	if err := json.Unmarshal([]byte(p.stdout), &info); err != nil {
		return "", 0, fmt.Errorf("loch info --json: %w", err)
	}
	return info.Version, info.Rows, nil
}

// tableURL is the URL of the table name of the catalog at root.
func (c *campaign) tableURL(root, name string) string {
	c.t.Helper()
	p := c.must(nil, "tables", root, "--json")
	var list struct{ Tables []struct{ Name, URL string } }
	c.check(json.Unmarshal([]byte(p.stdout), &list))
	for _, t := range list.Tables {
		if t.Name == name {
			return t.URL
		}
	}
	c.fatalf("no table %s in %s", name, p.stdout)
	return ""
}

// check stops the campaign on a setup error.
func (c *campaign) check(err error) {
	c.t.Helper()
	if err != nil {
		c.fatalf("%v", err)
	}
}
