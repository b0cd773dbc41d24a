package loch

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/schema"
)

// This file holds updates in place (docs/format.md §2.5, "Updates"): an
// updated row keeps its row id and its position; only the chunks that hold
// its updated columns' values are written again, and the fragment's
// reference names them through one extension.

// Update stages new values for some columns of the row with this id; the
// other columns keep their values. The row keeps its id and its position.
// At commit, each chunk that holds an updated value is written again with
// it (the other chunks, and the row's other columns, are not rewritten).
// Updating a row twice before a commit keeps the last value of each
// column; a row deleted in this commit cannot be updated. Sample bytes are
// copied before Update returns.
func (d *Dataset) Update(ctx context.Context, id uint64, row Row) error {
	d.wmu.Lock()
	defer d.wmu.Unlock()
	st, err := d.stagingLocked(ctx)
	if err != nil {
		return err
	}
	if err := st.checkUnstaged(id); err != nil {
		return err
	}
	if _, _, err := d.findRow(ctx, st.base, id); err != nil {
		return err
	}
	preps, err := st.prepareRows(ctx, []Row{row})
	if err != nil {
		return err
	}
	if st.patches == nil {
		st.patches = map[uint64]map[int]prepared{}
	}
	p := st.patches[id]
	if p == nil {
		p = map[int]prepared{}
		st.patches[id] = p
	}
	for ci := range st.cols {
		if _, ok := row[st.cols[ci].Name]; ok {
			// Kept until the commit: copied, as the caller may reuse its
			// buffers once Update returns (prepare keeps unencoded bytes).
			v := preps[0][ci]
			v.data = bytes.Clone(v.data)
			p[st.cols[ci].UID] = v
		}
	}
	return nil
}

// storedUnit is one chunk of a column's chunk list, or the consecutive
// chunks of one split sample: refs[lo:hi], holding fragment rows
// [first, first+rows).
type storedUnit struct {
	lo, hi      int
	first, rows int64
}

// unitsOf cuts a column's chunk list into units.
func unitsOf(refs []manifest.ChunkRef) []storedUnit {
	var out []storedUnit
	for i := 0; i < len(refs); {
		n := max(refs[i].Parts, 1)
		out = append(out, storedUnit{lo: i, hi: i + n, first: refs[i].First, rows: refs[i].Rows})
		i += n
	}
	return out
}

// readUnit reads the samples of one unit of column c as stored and calls
// fn with each one's fragment offset, in order. The prepared data may
// alias a chunk: fn copies what it keeps (staging does).
func (d *Dataset) readUnit(ctx context.Context, c *schema.Column, refs []manifest.ChunkRef, u storedUnit, fn func(off int64, p prepared) error) error {
	if refs[u.lo].Parts > 0 {
		s, err := d.readSample(ctx, refs, u.lo, 0, true)
		if err != nil {
			return err
		}
		h, _, err := d.header(ctx, refs[u.lo])
		if err != nil {
			return err
		}
		return fn(u.first, preparedOf(c, s.Shape, s.Data, s.Null, mediaOf(h, 0)))
	}
	f, err := (&chunkReader{d: d}).whole(ctx, refs[u.lo])
	if err != nil {
		return err
	}
	defer f.Recycle()
	for j := 0; j < f.ch.N; j++ {
		s, err := f.At(j)
		if err != nil {
			return err
		}
		if err := fn(u.first+int64(j), preparedOf(c, s.Shape, s.Data, s.Null, mediaOf(f.ch.Header, j))); err != nil {
			return err
		}
	}
	return nil
}

// applyPatches writes the staged updates of rows in base's fragments: for
// each fragment holding updated rows, each updated column's chunks that
// hold an updated value are written again, and the fragment's reference
// in man gets one extension naming the new chunk lists of every column its
// old extensions named and of the updated columns. The columns'
// statistics in man move from the old samples and chunks to the new ones.
//
// uids renames the columns added by this commit (staged uid to final
// uid), as commitOnto does for the manifest. The extensions are added to
// batch, which the caller puts with the manifest.
func (st *staging) applyPatches(ctx context.Context, base *snapshot, man *manifest.Manifest, uids map[int]int, batch *objectBatch) error {
	if len(st.patches) == 0 {
		return nil
	}
	d := st.d
	byFrag, err := st.patchesByFragment(ctx, base, uids)
	if err != nil {
		return err
	}
	// The chunks are written by a stage of their own, whose statistics are
	// not used: a rewritten chunk re-adds samples that did not change.
	w := d.newStaging(base)
	defer w.cancel(nil)
	var todo []patchedFragment
	for _, k := range slices.Sorted(maps.Keys(byFrag)) {
		pd, err := w.patchFragment(ctx, base, k, byFrag[k], man)
		if err != nil {
			return err
		}
		todo = append(todo, pd)
	}
	if err := w.finish(ctx); err != nil {
		return err
	}
	for _, pd := range todo {
		if err := st.putExtension(pd, man, batch); err != nil {
			return err
		}
	}
	return nil
}

