package chaos

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
)

// reading is what one reader made of the damage family's catalog.
type reading struct {
	// parts are what it delivered, by name (its output; each page of
	// the viewer), normalized to what must not change.
	parts map[string]string
	// failed: it refused, all or part (a non-zero exit, an HTTP error).
	failed bool
	// message is everything it said, searched for panics and for what
	// it says is wrong.
	message  string
	timedOut bool
	detail   string // the commands and their results, for a report
}

// reader reads the damage family's catalog one way.
type reader struct {
	name   string
	perRow bool // it reads one row, chosen per scenario
	// covers, for a verifier, tells the keys whose damage it must
	// report; nil for the other readers.
	covers func(key string) bool
	read   func(row int) reading
}

// mustReport says whether r must report damage d: r verifies, and d
// damaged a reachable object that r covers.
func (r reader) mustReport(d damage) bool {
	if r.covers == nil || d.harmless {
		return false
	}
	for _, k := range d.changed {
		if r.covers(k) {
			return true
		}
	}
	return false
}

// cliReading is the reading of a CLI command; result picks what must not
// change of its standard output (nil: all of it).
func cliReading(p proc, result func(stdout string) string) reading {
	r := reading{message: p.output(), timedOut: p.timedOut, detail: p.String()}
	if p.code != 0 {
		r.failed = true
		return r
	}
	out := p.stdout
	if result != nil {
		out = result(out)
	}
	r.parts = map[string]string{"output": out}
	return r
}

// The damage family's queries: of the table, and of the catalog's two
// tables joined.
const (
	tableQuery = "SELECT count(*) AS n, sum(id) AS ids, sum(enum_code(label)) AS labels, " +
		"sum(hash(_rowid, id, label, caption, image, emb, score) % 1000000007) AS h FROM ds"
	catalogSQL = "SELECT count(*) AS n, sum(t.id) AS ids, sum(u.weight) AS w, " +
		"sum(hash(t._rowid, t.caption, t.image, t.emb, t.score) % 1000000007) AS h FROM t LEFT JOIN u USING (id)"
	catalogQuery = "SELECT t.label, count(*) AS n, sum(u.weight) AS w, sum(hash(t._rowid, t.caption) % 1000003) AS h " +
		"FROM t JOIN u USING (id) GROUP BY t.label ORDER BY t.label"
)

// readers are every reader of the damage family: those of table t as a
// dataset, then those of the catalog.
func (c *campaign) readers(l *lake) []reader {
	t := l.table
	showDir := filepath.Join(c.dir, "damage", "show")
	v := l.version
	return []reader{
		{name: "loader", read: func(int) reading { return cliReading(c.digest(nil, t), nil) }},
		{name: "bench", read: func(int) reading {
			return cliReading(c.lochRead("bench", t, "--json", "--no-raw", "-q", "--batch-size", "16"), benchResult)
		}},
		{name: "query", read: func(int) reading { return cliReading(c.lochRead("query", t, tableQuery), nil) }},
		{name: "show", perRow: true, read: func(row int) reading {
			os.RemoveAll(showDir)
			p := c.lochRead("show", t, "--row", strconv.Itoa(row), "--json", "--out", showDir)
			return cliReading(p, func(out string) string { return out + filesDigest(showDir) })
		}},
		{name: "search", read: func(int) reading {
			return cliReading(c.lochRead("search", t, "--column", "emb", "--vector", l.query, "-k", "5", "--json"), searchResult)
		}},
		{name: "selections", read: func(int) reading { return cliReading(c.lochRead("selections", t, "cats"), nil) }},
		{name: "verify", covers: func(k string) bool { return strings.HasPrefix(k, l.tableKey) },
			read: func(int) reading { return cliReading(c.lochRead("verify", t), verified) }},
		{name: "viewer", perRow: true, read: func(row int) reading {
			p := "/t/" + l.name + "/"
			return c.view(t, p, p+"log", p+"grid?v="+v+"&start=0&limit=200", fmt.Sprintf("%srow/%d?v=%s", p, row, v),
				fmt.Sprintf("%sthumb?v=%s&col=image&row=%d", p, v, row), fmt.Sprintf("%ssample?v=%s&col=image&row=%d", p, v, row))
		}},
		{name: "sql (catalog)", read: func(int) reading { return cliReading(c.lochRead("sql", l.root, catalogSQL), nil) }},
		{name: "query (catalog)", read: func(int) reading { return cliReading(c.lochRead("query", l.root, catalogQuery), nil) }},
		{name: "verify (catalog)", covers: func(string) bool { return true },
			read: func(int) reading { return cliReading(c.lochRead("verify", l.root), verified) }},
		{name: "viewer (catalog)", read: func(int) reading {
			return c.view(l.root, "/", "/t/t/", "/t/t/grid?v="+v+"&start=0&limit=200")
		}},
	}
}

