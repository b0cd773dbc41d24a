package query

import (
	"cmp"
	"context"
	"fmt"
	"runtime"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/lru"
	"github.com/lochdata/loch/schema"
)

// Hidden columns: the stable row id and the row's position in the
// version. They are real columns, first in every table, because DuckDB's C
// API gives table functions no hidden columns; SELECT * shows them.
const (
	RowIDColumn = "_rowid"
	PosColumn   = "_pos"
)

// morselRows is the rows one call of the table function fills: one DuckDB
// vector.
var morselRows = duckdb.GetDataChunkCapacity()

// cacheBytes bounds the fetched chunks a scan keeps for the morsels that
// follow (the morsels of a chunk are filled by several threads, near in
// time, so one fetch of each chunk serves them).
const cacheBytes = 256 << 20

// source is one scan of one version: DuckDB's table function instance.
// FillChunk runs on several DuckDB threads at once.
type source struct {
	ctx     context.Context
	sc      *loch.Scan
	cols    []column // table columns after the two hidden ones
	infos   []duckdb.ColumnInfo
	threads int
	next    atomic.Int64 // next morsel
	// filter, when the query pushed one (pushdown.go), drops rows before
	// their columns are converted; emitted counts the rows handed DuckDB.
	filter  *filter
	emitted *atomic.Int64
	// fetches, when not nil, counts the whole chunks fetched, spanReads the
	// spans (Scan.Span) and located the morsels located (tests count
	// them).
	fetches, spanReads, located *atomic.Int64
	// sparseLeft is the rows that morsels may still read by range (see
	// sparseRows): a scan that finds many rows reads whole chunks, which
	// the morsels of a chunk share.
	sparseLeft atomic.Int64
	// dropOnce makes drop: the position ranges, ascending and apart, whose
	// rows the pushed filter drops by chunk statistics (prunes) alone.
	dropOnce sync.Once
	drop     []posRange
	// only, when not nil, are the positions the scan reads, ascending
	// (a nearest-neighbour ORDER BY, knn.go): one row a morsel.
	only []int64
	// failed keeps the first error a fill returned, which DuckDB hands
	// back as text only, so that the query's error keeps its class.
	failed *scanFailure

	mu        sync.Mutex
	cache     *lru.Cache[loch.ChunkID, *loch.Fetched]
	flight    map[loch.ChunkID]*fetch
	nextChunk map[loch.ChunkID]loch.ChunkID // see after
}

type fetch struct {
	done chan struct{}
	f    *loch.Fetched
	err  error
}

func newSource(ctx context.Context, sc *loch.Scan, jsonType duckdb.TypeInfo, threads int, sampleData bool) (*source, error) {
	s := &source{ctx: ctx, sc: sc, threads: threads, flight: map[loch.ChunkID]*fetch{},
		cache: lru.New[loch.ChunkID, *loch.Fetched](cacheBytes, nil)}
	s.sparseLeft.Store(sparseTotal)
	u64, _ := duckdb.NewTypeInfo(duckdb.TYPE_UBIGINT)
	i64, _ := duckdb.NewTypeInfo(duckdb.TYPE_BIGINT)
	s.infos = []duckdb.ColumnInfo{{Name: RowIDColumn, T: u64}, {Name: PosColumn, T: i64}}
	for _, c := range sc.Columns() {
		m := mapColumn(c)
		m.data = sampleData && (m.kind == mapInfo || m.kind == mapMedia)
		t, err := m.typeInfo(jsonType)
		if err != nil {
			return nil, fmt.Errorf("column %q: DuckDB type %s: %w", c.Name, m.sqlType(), err)
		}
		s.cols = append(s.cols, m)
		s.infos = append(s.infos, duckdb.ColumnInfo{Name: c.Name, T: t})
	}
	return s, nil
}

func (s *source) ColumnInfos() []duckdb.ColumnInfo { return s.infos }

func (s *source) Cardinality() *duckdb.CardinalityInfo {
	return &duckdb.CardinalityInfo{Cardinality: uint(s.sc.Len()), Exact: true}
}

func (s *source) Init() duckdb.ParallelTableSourceInfo {
	return duckdb.ParallelTableSourceInfo{MaxThreads: s.threads}
}

