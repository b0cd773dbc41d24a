package viewer

import (
	"context"
	"fmt"
	"html/template"
	"net/http"
	"net/url"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/dustin/go-humanize"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/query"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/sqlcat"
	"github.com/lochdata/loch/storage"
)

// Grid page sizes.
const (
	defaultPage = 48
	maxQuery    = 8 << 10 // bytes of SQL
)

var funcs = template.FuncMap{
	"bytes": func(n int64) string { return humanize.IBytes(uint64(max(n, 0))) },
	"time":  func(t time.Time) string { return t.UTC().Format("2006-01-02 15:04:05") },
	"short": func(s string) string { return trunc(s, 12) },
	"pct":   func(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) },
	"esc":   url.PathEscape,
	"qesc":  url.QueryEscape,
	"shape": func(s []int) string {
		if s == nil {
			return "any"
		}
		return schema.FormatShape(s)
	},
}

// tableRow is one line of the catalog page.
type tableRow struct {
	Name, URL      string
	Rows           int64
	Stored         int64
	LastCommit     string
	LastTime       time.Time
	Error          string
	Created        time.Time
	VersionShortID string
}

func (s *Server) handleRoot(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if s.src.cat == nil {
		http.Redirect(w, r, "/t/"+url.PathEscape(s.src.single)+"/", http.StatusFound)
		return
	}
	tables, err := s.src.cat.Tables(ctx)
	if err != nil {
		s.fail(w, r, err, true)
		return
	}
	var rows []tableRow
	for _, ti := range tables {
		tr := tableRow{Name: ti.Name, URL: storage.Redact(ti.URL), Created: ti.Created}
		t, err := s.src.table(ctx, ti.Name)
		if err == nil {
			err = t.head.Refresh(ctx)
		}
		if err != nil {
			tr.Error = oneLine(err.Error())
			rows = append(rows, tr)
			continue
		}
		log, err := t.head.Log(ctx)
		if err != nil {
			tr.Error = oneLine(err.Error())
			rows = append(rows, tr)
			continue
		}
		tr.Rows = t.head.Len()
		for _, c := range t.head.Columns() {
			tr.Stored += c.StoredBytes
		}
		if len(log) > 0 {
			tr.LastCommit, tr.LastTime = log[0].Message, log[0].Time
			tr.VersionShortID = log[0].ID
		}
		rows = append(rows, tr)
	}
	s.render(w, r, "root.html", map[string]any{"Title": "tables", "Tables": rows})
}

// colStats are the statistics of one column on the dataset page.
type colStats struct {
	schema.Entry
	KindName string
	Nulls    int64
	Ratio    float64
	Hist     []histBar
	HistRows int64
	Counted  int64 // rows whose nulls were counted
}

// countNulls counts each column's null samples, by uid, in the first
// histCap rows, from the row metadata alone (no sample is read).
func countNulls(ctx context.Context, d *loch.Dataset) (map[int]int64, error) {
	sc, err := scan(ctx, d)
	if err != nil {
		return nil, err
	}
	n := min(d.Len(), histCap)
	out := map[int]int64{}
	cols := sc.Schema().Columns
	cursors := make([]*loch.SlotCursor, len(cols))
	for i, c := range cols {
		cursors[i] = sc.SlotCursor(c.UID)
	}
	var buf []loch.RowLoc
	for lo := int64(0); lo < n; lo += 4096 {
		locs, err := sc.LocateRange(lo, min(n, lo+4096), buf[:0])
		if err != nil {
			return nil, err
		}
		buf = locs
		for _, r := range locs {
			for i, cur := range cursors {
				if cur.Slot(r).Null() {
					out[cols[i].UID]++
				}
			}
		}
	}
	return out, nil
}

type histBar struct {
	Name  string
	Count int64
	Pct   float64
}

// histCap bounds the rows read for a class histogram.
const histCap = 1 << 20