// patchesByFragment groups the staged patches by the fragment of base
// that holds their row (its index) and the row's offset there, with the
// added columns' uids renamed by uids.
func (st *staging) patchesByFragment(ctx context.Context, base *snapshot, uids map[int]int) (map[int]map[int64]map[int]prepared, error) {
	byFrag := map[int]map[int64]map[int]prepared{}
	for id, staged := range st.patches {
		vals := renamed(staged, uids)
		k, off, err := st.d.findRow(ctx, base, id)
		if err != nil {
			return nil, fmt.Errorf("update row id %d: %w", id, err)
		}
		if byFrag[k] == nil {
			byFrag[k] = map[int64]map[int]prepared{}
		}
		byFrag[k][off] = vals
	}
	return byFrag, nil
}

// patchedFragment is a fragment whose updated columns were written again:
// the new extension's columns are cols (the old extensions') and news.
type patchedFragment struct {
	k     int
	cols  map[int][]manifest.ChunkRef // the extension's columns
	news  map[int][]*manifest.ChunkRef
	fresh map[int][]*manifest.ChunkRef // the chunks of news written now
}

// patchFragment writes again, through w, the chunks of fragment k of base
// that hold the updated values of rows (by offset, then column uid).
func (w *staging) patchFragment(ctx context.Context, base *snapshot, k int, rows map[int64]map[int]prepared, man *manifest.Manifest) (patchedFragment, error) {
	d := w.d
	f := base.frags[k]
	if err := f.load(ctx, d); err != nil {
		return patchedFragment{}, err
	}
	pd := patchedFragment{k: k, cols: map[int][]manifest.ChunkRef{}, news: map[int][]*manifest.ChunkRef{}, fresh: map[int][]*manifest.ChunkRef{}}
	for uid := range f.extCols {
		pd.cols[uid] = f.cols[uid]
	}
	byCol := map[int][]int64{}
	for off, vals := range rows {
		for uid := range vals {
			byCol[uid] = append(byCol[uid], off)
		}
	}
	for _, uid := range slices.Sorted(maps.Keys(byCol)) {
		offs := byCol[uid]
		slices.Sort(offs)
		c, ok := (&schema.Schema{Columns: man.Schema.Columns}).ByUID(uid)
		if !ok {
			return patchedFragment{}, fmt.Errorf("%s: update: column %d is not in the schema: %w", d.url, uid, ErrInvalidArgument)
		}
		refs, fresh, err := w.patchColumn(ctx, c, f, offs, rows, man)
		if err != nil {
			return patchedFragment{}, fmt.Errorf("%s: update column %q of %s: %w", d.url, c.Name, f.ref.Key, err)
		}
		pd.news[uid], pd.fresh[uid] = refs, fresh
	}
	return pd, nil
}

// putExtension adds the patched fragment's extension to batch and names
// it in man's reference to the fragment; the chunks written now add to
// the columns' stored bytes.
func (st *staging) putExtension(pd patchedFragment, man *manifest.Manifest, batch *objectBatch) error {
	ext := manifest.Fragment{Columns: map[string][]manifest.ChunkRef{}}
	for uid, refs := range pd.cols {
		ext.Columns[strconv.Itoa(uid)] = refs
	}
	for uid, refs := range pd.news {
		out := make([]manifest.ChunkRef, len(refs))
		for i, r := range refs {
			out[i] = *r
		}
		for _, r := range pd.fresh[uid] {
			st.addStored(man, uid, r.Size)
		}
		ext.Columns[strconv.Itoa(uid)] = out
	}
	key, err := batch.add(keys.Extension, manifest.KindExtension, ext)
	if err != nil {
		return err
	}
	ref := man.Fragments[pd.k]
	ref.Extensions = []string{key}
	man.Fragments[pd.k] = ref
	return nil
}

// addStored adds n stored bytes to column uid's statistics in man.
func (st *staging) addStored(man *manifest.Manifest, uid int, n int64) {
	if _, ok := man.Schema.ByUID(uid); ok {
		c := man.StatsOf(uid)
		c.StoredBytes = max(c.StoredBytes+n, 0)
	}
}

