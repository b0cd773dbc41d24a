package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/internal/seqlog"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// ErrNoCatalog: no catalog at the root (where the store itself is
// reachable). It matches loch.ErrNotFound too.
var ErrNoCatalog = fmt.Errorf("no loch catalog there: %w", loch.ErrNotFound)

// maxAttempts bounds the tries of one change against other writers of
// the catalog log.
const maxAttempts = 64

type options struct {
	store  storage.Store
	create bool
}

// Option configures Open and Create.
type Option func(*options)

// WithStore uses an already opened store as the catalog's root instead of
// opening the URL; the Catalog does not close it.
func WithStore(s storage.Store) Option { return func(o *options) { o.store = s } }

// WithCreate makes Open create an empty catalog when the root holds none
// (of several processes doing so at once, one creates it and all open it).
func WithCreate() Option { return func(o *options) { o.create = true } }

// Catalog is a handle on the tables under one root. It is safe for
// concurrent use; it caches nothing, so every call sees the newest state
// of the catalog. Close releases it.
type Catalog struct {
	store     storage.Store
	ownsStore bool
	url       string
	log       *seqlog.Log[manifest.Catalog]
	now       func() time.Time // the clock of GC; tests move it

	closeOnce sync.Once
	closeErr  error
}

// Table describes one table of a catalog.
type Table struct {
	// Name is the table's name, in the case it was given.
	Name string `json:"name"`
	// Dir is the table's directory below tables/ (docs/format.md §6).
	Dir string `json:"dir"`
	// URL is the URL of the table's dataset.
	URL     string    `json:"url"`
	Created time.Time `json:"created"`
}

func newCatalog(ctx context.Context, root string, o options) (*Catalog, error) {
	c := &Catalog{now: time.Now}
	if o.store != nil {
		c.store = o.store
	} else {
		st, err := storage.Open(ctx, root)
		if err != nil {
			return nil, fmt.Errorf("open catalog %s: %w", storage.Redact(root), err)
		}
		c.store, c.ownsStore = st, true
	}
	c.url = c.store.URL()
	c.log = seqlog.New(c.store, keys.CatalogLogPrefix, manifest.KindCatalog, func(e *manifest.Catalog) uint64 { return e.Seq }, func(e *manifest.Catalog) *string { return &e.PrevHash })
	return c, nil
}

func buildOptions(opts []Option) options {
	var o options
	for _, f := range opts {
		f(&o)
	}
	return o
}

