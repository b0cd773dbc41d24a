package loch

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/schema"
)

// snapshot is one immutable version: its commit, manifest and an index from
// row positions to fragments. Fragment objects load lazily, once.
type snapshot struct {
	commitID string
	commit   manifest.Commit
	seq      uint64 // log entry it was read from; 0 when opened by id
	man      manifest.Manifest
	frags    []*fragState
	cum      []int64 // cum[i]: live rows before fragment i; len(frags)+1 entries
}

// fragState is a fragment of a snapshot with its lazily loaded objects.
type fragState struct {
	ref     manifest.FragmentRef
	id      string     // identity of its rows; see ident
	mu      sync.Mutex // held by load
	loaded  bool       // load ended: err is its result
	err     error
	ids     [][2]uint64                 // row-id runs for update fragments
	cols    map[int][]manifest.ChunkRef // column uid -> chunks, extensions applied
	extCols map[int]bool                // the column uids some extension names
	deleted []int64                     // sorted deleted offsets
}

func (d *Dataset) loadSnapshot(ctx context.Context, commitID string, seq uint64) (*snapshot, error) {
	if !keys.ValidID(commitID) {
		return nil, fmt.Errorf("open %s: version %q is not a version id: %w", d.url, commitID, ErrNotFound)
	}
	s := &snapshot{commitID: commitID, seq: seq}
	if err := d.getObject(ctx, keys.Make(keys.Commit, commitID), manifest.KindCommit, &s.commit); err != nil {
		if errors.Is(err, ErrNotFound) {
			return nil, fmt.Errorf("open %s: no version %s: %w", d.url, commitID, ErrNotFound)
		}
		return nil, fmt.Errorf("open %s at version %s: %w", d.url, commitID, err)
	}
	if err := d.getObject(ctx, s.commit.Manifest, manifest.KindManifest, &s.man); err != nil {
		return nil, err
	}
	s.cum = make([]int64, len(s.man.Fragments)+1)
	var live int64
	for i, f := range s.man.Fragments {
		if f.Rows < 0 || f.Deleted < 0 || f.Deleted > f.Rows {
			return nil, fmt.Errorf("read %s: fragment %d has %d rows and %d deleted: %w", s.commit.Manifest, i, f.Rows, f.Deleted, ErrCorrupt)
		}
		s.frags = append(s.frags, newFragState(f))
		live += f.Live()
		s.cum[i+1] = live
	}
	if live != s.man.Rows {
		return nil, fmt.Errorf("read %s: fragments hold %d live rows, manifest says %d: %w", s.commit.Manifest, live, s.man.Rows, ErrCorrupt)
	}
	return s, nil
}

// load reads the fragment's objects on first use. A load that fails
// because ctx ended (a reader cancelled, or a sibling load that failed
// first) is not kept: the next load tries again, so that the snapshot of a
// long-lived handle (the viewer's, a Python session's) is not left failing
// with "context canceled".
func (f *fragState) load(ctx context.Context, d *Dataset) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.loaded {
		return f.err
	}
	err := f.loadWith(ctx, d.getObject)
	if err != nil && ctx.Err() != nil {
		return err
	}
	f.loaded, f.err = true, err
	return err
}

// getFunc reads the metadata object key of the given kind into out.
type getFunc func(ctx context.Context, key string, kind byte, out any) error