func (s *Server) stats(ctx context.Context, t *table, d *loch.Dataset) ([]colStats, error) {
	k := verKey{t.name, d.Version()}
	s.src.mu.Lock()
	st, ok := s.src.stats.Get(k)
	s.src.mu.Unlock()
	if ok {
		return st, nil
	}
	cols := d.Columns()
	// The stored statistics count every live row (format 1.9: samples
	// and class counts); a column whose counts cannot be those of the
	// live rows (written before 1.9, with deletes) is counted from the
	// rows, up to histCap of them.
	var nulls map[int]int64
	for _, c := range cols {
		if c.Samples > d.Len() && nulls == nil {
			var err error
			if nulls, err = countNulls(ctx, d); err != nil {
				return nil, err
			}
		}
	}
	for _, c := range cols {
		cs := colStats{Entry: c, KindName: kindOf(&c.Column), Nulls: d.Len() - c.Samples, Counted: d.Len()}
		if c.Samples > d.Len() {
			cs.Nulls, cs.Counted = nulls[c.UID], min(d.Len(), histCap)
		}
		if c.StoredBytes > 0 {
			cs.Ratio = float64(c.RawBytes) / float64(c.StoredBytes)
		}
		if c.Kind == schema.ClassLabel {
			if c.Classes != nil {
				cs.Hist, cs.HistRows = storedHistogram(&c), d.Len()
			} else {
				hist, rows, err := classHistogram(ctx, d, &c.Column)
				if err != nil {
					return nil, err
				}
				cs.Hist, cs.HistRows = hist, rows
			}
		}
		st = append(st, cs)
	}
	s.src.mu.Lock()
	s.src.stats.Add(k, st, 1)
	s.src.mu.Unlock()
	return st, nil
}

// storedHistogram is a class-label column's histogram from its stored
// class counts, which cover every live row.
func storedHistogram(c *schema.Entry) []histBar {
	var total int64
	for _, n := range c.Classes.Counts {
		total += n
	}
	total += c.Classes.Other
	var out []histBar
	for v, n := range c.Classes.Counts {
		if n > 0 {
			out = append(out, histBar{Name: className(&c.Column, int64(v)), Count: n, Pct: 100 * float64(n) / float64(max(total, 1))})
		}
	}
	if c.Classes.Other > 0 {
		out = append(out, histBar{Name: className(&c.Column, -1), Count: c.Classes.Other, Pct: 100 * float64(c.Classes.Other) / float64(max(total, 1))})
	}
	sortBars(out)
	return out
}

// sortBars orders a histogram by count, then name.
func sortBars(out []histBar) {
	sort.Slice(out, func(i, j int) bool {
		if out[i].Count != out[j].Count {
			return out[i].Count > out[j].Count
		}
		return out[i].Name < out[j].Name
	})
}

// classHistogram counts the labels of a class-label column over its
// first histCap rows, read in ranges.
func classHistogram(ctx context.Context, d *loch.Dataset, c *schema.Column) ([]histBar, int64, error) {
	cr, err := d.Column(c.Name)
	if err != nil {
		return nil, 0, err
	}
	n := min(d.Len(), histCap)
	counts := map[int64]int64{}
	var total int64
	for lo := int64(0); lo < n; lo += 4096 {
		smps, err := cr.ReadRange(ctx, lo, min(n, lo+4096))
		if err != nil {
			return nil, 0, err
		}
		for _, smp := range smps {
			if smp.Null {
				continue
			}
			for _, v := range labels(c, smp) {
				counts[v]++
				total++
			}
		}
	}
	var out []histBar
	for v, k := range counts {
		out = append(out, histBar{Name: className(c, v), Count: k, Pct: 100 * float64(k) / float64(max(total, 1))})
	}
	sortBars(out)
	return out, n, nil
}

// view is what the dataset page and the grid show: a version, and the
// rows of a query or saved selection (nil positions: every row).
type view struct {
	t         *table
	d         *loch.Dataset
	ref       string
	q, sel    string
	positions []int64
}

func (v *view) len() int64 {
	if v.positions == nil && v.q == "" && v.sel == "" {
		return v.d.Len()
	}
	return int64(len(v.positions))
}

// openView reads ref (or v), q and sel.
func (s *Server) openView(ctx context.Context, r *http.Request) (*view, error) {
	q := r.URL.Query()
	t, err := s.src.table(ctx, r.PathValue("table"))
	if err != nil {
		return nil, err
	}
	vw := &view{t: t, ref: q.Get("ref"), q: strings.TrimSpace(q.Get("q")), sel: q.Get("sel")}
	if vw.q != "" && vw.sel != "" {
		return nil, badf("give q or sel, not both")
	}
	version := q.Get("v")
	if version == "" {
		if version, err = t.resolve(ctx, vw.ref); err != nil {
			return nil, err
		}
	}
	var selection *loch.Selection
	switch {
	case vw.sel != "":
		if selection, err = t.head.Selection(ctx, vw.sel); err != nil {
			return nil, err
		}
		version = selection.Version
	case vw.q != "":
		d, err := s.src.at(ctx, t, version)
		if err != nil {
			return nil, err
		}
		if selection, err = s.query(ctx, t, d, vw.q); err != nil {
			return nil, err
		}
		version = selection.Version
	}
	if vw.d, err = s.src.at(ctx, t, version); err != nil {
		return nil, err
	}
	if selection != nil {
		vw.positions = []int64{}
		if len(selection.RowIDs) > 0 {
			sc, err := scan(ctx, vw.d)
			if err != nil {
				return nil, err
			}
			if vw.positions, err = sc.Positions(selection.RowIDs); err != nil {
				return nil, err
			}
		}
	}
	return vw, nil
}

