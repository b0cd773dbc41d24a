package chaos

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/lochdata/loch/internal/testserver"
)

// outageOp is what the outage family runs while MinIO is down: a read
// (an epoch), which must deliver the truth or fail clearly, or a write,
// which must land whole or not at all, and never be lost once
// acknowledged.
type outageOp struct {
	name  string
	write bool
	// stage makes a description of staged rows first (for "commit").
	stage bool
	// args of the command, given the dataset's URL; nil: the loader's
	// digest of the dataset.
	args func(url string) []string
	// result is the part of a read's output compared with the truth.
	result func(stdout string) string
}

// outages stops a MinIO server of the campaign's own before or at a random
// moment of an epoch, an ingest and a commit, and starts it again after a
// random 1 to 5 s. Even rounds run with the default retry budget (the command
// should ride the outage out), odd ones with a 2 s budget (it should fail
// with a clear error). Afterwards, with the server up, the dataset must
// verify, hold the truth (or, after a write, the version before or after
// it: after, when acknowledged), and take the next writer.
func (c *campaign) outages(r *rand.Rand) {
	src := filepath.Join(c.dir, "outage")
	c.check(os.MkdirAll(src, 0o755))
	base, more, one := filepath.Join(src, "base.jsonl"), filepath.Join(src, "more.jsonl"), filepath.Join(src, "one.jsonl")
	c.check(writeJSONL(base, 0, 3000))
	c.check(writeJSONL(more, 3000, 23000))
	c.check(writeJSONL(one, 30000, 30001))

	m := testserver.OwnMinIO(c.t)
	b := m.Bucket(c.t)
	o := &outageSet{c: c, m: m, bucket: b, src: src, base: base, more: more}
	for k, v := range b.Env {
		o.env = append(o.env, k+"="+v)
	}
	ops := []outageOp{
		{name: "epoch (loch bench)", args: func(u string) []string {
			return []string{"bench", u, "--json", "--no-raw", "-q", "--batch-size", "16", "--epochs", "3"}
		}, result: benchResult},
		{name: "epoch (loader digest)"},
		{name: "ingest", write: true, args: func(u string) []string {
			return []string{"ingest", "jsonl", more, u, "--append", "-q"}
		}},
		{name: "commit staged", write: true, stage: true, args: func(u string) []string {
			return []string{"commit", u, o.desc(u), "--json"}
		}},
	}
	rounds := max(1, c.cfg.N/4)
	for k, op := range ops {
		cal := o.calibrate(op, k)
		for round := range rounds {
			o.round(r, op, cal, fmt.Sprintf("r%d-%d", round, k), round%2 == 1, fmt.Sprintf("%d/%d", round+1, rounds))
		}
	}
}

// outageSet is what the rounds of the outage campaign share: the MinIO
// server they stop, its bucket and environment, and the JSONL sources.
type outageSet struct {
	c          *campaign
	m          *testserver.MinIOServer
	bucket     testserver.Bucket
	env        []string
	src        string
	base, more string
}

// calibrated is an operation run without an outage: the truth (the read's
// output, or the versions before and after the write), and how long the
// command takes with the server up.
type calibrated struct {
	cal              proc
	truth, pre, post string
}

// url is the URL of dataset name in the bucket.
func (o *outageSet) url(name string) string {
	return fmt.Sprintf("s3://%s/%s?endpoint=%s", o.bucket.Name, name, o.bucket.Endpoint)
}

// desc is the file of the staged-write description for the dataset at url.
func (o *outageSet) desc(url string) string {
	return filepath.Join(o.src, strings.NewReplacer("/", "_", ":", "_", "?", "_", "=", "_").Replace(url)+".json")
}

// prepare makes a dataset of base's rows at u, and stages more's rows for
// a commit.
func (o *outageSet) prepare(op outageOp, u string) {
	o.c.must(o.env, "ingest", "jsonl", o.base, u, "-q")
	if op.stage {
		o.c.must(o.env, "ingest", "jsonl", o.more, u, "--append", "--stage-only", "--out", o.desc(u), "-q")
	}
}

// exec runs op on the dataset at u, and onStart as it starts.
func (o *outageSet) exec(op outageOp, u string, extra []string, onStart func()) proc {
	if op.args == nil {
		go onStart()
		return o.c.digest(append(o.env, extra...), u)
	}
	return o.c.runWhile(append(o.env, extra...), op.args(u), func(*os.Process, <-chan struct{}) { onStart() })
}

// calibrate runs op, the k-th, with the server up.
func (o *outageSet) calibrate(op outageOp, k int) calibrated {
	u := o.url(fmt.Sprintf("calibrate-%d", k))
	o.prepare(op, u)
	pre := o.c.digest(o.env, u)
	cal := o.exec(op, u, nil, func() {})
	if cal.code != 0 || pre.code != 0 {
		o.c.fatalf("outage %s without an outage:\n%s\n%s", op.name, cal, pre)
	}
	truth := cal.stdout
	if op.result != nil {
		truth = op.result(cal.stdout)
	}
	return calibrated{cal: cal, truth: truth, pre: pre.stdout, post: o.c.digest(o.env, u).stdout}
}