// local is one DuckDB thread's state.
type local struct {
	projected []int // table column indexes DuckDB asked for; nil until the first call
	locs      []loch.RowLoc
	rows      []int32 // the indexes in locs of the rows the morsel emits
	slots     []loch.Slot
	spans     []span
	strs      stringBatch // a text or json column's values, assigned at once
	idx       []int32     // a run's dictionary indices (Fetched.DictRun)
	verdicts  []verdicts  // per pushed predicate: its verdicts on a dictionary's entries
	entries   entryRefs   // a text or json column's dictionary entries in strs
	// sparse: the morsel emits few rows (sparseRows), whose samples are
	// read by range (Scan.Span) rather than in whole chunks.
	sparse bool
}

// verdicts memoizes a predicate's verdict on each entry of the dictionary
// of the chunk f (docs/format.md §3.3): 0 not judged yet, 1 kept, 2
// dropped; null is the verdict on a null value.
type verdicts struct {
	f    *loch.Fetched
	v    []int8
	null int8
}

// entryRefs records where strs holds each entry of the dictionary of the
// chunk f, so that rows of one entry share one copy: ends[k] > 0 once
// entry k is in strs at [starts[k], ends[k]).
type entryRefs struct {
	f            *loch.Fetched
	starts, ends []int64
	empty        bool // an entry is empty
}

func (s *source) NewLocalState() any { return &local{} }

// FillChunk fills the chunk with the rows of one morsel that pass the
// pushed filter (of the next morsel that has any: an empty chunk ends the
// scan): the columns DuckDB projected only, each converted for the rows
// that pass alone.
func (s *source) FillChunk(ls any, chunk duckdb.DataChunk) error {
	err := s.fillChunk(ls.(*local), chunk)
	if err != nil && s.failed != nil {
		s.failed.set(err)
	}
	return err
}

// scanFailure is the first error of the scans of one query (Engine.failed).
type scanFailure struct {
	mu  sync.Mutex
	err error
}

func (f *scanFailure) set(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err == nil {
		f.err = err
	}
}

// take returns the error kept, if any, and forgets it.
func (f *scanFailure) take() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	err := f.err
	f.err = nil
	return err
}

func (s *source) fillChunk(l *local, chunk duckdb.DataChunk) error {
	if l.projected == nil {
		l.projected = []int{}
		for i := range s.infos {
			if _, err := chunk.GetVector(i); err == nil {
				l.projected = append(l.projected, i)
			}
		}
	}
	for {
		m := s.next.Add(1) - 1
		lo := m * int64(morselRows)
		hi := min(lo+int64(morselRows), s.sc.Len())
		if s.only != nil {
			lo, hi = 0, 0
			if m < int64(len(s.only)) {
				lo, hi = s.only[m], s.only[m]+1
			}
		}
		if lo >= hi {
			return chunk.SetSize(0)
		}
		if s.only == nil && s.dropped(lo, hi) {
			continue // no row can pass: nothing located or fetched
		}
		if s.located != nil {
			s.located.Add(1)
		}
		var err error
		if l.locs, err = s.sc.LocateRange(lo, hi, l.locs[:0]); err != nil {
			return err
		}
		l.rows = l.rows[:0]
		for i := range l.locs {
			l.rows = append(l.rows, int32(i))
		}
		if s.filter != nil {
			s.dropRows(l, lo)
			if err := s.applyFilter(l, lo); err != nil {
				return err
			}
			if len(l.rows) == 0 {
				continue
			}
		}
		l.sparse = s.filter != nil && s.isSparse(len(l.rows))
		for _, ci := range l.projected {
			if err := s.fill(chunk, l, ci, lo); err != nil {
				return err
			}
		}
		if s.emitted != nil {
			s.emitted.Add(int64(len(l.rows)))
		}
		return chunk.SetSize(len(l.rows))
	}
}

// sparseRows bounds the rows a morsel that reads them by range may emit,
// and sparseTotal those of all such morsels of a scan together: a point
// lookup or a very selective filter reads its rows' samples of the other
// columns by range (their checksum blocks) instead of decoding whole
// chunks for them, and a scan that turns out to find more rows reads
// whole chunks, shared by the morsels of each chunk.
const (
	sparseRows  = 16
	sparseTotal = 64
)

// isSparse reports whether a morsel that emits n rows reads them by
// range, counting them against s.sparseLeft if so.
func (s *source) isSparse(n int) bool {
	if n > sparseRows || s.sparseLeft.Load() < int64(n) {
		return false
	}
	return s.sparseLeft.Add(-int64(n)) >= 0
}