// Create makes an empty catalog at root. It fails with loch.ErrExists,
// changing nothing, when a catalog is already there.
func Create(ctx context.Context, root string, opts ...Option) (*Catalog, error) {
	c, err := newCatalog(ctx, root, buildOptions(opts))
	if err != nil {
		return nil, err
	}
	if err := c.create(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Catalog) create(ctx context.Context) error {
	// Garbage collection deletes old entries, entry 1 included, so
	// put-if-absent of entry 1 alone cannot tell that a catalog exists.
	if _, err := c.latest(ctx); err == nil {
		return fmt.Errorf("create catalog %s: a catalog already exists there: %w", c.url, loch.ErrExists)
	} else if !errors.Is(err, ErrNoCatalog) {
		return fmt.Errorf("create catalog %s: %w", c.url, err)
	}
	if err := c.checkPlace(ctx); err != nil {
		return fmt.Errorf("create catalog %s: %w", c.url, err)
	}
	e := &manifest.Catalog{Seq: 1, Time: time.Now().UTC(), Tables: map[string]manifest.CatalogTable{}, Op: "create catalog"}
	err := c.log.Put(ctx, e)
	if errors.Is(err, storage.ErrExists) {
		return fmt.Errorf("create catalog %s: a catalog already exists there: %w", c.url, loch.ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create catalog %s: %w", c.url, err)
	}
	c.log.Hint(ctx, 1)
	return nil
}

// checkPlace refuses, wrapping loch.ErrInvalidArgument, a new catalog at
// a dataset's root (loch serve and loch sql would see the catalog there,
// not the dataset), inside a dataset, or inside another catalog's
// reserved folders (keys.CatalogFolder). The parents are looked at only
// when the catalog opened its store from its URL (not WithStore); one
// that cannot be opened or read is passed over.
func (c *Catalog) checkPlace(ctx context.Context) error {
	for parent, name := range storage.Parents(c.url) {
		if !c.ownsStore {
			break
		}
		st, err := storage.Open(ctx, parent)
		if err != nil {
			continue
		}
		dataset, _ := isDataset(ctx, st)
		cat := false
		if keys.CatalogFolder(name) {
			other, _ := newCatalog(ctx, "", options{store: st})
			_, err := other.latest(ctx)
			cat = err == nil
		}
		st.Close()
		switch {
		case dataset:
			return fmt.Errorf("inside the loch dataset at %s: a catalog cannot be made inside a dataset; give a folder outside it: %w", storage.Redact(parent), loch.ErrInvalidArgument)
		case cat:
			return fmt.Errorf("inside the folder %s/ that the catalog at %s keeps its own objects in: give another folder: %w", name, storage.Redact(parent), loch.ErrInvalidArgument)
		}
	}
	if found, err := isDataset(ctx, c.store); err != nil {
		return err
	} else if found {
		return fmt.Errorf("a loch dataset is there (%s): a catalog cannot share a dataset's folder; give another folder: %w", keys.MakeLog(1), loch.ErrInvalidArgument)
	}
	return nil
}

// isDataset reports whether st's root holds a loch dataset: its first log
// entry (docs/format.md §2.2), which is never deleted.
func isDataset(ctx context.Context, st storage.Store) (bool, error) {
	_, err := st.Stat(ctx, keys.MakeLog(1))
	if err == nil {
		return true, nil
	}
	if errors.Is(err, storage.ErrNotFound) && !storage.IsBucketNotFound(err) {
		return false, nil
	}
	return false, err
}

// Open opens the catalog at root. It fails with ErrNoCatalog (which
// matches loch.ErrNotFound) when there is none, unless WithCreate is
// given.
func Open(ctx context.Context, root string, opts ...Option) (*Catalog, error) {
	o := buildOptions(opts)
	c, err := newCatalog(ctx, root, o)
	if err != nil {
		return nil, err
	}
	_, err = c.latest(ctx)
	if errors.Is(err, ErrNoCatalog) && o.create {
		if err = c.create(ctx); errors.Is(err, loch.ErrExists) {
			err = nil // another process created it first
		}
	}
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// Close releases the catalog's store (unless WithStore gave it). Tables
// opened from the catalog must be closed first.
func (c *Catalog) Close() error {
	c.closeOnce.Do(func() {
		if c.ownsStore {
			c.closeErr = c.store.Close()
		}
	})
	return c.closeErr
}

// URL returns the catalog's root URL, without secrets.
func (c *Catalog) URL() string { return c.url }

// Store returns the catalog's root store (owned by the Catalog).
func (c *Catalog) Store() storage.Store { return c.store }

// latest reads and checks the newest catalog entry.
func (c *Catalog) latest(ctx context.Context) (*manifest.Catalog, error) {
	e, err := c.log.Latest(ctx)
	if errors.Is(err, seqlog.ErrEmpty) {
		return nil, fmt.Errorf("open catalog %s: %w", c.url, ErrNoCatalog)
	}
	if err != nil {
		return nil, c.logErr(err)
	}
	if err := checkEntry(e); err != nil {
		return nil, fmt.Errorf("catalog %s: %s: %w", c.url, c.log.Key(e.Seq), err)
	}
	return e, nil
}

// logErr names the catalog in an error of its log, and for a log that
// lost its newest entries gives the way out.
func (c *Catalog) logErr(err error) error {
	if errors.Is(err, seqlog.ErrLost) {
		return fmt.Errorf("catalog %s: %w (restore the missing entries, or accept their loss with 'loch verify --repair-log')", c.url, err)
	}
	return fmt.Errorf("catalog %s: %w", c.url, err)
}

// read reads and checks catalog entry seq.
func (c *Catalog) read(ctx context.Context, seq uint64) (*manifest.Catalog, error) {
	e, err := c.log.Read(ctx, seq)
	if err != nil {
		return nil, fmt.Errorf("catalog %s: %w", c.url, err)
	}
	if err := checkEntry(e); err != nil {
		return nil, fmt.Errorf("catalog %s: %s: %w", c.url, c.log.Key(seq), err)
	}
	return e, nil
}

// checkEntry checks what decoding cannot: valid, distinct names and
// directories that stay below tables/. Errors match loch.ErrCorrupt.
func checkEntry(e *manifest.Catalog) error {
	seen := make(map[string]string, len(e.Tables))
	dirs := make(map[string]string, len(e.Tables))
	for name, t := range e.Tables {
		if why := nameProblem(name); why != "" {
			return base.Markf(base.ErrCorrupt, "corrupt catalog entry: table name %q %s", name, why)
		}
		if other, ok := seen[fold(name)]; ok {
			return base.Markf(base.ErrCorrupt, "corrupt catalog entry: tables %q and %q have one name", other, name)
		}
		seen[fold(name)] = name
		if err := checkDir(t.Dir); err != nil {
			return base.Markf(base.ErrCorrupt, "corrupt catalog entry: table %q has directory %q: %v", name, t.Dir, err)
		}
		if other, ok := dirs[t.Dir]; ok {
			return base.Markf(base.ErrCorrupt, "corrupt catalog entry: tables %q and %q share directory %q", other, name, t.Dir)
		}
		dirs[t.Dir] = name
	}
	return nil
}

// decodeEntry decodes and checks a catalog entry as stored.
func decodeEntry(obj []byte) (*manifest.Catalog, error) {
	var e manifest.Catalog
	if err := manifest.Decode(manifest.KindCatalog, obj, &e); err != nil {
		return nil, err
	}
	if err := checkEntry(&e); err != nil {
		return nil, err
	}
	return &e, nil
}

// lookup finds the table of e whose name folds to name's.
func lookup(e *manifest.Catalog, name string) (string, manifest.CatalogTable, bool) {
	if t, ok := e.Tables[name]; ok {
		return name, t, true
	}
	f := fold(name)
	for n, t := range e.Tables {
		if fold(n) == f {
			return n, t, true
		}
	}
	return "", manifest.CatalogTable{}, false
}

func (c *Catalog) table(name string, t manifest.CatalogTable) Table {
	return Table{Name: name, Dir: t.Dir, URL: c.tableURL(t.Dir), Created: t.Created}
}

func (c *Catalog) tableURL(dir string) string {
	v, err := storage.Sub(c.store, keys.MakeTable(dir))
	if err != nil {
		return "" // checkDir has made this impossible
	}
	return v.URL()
}

// Tables lists the tables, sorted by name case-insensitively. It reads the
// catalog log only (the hint and two entries, whatever the number of
// tables), never a table.
func (c *Catalog) Tables(ctx context.Context) ([]Table, error) {
	e, err := c.latest(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]Table, 0, len(e.Tables))
	for name, t := range e.Tables {
		out = append(out, c.table(name, t))
	}
	slices.SortFunc(out, func(a, b Table) int {
		if x := strings.Compare(fold(a.Name), fold(b.Name)); x != 0 {
			return x
		}
		return strings.Compare(a.Name, b.Name)
	})
	return out, nil
}

// Table describes the table called name (compared case-insensitively), or
// fails with loch.ErrNotFound.
func (c *Catalog) Table(ctx context.Context, name string) (Table, error) {
	if err := ValidName(name); err != nil {
		return Table{}, err
	}
	e, err := c.latest(ctx)
	if err != nil {
		return Table{}, err
	}
	n, t, ok := lookup(e, name)
	if !ok {
		return Table{}, c.notFound(name)
	}
	return c.table(n, t), nil
}

func (c *Catalog) notFound(name string) error {
	return fmt.Errorf("catalog %s: no table %q: %w", c.url, name, loch.ErrNotFound)
}

// tableStore returns the store of the table in dir.
func (c *Catalog) tableStore(dir string) (storage.Store, error) {
	return storage.Sub(c.store, keys.MakeTable(dir))
}

// OpenTable opens the table called name as the ordinary dataset it is, with
// the options of loch.Open (a reference, a version, a time, ...). The
// dataset uses the catalog's store: close it before the catalog. A table
// dropped after it was opened stays readable through the handle until
// GC's grace period has passed since the drop.
func (c *Catalog) OpenTable(ctx context.Context, name string, opts ...loch.Option) (*loch.Dataset, error) {
	t, err := c.Table(ctx, name)
	if err != nil {
		return nil, err
	}
	st, err := c.tableStore(t.Dir)
	if err != nil {
		return nil, err
	}
	d, err := loch.Open(ctx, t.URL, append(slices.Clip(opts), loch.WithStore(st))...)
	if err != nil {
		return nil, fmt.Errorf("open table %q: %w", t.Name, err)
	}
	return d, nil
}

// CreateTable makes an empty table called name with schema s (the options
// are those of loch.Create) and returns it open on branch main. It fails
// with loch.ErrExists, changing no table, when the catalog has a table of
// that name (case-insensitively): of several processes creating one name
// at once, exactly one succeeds.
func (c *Catalog) CreateTable(ctx context.Context, name string, s schema.Schema, opts ...loch.Option) (*loch.Dataset, error) {
	if err := ValidName(name); err != nil {
		return nil, err
	}
	e, err := c.latest(ctx)
	if err != nil {
		return nil, err
	}
	if n, _, ok := lookup(e, name); ok {
		return nil, c.exists(name, n)
	}
	dir := newDir(name)
	st, err := c.tableStore(dir)
	if err != nil {
		return nil, err
	}
	d, err := loch.Create(ctx, st.URL(), s, append(slices.Clip(opts), loch.WithStore(st))...)
	if err != nil {
		c.removeDir(ctx, dir)
		return nil, fmt.Errorf("create table %q: %w", name, err)
	}
	created := time.Now().UTC()
	_, err = c.change(ctx, "create table "+name, func(next *manifest.Catalog) error {
		if n, _, ok := lookup(next, name); ok {
			return c.exists(name, n)
		}
		next.Tables[name] = manifest.CatalogTable{Dir: dir, Created: created}
		return nil
	})
	if err != nil {
		d.Close()
		c.removeDir(ctx, dir) // named by no entry: nobody else can hold it
		return nil, err
	}
	return d, nil
}

func (c *Catalog) exists(name, have string) error {
	if name == have {
		return fmt.Errorf("catalog %s: table %q already exists: %w", c.url, name, loch.ErrExists)
	}
	return fmt.Errorf("catalog %s: table %q already exists (as %q): %w", c.url, name, have, loch.ErrExists)
}

// DropTable removes the table called name from the catalog (loch.ErrNotFound
// if there is none). Its data stays until GC deletes it, once the grace
// period has passed, so readers that have it open keep reading it.
func (c *Catalog) DropTable(ctx context.Context, name string) error {
	if err := ValidName(name); err != nil {
		return err
	}
	_, err := c.change(ctx, "drop table "+name, func(next *manifest.Catalog) error {
		n, _, ok := lookup(next, name)
		if !ok {
			return c.notFound(name)
		}
		delete(next.Tables, n)
		return nil
	})
	return err
}

// RenameTable renames table from to to (a change of case only is a
// rename too). It fails with loch.ErrNotFound when there is no table from
// and with loch.ErrExists when another table is called to. The table's
// data does not move: a handle opened before keeps working.
func (c *Catalog) RenameTable(ctx context.Context, from, to string) error {
	if err := ValidName(from); err != nil {
		return err
	}
	if err := ValidName(to); err != nil {
		return err
	}
	_, err := c.change(ctx, "rename table "+from+" to "+to, func(next *manifest.Catalog) error {
		n, t, ok := lookup(next, from)
		if !ok {
			return c.notFound(from)
		}
		if other, _, ok := lookup(next, to); ok && other != n {
			return c.exists(to, other)
		}
		delete(next.Tables, n)
		next.Tables[to] = t
		return nil
	})
	return err
}

// change appends the catalog entry that fn makes from a copy of the newest
// one; fn may return an error to give up (returned as is). It retries when
// another writer takes the entry's number first.
func (c *Catalog) change(ctx context.Context, op string, fn func(next *manifest.Catalog) error) (*manifest.Catalog, error) {
	var gaveUp error
	e, err := c.log.Append(ctx, maxAttempts, func(latest *manifest.Catalog) (*manifest.Catalog, error) {
		if err := checkEntry(latest); err != nil {
			gaveUp = fmt.Errorf("catalog %s: %s: %w", c.url, c.log.Key(latest.Seq), err)
			return nil, gaveUp
		}
		next := &manifest.Catalog{Seq: latest.Seq + 1, Time: time.Now().UTC(), Prev: latest.Seq,
			Tables: make(map[string]manifest.CatalogTable, len(latest.Tables)+1), Op: op}
		for k, v := range latest.Tables {
			next.Tables[k] = v
		}
		if err := fn(next); err != nil {
			gaveUp = err
			return nil, err
		}
		return next, nil
	})
	switch {
	case gaveUp != nil:
		return nil, gaveUp
	case errors.Is(err, seqlog.ErrEmpty):
		return nil, fmt.Errorf("%s: catalog %s: %w", op, c.url, ErrNoCatalog)
	case err != nil:
		return nil, fmt.Errorf("%s: %w", op, c.logErr(err))
	}
	return e, nil
}

// removeDir deletes what is under a table directory, best effort: the
// directory of a table whose creation failed. GC deletes what is left.
func (c *Catalog) removeDir(ctx context.Context, dir string) {
	_ = c.deleteDir(ctx, dir, nil)
}
