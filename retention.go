package loch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/storage"
)

// This file is garbage collection's version retention (docs/format.md
// §5.2) and its respect of writers' leases (§5.1), and what readers of the
// commit graph do with a parent that retention collected.

// collected reports whether commit id was collected by version retention:
// its expiry marker exists. A store error reads as not collected (the
// caller then reports the commit missing, as damage).
func (d *Dataset) collected(ctx context.Context, id string) bool {
	if !keys.ValidID(id) {
		return false
	}
	_, err := d.store.Stat(ctx, keys.MakeExpired(id))
	return err == nil
}

// readParent reads commit id, a parent of some commit. It returns nil and
// no error when retention collected it (docs/format.md §5.2).
func (d *Dataset) readParent(ctx context.Context, id string) (*manifest.Commit, error) {
	c := new(manifest.Commit)
	err := d.getObject(ctx, keys.Make(keys.Commit, id), manifest.KindCommit, c)
	if errors.Is(err, ErrNotFound) && d.collected(ctx, id) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return c, nil
}

// expiryMarker is the JSON of `_loch/expired/<commit id>`.
type expiryMarker struct {
	Time             time.Time `json:"time"`
	KeepLast         int       `json:"keep_last"`
	OlderThanSeconds float64   `json:"older_than_seconds"`
}

// retainRoots adds to the kept commits (§5.2, rules 1 and 2) the commits
// roots name and the newest commits of each named branch's first-parent
// history. It does nothing without retention.
func (g *gc) retainRoots(ctx context.Context, roots []walkRoot) error {
	if !g.opts.retains() {
		return nil
	}
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(gcParallelism)
	for _, r := range roots {
		eg.Go(func() error {
			switch {
			case r.selection:
				if !keys.ValidID(r.id) {
					return nil // the walk reports it
				}
				var s manifest.Selection
				if err := g.d.getObject(ectx, keys.Make(keys.Selection, r.id), manifest.KindSelection, &s); err != nil {
					return fmt.Errorf("%s: %w", r.ref, err)
				}
				g.keepID(s.Version)
				g.nameID(s.Version)
			case strings.HasPrefix(r.name, headsPrefix):
				g.nameID(r.id)
				id := r.id
				for i := 0; i < max(g.opts.KeepLast, 1) && id != ""; i++ {
					g.keepID(id)
					c, err := g.d.readParent(ectx, id)
					if err != nil {
						return fmt.Errorf("history of %s: %w", r.ref, err)
					}
					if c == nil || len(c.Parents) == 0 {
						break
					}
					id = c.Parents[0]
				}
			default:
				g.keepID(r.id)
				g.nameID(r.id)
			}
			return nil
		})
	}
	return eg.Wait()
}

func (g *gc) keepID(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.keepIDs[id] = true
}

// nameID records a commit that a reference names (§5.2, rule 1).
func (g *gc) nameID(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.named[id] = true
}

// retainIndexed keeps (§5.2, rule 4), for each commit references name, the
// commit whose vector index a search of it uses, for every column and
// metric it has none of its own for, and the commits that lie before that
// one in its log order, so that the search still finds it.
func (g *gc) retainIndexed(ctx context.Context, roots []walkRoot) error {
	if !g.opts.retains() {
		return nil
	}
	byCommit := map[string]map[string]bool{} // commit id -> "<uid>.<metric>"
	groups := map[string]bool{}
	err := g.d.store.List(ctx, keys.Index.Prefix(), func(a storage.Attrs) error {
		if v, uid, m, ok := keys.ParseIndex(a.Key); ok && knownIndex(m) {
			grp := fmt.Sprintf("%d.%s", uid, m)
			if byCommit[v] == nil {
				byCommit[v] = map[string]bool{}
			}
			byCommit[v][grp] = true
			groups[grp] = true
		}
		return nil
	})
	if err != nil || len(groups) == 0 {
		return err
	}
	cg := &commitGraph{d: g.d, commits: map[string]*manifest.Commit{}}
	for _, id := range sortedKeys(g.named) {
		need := map[string]bool{}
		for grp := range groups {
			if !byCommit[id][grp] {
				need[grp] = true
			}
		}
		if len(need) == 0 {
			continue
		}
		path, err := servingPath(ctx, cg, id, byCommit, need)
		if err != nil {
			return fmt.Errorf("vector indexes serving %s: %w", id, err)
		}
		for _, c := range path {
			g.keepID(c)
		}
	}
	return nil
}