// posRange is the positions [lo, hi).
type posRange struct{ lo, hi int64 }

// dropped reports whether the pushed filter drops every row of positions
// [lo, hi) by chunk statistics alone: they lie in chunks that a
// predicate prunes.
func (s *source) dropped(lo, hi int64) bool {
	drop := s.drops()
	i := sort.Search(len(drop), func(i int) bool { return drop[i].hi > lo })
	return i < len(drop) && drop[i].lo <= lo && hi <= drop[i].hi
}

// drops returns s.drop, made at the first call.
func (s *source) drops() []posRange {
	if s.filter == nil {
		return nil
	}
	s.dropOnce.Do(s.makeDrop)
	return s.drop
}

// dropRows drops from l.rows the rows (of the morsel at position lo)
// that lie in s.drop, so that no predicate fetches a chunk for them.
func (s *source) dropRows(l *local, lo int64) {
	drop := s.drops()
	if s.only != nil || len(drop) == 0 {
		return
	}
	i := sort.Search(len(drop), func(i int) bool { return drop[i].hi > lo })
	out := l.rows[:0]
	for _, li := range l.rows {
		pos := lo + int64(li)
		for i < len(drop) && drop[i].hi <= pos {
			i++
		}
		if i < len(drop) && drop[i].lo <= pos {
			continue
		}
		out = append(out, li)
	}
	l.rows = out
}

// makeDrop sets s.drop: the rows of the chunks each predicate prunes,
// merged.
func (s *source) makeDrop() {
	var rs []posRange
	for i := range s.filter.preds {
		p := &s.filter.preds[i]
		if p.num == nil {
			continue
		}
		for _, id := range s.sc.Chunks(p.col.uid) {
			if p.prunes(s.sc, id) {
				if lo, hi := s.sc.ChunkRows(id); lo < hi {
					rs = append(rs, posRange{lo, hi})
				}
			}
		}
	}
	slices.SortFunc(rs, func(a, b posRange) int { return cmp.Compare(a.lo, b.lo) })
	for _, r := range rs {
		if n := len(s.drop); n > 0 && r.lo <= s.drop[n-1].hi {
			s.drop[n-1].hi = max(s.drop[n-1].hi, r.hi)
			continue
		}
		s.drop = append(s.drop, r)
	}
}

// applyFilter keeps in l.rows the rows that pass every pushed predicate,
// evaluating each on the rows that passed the ones before.
func (s *source) applyFilter(l *local, lo int64) error {
	if len(l.verdicts) != len(s.filter.preds) {
		l.verdicts = make([]verdicts, len(s.filter.preds))
	}
	for pi, p := range s.filter.preds {
		c := p.col
		size := 0 // a fixed-size scalar's bytes: runs of them judged at once
		if c.kind == mapScalar || c.kind == mapEnum {
			size = c.col.DType.Size()
		}
		rd := chunkReader{s: s}
		out := l.rows[:0] // filtered in place: out never passes the row read
		for _, sp := range s.spans(l, c.uid) {
			slot := sp.slot
			if slot.Pieces() != 1 {
				if !slot.Null() || p.keep(nil, true) {
					out = append(out, l.rows[sp.k]) // a split sample is not judged here
				}
				continue
			}
			if p.prunes(s.sc, slot.Chunk(0)) {
				continue // no row of the chunk passes: it is never read
			}
			f, err := rd.fetched(slot.Chunk(0))
			if err != nil {
				return fmt.Errorf("row %d, column %q: %w", lo+int64(l.rows[sp.k]), c.name, err)
			}
			idx := slot.Index()
			if size > 0 && sp.n > 1 {
				if data, ok := f.Fixed(idx, idx+sp.n, size); ok {
					rows := l.rows[sp.k : sp.k+sp.n]
					if p.run != nil {
						out = p.run(data, rows, out)
						continue
					}
					for j, li := range rows {
						if p.keep(data[j*size:(j+1)*size:(j+1)*size], false) {
							out = append(out, li)
						}
					}
					continue
				}
			}
			if f.DictLen() > 0 {
				var ok bool
				if out, ok = l.dictKeep(&l.verdicts[pi], p, f, idx, l.rows[sp.k:sp.k+sp.n], out); ok {
					continue
				}
			}
			for j := range sp.n {
				li := l.rows[sp.k+j]
				b, null, err := f.Data(idx + j)
				if err != nil {
					return fmt.Errorf("row %d, column %q: %w", lo+int64(li), c.name, err)
				}
				if p.keep(b, null) {
					out = append(out, li)
				}
			}
		}
		l.rows = out
		if len(out) == 0 {
			return nil
		}
	}
	return nil
}

