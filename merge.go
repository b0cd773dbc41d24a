package loch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/schema"
)

// Merge strategies for rows changed on both sides.
const (
	MergeFail   = "fail"   // change nothing and report the conflicts (default)
	MergeOurs   = "ours"   // keep the target branch's rows
	MergeTheirs = "theirs" // take the source's rows
)

// MergeOptions configures Merge.
type MergeOptions struct {
	Strategy string // MergeFail (default), MergeOurs or MergeTheirs
	Message  string // commit message; default "merge <src> into <branch>"
	// NoFastForward makes a merge commit even when the branch is an
	// ancestor of src, so that the branch moves by exactly one commit
	// (a SQL transaction's COMMIT, package sqlcat).
	NoFastForward bool
}

// Conflict is a row changed on both sides of a merge since their common
// ancestor.
type Conflict struct {
	ID            uint64   `json:"id"`
	Ours          string   `json:"ours"`   // ChangeModified or ChangeDeleted
	Theirs        string   `json:"theirs"` // ChangeModified or ChangeDeleted
	OursColumns   []string `json:"ours_columns,omitempty"`
	TheirsColumns []string `json:"theirs_columns,omitempty"`
}

// MergeResult reports a merge.
type MergeResult struct {
	Commit      string     `json:"commit"` // the target branch's head after the merge
	Base        string     `json:"base"`   // the common ancestor
	FastForward bool       `json:"fast_forward"`
	UpToDate    bool       `json:"up_to_date"` // nothing to merge
	Added       int64      `json:"added"`      // rows the merge brought in
	Deleted     int64      `json:"deleted"`
	Modified    int64      `json:"modified"`
	Columns     []string   `json:"columns_added"`
	Conflicts   []Conflict `json:"conflicts"`
}

// ConflictError is returned (wrapping ErrConflict) by a merge with strategy
// MergeFail when rows changed on both sides. Nothing was changed.
type ConflictError struct {
	Src, Dst  string
	Base      string // the common ancestor the changes were taken against
	Conflicts []Conflict
}

func (e *ConflictError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "merge %s into %s: %d rows changed on both sides", e.Src, e.Dst, len(e.Conflicts))
	for i, c := range e.Conflicts {
		if i == 5 {
			fmt.Fprintf(&b, "; ...")
			break
		}
		fmt.Fprintf(&b, "; row %d: %s here %v, %s there %v", c.ID, c.Ours, c.OursColumns, c.Theirs, c.TheirsColumns)
	}
	b.WriteString("; nothing was changed (use strategy ours or theirs to resolve)")
	return b.String()
}

func (e *ConflictError) Unwrap() error { return ErrConflict }

// errUpToDate stops a merge that has nothing to change.
var errUpToDate = errors.New("up to date")