// round runs op on a new dataset name with the server stopped before or
// at a random moment of it, with the default retry budget or, short, a
// 2 s one, and adds its outcome to the table; of is the round's number.
func (o *outageSet) round(r *rand.Rand, op outageOp, cal calibrated, name string, short bool, of string) {
	c := o.c
	u := o.url(name)
	o.prepare(op, u)
	var extra []string
	budget := "default"
	if short {
		extra, budget = []string{"LOCH_STORAGE_RETRY_BUDGET=2s"}, "2s"
	}
	// Half the outages begin before the command starts, half at a random
	// moment of it.
	outage := time.Second + time.Duration(r.Int64N(int64(4*time.Second)))
	delay := time.Duration(r.Int64N(int64(cal.cal.elapsed) + 1))
	early := r.IntN(2) == 0
	when := fmt.Sprintf("%v into the command", delay.Round(time.Millisecond))
	if early {
		delay, when = 0, "before the command started"
		o.m.Stop(c.t)
	}
	scenario := fmt.Sprintf("MinIO stopped %s for %v (then restarted), retry budget %s", when, outage.Round(time.Millisecond), budget)
	stopped := make(chan time.Time, 1)
	start := time.Now()
	p := o.exec(op, u, extra, func() {
		if !early {
			time.Sleep(delay)
			o.m.Stop(c.t)
		}
		t := time.Now()
		time.Sleep(outage)
		o.m.Start(c.t)
		stopped <- t
	})
	ended := start.Add(p.elapsed)
	met := "met the outage"
	if at := <-stopped; !early && ended.Before(at) {
		met = "ended before the outage"
	}
	res, detail := c.afterOutage(op, o.env, u, p, cal.truth, cal.pre, cal.post)
	c.table.Add("outage", op.name, res, scenario, detail)
	c.logf("outage %s %s: %s: %s, exit %d: %s", op.name, of, scenario, met, p.code, res)
}

// afterOutage classifies a command run through an outage and checks the
// dataset it used once the server is back.
func (c *campaign) afterOutage(op outageOp, env []string, u string, p proc, truth, pre, post string) (Outcome, string) {
	switch {
	case panicked(p.output()):
		return Panic, p.String()
	case p.timedOut:
		return Hung, p.String()
	}
	outcome := OK
	if p.code != 0 {
		outcome = ClearError
		if !clearOutage(p.stderr) {
			outcome = Unclear
		}
	}
	if !op.write && p.code == 0 {
		got := p.stdout
		if op.result != nil {
			got = op.result(p.stdout)
		}
		if got != truth {
			return Wrong, fmt.Sprintf("read through the outage:\n%s\nwant:\n%s\n%s", got, truth, p)
		}
	}
	verify := c.lochEnv(readTimeout, env, "verify", u)
	switch {
	case panicked(verify.output()):
		return Panic, verify.String()
	case verify.code != 0:
		return Wrong, "verify fails after the outage:\n" + verify.String() + "\n" + p.String()
	}
	got := c.digest(env, u)
	switch {
	case panicked(got.output()):
		return Panic, got.String()
	case got.code != 0:
		return Wrong, "reading back fails after the outage:\n" + got.String() + "\n" + p.String()
	}
	ack := op.write && p.code == 0
	switch {
	case ack && got.stdout != post:
		return Lost, fmt.Sprintf("acknowledged, but read back:\n%s\nwant:\n%s\n%s", got.stdout, post, p)
	case ack && printedVersion(p.stdout) == "":
		return Wrong, "acknowledged without a version:\n" + p.String()
	case ack:
		if head, _, err := c.head(env, u); err != nil || head != printedVersion(p.stdout) {
			return Lost, fmt.Sprintf("acknowledged version %s is not the head %s (%v)\n%s", printedVersion(p.stdout), head, err, p)
		}
	case got.stdout != pre && got.stdout != post:
		return Wrong, fmt.Sprintf("read back neither the version before nor the one after:\n%s\nbefore:\n%s\nafter:\n%s\n%s", got.stdout, pre, post, p)
	}
	next := c.lochEnv(writeTimeout, env, "ingest", "jsonl", filepath.Join(c.dir, "outage", "one.jsonl"), u, "--append", "-q")
	switch {
	case panicked(next.output()):
		return Panic, next.String()
	case next.code != 0:
		return Wrong, "the next writer fails:\n" + next.String()
	}
	detail := ""
	if outcome != OK {
		detail = p.String()
	}
	return outcome, detail
}

// benchResult is what must not change in `loch bench --json`'s output:
// the samples delivered, the batches and the rows skipped.
func benchResult(stdout string) string {
	var res struct {
		Samples, Batches, Skipped int64
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		return "unparsable bench output: " + cut(stdout, 200)
	}
	return fmt.Sprintf("samples %d, batches %d, skipped %d", res.Samples, res.Batches, res.Skipped)
}