// dictKeep judges rows, whose samples are samples idx on of the
// dictionary chunk f, by their dictionary indices: each entry is judged
// once per chunk (memo), and the rows kept appended to out (which may
// share rows' memory up to the row read). ok is false when f gives no
// indices for them (then nothing was appended).
func (l *local) dictKeep(memo *verdicts, p cpred, f *loch.Fetched, idx int, rows, out []int32) ([]int32, bool) {
	ix, ok := f.DictRun(idx, idx+len(rows), l.idx[:0])
	l.idx = ix
	if !ok {
		return out, false
	}
	if memo.f != f {
		memo.f, memo.null = f, 0
		memo.v = append(memo.v[:0], make([]int8, f.DictLen())...)
	}
	for j, k := range ix {
		v := &memo.null
		if k >= 0 {
			v = &memo.v[k]
		}
		if *v == 0 {
			*v = 2
			if (k < 0 && p.keep(nil, true)) || (k >= 0 && p.keep(f.Entry(int(k)), false)) {
				*v = 1
			}
		}
		if *v == 1 {
			out = append(out, rows[j])
		}
	}
	return out, true
}

// span is a run of the rows l.rows keeps, l.rows[k:k+n], whose samples of
// one column follow one another in one chunk from slot's (n is 1 for a
// null or split sample).
type span struct {
	k, n int
	slot loch.Slot
}

// spans cuts the rows l.rows keeps into spans of column uid, in l.spans.
func (s *source) spans(l *local, uid int) []span {
	cur := s.sc.SlotCursor(uid)
	l.spans = l.spans[:0]
	for k := 0; k < len(l.rows); {
		// The rows from k on at positions one after another: rows increase,
		// so they are a prefix, found by bisection.
		rest := l.rows[k:]
		m := 1 + sort.Search(len(rest)-1, func(j int) bool { return rest[j+1] != rest[0]+int32(j+1) })
		li := int(l.rows[k])
		for j := 0; j < m; {
			slot, n := cur.Run(l.locs[li+j : li+m])
			l.spans = append(l.spans, span{k: k + j, n: n, slot: slot})
			j += n
		}
		k += m
	}
	return l.spans
}

// slots returns the slots of column uid of the rows l.rows keeps, in
// l.slots.
func (s *source) slots(l *local, uid int) []loch.Slot {
	cur := s.sc.SlotCursor(uid)
	l.slots = l.slots[:0]
	for _, li := range l.rows {
		l.slots = append(l.slots, cur.Slot(l.locs[li]))
	}
	return l.slots
}

// chunkReader fetches a column's chunks for one morsel, keeping the last
// one (most often the next row's too).
type chunkReader struct {
	s      *source
	last   *loch.Fetched
	lastID loch.ChunkID
}

func (r *chunkReader) fetched(id loch.ChunkID) (*loch.Fetched, error) {
	if r.last != nil && id == r.lastID {
		return r.last, nil
	}
	f, err := r.s.chunk(id)
	if err != nil {
		return nil, err
	}
	r.last, r.lastID = f, id
	return f, nil
}

// fill writes table column ci of the morsel's rows that l.rows keeps,
// the k-th of them to row k of the chunk.
func (s *source) fill(chunk duckdb.DataChunk, l *local, ci int, lo int64) error {
	if ci < 2 {
		return fillRowColumn(chunk, l, ci, lo)
	}
	c := s.cols[ci-2]
	t := vecTarget{size: c.col.DType.Size()}
	switch {
	case c.rawScalar():
		t.raw = vectorData(chunk, ci)
		if probe != nil {
			probe(t.raw != nil)
		}
	case c.kind == mapText || c.kind == mapJSON:
		t.str = vectorHandle(chunk, ci)
		if probe != nil {
			probe(t.str.Ptr != nil)
		}
	}
	strs := &l.strs
	strs.reset()
	l.entries.f = nil // strs starts empty: no entry is in it
	defer strs.assign(t.str)
	got := gathered{sparse: l.sparse}
	if c.direct() && l.sparse {
		return s.fillSparse(chunk, l, ci, c, lo, t, &got)
	}
	if !c.direct() {
		for i, slot := range s.slots(l, c.uid) {
			if err := s.fillValue(chunk, ci, c, i, lo+int64(l.rows[i]), slot, &got); err != nil {
				return err
			}
		}
		return nil
	}
	// Scalars, text and json: their bytes, with no shape.
	rd := chunkReader{s: s}
	for _, sp := range s.spans(l, c.uid) {
		if err := s.fillSpan(chunk, l, ci, c, lo, sp, &rd, t, &got); err != nil {
			return err
		}
	}
	return nil
}

