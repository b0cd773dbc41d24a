package query

import (
	"context"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/lru"
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

	mu     sync.Mutex
	cache  *lru.Cache[loch.ChunkID, *loch.Fetched]
	flight map[loch.ChunkID]*fetch
}

type fetch struct {
	done chan struct{}
	f    *loch.Fetched
	err  error
}

func newSource(ctx context.Context, sc *loch.Scan, jsonType duckdb.TypeInfo, threads int) (*source, error) {
	s := &source{ctx: ctx, sc: sc, threads: threads, flight: map[loch.ChunkID]*fetch{},
		cache: lru.New[loch.ChunkID, *loch.Fetched](cacheBytes, nil)}
	u64, _ := duckdb.NewTypeInfo(duckdb.TYPE_UBIGINT)
	i64, _ := duckdb.NewTypeInfo(duckdb.TYPE_BIGINT)
	s.infos = []duckdb.ColumnInfo{{Name: RowIDColumn, T: u64}, {Name: PosColumn, T: i64}}
	sch := sc.Schema()
	for _, c := range sch.Columns {
		m := mapColumn(c)
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
	strs      stringBatch // a text or json column's values, assigned at once
}

func (s *source) NewLocalState() any { return &local{} }

// FillChunk fills one morsel of rows: the columns DuckDB projected only.
func (s *source) FillChunk(ls any, chunk duckdb.DataChunk) error {
	l := ls.(*local)
	if l.projected == nil {
		l.projected = []int{}
		for i := range s.infos {
			if _, err := chunk.GetVector(i); err == nil {
				l.projected = append(l.projected, i)
			}
		}
	}
	m := s.next.Add(1) - 1
	lo := m * int64(morselRows)
	hi := min(lo+int64(morselRows), s.sc.Len())
	if lo >= hi {
		return chunk.SetSize(0)
	}
	var err error
	if l.locs, err = s.sc.LocateRange(lo, hi, l.locs[:0]); err != nil {
		return err
	}
	for _, ci := range l.projected {
		if err := s.fill(chunk, l, ci, lo); err != nil {
			return err
		}
	}
	return chunk.SetSize(int(hi - lo))
}

// fill writes table column ci of the morsel's rows.
func (s *source) fill(chunk duckdb.DataChunk, l *local, ci int, lo int64) error {
	locs := l.locs
	switch ci {
	case 0:
		for i, r := range locs {
			if err := duckdb.SetChunkValue(chunk, ci, i, r.ID); err != nil {
				return err
			}
		}
		return nil
	case 1:
		for i := range locs {
			if err := duckdb.SetChunkValue(chunk, ci, i, lo+int64(i)); err != nil {
				return err
			}
		}
		return nil
	}
	c := s.cols[ci-2]
	var got []*loch.Fetched
	var lastID loch.ChunkID // the chunk of the previous row, most often this row's
	var last *loch.Fetched
	var raw unsafe.Pointer // the vector's memory, for a scalar copied as stored
	size := c.col.DType.Size()
	var str mapping.Vector // the vector, for text and json assigned as stored
	switch {
	case c.rawScalar():
		raw = vectorData(chunk, ci)
		if probe != nil {
			probe(raw != nil)
		}
	case c.kind == mapText || c.kind == mapJSON:
		str = vectorHandle(chunk, ci)
		if probe != nil {
			probe(str.Ptr != nil)
		}
	}
	strs := &l.strs
	strs.reset()
	defer strs.assign(str)
	cur := s.sc.SlotCursor(c.uid)
	for i, r := range locs {
		slot := cur.Slot(r)
		if slot.Pieces() == 1 && c.direct() {
			// Scalars, text and json: their bytes, with no shape.
			f := last
			if id := slot.Chunk(0); f == nil || id != lastID {
				var err error
				if f, err = s.chunk(id); err != nil {
					return fmt.Errorf("row %d, column %q: %w", lo+int64(i), c.name, err)
				}
				last, lastID = f, id
			}
			b, null, err := f.Data(slot.Index())
			if err != nil {
				return fmt.Errorf("row %d, column %q: %w", lo+int64(i), c.name, err)
			}
			if raw != nil && !null && len(b) == size {
				copy(unsafe.Slice((*byte)(unsafe.Add(raw, i*size)), size), b)
				continue
			}
			if str.Ptr != nil && !null && len(b) > 0 {
				strs.add(i, b)
				continue
			}
			if err := c.setDirect(chunk, ci, i, b, null); err != nil {
				return fmt.Errorf("row %d: %w", lo+int64(i), err)
			}
			continue
		}
		var v any
		switch {
		case slot.Null():
		case c.kind == mapMedia:
			m, err := s.sc.SampleMedia(s.ctx, slot)
			if err != nil {
				return fmt.Errorf("row %d, column %q: %w", lo+int64(i), c.name, err)
			}
			if m.Shape != nil {
				v = c.mediaValue(m)
			}
		case c.kind == mapInfo:
			shape, stored, err := s.sc.SampleInfo(s.ctx, slot)
			if err != nil {
				return fmt.Errorf("row %d, column %q: %w", lo+int64(i), c.name, err)
			}
			if shape != nil {
				v = c.infoValue(shape, stored)
			}
		default:
			got = got[:0]
			for p := range slot.Pieces() {
				f, err := s.chunk(slot.Chunk(p))
				if err != nil {
					return fmt.Errorf("row %d, column %q: %w", lo+int64(i), c.name, err)
				}
				got = append(got, f)
			}
			smp, err := s.sc.Sample(slot, got)
			if err != nil {
				return fmt.Errorf("row %d, column %q: %w", lo+int64(i), c.name, err)
			}
			if v, err = c.value(smp); err != nil {
				return fmt.Errorf("row %d: %w", lo+int64(i), err)
			}
		}
		if err := duckdb.SetChunkValue(chunk, ci, i, v); err != nil {
			return fmt.Errorf("row %d, column %q: %w", lo+int64(i), c.name, err)
		}
	}
	return nil
}

// chunk returns a whole fetched chunk: from the scan's cache, or fetched
// once however many threads ask for it at once.
func (s *source) chunk(id loch.ChunkID) (*loch.Fetched, error) {
	s.mu.Lock()
	if f, ok := s.cache.Get(id); ok {
		s.mu.Unlock()
		return f, nil
	}
	if fl, ok := s.flight[id]; ok {
		s.mu.Unlock()
		<-fl.done
		return fl.f, fl.err
	}
	fl := &fetch{done: make(chan struct{})}
	s.flight[id] = fl
	s.mu.Unlock()

	fl.f, fl.err = s.sc.Fetch(s.ctx, loch.Read{Chunk: id})
	s.mu.Lock()
	delete(s.flight, id)
	if fl.err == nil {
		s.cache.Add(id, fl.f, fl.f.Mem())
	}
	s.mu.Unlock()
	close(fl.done)
	return fl.f, fl.err
}

// defaultThreads is the DuckDB threads a scan runs on.
func defaultThreads() int { return max(runtime.GOMAXPROCS(0), 1) }
