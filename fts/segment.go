package fts

import (
	"context"
	"fmt"
	"slices"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/ftsindex"
	"github.com/lochdata/loch/storage"
)

// ranger reads byte ranges of one segment object.
type ranger interface {
	readRange(ctx context.Context, off int64, n int) ([]byte, error)
}

// memRanger is a segment held in memory (the uncovered rows' segment).
type memRanger []byte

func (m memRanger) readRange(_ context.Context, off int64, n int) ([]byte, error) {
	return m[off : off+int64(n)], nil
}

// wholeFetchMax is the largest segment fetched whole into the chunk cache
// on a miss; larger ones are read by range from the store.
const wholeFetchMax = 64 << 20

// storeRanger reads a stored segment by range: from the chunk cache when
// it holds the object (one pread for a Disk cache), else from the store,
// putting a segment of at most wholeFetchMax bytes into the cache (which
// checks its content hash) so that later reads are local.
type storeRanger struct {
	store storage.Store
	cache chunkcache.Cache // nil: none
	key   string
	size  int64
}

func (r *storeRanger) readRange(ctx context.Context, off int64, n int) ([]byte, error) {
	buf := make([]byte, n)
	if rr, ok := r.cache.(chunkcache.RangeReader); ok {
		if hit, err := rr.ReadRange(ctx, r.key, off, buf); err == nil && hit {
			return buf, nil
		}
	}
	if r.cache != nil && r.size <= wholeFetchMax {
		obj, err := r.store.Get(ctx, r.key)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", r.key, err)
		}
		if int64(len(obj)) != r.size {
			return nil, fmt.Errorf("read %s: %d bytes, descriptor says %d: %w", r.key, len(obj), r.size, loch.ErrCorrupt)
		}
		_ = r.cache.Put(ctx, r.key, obj) // refused when damaged; a failed put costs a later fetch
		return obj[off : off+int64(n)], nil
	}
	if err := r.store.ReadRange(ctx, r.key, off, buf); err != nil {
		return nil, fmt.Errorf("read %s [%d, +%d): %w", r.key, off, n, err)
	}
	return buf, nil
}

// segReader searches one segment by range reads: it keeps the footer,
// the block index and the row-id runs. Safe for concurrent use.
type segReader struct {
	key    string
	r      ranger
	f      ftsindex.Footer
	blocks []ftsindex.BlockRef
	runs   []ftsindex.Run
	all    bool // every posting is valid (the uncovered rows' segment)
}

// openSegment reads a segment's footer, block index and docs.
func openSegment(ctx context.Context, key string, r ranger, size int64) (*segReader, error) {
	s := &segReader{key: key, r: r}
	err := func() error {
		if size < ftsindex.FooterLen+8 {
			return fmt.Errorf("%d bytes: %w", size, loch.ErrCorrupt)
		}
		b, err := r.readRange(ctx, size-ftsindex.FooterLen, ftsindex.FooterLen)
		if err != nil {
			return err
		}
		if s.f, err = ftsindex.ParseFooter(size, b); err != nil {
			return err
		}
		if b, err = r.readRange(ctx, s.f.I, int(size-ftsindex.FooterLen-s.f.I)); err != nil {
			return err
		}
		if s.blocks, err = ftsindex.ParseBlockIndex(s.f, b[:s.f.R-s.f.I]); err != nil {
			return err
		}
		s.runs, err = ftsindex.ParseDocs(s.f, b[s.f.R-s.f.I:])
		return err
	}()
	if err != nil {
		return nil, fmt.Errorf("full-text segment %s: %w", key, err)
	}
	return s, nil
}

// lookup finds a term's dictionary entry: one range read.
func (s *segReader) lookup(ctx context.Context, term string) (ftsindex.TermInfo, bool, error) {
	i := ftsindex.Find(s.blocks, term)
	if i < 0 {
		return ftsindex.TermInfo{}, false, nil
	}
	bl := s.blocks[i]
	b, err := s.r.readRange(ctx, bl.Off, int(bl.Len))
	if err != nil {
		return ftsindex.TermInfo{}, false, err
	}
	t, ok, err := ftsindex.FindInBlock(s.f, bl, b, term)
	if err != nil {
		return ftsindex.TermInfo{}, false, s.corrupt(err)
	}
	return t, ok, nil
}

// postings reads a term's postings: one range read.
func (s *segReader) postings(ctx context.Context, t ftsindex.TermInfo) ([]ftsindex.Posting, error) {
	b, err := s.r.readRange(ctx, t.PostOff, int(t.PostLen))
	if err != nil {
		return nil, err
	}
	ps, err := ftsindex.ParsePostings(t, b)
	if err != nil {
		return nil, fmt.Errorf("full-text segment %s: %w", s.key, err)
	}
	return ps, nil
}

// positions reads a term's positions: one range read.
func (s *segReader) positions(ctx context.Context, t ftsindex.TermInfo, ps []ftsindex.Posting) ([]uint32, error) {
	b, err := s.r.readRange(ctx, t.PosOff, int(t.PosLen))
	if err != nil {
		return nil, err
	}
	pos, err := ftsindex.ParsePositions(t, ps, b)
	if err != nil {
		return nil, fmt.Errorf("full-text segment %s: %w", s.key, err)
	}
	return pos, nil
}

// holds reports whether the segment analysed row id.
func (s *segReader) holds(id uint64) bool {
	i, _ := slices.BinarySearchFunc(s.runs, id, func(r ftsindex.Run, id uint64) int {
		switch {
		case r.Start+r.Len <= id:
			return -1
		case r.Start > id:
			return 1
		}
		return 0
	})
	return i < len(s.runs) && s.runs[i].Start <= id && id < s.runs[i].Start+s.runs[i].Len
}

// corrupt names the segment in a decoding error.
func (s *segReader) corrupt(err error) error {
	return fmt.Errorf("full-text segment %s: %w", s.key, err)
}

// maxID is the largest row id the segment analysed (0 when none).
func (s *segReader) maxID() uint64 {
	if len(s.runs) == 0 {
		return 0
	}
	r := s.runs[len(s.runs)-1]
	return r.Start + r.Len - 1
}