// Merge merges the version src names into the handle's branch: three-way
// by stable row id against their common ancestor. Rows appended on either
// side are kept; a row changed (updated or deleted) on one side takes that
// change; rows changed differently on both sides are conflicts, resolved by
// opts.Strategy (MergeFail: return a *ConflictError and change nothing).
// Columns added on either side are merged; one name added on both sides is
// a conflict. When the branch is an ancestor of src it moves to src (fast
// forward). No data is copied: the merge commit's manifest names the
// fragments of both sides with new deletion vectors. A Progress in ctx
// (see WithProgress) gets phase "merge" with the rows decided out of the
// rows that base, ours or theirs changed.
func (d *Dataset) Merge(ctx context.Context, src string, opts MergeOptions) (*MergeResult, error) {
	strategy := opts.Strategy
	switch strategy {
	case "":
		strategy = MergeFail
	case MergeFail, MergeOurs, MergeTheirs:
	default:
		return nil, invalidf("merge %s: strategy %q: want %s, %s or %s", d.url, strategy, MergeFail, MergeOurs, MergeTheirs)
	}
	d.wmu.Lock()
	defer d.wmu.Unlock()
	if d.ReadOnly() {
		return nil, d.readOnlyErr("merge")
	}
	if d.stage != nil && !d.stage.empty() {
		return nil, invalidf("merge %s into %s: writes are staged; commit or discard them first", src, d.url)
	}
	branch := d.Branch()
	var res *MergeResult
	root, err := d.updateRoot(ctx, "merge "+src+" into "+branch, func(root, next *manifest.Root) error {
		head, ok := root.Refs[headsPrefix+branch]
		if !ok {
			return fmt.Errorf("merge into %s: branch %q does not exist: %w", d.url, branch, ErrNotFound)
		}
		t, err := d.resolveIn(ctx, root, src)
		if err != nil {
			return err
		}
		base, err := d.mergeBase(ctx, head, t.commit)
		if err != nil {
			return err
		}
		res = &MergeResult{Base: base, Columns: []string{}, Conflicts: []Conflict{}}
		if base == t.commit {
			res.UpToDate, res.Commit = true, head
			return errUpToDate
		}
		snaps := make([]*snapshot, 3)
		for i, id := range []string{base, head, t.commit} {
			if snaps[i], err = d.loadSnapshot(ctx, id, 0); err != nil {
				return err
			}
		}
		m := &merger{d: d, b: snaps[0], o: snaps[1], t: snaps[2], strategy: strategy, res: res}
		man, err := m.merge(ctx)
		if err != nil {
			return err
		}
		if len(res.Conflicts) > 0 && strategy == MergeFail {
			return &ConflictError{Src: src, Dst: branch, Base: base, Conflicts: res.Conflicts}
		}
		if base == head && !opts.NoFastForward { // fast forward: the branch takes src's commit
			res.FastForward, res.Commit = true, t.commit
			next.Refs[headsPrefix+branch] = t.commit
			return nil
		}
		msg := opts.Message
		if msg == "" {
			msg = fmt.Sprintf("merge %s into %s", src, branch)
		}
		c := manifest.Commit{Parents: []string{head, t.commit}, Message: msg, Author: d.opts.author,
			Time: next.Time, Rows: man.Rows, Branch: branch}
		if res.Commit, err = d.writeCommit(ctx, man, c); err != nil {
			return err
		}
		next.Refs[headsPrefix+branch] = res.Commit
		next.NextColumnUID = max(next.NextColumnUID, man.NextColumnUID)
		return nil
	})
	if errors.Is(err, errUpToDate) {
		return res, nil
	}
	if err != nil {
		if strings.Contains(err.Error(), d.url) { // named once is enough
			return nil, fmt.Errorf("merge %s into %s: %w", src, branch, err)
		}
		return nil, fmt.Errorf("merge %s into %s of %s: %w", src, branch, d.url, err)
	}
	return res, d.moveTo(ctx, target{commit: res.Commit, branch: branch, seq: root.Seq})
}

// mergeBase returns the best common ancestor of two commits: of the common
// ancestors nearest to b, the one no other is an ancestor of, and of
// several such (criss-cross merges) the newest.
func (d *Dataset) mergeBase(ctx context.Context, a, b string) (string, error) {
	g := &commitGraph{d: d, commits: map[string]*manifest.Commit{}}
	ofA, err := g.ancestors(ctx, a, nil)
	if err != nil {
		return "", err
	}
	if ofA[b] {
		return b, nil
	}
	// Walk b's ancestry, stopping at commits a also has: those are the
	// candidates.
	reach, err := g.ancestors(ctx, b, ofA)
	if err != nil {
		return "", err
	}
	var cands []string
	for id := range reach {
		if ofA[id] && !slices.Contains(g.collected, id) {
			cands = append(cands, id)
		}
	}
	if len(cands) == 0 {
		if len(g.collected) > 0 {
			return "", fmt.Errorf("%s and %s have no common ancestor left: gc's version retention collected the history before %s (and %d more): %w",
				a, b, g.collected[0], len(g.collected)-1, ErrInvalidArgument)
		}
		return "", fmt.Errorf("%s and %s have no common ancestor: %w", a, b, ErrInvalidArgument)
	}
	best, err := g.undominated(ctx, cands)
	if err != nil {
		return "", err
	}
	slices.SortFunc(best, func(x, y string) int {
		if t := g.commits[y].Time.Compare(g.commits[x].Time); t != 0 {
			return t
		}
		return strings.Compare(x, y)
	})
	return best[0], nil
}

// commitGraph reads commits once each, for ancestry questions. A commit
// that gc's version retention collected (docs/format.md §5.2) has no
// parents here, and is listed in collected.
type commitGraph struct {
	d         *Dataset
	commits   map[string]*manifest.Commit
	collected []string
}