// verified is what must not change in verify's output: that it says ok
// (the number of objects checked may).
func verified(stdout string) string {
	if strings.HasPrefix(stdout, "ok") {
		return "ok"
	}
	return stdout
}

// searchResult is what must not change in `loch search --json`'s output:
// the rows found and their distances. An index that cannot be used makes a
// warning and an exact search, which finds the same rows.
func searchResult(stdout string) string {
	var res struct {
		Results [][]struct {
			RowID    uint64  `json:"row_id"`
			Distance float64 `json:"distance"`
		}
	}
	if err := json.Unmarshal([]byte(stdout), &res); err != nil {
		return "unparsable search output: " + cut(stdout, 200)
	}
	var b strings.Builder
	for _, q := range res.Results {
		for _, hit := range q {
			fmt.Fprintf(&b, "%d %.4f\n", hit.RowID, hit.Distance)
		}
	}
	return b.String()
}

// filesDigest lists the files of dir with the SHA-256 of each.
func filesDigest(dir string) string {
	var b strings.Builder
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			fmt.Fprintf(&b, "%s: %v\n", e.Name(), err)
			continue
		}
		fmt.Fprintf(&b, "%s %x\n", e.Name(), sha256.Sum256(data))
	}
	return b.String()
}

var (
	serveRE     = regexp.MustCompile(`http://127\.0\.0\.1:\d+`)
	pageErrorRE = regexp.MustCompile(`class="error"[^>]*>([^<]*)<`)
)

// view starts `loch serve url` on a free port, GETs each path (without
// following redirects) and stops it. Each page that answers below 400 is
// a part (its status and a hash of its body, the server's address taken
// out); one at 400 or above fails the reading.
func (c *campaign) view(url string, paths ...string) reading {
	ctx, cancel := context.WithTimeout(context.Background(), readTimeout)
	defer cancel()
	cmd := c.command(ctx, nil, "serve", url, "--addr", "127.0.0.1:0")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return reading{failed: true, message: err.Error(), detail: err.Error()}
	}
	if err := cmd.Start(); err != nil {
		return reading{failed: true, message: err.Error(), detail: err.Error()}
	}
	line, _ := bufio.NewReader(stdout).ReadString('\n')
	base := serveRE.FindString(line)
	r := reading{parts: map[string]string{}}
	var log strings.Builder
	fmt.Fprintf(&log, "$ %s\n%s", shellQuote(cmd.Args), line)
	if base == "" {
		err := cmd.Wait()
		r.failed, r.timedOut = true, ctx.Err() != nil
		r.message = line + stderr.String()
		r.detail = fmt.Sprintf("%sexit %d\nstderr: %s", log.String(), exitCode(err), cut(stderr.String(), 2000))
		return r
	}
	client := &http.Client{Timeout: readTimeout, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	var said strings.Builder
	for _, p := range paths {
		resp, err := client.Get(base + p)
		if err != nil {
			r.failed = true
			var ne interface{ Timeout() bool }
			if errors.As(err, &ne) && ne.Timeout() {
				r.timedOut = true
			}
			fmt.Fprintf(&said, "GET %s: %v\n", p, err)
			fmt.Fprintf(&log, "GET %s: %v\n", p, err)
			continue
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		fmt.Fprintf(&log, "GET %s: %d, %d bytes\n", p, resp.StatusCode, len(body))
		if resp.StatusCode >= 400 {
			r.failed = true
			fmt.Fprintf(&said, "GET %s: %d %s\n", p, resp.StatusCode, bytes.TrimSpace(body))
			continue
		}
		if shown := pageErrorRE.FindAllSubmatch(body, -1); shown != nil {
			// A page that shows an error (a table of the catalog page
			// that cannot be read) refuses that part.
			r.failed = true
			for _, m := range shown {
				fmt.Fprintf(&said, "GET %s: %d, the page shows: %s\n", p, resp.StatusCode, m[1])
			}
			continue
		}
		norm := bytes.ReplaceAll(body, []byte(base), []byte("http://viewer"))
		r.parts["GET "+p] = fmt.Sprintf("%d %s %x (%d bytes)", resp.StatusCode, resp.Header.Get("Location"), sha256.Sum256(norm), len(norm))
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	r.message = said.String() + stderr.String()
	fmt.Fprintf(&log, "stderr: %s", cut(stderr.String(), 2000))
	r.detail = log.String()
	return r
}