// fillSparse writes direct column c (table column ci) of the rows l.rows
// keeps, each sample read by range (pieces), to t as fillSpan does.
func (s *source) fillSparse(chunk duckdb.DataChunk, l *local, ci int, c column, lo int64, t vecTarget, got *gathered) error {
	for i, slot := range s.slots(l, c.uid) {
		pos := lo + int64(l.rows[i])
		var smp loch.Sample
		if !slot.Null() {
			if err := s.pieces(slot, got); err != nil {
				return fmt.Errorf("row %d, column %q: %w", pos, c.name, err)
			}
			var err error
			if smp, err = s.sc.Sample(slot, got.f); err != nil {
				return fmt.Errorf("row %d, column %q: %w", pos, c.name, err)
			}
		}
		b, null := smp.Data, slot.Null() || smp.Null
		switch { // as fillSpan writes them
		case t.raw != nil && !null && len(b) == t.size:
			copy(unsafe.Slice((*byte)(unsafe.Add(t.raw, i*t.size)), t.size), b)
		case t.str.Ptr != nil && !null && len(b) > 0:
			l.strs.add(i, b)
		default:
			if err := c.setDirect(chunk, ci, i, b, null); err != nil {
				return fmt.Errorf("row %d: %w", pos, err)
			}
		}
	}
	return nil
}

// fillRowColumn writes column 0 (the row id) or 1 (the position) of the
// rows l.rows keeps.
func fillRowColumn(chunk duckdb.DataChunk, l *local, ci int, lo int64) error {
	for k, li := range l.rows {
		var err error
		if ci == 0 {
			err = duckdb.SetChunkValue(chunk, ci, k, l.locs[li].ID)
		} else {
			err = duckdb.SetChunkValue(chunk, ci, k, lo+int64(li))
		}
		if err != nil {
			return err
		}
	}
	return nil
}

// vecTarget is where fill writes a direct column's values as stored, when
// it can reach the vector: raw, the vector's memory for a scalar of size
// bytes; str, the vector for text and json. Otherwise each value is set
// through the API.
type vecTarget struct {
	raw  unsafe.Pointer
	size int
	str  mapping.Vector
}

// fillSpan writes span sp of direct column c (table column ci): its
// values' bytes, with no shape.
func (s *source) fillSpan(chunk duckdb.DataChunk, l *local, ci int, c column, lo int64, sp span, rd *chunkReader, t vecTarget, got *gathered) error {
	slot := sp.slot
	if slot.Pieces() != 1 { // null, or a split sample
		return s.fillValue(chunk, ci, c, sp.k, lo+int64(l.rows[sp.k]), slot, got)
	}
	f, err := rd.fetched(slot.Chunk(0))
	if err != nil {
		return fmt.Errorf("row %d, column %q: %w", lo+int64(l.rows[sp.k]), c.name, err)
	}
	idx, size := slot.Index(), t.size
	if t.raw != nil && sp.n > 1 {
		// Scalars one after another in the chunk and in the vector:
		// copied at once.
		if data, ok := f.Fixed(idx, idx+sp.n, size); ok {
			copy(unsafe.Slice((*byte)(unsafe.Add(t.raw, sp.k*size)), sp.n*size), data)
			return nil
		}
	}
	if t.str.Ptr != nil && f.DictLen() > 0 && l.dictStrings(f, idx, sp) {
		return nil
	}
	for j := range sp.n {
		i := sp.k + j // the row in the chunk
		b, null, err := f.Data(idx + j)
		if err != nil {
			return fmt.Errorf("row %d, column %q: %w", lo+int64(l.rows[i]), c.name, err)
		}
		switch {
		case t.raw != nil && !null && len(b) == size:
			copy(unsafe.Slice((*byte)(unsafe.Add(t.raw, i*size)), size), b)
		case t.str.Ptr != nil && !null && len(b) > 0:
			l.strs.add(i, b)
		default:
			if err := c.setDirect(chunk, ci, i, b, null); err != nil {
				return fmt.Errorf("row %d: %w", lo+int64(l.rows[i]), err)
			}
		}
	}
	return nil
}

