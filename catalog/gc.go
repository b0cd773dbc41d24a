package catalog

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/storage"
)

// GCReport reports a garbage collection of a catalog.
type GCReport struct {
	DryRun bool `json:"dry_run"`
	// Deleted lists the directories of dropped tables (and of creations
	// that never named one) deleted, or in a dry run that would be.
	Deleted []DirReport `json:"deleted"`
	// LogEntries counts the catalog entries older than the grace period
	// deleted (or that would be).
	LogEntries int `json:"log_entries"`
	// Young lists the unnamed directories kept because an object in them
	// was stored within the grace period.
	Young []DirReport `json:"young"`
	// Tables holds the report of each table's own collection, by name.
	Tables map[string]*loch.GCReport `json:"tables"`
}

// DirReport describes one table directory.
type DirReport struct {
	Dir     string `json:"dir"`
	Objects int64  `json:"objects"`
	Bytes   int64  `json:"bytes"`
}

// GC deletes the directories of tables dropped more than opts.Grace ago
// (and of table creations that failed as long ago), then collects each
// table as a dataset (loch.Dataset.GC) with the same options. The rules
// are docs/format.md §6's: a directory is kept if the newest catalog
// entry, any entry written within the grace period or the one current when
// it began names it, or if any of its objects was stored within the grace
// period; the log is read again before deleting. Finding unnamed
// directories lists every object under tables/, so GC costs a listing of
// the whole catalog. With opts.DryRun nothing is deleted. On an error GC stops and returns what it has done so far.
func (c *Catalog) GC(ctx context.Context, opts loch.GCOptions) (*GCReport, error) {
	if opts.Grace < 0 {
		return nil, fmt.Errorf("gc catalog %s: negative grace period %s: %w", c.url, opts.Grace, loch.ErrInvalidArgument)
	}
	cutoff := c.now().Add(-opts.Grace)
	rep := &GCReport{DryRun: opts.DryRun, Deleted: []DirReport{}, Young: []DirReport{}, Tables: map[string]*loch.GCReport{}}
	latest, err := c.latest(ctx)
	if err != nil {
		return nil, err
	}
	live, oldest, err := c.liveDirs(ctx, latest, cutoff)
	if err != nil {
		return nil, fmt.Errorf("gc catalog %s (nothing was deleted): %w", c.url, err)
	}
	dirs, err := c.listDirs(ctx, live)
	if err != nil {
		return nil, fmt.Errorf("gc catalog %s (nothing was deleted): %w", c.url, err)
	}
	// Writers may have named directories since: keep those too.
	now, err := c.readSince(ctx, latest.Seq, func(e *manifest.Catalog) {
		for _, t := range e.Tables {
			delete(dirs, t.Dir)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("gc catalog %s (nothing was deleted): read the log again: %w", c.url, err)
	}
	for _, dir := range sortedKeys(dirs) {
		objs := dirs[dir]
		r := DirReport{Dir: dir}
		young := false
		for _, a := range objs {
			r.Objects++
			r.Bytes += a.Size
			young = young || (a.ModTime.IsZero() && opts.Grace > 0) || a.ModTime.After(cutoff)
		}
		if young {
			rep.Young = append(rep.Young, r)
			continue
		}
		if !opts.DryRun {
			if err := c.deleteDir(ctx, dir, objs); err != nil {
				return rep, fmt.Errorf("gc catalog %s: %w", c.url, err)
			}
		}
		rep.Deleted = append(rep.Deleted, r)
	}
	for _, name := range sortedKeys(now.Tables) {
		st, err := c.tableStore(now.Tables[name].Dir)
		if err != nil {
			return rep, err
		}
		d, err := loch.Open(ctx, st.URL(), loch.WithStore(st), loch.WithCacheBytes(0))
		if err != nil {
			return rep, fmt.Errorf("gc catalog %s: table %q: %w", c.url, name, err)
		}
		tr, err := d.GC(ctx, opts)
		d.Close()
		if tr != nil {
			rep.Tables[name] = tr
		}
		if err != nil {
			return rep, fmt.Errorf("gc catalog %s: table %q: %w", c.url, name, err)
		}
	}
	n, err := c.deleteEntries(ctx, oldest, opts.DryRun)
	rep.LogEntries = n
	if err != nil {
		return rep, fmt.Errorf("gc catalog %s: %w", c.url, err)
	}
	return rep, nil
}

// listDirs lists the objects under tables/ by table directory, but for
// the directories in skip.
func (c *Catalog) listDirs(ctx context.Context, skip map[string]bool) (map[string][]storage.Attrs, error) {
	dirs := map[string][]storage.Attrs{}
	err := c.store.List(ctx, keys.TablesPrefix, func(a storage.Attrs) error {
		dir, _, ok := strings.Cut(strings.TrimPrefix(a.Key, keys.TablesPrefix), "/")
		if ok && !skip[dir] {
			dirs[dir] = append(dirs[dir], a)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", keys.TablesPrefix, err)
	}
	return dirs, nil
}

// readSince reads the entries written after entry seq (by writers working
// meanwhile), calls each with them, oldest first, and returns the newest.
func (c *Catalog) readSince(ctx context.Context, seq uint64, each func(*manifest.Catalog)) (*manifest.Catalog, error) {
	now, err := c.latest(ctx)
	if err != nil {
		return nil, err
	}
	for s := seq + 1; s <= now.Seq; s++ {
		e, err := c.read(ctx, s)
		if err != nil {
			return nil, err
		}
		each(e)
	}
	return now, nil
}

// deleteEntries deletes the catalog entries before entry keep, oldest
// first, and counts them.
func (c *Catalog) deleteEntries(ctx context.Context, keep uint64, dryRun bool) (int, error) {
	var old []string
	err := c.store.List(ctx, keys.CatalogLogPrefix, func(a storage.Attrs) error {
		if seq, ok := keys.ParseLogIn(keys.CatalogLogPrefix, a.Key); ok && seq < keep {
			old = append(old, a.Key) // listed in key order: oldest first
		}
		return nil
	})
	if err != nil || dryRun {
		return len(old), err
	}
	for i, key := range old {
		if err := c.store.Delete(ctx, key); err != nil {
			return i, fmt.Errorf("delete old catalog entry: %w", err)
		}
	}
	return len(old), nil
}

// liveDirs returns the directories named by the newest entry and by every
// older one written after cutoff, and by the one current at cutoff, and the
// sequence number of the oldest entry it read. An entry that an earlier
// collection deleted ends the walk.
func (c *Catalog) liveDirs(ctx context.Context, latest *manifest.Catalog, cutoff time.Time) (map[string]bool, uint64, error) {
	live := map[string]bool{}
	for e := latest; ; {
		for _, t := range e.Tables {
			live[t.Dir] = true
		}
		if !e.Time.After(cutoff) || e.Seq <= 1 {
			return live, e.Seq, nil
		}
		prev, err := c.read(ctx, e.Seq-1)
		if errors.Is(err, loch.ErrNotFound) {
			return live, e.Seq, nil
		}
		if err != nil {
			return nil, 0, fmt.Errorf("read the log within the grace period: %w", err)
		}
		e = prev
	}
}

// deleteDir deletes the objects of a table directory (listing them when
// objs is nil): the dataset's log and marker last, so that an interrupted
// deletion leaves a directory that a later one finishes.
func (c *Catalog) deleteDir(ctx context.Context, dir string, objs []storage.Attrs) error {
	root := keys.MakeTable(dir)
	if objs == nil {
		if err := c.store.List(ctx, root, func(a storage.Attrs) error {
			objs = append(objs, a)
			return nil
		}); err != nil {
			return fmt.Errorf("delete table directory %s: %w", dir, err)
		}
	}
	last := func(a storage.Attrs) int {
		rest := strings.TrimPrefix(a.Key, root)
		switch {
		case strings.HasPrefix(rest, keys.LogPrefix):
			return 2
		case rest == keys.MarkerKey:
			return 1
		}
		return 0
	}
	objs = slices.Clone(objs)
	slices.SortStableFunc(objs, func(a, b storage.Attrs) int { return last(a) - last(b) })
	for _, a := range objs {
		if err := c.store.Delete(ctx, a.Key); err != nil {
			return fmt.Errorf("delete table directory %s: %w", dir, err)
		}
	}
	return nil
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}
