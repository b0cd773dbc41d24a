package viewer

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/lru"
	"github.com/lochdata/loch/storage"
)

// maxHandles bounds the version handles a source keeps open.
const maxHandles = 64

// source is what a Server shows: a catalog's tables, or one dataset under
// one name. It keeps one store and one head handle per table, and handles
// at versions (immutable) in an LRU.
type source struct {
	url    string
	cat    *catalog.Catalog // nil: one dataset, named single
	single string
	opts   []loch.Option

	mu       sync.Mutex
	tables   map[string]*table // by name as asked
	versions *lru.Cache[verKey, *loch.Dataset]
	open     map[verKey]*loch.Dataset // what versions holds, for close
	stats    *lru.Cache[verKey, []colStats]
	sels     *lru.Cache[selKey, *loch.Selection] // query results, by row id bytes
}

// selKey names a query's result: the table, the version it ran on and the
// SQL.
type selKey struct{ table, version, q string }

// selCacheBytes bounds the row ids of cached query results.
const selCacheBytes = 64 << 20

// table is one dataset: its store and its handle at main's head.
type table struct {
	name  string
	url   string
	store storage.Store
	head  *loch.Dataset
}

type verKey struct{ table, version string }

func openSource(ctx context.Context, target string, opts []loch.Option) (*source, error) {
	src := &source{opts: opts, tables: map[string]*table{}, open: map[verKey]*loch.Dataset{}}
	src.versions = lru.New(maxHandles, func(k verKey, d *loch.Dataset, _ int64) {
		delete(src.open, k)
		d.Close()
	})
	src.stats = lru.New[verKey, []colStats](maxHandles, nil)
	src.sels = lru.New[selKey, *loch.Selection](selCacheBytes, nil)
	cat, err := catalog.Open(ctx, target)
	switch {
	case err == nil:
		src.cat, src.url = cat, cat.URL()
		return src, nil
	case !errors.Is(err, catalog.ErrNoCatalog):
		return nil, err
	}
	st, err := storage.Open(ctx, target)
	if err != nil {
		return nil, fmt.Errorf("open %s: %w", storage.Redact(target), err)
	}
	d, err := loch.Open(ctx, target, append(opts, loch.WithStore(st))...)
	if err != nil {
		st.Close()
		if errors.Is(err, loch.ErrNoDataset) {
			return nil, fmt.Errorf("%s: neither a catalog nor a dataset: %w", storage.Redact(target), loch.ErrNotFound)
		}
		return nil, err
	}
	src.url = d.URL()
	src.single = singleName(d.URL())
	src.tables[src.single] = &table{name: src.single, url: target, store: st, head: d}
	return src, nil
}

// singleName is the name a lone dataset is served under: its URL's last
// element when that is a valid table name, else "dataset".
func singleName(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	n := path.Base(strings.TrimRight(strings.ReplaceAll(u, "\\", "/"), "/"))
	if catalog.ValidName(n) != nil || strings.ContainsAny(n, "?#%:") {
		return "dataset"
	}
	return n
}

func (s *source) close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for k, d := range s.open {
		errs = append(errs, d.Close())
		s.versions.Remove(k)
		delete(s.open, k)
	}
	for _, t := range s.tables {
		errs = append(errs, t.head.Close(), t.store.Close())
	}
	s.tables = map[string]*table{}
	if s.cat != nil {
		errs = append(errs, s.cat.Close())
	}
	return errors.Join(errs...)
}

// table returns the table called name, opening it on first use. A name
// that catalog.ValidName refuses, or that names no table, is a 404.
func (s *source) table(ctx context.Context, name string) (*table, error) {
	if err := catalog.ValidName(name); err != nil {
		return nil, notFoundf("no table %q here: %v", trunc(name, 80), err)
	}
	s.mu.Lock()
	t, ok := s.tables[name]
	s.mu.Unlock()
	if ok {
		return t, nil
	}
	if s.cat == nil {
		return nil, notFoundf("no table %q here (this viewer serves the dataset %q)", trunc(name, 80), s.single)
	}
	info, err := s.cat.Table(ctx, name)
	if err != nil {
		return nil, err
	}
	st, err := storage.Open(ctx, info.URL)
	if err != nil {
		return nil, fmt.Errorf("open table %s: %w", name, err)
	}
	d, err := loch.Open(ctx, info.URL, append(s.opts, loch.WithStore(st))...)
	if err != nil {
		st.Close()
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.tables[name]; ok { // another request opened it first
		d.Close()
		st.Close()
		return old, nil
	}
	t = &table{name: name, url: info.URL, store: st, head: d}
	s.tables[name] = t
	return t, nil
}

// resolve returns the version id ref names now ("" is main's head).
func (t *table) resolve(ctx context.Context, ref string) (string, error) {
	if ref == "" {
		ref = "main"
	}
	if len(ref) > 256 {
		return "", badf("ref %q: too long", trunc(ref, 40))
	}
	v, err := t.head.Resolve(ctx, ref)
	if err != nil {
		return "", err
	}
	return v, nil
}

// at returns a handle on version v (a full version id) of t.
func (s *source) at(ctx context.Context, t *table, v string) (*loch.Dataset, error) {
	if !keys.ValidID(v) {
		return nil, badf("version %q: want a version id (32 hex digits)", trunc(v, 40))
	}
	k := verKey{t.name, v}
	s.mu.Lock()
	d, ok := s.versions.Get(k)
	s.mu.Unlock()
	if ok {
		return d, nil
	}
	d, err := loch.Open(ctx, t.url, append(s.opts, loch.WithStore(t.store), loch.WithVersion(v))...)
	if err != nil {
		return nil, err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if old, ok := s.versions.Get(k); ok {
		d.Close()
		return old, nil
	}
	s.versions.Add(k, d, 1)
	s.open[k] = d
	return d, nil
}

// scan returns a loaded scan of d's version (its fragments are read once
// per handle; later loads are free).
func scan(ctx context.Context, d *loch.Dataset) (*loch.Scan, error) {
	sc := d.Scan()
	if err := sc.Load(ctx, 8); err != nil {
		return nil, err
	}
	return sc, nil
}