// patchColumn returns column c's new chunk list in fragment f with the
// values vals[off][c.UID] at the offsets offs (sorted): the units that
// hold none of them are kept, the others written again. A column the
// fragment has no chunks for (added after it) is null in every other row.
// The statistics of c in man lose the replaced samples and chunks and
// gain the new samples (the new chunks' bytes are added once uploaded).
func (w *staging) patchColumn(ctx context.Context, c *schema.Column, f *fragState, offs []int64, vals map[int64]map[int]prepared, man *manifest.Manifest) (refs, fresh []*manifest.ChunkRef, err error) {
	var mc *schema.Stats
	if _, ok := man.Schema.ByUID(c.UID); ok {
		mc = man.StatsOf(c.UID)
	}
	stat := func(p prepared, sign int64) {
		if mc == nil || p.null {
			return
		}
		mc.Samples += sign
		mc.RawBytes += sign * p.raw
		mc.CountLabels(c, p.data, sign)
		if sign > 0 {
			mc.MergeShape(p.shape, p.shape)
		}
	}
	cw := &colWriter{col: c}
	old := f.cols[c.UID]
	if len(old) == 0 { // null before: nulls and the new values
		i := 0
		for off := int64(0); off < f.ref.Rows; off++ {
			p := prepared{null: true}
			if i < len(offs) && offs[i] == off {
				p = vals[off][c.UID]
				stat(p, 1)
				i++
			}
			if err := w.addSample(ctx, cw, off, p); err != nil {
				return nil, nil, err
			}
		}
		w.flush(ctx, cw)
		return cw.refs, cw.refs, nil
	}
	i := 0
	for _, u := range unitsOf(old) {
		if i >= len(offs) || offs[i] >= u.first+u.rows {
			for r := u.lo; r < u.hi; r++ {
				ref := old[r]
				refs = append(refs, &ref)
			}
			continue
		}
		if mc != nil {
			for r := u.lo; r < u.hi; r++ {
				mc.StoredBytes = max(mc.StoredBytes-old[r].Size, 0)
			}
		}
		err := w.d.readUnit(ctx, c, old, u, func(off int64, p prepared) error {
			if i < len(offs) && offs[i] == off {
				stat(p, -1)
				p = vals[off][c.UID]
				stat(p, 1)
				i++
			}
			return w.addSample(ctx, cw, off, p)
		})
		if err != nil {
			return nil, nil, err
		}
		w.flush(ctx, cw) // the unit's rows end its chunks
		refs = append(refs, cw.refs...)
		fresh = append(fresh, cw.refs...)
		cw.refs = nil
	}
	return refs, fresh, nil
}

// dropStats removes the samples of fragment f at offsets offs (rows being
// deleted) from the columns' sample and raw byte counts in man, which
// count live rows (format 1.9). It reads the chunk headers that hold them
// (their null flags and shapes), not their data.
func (d *Dataset) dropStats(ctx context.Context, f *fragState, offs []int64, man *manifest.Manifest) error {
	if err := f.load(ctx, d); err != nil {
		return err
	}
	for i := range man.Schema.Columns {
		c := &man.Schema.Columns[i]
		refs := f.cols[c.UID]
		if len(refs) == 0 {
			continue
		}
		st := man.StatsOf(c.UID)
		for _, off := range offs {
			k := searchRef(refs, off)
			h, _, err := d.header(ctx, refs[k])
			if err != nil {
				return fmt.Errorf("delete from %s: column %q: %w", f.ref.Key, c.Name, err)
			}
			j := int(off - refs[k].First)
			if h.Null(j) {
				continue
			}
			n := int64(h.Partial.Total)
			switch {
			case h.Dict(): // a value's length is its dictionary entry's
				fc, err := d.cachedChunk(ctx, refs[k])
				if err != nil {
					return fmt.Errorf("delete from %s: column %q: %w", f.ref.Key, c.Name, err)
				}
				n = int64(len(fc.ch.Sample(j)))
			case refs[k].Parts == 0:
				lo, hi := h.Range(j)
				n = hi - lo
			}
			st.Samples = max(st.Samples-1, 0)
			st.RawBytes = max(st.RawBytes-rawOf(c, h.Shape(j), n), 0)
			if c.Kind == schema.ClassLabel && st.Classes != nil {
				s, err := d.readSample(ctx, refs, k, int64(j), true)
				if err != nil {
					return fmt.Errorf("delete from %s: column %q: %w", f.ref.Key, c.Name, err)
				}
				st.CountLabels(c, s.Data, -1)
			}
		}
	}
	return nil
}

// renamed returns a staged row's values with the column uids that m
// renames renamed (the others as they are).
func renamed(vals map[int]prepared, m map[int]int) map[int]prepared {
	out := make(map[int]prepared, len(vals))
	for uid, v := range vals {
		if u, ok := m[uid]; ok {
			uid = u
		}
		out[uid] = v
	}
	return out
}