// servingPath returns the commits that a search of version id visits in
// log order (newest first by time, as Dataset.Log and vector.Find go), up
// to the last one that holds a descriptor of a group in need; none when
// no visited commit has one. Commits are read through cg, once each
// however many versions ask.
func servingPath(ctx context.Context, cg *commitGraph, id string, byCommit map[string]map[string]bool, need map[string]bool) ([]string, error) {
	type entry struct {
		id string
		t  time.Time
	}
	later := func(a, b entry) bool { return a.t.After(b.t) || a.t.Equal(b.t) && a.id > b.id }
	seen := map[string]bool{id: true}
	frontier := []entry{} // oldest first; the newest is popped
	push := func(id string) error {
		c, err := cg.get(ctx, id)
		if err != nil {
			return err
		}
		if slices.Contains(cg.collected, id) {
			return nil
		}
		e := entry{id, c.Time}
		k := sort.Search(len(frontier), func(k int) bool { return later(frontier[k], e) })
		frontier = slices.Insert(frontier, k, e)
		return nil
	}
	if err := push(id); err != nil {
		return nil, err
	}
	var visited []string
	last := -1
	for len(frontier) > 0 && len(need) > 0 {
		e := frontier[len(frontier)-1]
		frontier = frontier[:len(frontier)-1]
		visited = append(visited, e.id)
		for grp := range byCommit[e.id] {
			if need[grp] {
				delete(need, grp)
				last = len(visited) - 1
			}
		}
		for _, p := range cg.commits[e.id].Parents {
			if !seen[p] {
				seen[p] = true
				if err := push(p); err != nil {
					return nil, err
				}
			}
		}
	}
	return visited[:last+1], nil
}

// keep decides, for the walk, whether commit key is kept (§5.2): always
// without retention; else when retainRoots or retainIndexed kept it or it
// is younger than OlderThan. An expired commit is unmarked, so that it is
// a candidate, and recorded, so that its marker is written before it is
// deleted.
func (g *gc) keep(key string, c *manifest.Commit) bool {
	if !g.opts.retains() {
		return true
	}
	id := strings.TrimPrefix(key, keys.Commit.Prefix())
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.keepIDs[id] || (g.opts.OlderThan > 0 && c.Time.After(g.start.Add(-g.opts.OlderThan))) {
		return true
	}
	delete(g.reached, key)
	g.expired[id] = true
	return false
}

// markExpired writes the expiry marker of key, when it is a commit that
// retention expired, before the commit is deleted.
func (g *gc) markExpired(ctx context.Context, key string) error {
	kind, id, _ := keys.Parse(key)
	g.mu.Lock()
	expired := kind == keys.Commit && g.expired[id]
	g.mu.Unlock()
	if !expired {
		return nil
	}
	b, err := json.Marshal(expiryMarker{Time: g.start.UTC(), KeepLast: g.opts.KeepLast, OlderThanSeconds: g.opts.OlderThan.Seconds()})
	if err != nil {
		return err
	}
	if err := g.d.store.Put(ctx, keys.MakeExpired(id), b); err != nil {
		return fmt.Errorf("gc %s: write the expiry marker of %s: %w", g.d.url, key, err)
	}
	return nil
}

// listLeases reads the writers' leases (docs/format.md §5.1): a live one
// keeps what its writer stored since it began; a lease expired for longer
// than the grace period is noted for deletion.
func (g *gc) listLeases(ctx context.Context) error {
	var ls []storage.Attrs
	err := g.d.store.List(ctx, keys.LeasePrefix, func(a storage.Attrs) error {
		if k, _, ok := keys.Parse(a.Key); ok && k == keys.Lease {
			ls = append(ls, a)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s: %w", keys.LeasePrefix, err)
	}
	now := time.Now()
	for _, a := range ls {
		obj, err := g.d.store.Get(ctx, a.Key)
		if errors.Is(err, storage.ErrNotFound) {
			continue // released since the listing
		}
		if err != nil {
			return fmt.Errorf("read lease %s: %w", a.Key, err)
		}
		ttl, since := g.opts.Grace, a.ModTime
		var b leaseBody
		if json.Unmarshal(obj, &b) == nil && b.TTLSeconds > 0 {
			ttl = time.Duration(b.TTLSeconds * float64(time.Second))
			if b.Since != nil {
				since = *b.Since
			}
		}
		switch {
		case a.ModTime.IsZero() || a.ModTime.After(now.Add(-ttl)):
			if !g.leasedAny || since.Before(g.leaseSince) {
				g.leaseSince = since
			}
			g.leasedAny = true
		case a.ModTime.Before(now.Add(-ttl - g.opts.Grace)):
			g.dead = append(g.dead, deadLease{key: a.Key, before: now.Add(-ttl - g.opts.Grace)})
		}
	}
	return nil
}

// deadLease is a lease to delete if it is still stored before a time.
type deadLease struct {
	key    string
	before time.Time
}

// leased reports whether a live lease keeps an unreachable object.
func (g *gc) leased(a storage.Attrs) bool {
	return g.leasedAny && !a.ModTime.Before(g.leaseSince.Add(-leaseMargin))
}

// deleteDeadLeases deletes the leases listLeases found dead, unless one
// was renewed since (its writer came back, and knows its lease lapsed).
func (g *gc) deleteDeadLeases(ctx context.Context) error {
	if g.opts.DryRun {
		return nil
	}
	for _, l := range g.dead {
		cur, err := g.d.store.Stat(ctx, l.key)
		if errors.Is(err, storage.ErrNotFound) {
			continue
		}
		if err != nil {
			return fmt.Errorf("gc %s: stat lease %s: %w", g.d.url, l.key, err)
		}
		if !cur.ModTime.Before(l.before) {
			continue
		}
		if err := g.d.store.Delete(ctx, l.key); err != nil {
			return fmt.Errorf("gc %s: delete lease %s: %w", g.d.url, l.key, err)
		}
		g.report.DeadLeases++
	}
	return nil
}