// loadWith reads the fragment's objects (fragment, extensions, deletions)
// with get and checks that they agree.
func (f *fragState) loadWith(ctx context.Context, get getFunc) error {
	var fr manifest.Fragment
	if err := get(ctx, f.ref.Key, manifest.KindFragment, &fr); err != nil {
		return err
	}
	if fr.Rows != f.ref.Rows {
		return fmt.Errorf("read %s: fragment has %d rows, manifest says %d: %w", f.ref.Key, fr.Rows, f.ref.Rows, ErrCorrupt)
	}
	if f.ref.IDStart == nil {
		var n uint64
		for _, r := range fr.IDs {
			n += r[1]
		}
		if n != uint64(fr.Rows) {
			return fmt.Errorf("read %s: %d row ids for %d rows: %w", f.ref.Key, n, fr.Rows, ErrCorrupt)
		}
		f.ids = fr.IDs
	}
	f.cols = map[int][]manifest.ChunkRef{}
	add := func(key string, cols map[string][]manifest.ChunkRef) error {
		for k, refs := range cols {
			uid, err := strconv.Atoi(k)
			if err != nil {
				return fmt.Errorf("read %s: column key %q: %w", key, k, ErrCorrupt)
			}
			if err := checkRefs(refs, fr.Rows); err != nil {
				return fmt.Errorf("read %s: column %d: %v: %w", key, uid, err, ErrCorrupt)
			}
			f.cols[uid] = refs
		}
		return nil
	}
	if err := add(f.ref.Key, fr.Columns); err != nil {
		return err
	}
	f.extCols = map[int]bool{}
	for _, ek := range f.ref.Extensions {
		var ext manifest.Fragment
		if err := get(ctx, ek, manifest.KindExtension, &ext); err != nil {
			return err
		}
		if err := add(ek, ext.Columns); err != nil {
			return err
		}
		for k := range ext.Columns {
			uid, _ := strconv.Atoi(k) // add checked it
			f.extCols[uid] = true
		}
	}
	if f.ref.Deletions != "" {
		var del manifest.Deletion
		if err := get(ctx, f.ref.Deletions, manifest.KindDeletion, &del); err != nil {
			return err
		}
		for i, o := range del.Offsets {
			if o < 0 || o >= fr.Rows || (i > 0 && o <= del.Offsets[i-1]) {
				return fmt.Errorf("read %s: deleted offsets not sorted within [0, %d): %w", f.ref.Deletions, fr.Rows, ErrCorrupt)
			}
		}
		if int64(len(del.Offsets)) != f.ref.Deleted {
			return fmt.Errorf("read %s: %d deleted offsets, manifest says %d: %w", f.ref.Deletions, len(del.Offsets), f.ref.Deleted, ErrCorrupt)
		}
		f.deleted = del.Offsets
	}
	return nil
}

// checkRefs verifies that chunk refs tile [0, rows) in order.
func checkRefs(refs []manifest.ChunkRef, rows int64) error {
	var next int64
	for i := 0; i < len(refs); i++ {
		r := refs[i]
		if r.First != next || r.Rows < 0 || r.Header <= 0 || r.Size < int64(r.Header) {
			return fmt.Errorf("chunk %d (%s) starts at row %d, want %d", i, r.Key, r.First, next)
		}
		if r.Parts > 0 {
			for p := 0; p < r.Parts; p++ {
				if i+p >= len(refs) || refs[i+p].First != r.First || refs[i+p].Part != p || refs[i+p].Parts != r.Parts || refs[i+p].Rows != 1 {
					return fmt.Errorf("chunk %d: broken split sample", i)
				}
			}
			i += r.Parts - 1
			next++
			continue
		}
		next += r.Rows
	}
	if next != rows {
		return fmt.Errorf("chunks cover %d rows, fragment has %d", next, rows)
	}
	return nil
}

// position maps a row position to its (loaded) fragment and physical offset.
func (d *Dataset) position(ctx context.Context, s *snapshot, i int64) (*fragState, int64, error) {
	if i < 0 || i >= s.man.Rows {
		return nil, 0, fmt.Errorf("row %d of %s out of range [0, %d): %w", i, d.url, s.man.Rows, ErrNotFound)
	}
	k := sort.Search(len(s.frags), func(k int) bool { return s.cum[k+1] > i }) // first fragment ending after i
	f := s.frags[k]
	if err := f.load(ctx, d); err != nil {
		return nil, 0, err
	}
	return f, physical(f.deleted, i-s.cum[k]), nil
}