func (g *commitGraph) get(ctx context.Context, id string) (*manifest.Commit, error) {
	if c, ok := g.commits[id]; ok {
		return c, nil
	}
	c, err := g.d.readParent(ctx, id)
	if err != nil {
		return nil, err
	}
	if c == nil {
		g.collected = append(g.collected, id)
		c = &manifest.Commit{}
	}
	g.commits[id] = c
	return c, nil
}

// ancestors returns id and its ancestors, not going past the commits in
// stop (which are included when reached).
func (g *commitGraph) ancestors(ctx context.Context, id string, stop map[string]bool) (map[string]bool, error) {
	seen := map[string]bool{id: true}
	queue := []string{id}
	for len(queue) > 0 {
		id := queue[0]
		queue = queue[1:]
		if stop[id] {
			continue
		}
		c, err := g.get(ctx, id)
		if err != nil {
			return nil, err
		}
		for _, p := range c.Parents {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	return seen, nil
}

// undominated returns the commits of cands that are no ancestor of another
// of cands.
func (g *commitGraph) undominated(ctx context.Context, cands []string) ([]string, error) {
	var out []string
	for _, c := range cands {
		dominated := false
		for _, o := range cands {
			if o == c {
				continue
			}
			anc, err := g.ancestors(ctx, o, nil)
			if err != nil {
				return nil, err
			}
			if anc[c] {
				dominated = true
				break
			}
		}
		if !dominated {
			out = append(out, c)
		}
	}
	return out, nil
}

// merger computes a three-way merge of snapshots: base b, ours o, theirs t.
type merger struct {
	d        *Dataset
	b, o, t  *snapshot
	strategy string
	res      *MergeResult
	// keep lists, per fragment identity, the offsets live in the result;
	// slots points each fragment of ours and theirs at its identity's list.
	keep  map[string]*[]int64
	slots map[*snapshot][]*[]int64
	// same3 holds the rowsKeys of the fragments all three hold alike.
	same3 map[string]bool
}

// merge decides every row and returns the merged manifest (without writing
// it); conflicts are recorded in m.res.
func (m *merger) merge(ctx context.Context) (manifest.Manifest, error) {
	sch, added, err := mergeSchema(&m.b.man, &m.o.man, &m.t.man)
	if err != nil {
		return manifest.Manifest{}, err
	}
	m.res.Columns = append(m.res.Columns, added...)
	rows, same, err := m.d.changedRows(ctx, m.b, m.o, m.t)
	if err != nil {
		return manifest.Manifest{}, err
	}
	m.same3 = same
	m.index()
	cols := [3][]column{
		unionColumns(m.b.man.Schema, m.o.man.Schema),
		unionColumns(m.b.man.Schema, m.t.man.Schema),
		unionColumns(m.o.man.Schema, m.t.man.Schema),
	}
	var total, done int64
	_ = joinRows(rows, func(uint64, []*rowLoc) error { total++; return nil })
	progress := progressOf(ctx)
	progress("merge", 0, total)
	err = joinRows(rows, func(id uint64, at []*rowLoc) error {
		if done++; done%1024 == 0 || done == total {
			progress("merge", done, total)
		}
		return m.row(ctx, id, at[0], at[1], at[2], cols)
	})
	if err != nil {
		return manifest.Manifest{}, err
	}
	return m.manifest(ctx, sch)
}

// index gives every fragment of ours and theirs its identity's list of
// kept offsets.
func (m *merger) index() {
	m.keep, m.slots = map[string]*[]int64{}, map[*snapshot][]*[]int64{}
	for _, s := range []*snapshot{m.o, m.t} {
		for _, f := range s.frags {
			p := m.keep[f.ident()]
			if p == nil {
				p = new([]int64)
				m.keep[f.ident()] = p
			}
			m.slots[s] = append(m.slots[s], p)
		}
	}
}

// row decides one row from its locations in base, ours and theirs (nil
// where absent); cols are the union columns of base/ours, base/theirs and
// ours/theirs.
func (m *merger) row(ctx context.Context, id uint64, lb, lo, lt *rowLoc, cols [3][]column) error {
	switch {
	case m.same(m.o, lo, m.t, lt), m.same(m.b, lb, m.t, lt):
		m.choose(m.o, lo)
		return nil
	case m.same(m.b, lb, m.o, lo) && !m.variants(m.b, lb, m.t, lt):
		m.take(lo, lt)
		return nil
	}
	// Changed on both sides, differently placed, or placed by theirs in
	// another variant of the base's fragment (an update in place of
	// other rows gives it other extensions): compare the values.
	var oc, tc []string
	var err error
	if lb != nil && lt != nil {
		if tc, err = m.d.changedColumns(ctx, m.b, lb, m.t, lt, cols[1]); err != nil {
			return err
		}
		if len(tc) == 0 { // theirs holds the base's values: keep ours
			m.choose(m.o, lo)
			return nil
		}
	}
	if lb != nil && lo != nil {
		if m.same(m.b, lb, m.o, lo) {
			oc = nil
		} else if oc, err = m.d.changedColumns(ctx, m.b, lb, m.o, lo, cols[0]); err != nil {
			return err
		}
		if len(oc) == 0 { // ours holds the base's values: take theirs
			m.take(lo, lt)
			return nil
		}
	}
	if lo != nil && lt != nil {
		diff, err := m.d.changedColumns(ctx, m.o, lo, m.t, lt, cols[2])
		if err != nil {
			return err
		}
		if len(diff) == 0 { // the same change on both sides
			m.choose(m.o, lo)
			return nil
		}
	}
	m.res.Conflicts = append(m.res.Conflicts, Conflict{ID: id, Ours: change(lo), Theirs: change(lt), OursColumns: oc, TheirsColumns: tc})
	if m.strategy == MergeTheirs {
		m.take(lo, lt)
	} else {
		m.choose(m.o, lo)
	}
	return nil
}

// variants reports whether two sides hold a row at the same offset of
// the same fragment object (and id_start) with other extensions: an
// update in place of the fragment on one side, which may or may not have
// changed this row.
func (m *merger) variants(sx *snapshot, x *rowLoc, sy *snapshot, y *rowLoc) bool {
	if x == nil || y == nil || x.off != y.off {
		return false
	}
	fx, fy := sx.frags[x.frag].ref, sy.frags[y.frag].ref
	return fx.Key == fy.Key && equalIDStart(fx.IDStart, fy.IDStart)
}

func equalIDStart(a, b *uint64) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return *a == *b
}

// manifest assembles the merged manifest from sch, the merged schema and
// statistics (mergeSchema): every fragment of ours and theirs, once, with
// the rows decided for it.
func (m *merger) manifest(ctx context.Context, sch manifest.Manifest) (manifest.Manifest, error) {
	man := manifest.Manifest{Schema: sch.Schema, Stats: sch.Stats, NextColumnUID: max(m.o.man.NextColumnUID, m.t.man.NextColumnUID), Fragments: []manifest.FragmentRef{}}
	emitted := map[string]bool{}
	emit := func(f *fragState) error {
		id := f.ident()
		if emitted[id] {
			return nil
		}
		emitted[id] = true
		ref, err := m.fragment(ctx, f)
		if err != nil {
			return err
		}
		if ref.Live() > 0 {
			man.Fragments = append(man.Fragments, ref)
			man.Rows += ref.Live()
		}
		return nil
	}
	// Theirs' variants of a fragment of ours (the same object with other
	// extensions: updated in place) follow it, so that the rows they hold
	// keep their place.
	variants := map[string][]*fragState{}
	for _, f := range m.t.frags {
		k := fragIdent(f.ref.Key, f.ref.IDStart, nil)
		variants[k] = append(variants[k], f)
	}
	for _, f := range m.o.frags {
		if err := emit(f); err != nil {
			return manifest.Manifest{}, err
		}
		for _, v := range variants[fragIdent(f.ref.Key, f.ref.IDStart, nil)] {
			if err := emit(v); err != nil {
				return manifest.Manifest{}, err
			}
		}
	}
	for _, f := range m.t.frags {
		if err := emit(f); err != nil {
			return manifest.Manifest{}, err
		}
	}
	return man, nil
}

// change names what a side did to a row it changed.
func change(l *rowLoc) string {
	if l == nil {
		return ChangeDeleted
	}
	return ChangeModified
}

// same reports whether two sides hold a row at the same place (or both
// lack it).
func (m *merger) same(sx *snapshot, x *rowLoc, sy *snapshot, y *rowLoc) bool {
	if x == nil || y == nil {
		return x == nil && y == nil
	}
	return x.off == y.off && sx.frags[x.frag].ident() == sy.frags[y.frag].ident()
}

// choose keeps the row at l of snapshot s in the result (nothing if nil).
func (m *merger) choose(s *snapshot, l *rowLoc) {
	if l != nil {
		p := m.slots[s][l.frag]
		*p = append(*p, l.off)
	}
}

// take applies theirs' version of a row (lt; nil deletes it) over ours (lo)
// and counts it.
func (m *merger) take(lo, lt *rowLoc) {
	switch {
	case lt == nil:
		m.res.Deleted++
	case lo == nil:
		m.res.Added++
	default:
		m.res.Modified++
	}
	m.choose(m.t, lt)
}

// fragment returns f's reference with the result's live rows.
func (m *merger) fragment(ctx context.Context, f *fragState) (manifest.FragmentRef, error) {
	ref := f.ref
	keep := *m.keep[f.ident()]
	decided := len(keep) > 0
	if !decided && m.same3[f.rowsKey()] {
		return ref, nil // the same rows in all three: untouched
	}
	if err := f.load(ctx, m.d); err != nil {
		return ref, err
	}
	slices.Sort(keep)
	var deleted []int64
	for off, k := int64(0), 0; off < ref.Rows; off++ {
		if k < len(keep) && keep[k] == off {
			k++
			continue
		}
		deleted = append(deleted, off)
	}
	if slices.Equal(deleted, f.deleted) {
		return ref, nil
	}
	ref.Deletions, ref.Deleted = "", int64(len(deleted))
	if len(deleted) > 0 && len(deleted) < int(ref.Rows) {
		key, err := m.d.putObject(ctx, keys.Deletion, manifest.KindDeletion, manifest.Deletion{Offsets: deleted})
		if err != nil {
			return ref, err
		}
		ref.Deletions = key
	}
	return ref, nil
}

// mergeSchema merges the schemas of ours and theirs against base into a
// manifest's schema and statistics (its other fields left zero): columns
// theirs added are appended with their statistics; the others' statistics
// add theirs' growth since base. A name added on both sides (with
// different uids) is a conflict.
func mergeSchema(b, o, t *manifest.Manifest) (manifest.Manifest, []string, error) {
	out := manifest.Manifest{Schema: o.Schema.Clone(), Stats: o.CloneStats()}
	var added []string
	for _, tc := range t.Schema.Columns {
		if _, ok := out.Schema.ByUID(tc.UID); !ok {
			if oc, ok := out.Schema.Column(tc.Name); ok {
				return manifest.Manifest{}, nil, fmt.Errorf("column %q was added on both sides (as column %d and %d); add it on one side and merge it into the other: %w",
					tc.Name, oc.UID, tc.UID, ErrConflict)
			}
			out.Schema.Columns = append(out.Schema.Columns, tc)
			*out.StatsOf(tc.UID) = t.ColumnStats(tc.UID)
			added = append(added, tc.Name)
			continue
		}
		if _, ok := b.Schema.ByUID(tc.UID); !ok {
			continue
		}
		ts, bs, c := t.ColumnStats(tc.UID), b.ColumnStats(tc.UID), out.StatsOf(tc.UID)
		// Theirs' change since the base, signed: with counts of live rows
		// (format 1.9) ours plus theirs' change is exact where the sides
		// changed different rows, and an estimate where a conflict was
		// resolved for one side.
		c.Merge(schema.Stats{MinShape: ts.MinShape, MaxShape: ts.MaxShape, Samples: ts.Samples - bs.Samples,
			RawBytes: ts.RawBytes - bs.RawBytes, StoredBytes: ts.StoredBytes - bs.StoredBytes, Classes: ts.Classes.Sub(bs.Classes)})
		c.Samples, c.RawBytes, c.StoredBytes = max(c.Samples, 0), max(c.RawBytes, 0), max(c.StoredBytes, 0)
	}
	return out, added, nil
}