// forbidden matches what the query box may not name: functions that
// read files or the environment, other datasets, and quoted paths in FROM.
var forbidden = regexp.MustCompile(`(?i)\b(read_\w+|\w*_scan|glob|getenv|loch_file|parquet_\w+|sniff_csv|query|query_table|json_execute_serialized_sql|duckdb_\w+|pragma_\w+|current_setting|attach|copy|install|load|export|import|pragma|set)\s*\(|\b(from|join)\s*\(?\s*['"]|;`)

// checkSQL refuses a query the viewer will not run.
func checkSQL(q string) error {
	if len(q) > maxQuery {
		return badf("query: %d bytes, want at most %d", len(q), maxQuery)
	}
	l := strings.ToLower(strings.TrimLeft(q, " \t\r\n("))
	if !(strings.HasPrefix(l, "select") || strings.HasPrefix(l, "with") || strings.HasPrefix(l, "from")) {
		return badf("query: the viewer runs SELECT queries only")
	}
	if m := forbidden.FindString(q); m != "" {
		return badf("query: %q is not allowed in the viewer (it reads only this dataset or catalog)", strings.TrimSpace(m))
	}
	return nil
}

// query runs q over d (a dataset) or, for a catalog, through sqlcat with
// t as the base table (at its head, whatever d's version); the selection is
// of t's rows. Results are cached by table, version and SQL, so paging
// through a query's grid runs it once. The cached selection is shared:
// callers must not modify it.
func (s *Server) query(ctx context.Context, t *table, d *loch.Dataset, q string) (*loch.Selection, error) {
	if err := checkSQL(q); err != nil {
		return nil, err
	}
	k := selKey{t.name, d.Version(), q}
	if s.src.cat != nil { // sqlcat reads main's head
		v, err := t.resolve(ctx, "")
		if err != nil {
			return nil, err
		}
		k.version = v
	}
	s.src.mu.Lock()
	sel, ok := s.src.sels.Get(k)
	s.src.mu.Unlock()
	if ok {
		return sel, nil
	}
	sel, err := s.runQuery(ctx, t, d, q)
	if err != nil {
		return nil, err
	}
	s.src.mu.Lock()
	s.src.sels.Add(k, sel, int64(8*len(sel.RowIDs)+len(q)+64))
	s.src.mu.Unlock()
	return sel, nil
}

// runQuery runs a checked query (see query).
func (s *Server) runQuery(ctx context.Context, t *table, d *loch.Dataset, q string) (*loch.Selection, error) {
	if s.src.cat == nil {
		sel, err := query.Select(ctx, d, sqlcat.PostgresOperators(q), query.Options{Open: s.src.opts, Sandbox: true})
		if err != nil {
			return nil, fmt.Errorf("query: %w", err)
		}
		return sel, nil
	}
	sess := sqlcat.NewSession(s.src.cat)
	sess.Sandbox = true
	sel, _, err := sess.Select(ctx, q, nil, t.name)
	if err != nil {
		return nil, fmt.Errorf("query: %w", err)
	}
	return sel, nil
}

func (s *Server) handleDataset(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	vw, err := s.openView(ctx, r)
	if err != nil {
		s.fail(w, r, err, true)
		return
	}
	refs, err := vw.t.head.Refs(ctx)
	if err != nil {
		s.fail(w, r, err, true)
		return
	}
	sels, err := vw.t.head.Selections(ctx)
	if err != nil {
		s.fail(w, r, err, true)
		return
	}
	st, err := s.stats(ctx, vw.t, vw.d)
	if err != nil {
		s.fail(w, r, err, true)
		return
	}
	log, err := vw.d.Log(ctx)
	if err != nil {
		s.fail(w, r, err, true)
		return
	}
	if len(log) > 20 {
		log = log[:20]
	}
	gridQ := url.Values{"v": {vw.d.Version()}, "limit": {strconv.Itoa(defaultPage)}}
	if vw.q != "" {
		gridQ.Set("q", vw.q)
	}
	if vw.sel != "" {
		gridQ.Set("sel", vw.sel)
	}
	s.render(w, r, "dataset.html", map[string]any{
		"Title": vw.t.name, "Table": vw.t.name, "URL": storage.Redact(vw.t.url),
		"Version": vw.d.Version(), "Ref": vw.ref, "Rows": vw.d.Len(), "Shown": vw.len(),
		"Refs": refs, "Selections": sels, "Stats": st, "Log": log,
		"Q": vw.q, "Sel": vw.sel, "GridSrc": template.URL("/t/" + url.PathEscape(vw.t.name) + "/grid?" + gridQ.Encode()),
	})
}