// dictStrings gathers in l.strs the strings of span sp, whose samples are
// samples idx on of the dictionary chunk f: each entry copied once per
// vector, its rows pointing at that copy. ok is false when f gives no
// indices for them or one is null (then nothing was gathered: the caller
// takes the rows one by one).
func (l *local) dictStrings(f *loch.Fetched, idx int, sp span) bool {
	ix, ok := f.DictRun(idx, idx+sp.n, l.idx[:0])
	l.idx = ix
	if !ok || slices.Contains(ix, -1) {
		return false
	}
	e := &l.entries
	if e.f != f {
		e.f, e.empty = f, false
		e.starts = append(e.starts[:0], make([]int64, f.DictLen())...)
		e.ends = append(e.ends[:0], make([]int64, f.DictLen())...)
		for k := range f.DictLen() {
			e.empty = e.empty || len(f.Entry(k)) == 0
		}
	}
	if e.empty {
		return false // an empty value is setDirect's (JSON's is NULL)
	}
	for j, k := range ix {
		if e.ends[k] == 0 {
			e.starts[k], e.ends[k] = l.strs.add(sp.k+j, f.Entry(int(k)))
			continue
		}
		l.strs.addRef(sp.k+j, e.starts[k], e.ends[k])
	}
	return true
}

// fillValue writes row i of the chunk, at position pos, from its slot of
// column c, through duckdb-go's setters: a value of another shape than a
// scalar or a string, a split sample, a null, a header's STRUCT.
func (s *source) fillValue(chunk duckdb.DataChunk, ci int, c column, i int, pos int64, slot loch.Slot, got *gathered) error {
	var v any
	switch {
	case slot.Null():
	case c.kind == mapMedia:
		m, err := s.sc.SampleMedia(s.ctx, slot)
		if err != nil {
			return fmt.Errorf("row %d, column %q: %w", pos, c.name, err)
		}
		if m.Shape != nil {
			v = c.mediaValue(m)
		}
		if err := s.addData(c, v, slot, got); err != nil {
			return fmt.Errorf("row %d, column %q: %w", pos, c.name, err)
		}
	case c.kind == mapInfo:
		shape, stored, err := s.sc.SampleInfo(s.ctx, slot)
		if err != nil {
			return fmt.Errorf("row %d, column %q: %w", pos, c.name, err)
		}
		if shape != nil {
			v = c.infoValue(shape, stored)
		}
		if err := s.addData(c, v, slot, got); err != nil {
			return fmt.Errorf("row %d, column %q: %w", pos, c.name, err)
		}
	default:
		if err := s.pieces(slot, got); err != nil {
			return fmt.Errorf("row %d, column %q: %w", pos, c.name, err)
		}
		smp, err := s.sc.Sample(slot, got.f)
		if err != nil {
			return fmt.Errorf("row %d, column %q: %w", pos, c.name, err)
		}
		if v, err = c.value(smp); err != nil {
			return fmt.Errorf("row %d: %w", pos, err)
		}
	}
	if err := duckdb.SetChunkValue(chunk, ci, i, v); err != nil {
		return fmt.Errorf("row %d, column %q: %w", pos, c.name, err)
	}
	return nil
}

// gathered is the fetched reads of one sample (pieces), and whether the
// morsel reads its samples by range (local.sparse).
type gathered struct {
	f      []*loch.Fetched
	sparse bool
}

// pieces fetches what slot's sample needs into got: its chunks whole
// (chunk), or, when the scan reads a few rows only (s.only, got.sparse),
// the sample's span of its chunk alone (unless the scan holds the chunk
// already).
func (s *source) pieces(slot loch.Slot, got *gathered) error {
	got.f = got.f[:0]
	if s.only != nil || got.sparse {
		for _, r := range s.sc.Reads(slot, true) {
			f, ok := s.cached(r.Chunk)
			if !ok {
				var err error
				if f, err = s.sc.Fetch(s.ctx, r); err != nil {
					return err
				}
				s.fetched(r.Chunk, f)
			}
			got.f = append(got.f, f)
		}
		return nil
	}
	for p := range slot.Pieces() {
		f, err := s.chunk(slot.Chunk(p))
		if err != nil {
			return err
		}
		got.f = append(got.f, f)
	}
	return nil
}

