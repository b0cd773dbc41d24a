package viewer

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"sort"

	"github.com/lochdata/loch"
)

// diffPage is the row changes one diff page lists.
const diffPage = 50

// graphRow is one commit of the commit graph with its place in it.
type graphRow struct {
	loch.CommitInfo
	Lane  int
	Y     int
	X     int
	Refs  []loch.Ref
	Merge bool
}

// edge is a line of the graph from a commit to a parent.
type edge struct{ X1, Y1, X2, Y2 int }

// Graph geometry, in pixels.
const (
	rowHeight = 32
	laneWidth = 18
)

// graph lays out the commits reachable from every branch and tag, newest
// first: each commit on a lane (a branch's line of first parents stays on
// one lane), with an edge to each parent.
func (s *Server) graph(ctx context.Context, t *table) ([]graphRow, []edge, int, error) {
	refs, err := t.head.Refs(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	byID := map[string]loch.CommitInfo{}
	for _, ref := range refs {
		d, err := s.src.at(ctx, t, ref.Commit)
		if err != nil {
			return nil, nil, 0, err
		}
		log, err := d.Log(ctx)
		if err != nil {
			return nil, nil, 0, err
		}
		for _, c := range log {
			byID[c.ID] = c
		}
	}
	commits := make([]loch.CommitInfo, 0, len(byID))
	for _, c := range byID {
		commits = append(commits, c)
	}
	sort.Slice(commits, func(i, j int) bool {
		if !commits[i].Time.Equal(commits[j].Time) {
			return commits[i].Time.After(commits[j].Time)
		}
		return commits[i].ID > commits[j].ID
	})
	var lanes []string // the commit each lane waits for; "" is free
	place := func(id string) int {
		if i := slices.Index(lanes, id); i >= 0 {
			return i
		}
		if i := slices.Index(lanes, ""); i >= 0 {
			lanes[i] = id
			return i
		}
		lanes = append(lanes, id)
		return len(lanes) - 1
	}
	rows := make([]graphRow, len(commits))
	at := map[string]int{}
	width := 1
	for i, c := range commits {
		lane := place(c.ID)
		for j := range lanes { // other lanes converging here are freed
			if j != lane && lanes[j] == c.ID {
				lanes[j] = ""
			}
		}
		lanes[lane] = ""
		if len(c.Parents) > 0 {
			if slices.Index(lanes, c.Parents[0]) < 0 {
				lanes[lane] = c.Parents[0]
			}
			for _, p := range c.Parents[1:] {
				place(p)
			}
		}
		width = max(width, len(lanes))
		rows[i] = graphRow{CommitInfo: c, Lane: lane, X: laneWidth/2 + lane*laneWidth, Y: rowHeight/2 + i*rowHeight, Merge: len(c.Parents) > 1}
		at[c.ID] = i
	}
	for _, ref := range refs {
		if i, ok := at[ref.Commit]; ok {
			rows[i].Refs = append(rows[i].Refs, ref)
		}
	}
	var edges []edge
	for _, r := range rows {
		for _, p := range r.Parents {
			if j, ok := at[p]; ok {
				edges = append(edges, edge{r.X, r.Y, rows[j].X, rows[j].Y})
			}
		}
	}
	return rows, edges, width * laneWidth, nil
}

func (s *Server) handleLog(w http.ResponseWriter, r *http.Request) {
	s.tablePage(w, r, "log.html", func(ctx context.Context, t *table) (map[string]any, error) {
		rows, edges, width, err := s.graph(ctx, t)
		if err != nil {
			return nil, err
		}
		return map[string]any{"Title": t.name + " versions", "Table": t.name, "Commits": rows, "Edges": edges,
			"Width": width, "Height": len(rows) * rowHeight, "RowHeight": rowHeight}, nil
	})
}

// tablePage renders the page tmpl of the table the path names with the
// data that page gives, or the error of either.
func (s *Server) tablePage(w http.ResponseWriter, r *http.Request, tmpl string, page func(context.Context, *table) (map[string]any, error)) {
	ctx := r.Context()
	t, err := s.src.table(ctx, r.PathValue("table"))
	var data map[string]any
	if err == nil {
		data, err = page(ctx, t)
	}
	if err != nil {
		s.fail(w, r, err, true)
		return
	}
	s.render(w, r, tmpl, data)
}

// diffRow is one changed row: its cells in the older version (deleted,
// modified) and the newer (added, modified).
type diffRow struct {
	ID       uint64
	Change   string
	From, To *rowView
}

func (s *Server) handleDiff(w http.ResponseWriter, r *http.Request) {
	s.tablePage(w, r, "diff.html", func(ctx context.Context, t *table) (map[string]any, error) {
		return s.diffData(ctx, t, r.URL.Query())
	})
}

// diffData is the data of table t's diff page for the query q: the rows
// changed from version from (default: the first parent of to) to version
// to (default: the head), diffPage of them from row id start on.
func (s *Server) diffData(ctx context.Context, t *table, q url.Values) (map[string]any, error) {
	start, err := intParam(q, "start", 0, 0, 1<<62)
	if err != nil {
		return nil, err
	}
	toV, err := t.resolve(ctx, q.Get("to"))
	if err != nil {
		return nil, err
	}
	dTo, err := s.src.at(ctx, t, toV)
	if err != nil {
		return nil, err
	}
	from := q.Get("from")
	var fromV string
	if from == "" {
		fromV, err = parentVersion(ctx, dTo, toV)
	} else {
		fromV, err = t.resolve(ctx, from)
	}
	if err != nil {
		return nil, err
	}
	dFrom, err := s.src.at(ctx, t, fromV)
	if err != nil {
		return nil, err
	}
	diff, err := dTo.Diff(ctx, fromV, toV, loch.DiffOptions{Start: uint64(start), Limit: diffPage})
	if err != nil {
		return nil, err
	}
	rows, err := s.diffRows(ctx, t.name, dFrom, dTo, diff.Rows)
	if err != nil {
		return nil, err
	}
	next := ""
	if diff.Next != nil {
		next = fmt.Sprintf("/t/%s/diff?from=%s&to=%s&start=%d", url.PathEscape(t.name), fromV, toV, *diff.Next)
	}
	refs, err := t.head.Refs(ctx)
	if err != nil {
		return nil, err
	}
	return map[string]any{"Title": t.name + " diff", "Table": t.name, "Diff": diff, "Rows": rows,
		"From": fromV, "To": toV, "FromRef": from, "ToRef": q.Get("to"), "Next": next, "Refs": refs}, nil
}

// parentVersion is the first parent of version toV, which d is at, for a
// diff given no from version.
func parentVersion(ctx context.Context, d *loch.Dataset, toV string) (string, error) {
	log, err := d.Log(ctx)
	if err != nil {
		return "", err
	}
	if len(log) == 0 || len(log[0].Parents) == 0 {
		return "", badf("version %s has no parent: give from=REF", toV)
	}
	if slices.Contains(log[0].Expired, log[0].Parents[0]) {
		return "", badf("the parent %s of version %s was collected by gc's version retention: give from=REF", log[0].Parents[0], toV)
	}
	return log[0].Parents[0], nil
}

// diffRows shows each changed row as it was in dFrom (unless added) and
// is in dTo (unless deleted), its changed cells marked.
func (s *Server) diffRows(ctx context.Context, table string, dFrom, dTo *loch.Dataset, changes []loch.RowChange) ([]diffRow, error) {
	rows := make([]diffRow, len(changes))
	var err error
	for i, rc := range changes {
		rows[i] = diffRow{ID: rc.ID, Change: rc.Change}
		if rc.Change != loch.ChangeAdded {
			if rows[i].From, err = s.diffSide(ctx, table, dFrom, rc.ID, rc.Columns); err != nil {
				return nil, err
			}
		}
		if rc.Change != loch.ChangeDeleted {
			if rows[i].To, err = s.diffSide(ctx, table, dTo, rc.ID, rc.Columns); err != nil {
				return nil, err
			}
		}
	}
	return rows, nil
}

// diffSide is row id of d, the cells of the changed columns marked.
func (s *Server) diffSide(ctx context.Context, table string, d *loch.Dataset, id uint64, changed []string) (*rowView, error) {
	sc, err := scan(ctx, d)
	if err != nil {
		return nil, err
	}
	pos, err := sc.Positions([]uint64{id})
	if err != nil {
		return nil, err
	}
	rv, err := s.rowViews(ctx, table, d, pos, 160, false)
	if err != nil {
		return nil, err
	}
	for i := range rv[0].Cells {
		rv[0].Cells[i].Changed = slices.Contains(changed, rv[0].Cells[i].Col)
		rv[0].Cells[i].Eager = true
	}
	return &rv[0], nil
}