// handleGrid serves one page of grid cards as an HTML fragment.
func (s *Server) handleGrid(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	if q.Get("v") == "" {
		s.fail(w, r, badf("parameter v (the version id) is missing"), false)
		return
	}
	start, err := intParam(q, "start", 0, 0, 1<<62)
	if err != nil {
		s.fail(w, r, err, false)
		return
	}
	limit, err := intParam(q, "limit", defaultPage, 1, MaxPage)
	if err != nil {
		s.fail(w, r, err, false)
		return
	}
	size, err := intParam(q, "size", defaultThumb, minThumb, 512)
	if err != nil {
		s.fail(w, r, err, false)
		return
	}
	vw, err := s.openView(ctx, r)
	if err != nil {
		s.fail(w, r, err, false)
		return
	}
	n := vw.len()
	if start > n {
		s.fail(w, r, notFoundf("start %d out of range: the grid has %d rows", start, n), false)
		return
	}
	end := min(n, start+limit)
	var positions []int64
	if vw.positions != nil {
		positions = vw.positions[start:end]
	} else {
		for p := start; p < end; p++ {
			positions = append(positions, p)
		}
	}
	rows, err := s.rowViews(ctx, vw.t.name, vw.d, positions, int(size), false)
	if err != nil {
		s.fail(w, r, err, false)
		return
	}
	next := ""
	if end < n {
		nq := url.Values{}
		for k, v := range q {
			nq[k] = v
		}
		nq.Set("v", vw.d.Version())
		nq.Set("start", strconv.FormatInt(end, 10))
		nq.Set("limit", strconv.FormatInt(limit, 10))
		next = "/t/" + url.PathEscape(vw.t.name) + "/grid?" + nq.Encode()
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	if vw.q == "" && vw.sel == "" {
		w.Header().Set("Cache-Control", "private, max-age=3600")
	} else {
		w.Header().Set("Cache-Control", "no-store")
	}
	if err := s.pages.ExecuteTemplate(w, "grid.html", map[string]any{"Rows": rows, "Next": next, "Start": start}); err != nil {
		s.fail(w, r, err, false)
	}
}

func (s *Server) handleRow(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	t, d, err := s.version(ctx, r)
	if err != nil {
		s.fail(w, r, err, true)
		return
	}
	pos, err := rowParam(r.PathValue("pos"), d.Len())
	if err != nil {
		s.fail(w, r, err, true)
		return
	}
	rows, err := s.rowViews(ctx, t.name, d, []int64{pos}, 0, true)
	if err != nil {
		s.fail(w, r, err, true)
		return
	}
	for i := range rows[0].Cells {
		rows[0].Cells[i].Eager = true
	}
	link := func(p int64) string {
		if p < 0 || p >= d.Len() {
			return ""
		}
		return fmt.Sprintf("/t/%s/row/%d?v=%s", url.PathEscape(t.name), p, d.Version())
	}
	s.render(w, r, "row.html", map[string]any{"Title": fmt.Sprintf("%s row %d", t.name, pos), "Table": t.name, "Version": d.Version(),
		"Row": rows[0], "Rows": d.Len(), "Prev": link(pos - 1), "Next": link(pos + 1)})
}

// handleSave saves the query q at version v as selection name.
func (s *Server) handleSave(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	if err := r.ParseForm(); err != nil {
		s.fail(w, r, badf("bad form: %v", err), true)
		return
	}
	if !equal(r.PostForm.Get("csrf"), s.csrf) {
		s.fail(w, r, &badRequest{http.StatusForbidden, "the form token is missing or wrong: reload the page and save again"}, true)
		return
	}
	t, err := s.src.table(ctx, r.PathValue("table"))
	if err != nil {
		s.fail(w, r, err, true)
		return
	}
	name, q := strings.TrimSpace(r.PostForm.Get("name")), strings.TrimSpace(r.PostForm.Get("q"))
	if q == "" {
		s.fail(w, r, badf("nothing to save: run a query first"), true)
		return
	}
	d, err := s.src.at(ctx, t, r.PostForm.Get("v"))
	if err != nil {
		s.fail(w, r, err, true)
		return
	}
	sel, err := s.query(ctx, t, d, q)
	if err != nil {
		s.fail(w, r, err, true)
		return
	}
	saved := *sel // the cached result stays as it is
	if err := t.head.SaveSelection(ctx, name, &saved); err != nil {
		s.fail(w, r, err, true)
		return
	}
	http.Redirect(w, r, "/t/"+url.PathEscape(t.name)+"/?sel="+url.QueryEscape(name), http.StatusSeeOther)
}