// fetched counts f, a read of chunk id by range, and keeps it in the
// cache when the chunk was read whole after all (not range-readable): the
// rows that follow then take it from there rather than read it again.
func (s *source) fetched(id loch.ChunkID, f *loch.Fetched) {
	if !f.Whole() {
		if s.spanReads != nil {
			s.spanReads.Add(1)
		}
		return
	}
	if s.fetches != nil {
		s.fetches.Add(1)
	}
	s.mu.Lock()
	s.cache.Add(id, f, f.Mem())
	s.mu.Unlock()
}

// cached returns whole chunk id if the scan's cache holds it.
func (s *source) cached(id loch.ChunkID) (*loch.Fetched, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cache.Get(id)
}

// chunk returns a whole fetched chunk: from the scan's cache, or fetched
// once however many threads ask for it at once. A thread that finds the
// chunk being fetched by another fetches the chunk after it in its
// column meanwhile (if nobody has), rather than wait idle: morsels go in
// row order, so the threads will need it next, and they then find it
// read instead of waiting again at every chunk boundary.
func (s *source) chunk(id loch.ChunkID) (*loch.Fetched, error) {
	s.mu.Lock()
	if f, ok := s.cache.Get(id); ok {
		s.mu.Unlock()
		return f, nil
	}
	if fl, ok := s.flight[id]; ok {
		next, ahead := s.after(id)
		var mine *fetch
		if ahead {
			mine = s.claim(next)
		}
		s.mu.Unlock()
		if mine != nil {
			s.run(next, mine)
		}
		<-fl.done
		return fl.f, fl.err
	}
	fl := s.claim(id)
	s.mu.Unlock()
	s.run(id, fl)
	return fl.f, fl.err
}

// claim registers a fetch of id, unless it is cached or being fetched
// (then nil). s.mu is held.
func (s *source) claim(id loch.ChunkID) *fetch {
	if _, ok := s.cache.Get(id); ok {
		return nil
	}
	if _, ok := s.flight[id]; ok {
		return nil
	}
	fl := &fetch{done: make(chan struct{})}
	s.flight[id] = fl
	return fl
}

// run performs a claimed fetch and hands it to the threads waiting.
func (s *source) run(id loch.ChunkID, fl *fetch) {
	fl.f, fl.err = s.sc.Fetch(s.ctx, loch.Read{Chunk: id})
	if s.fetches != nil {
		s.fetches.Add(1)
	}
	s.mu.Lock()
	delete(s.flight, id)
	if fl.err == nil {
		s.cache.Add(id, fl.f, fl.f.Mem())
	}
	s.mu.Unlock()
	close(fl.done)
}

// after returns the chunk after id in its column's row order (made at
// the first call, for every column that reads chunks). s.mu is held.
func (s *source) after(id loch.ChunkID) (loch.ChunkID, bool) {
	if s.nextChunk == nil {
		s.nextChunk = map[loch.ChunkID]loch.ChunkID{}
		for _, c := range s.cols {
			if c.kind == mapInfo && !c.data {
				continue // chunk headers only
			}
			ids := slices.DeleteFunc(s.sc.Chunks(c.uid), func(id loch.ChunkID) bool { return s.pruned(c.uid, id) })
			for i := 1; i < len(ids); i++ {
				s.nextChunk[ids[i-1]] = ids[i]
			}
		}
	}
	next, ok := s.nextChunk[id]
	return next, ok
}

// pruned reports whether a pushed predicate on column uid prunes chunk id
// (so that nothing fetches it ahead).
func (s *source) pruned(uid int, id loch.ChunkID) bool {
	if s.filter == nil {
		return false
	}
	for i := range s.filter.preds {
		if p := &s.filter.preds[i]; p.col.uid == uid && p.prunes(s.sc, id) {
			return true
		}
	}
	return false
}

// defaultThreads is the DuckDB threads a scan runs on.
func defaultThreads() int { return max(runtime.GOMAXPROCS(0), 1) }

// rawScalar reports whether column c's values can be copied as stored into
// its DuckDB vector: scalars whose dtype has the DuckDB type's width.
func (c column) rawScalar() bool {
	if c.kind != mapScalar {
		return false
	}
	switch c.col.DType {
	case schema.Float16, schema.BFloat16:
		return false
	}
	return c.col.DType.Size() > 0
}