// physical returns the offset of the j-th live row given sorted deleted offsets.
func physical(deleted []int64, j int64) int64 {
	// The answer p satisfies p - #(deleted <= p) == j; search on p.
	lo, hi := j, j+int64(len(deleted))
	for lo < hi {
		mid := (lo + hi) / 2
		n := int64(sort.Search(len(deleted), func(x int) bool { return deleted[x] > mid }))
		if mid-n >= j {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// rowID returns the stable id of the row at a fragment offset.
func (f *fragState) rowID(off int64) uint64 {
	if f.ref.IDStart != nil {
		return *f.ref.IDStart + uint64(off)
	}
	for _, r := range f.ids {
		if uint64(off) < r[1] {
			return r[0] + uint64(off)
		}
		off -= int64(r[1])
	}
	return 0
}

// hasID reports whether the fragment holds the row id, and at which offset.
func (f *fragState) hasID(id uint64) (int64, bool) {
	if f.ref.IDStart != nil {
		if id >= *f.ref.IDStart && id < *f.ref.IDStart+uint64(f.ref.Rows) {
			return int64(id - *f.ref.IDStart), true
		}
		return 0, false
	}
	var base int64
	for _, r := range f.ids {
		if id >= r[0] && id < r[0]+r[1] {
			return base + int64(id-r[0]), true
		}
		base += int64(r[1])
	}
	return 0, false
}

func (f *fragState) isDeleted(off int64) bool {
	k := sort.Search(len(f.deleted), func(x int) bool { return f.deleted[x] >= off })
	return k < len(f.deleted) && f.deleted[k] == off
}

// findRow locates a live row by id: fragment index and offset.
func (d *Dataset) findRow(ctx context.Context, s *snapshot, id uint64) (int, int64, error) {
	for k, f := range s.frags {
		if f.ref.IDStart != nil {
			if _, ok := f.hasID(id); !ok {
				continue
			}
		}
		if err := f.load(ctx, d); err != nil {
			return 0, 0, err
		}
		if off, ok := f.hasID(id); ok && !f.isDeleted(off) {
			return k, off, nil
		}
	}
	return 0, 0, fmt.Errorf("row id %d is not in version %s of %s: %w", id, s.commitID, d.url, ErrNotFound)
}

// RowID returns the stable id of the row at position i.
func (d *Dataset) RowID(ctx context.Context, i int64) (uint64, error) {
	f, off, err := d.position(ctx, d.current(), i)
	if err != nil {
		return 0, err
	}
	return f.rowID(off), nil
}

// column looks up a column of the snapshot by name.
func (s *snapshot) column(name string) (*schema.Column, error) {
	c, ok := s.man.Schema.Column(name)
	if !ok {
		return nil, fmt.Errorf("column %q: no such column (have %v): %w", name, s.man.Schema.Names(), ErrNotFound)
	}
	return c, nil
}

// newFragState makes the state of a manifest's fragment, not yet loaded.
func newFragState(ref manifest.FragmentRef) *fragState {
	return &fragState{ref: ref, id: fragIdent(ref.Key, ref.IDStart, ref.Extensions)}
}

// fragIdent is a fragment reference's identity (see ident).
func fragIdent(key string, idStart *uint64, extensions []string) string {
	id := key
	if idStart != nil {
		id += "@" + strconv.FormatUint(*idStart, 10)
	}
	if len(extensions) > 0 {
		id += "+" + strings.Join(extensions, ",")
	}
	return id
}

// ident names a fragment's rows with their data: its object, for appended
// fragments the first row id (two identical appends share an object but
// not ids), and its extensions (an update in place names new chunks
// through them). A row's data is fixed by its fragment's ident and its
// offset: diff and merge compare rows at the same ident and offset as
// equal without reading them.
func (f *fragState) ident() string { return f.id }

// rowsKey names a fragment's live rows with their data: its identity,
// extensions and deletions. Two references with one rowsKey hold the same
// live rows with the same samples.
func (f *fragState) rowsKey() string {
	return f.id + "|" + f.ref.Deletions
}
