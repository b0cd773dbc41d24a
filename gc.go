package loch

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/storage"
)

// DefaultGCGrace is the default grace period of gc in the CLI and the
// Python API: a day, longer than any one ingest or commit is expected to
// take between its first upload and its commit point.
const DefaultGCGrace = 24 * time.Hour

// gcParallelism bounds the concurrent store requests of GC and of every
// walk (GC's marking, Verify): object stores answer one request in tens of
// milliseconds, so they keep several in flight.
const gcParallelism = 16

// gcPhases are the kinds of objects GC considers, by key prefix, in the
// order it deletes them (docs/format.md, section 5): each phase ends before
// the next begins, so that what names an object goes before it.
var gcPhases = [][]keys.Kind{{keys.Selection, keys.Index}, {keys.Commit}, {keys.Manifest}, {keys.Fragment, keys.Extension, keys.Deletion}, {keys.Chunk, keys.Vectors, keys.Text}}

// gcKinds lists the kinds of gcPhases.
var gcKinds = slices.Concat(gcPhases...)

// GCOptions configures GC.
type GCOptions struct {
	// Grace keeps unreachable objects younger than this (by their stored
	// modification time), so that a writer's not yet committed objects
	// survive, and keeps reachable everything that a reference named at
	// any time within it (so a branch deleted a moment ago can still be
	// recreated). Zero keeps none. It should exceed the longest time a
	// writer stages before committing, plus the clock skew between this
	// machine, the writers and the store.
	Grace time.Duration
	// DryRun reports what would be deleted and deletes nothing.
	DryRun bool
	// KeepLast and OlderThan turn on version retention (docs/format.md
	// §5.2): a commit that is none of the newest max(KeepLast, 1) of a
	// branch's first-parent history, is older than OlderThan (any age when
	// zero), and that no tag, saved selection or branch names (nor serves a
	// named commit its vector index) expires: it and whatever only expired
	// commits reach are collected. Both zero: every version a reference
	// reaches is kept.
	KeepLast  int
	OlderThan time.Duration
}

// retains reports whether version retention is on.
func (o GCOptions) retains() bool { return o.KeepLast > 0 || o.OlderThan > 0 }

// GCKind counts objects of one kind.
type GCKind struct {
	Objects int64 `json:"objects"`
	Bytes   int64 `json:"bytes"`
}

func (k *GCKind) add(size int64) {
	k.Objects++
	k.Bytes += size
}

// GCReport reports a garbage collection.
type GCReport struct {
	DryRun    bool              `json:"dry_run"`
	Reachable GCKind            `json:"reachable"` // kept: reachable from a reference
	Young     GCKind            `json:"young"`     // kept: unreachable but within the grace period
	Leased    GCKind            `json:"leased"`    // kept: unreachable but covered by a live writer's lease (docs/format.md §5.1)
	Deleted   GCKind            `json:"deleted"`   // deleted (or, in a dry run, would be)
	ByKind    map[string]GCKind `json:"by_kind"`   // deleted by key prefix: chunks, fragments, ...
	// Missing lists, sorted, the reachable chunks and deletion vectors that
	// the store does not hold: the dataset is damaged there (loch verify
	// says which versions). GC does not need to read them, so it goes on.
	Missing []string `json:"missing,omitempty"`
	// Expired counts the commits version retention expired where kept
	// history ends (parents of kept commits, which get expiry markers)
	// that were deleted, or in a dry run would be; the older history
	// behind them is deleted as unreachable. DeadLeases counts the
	// leases of writers gone for longer than the grace period, deleted.
	Expired    int64 `json:"expired"`
	DeadLeases int64 `json:"dead_leases"`
}

// GC deletes the objects that no branch or tag reaches (through commits and
// their parents) and that are older than opts.Grace.
//
// The references are those of the newest log entry and of every entry
// written within the grace period (and the one current when it began).
// From each referenced commit GC follows all parents and, for every commit,
// its manifest, the manifest's fragments, extensions and deletion vectors
// and the fragments' and extensions' chunks, and the vector indexes named
// by a reached commit with their objects (docs/format.md §2.8). Of the
// objects under commits/, manifests/, fragments/, extensions/, deletions/,
// chunks/, indexes/ and vectors/ (keys of
// another form there are left alone), it deletes those reached by none and
// stored before now minus the grace period; the log and the dataset marker
// are never touched.
//
// Marking reads every reachable commit, manifest, fragment and extension.
// If any of those reads fails (a missing or corrupt object, a store
// error), GC returns the error and deletes nothing. Before deleting, GC
// reads the log again and also keeps what references written meanwhile
// reach, and it checks each object's time again, keeping one rewritten
// since GC began. Deletion goes commits first, chunks last, so that an
// interrupted GC never leaves a commit whose manifest it deleted; a later
// GC finishes the job. If a deletion fails, GC stops and returns the
// report of what it deleted with the error.
//
// A Progress in ctx (see WithProgress) gets phase "mark" with the
// reachable objects found so far (total -1), then "delete" with the
// unreachable objects dealt with (deleted, counted in a dry run, or kept
// as rewritten) out of those to delete.
//
// Objects that writers have staged but not yet committed, this handle's
// included, are kept by the grace period and by their writers' live
// leases (docs/format.md §5.1). With opts.KeepLast or opts.OlderThan, old
// versions of branches expire (§5.2): the walk does not go through them,
// and the expired commits where kept history ends get expiry markers
// before they are deleted.
//
// GC is a dataset-wide operation: a read-only handle may run it, and it
// does not move the handle.
func (d *Dataset) GC(ctx context.Context, opts GCOptions) (*GCReport, error) {
	if opts.Grace < 0 {
		return nil, invalidf("gc %s: negative grace period %s", d.url, opts.Grace)
	}
	if opts.KeepLast < 0 || opts.OlderThan < 0 {
		return nil, invalidf("gc %s: keep-last %d, older-than %s: want 0 or more", d.url, opts.KeepLast, opts.OlderThan)
	}
	start := time.Now()
	g := &gc{d: d, opts: opts, start: start, cutoff: start.Add(-opts.Grace), reached: map[string]bool{}, progress: progressOf(ctx),
		report: GCReport{DryRun: opts.DryRun, ByKind: map[string]GCKind{}}, keepIDs: map[string]bool{}, named: map[string]bool{}, expired: map[string]bool{}}
	for _, k := range gcKinds {
		g.report.ByKind[k.Dir()] = GCKind{}
	}
	cands, err := g.mark(ctx)
	if err != nil {
		return nil, fmt.Errorf("gc %s (nothing was deleted): %w", d.url, err)
	}
	doomed := map[keys.Kind][]storage.Attrs{}
	for kind, objs := range cands {
		for _, a := range objs {
			_, reached := g.reached[a.Key]
			switch {
			case reached: // by references written while GC listed
				g.report.Reachable.add(a.Size)
			case g.young(a):
				g.report.Young.add(a.Size)
			case g.leased(a):
				g.report.Leased.add(a.Size)
			default:
				doomed[kind] = append(doomed[kind], a)
			}
		}
	}
	for _, objs := range doomed {
		g.total += int64(len(objs))
	}
	g.progress("delete", 0, g.total)
	for _, phase := range gcPhases {
		var objs []storage.Attrs
		for _, kind := range phase {
			objs = append(objs, doomed[kind]...)
		}
		if err := g.delete(ctx, objs); err != nil {
			return &g.report, err
		}
	}
	if err := g.deleteDeadLeases(ctx); err != nil {
		return &g.report, err
	}
	return &g.report, nil
}

// mark marks what the references reach and lists the other objects, by
// kind.
func (g *gc) mark(ctx context.Context) (map[keys.Kind][]storage.Attrs, error) {
	root, err := g.d.latestRoot(ctx)
	if err != nil {
		return nil, err
	}
	roots, err := g.rootsWithinGrace(ctx, root)
	if err != nil {
		return nil, err
	}
	if err := g.retainIndexed(ctx, roots); err != nil {
		return nil, err
	}
	if err := g.markRoots(ctx, roots); err != nil {
		return nil, err
	}
	cands, err := g.list(ctx)
	if err != nil {
		return nil, err
	}
	// Leases are listed after the candidates and before the log is read
	// again: docs/format.md §5.1 proves the writers' objects safe in this
	// order.
	if err := g.listLeases(ctx); err != nil {
		return nil, err
	}
	// Writers may have moved or created references since: keep what they
	// reach too (objects they wrote after the listing are not candidates).
	if err := g.markNewer(ctx, root.Seq); err != nil {
		return nil, err
	}
	// Vector indexes (docs/format.md §2.8) live while their commit does.
	if err := g.markIndexes(ctx); err != nil {
		return nil, err
	}
	g.report.Missing = g.missing
	return cands, nil
}

// gc is the state of one garbage collection.
type gc struct {
	d      *Dataset
	opts   GCOptions
	start  time.Time
	cutoff time.Time // unreachable objects stored after this are kept

	mu sync.Mutex
	// reached holds the keys of reachable objects, each with whether the
	// listing found it.
	reached map[string]bool
	missing []string // reachable chunks and deletions the listing lacks
	report  GCReport

	progress    Progress // called under mu
	done, total int64    // unreachable objects dealt with, and to deal with

	// Writers' leases (docs/format.md §5.1): with leased set, a live lease
	// keeps unreachable objects stored at or after leaseSince; dead lists
	// the leases to delete.
	leasedAny  bool
	leaseSince time.Time
	dead       []deadLease

	// Version retention (§5.2): keepIDs holds the commits kept whatever
	// their age, named those references name, expired those the walk did
	// not go through.
	keepIDs, named map[string]bool
	expired        map[string]bool
}

// young reports whether the grace period keeps an unreachable object.
func (g *gc) young(a storage.Attrs) bool {
	if a.ModTime.IsZero() {
		// A store that gives no time proves no age.
		return g.opts.Grace > 0
	}
	return a.ModTime.After(g.cutoff)
}

// rootsWithinGrace returns the commit ids named by the latest root entry
// and by every older entry written within the grace period, and by the
// entry that was current when the grace period began: what any of them
// named was named by a reference within the grace period.
func (g *gc) rootsWithinGrace(ctx context.Context, latest *manifest.Root) ([]walkRoot, error) {
	ids := refCommits(nil, latest)
	if err := g.retainRoots(ctx, ids); err != nil {
		return nil, err
	}
	if !latest.Time.After(g.cutoff) {
		return ids, nil
	}
	// With retention, an older entry's references count only when the
	// newest entry no longer has them (deleted ones): the former heads of
	// a branch are its history, which retention decides (§5.2).
	older := func(r *manifest.Root) []walkRoot {
		all := refCommits(nil, r)
		if !g.opts.retains() {
			return all
		}
		var out []walkRoot
		for _, w := range all {
			if _, ok := latest.Refs[w.name]; !ok {
				out = append(out, w)
			}
		}
		return out
	}
	// Read backwards, a batch of entries at a time.
	for next := latest.Seq - 1; next >= 1; {
		hi, n := next, min(next, gcParallelism)
		batch := make([]*manifest.Root, n)
		eg, ectx := errgroup.WithContext(ctx)
		for i := range batch {
			eg.Go(func() error {
				r, err := g.d.readRoot(ectx, hi-uint64(i))
				if err != nil {
					return fmt.Errorf("read the log within the grace period: %w", err)
				}
				batch[i] = r
				return nil
			})
		}
		if err := eg.Wait(); err != nil {
			return nil, err
		}
		for _, r := range batch {
			more := older(r)
			if err := g.retainRoots(ctx, more); err != nil {
				return nil, err
			}
			ids = append(ids, more...)
			if !r.Time.After(g.cutoff) {
				return ids, nil
			}
		}
		next -= n
	}
	return ids, nil
}

// refCommits appends the commits that root's references name.
func refCommits(roots []walkRoot, root *manifest.Root) []walkRoot {
	for _, k := range sortedKeys(root.Refs) {
		roots = append(roots, walkRoot{id: root.Refs[k], ref: k + " in " + keys.MakeLog(root.Seq), name: k,
			selection: strings.HasPrefix(k, selectionsPrefix)})
	}
	return roots
}

// markNewer marks from the references of the log entries written after
// entry seq, until the log stops advancing (or a few rounds have passed:
// the grace period covers writers that keep committing).
func (g *gc) markNewer(ctx context.Context, seq uint64) error {
	for round := 0; round < 8; round++ {
		latest, err := g.d.latestRoot(ctx)
		if err != nil {
			return fmt.Errorf("read the log again: %w", err)
		}
		if latest.Seq <= seq {
			return nil
		}
		ids := refCommits(nil, latest)
		for s := seq + 1; s < latest.Seq; s++ {
			r, err := g.d.readRoot(ctx, s)
			if err != nil {
				return fmt.Errorf("read the log again: %w", err)
			}
			ids = refCommits(ids, r)
		}
		if err := g.retainRoots(ctx, ids); err != nil {
			return err
		}
		if err := g.markRoots(ctx, ids); err != nil {
			return err
		}
		seq = latest.Seq
	}
	return nil
}

// markRoots marks everything the roots reach.
func (g *gc) markRoots(ctx context.Context, roots []walkRoot) error {
	return walkFrom(ctx, g.d, g, roots)
}

// gc marks as a walkVisitor: it reads commits, manifests, fragments and
// extensions (what names other objects) and only marks deletion vectors
// and chunks; any failure ends the walk, and GC with it.
var _ walkVisitor = (*gc)(nil)

// reach records key as reachable and reports whether it was new.
func (g *gc) reach(key string) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if _, ok := g.reached[key]; ok {
		return false
	}
	g.reached[key] = false
	g.progress("mark", int64(len(g.reached)), -1)
	return true
}

// read reads and decodes a reachable object; via names what named it.
func (g *gc) read(ctx context.Context, key, via string, kind byte, v any) error {
	err := g.d.getObject(ctx, key, kind, v)
	if err == nil {
		return nil
	}
	if errors.Is(err, ErrNotFound) {
		return fmt.Errorf("%s, named by %s, is missing: the dataset is damaged (run loch verify): %w", key, via, err)
	}
	return fmt.Errorf("%s, named by %s: %w", key, via, err)
}

// fragment reads the fragment and extension objects not read before and
// returns their chunks; the deletion vector is marked, not read.
func (g *gc) fragment(ctx context.Context, ref manifest.FragmentRef, via string) ([]manifest.ChunkRef, error) {
	var chunks []manifest.ChunkRef
	add := func(key string, kind byte) error {
		if !g.reach(key) {
			return nil
		}
		var f manifest.Fragment
		if err := g.read(ctx, key, via, kind, &f); err != nil {
			return err
		}
		for _, refs := range f.Columns {
			chunks = append(chunks, refs...)
		}
		return nil
	}
	if err := add(ref.Key, manifest.KindFragment); err != nil {
		return nil, err
	}
	for _, e := range ref.Extensions {
		if err := add(e, manifest.KindExtension); err != nil {
			return nil, err
		}
	}
	if ref.Deletions != "" {
		g.reach(ref.Deletions)
	}
	return chunks, nil
}

func (g *gc) manifest(string, *manifest.Manifest) error { return nil }

// chunk has nothing to do: reach marked it.
func (g *gc) chunk(context.Context, manifest.ChunkRef) error { return nil }

func (g *gc) failed(_ string, err error) error { return err }

// list returns, by kind, the objects that are not marked reachable, and
// counts the others as reachable. Chunks are listed by their 256
// subdirectories in parallel.
func (g *gc) list(ctx context.Context) (map[keys.Kind][]storage.Attrs, error) {
	var prefixes []string
	for _, kind := range gcKinds {
		if kind != keys.Chunk {
			prefixes = append(prefixes, kind.Prefix())
		}
	}
	for i := 0; i < 256; i++ {
		prefixes = append(prefixes, fmt.Sprintf("%s%02x/", keys.Chunk.Prefix(), i))
	}
	out := map[keys.Kind][]storage.Attrs{}
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(gcParallelism)
	for _, prefix := range prefixes {
		eg.Go(func() error {
			var cands []storage.Attrs
			var kind keys.Kind
			err := g.d.store.List(ectx, prefix, func(a storage.Attrs) error {
				// Only keys of the layout's hashed kinds are candidates.
				if k, _, ok := keys.Parse(a.Key); ok && slices.Contains(gcKinds, k) {
					kind = k
					cands = append(cands, a)
				}
				return nil
			})
			if err != nil {
				return fmt.Errorf("list %s: %w", prefix, err)
			}
			g.mu.Lock()
			defer g.mu.Unlock()
			for _, a := range cands {
				if _, ok := g.reached[a.Key]; ok {
					g.reached[a.Key] = true
					g.report.Reachable.add(a.Size)
				} else {
					out[kind] = append(out[kind], a)
				}
			}
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	// Commits, manifests, fragments and extensions were read while
	// marking; chunks and deletion vectors were not.
	for key, listed := range g.reached {
		if k, _, _ := keys.Parse(key); !listed && (k == keys.Chunk || k == keys.Deletion || k == keys.Vectors || k == keys.Text) {
			g.missing = append(g.missing, key)
		}
	}
	slices.Sort(g.missing)
	return out, nil
}

// delete deletes objs (or, in a dry run, counts them), keeping any whose
// stored time is now within the grace period: a writer rewrote it since
// the listing (content-addressed objects are rewritten whole when a new
// snapshot holds them again).
func (g *gc) delete(ctx context.Context, objs []storage.Attrs) error {
	if g.opts.DryRun {
		for _, a := range objs {
			g.deleted(a)
			g.dealt()
		}
		return nil
	}
	slices.SortFunc(objs, func(a, b storage.Attrs) int { return strings.Compare(a.Key, b.Key) })
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(gcParallelism)
	for _, a := range objs {
		if ectx.Err() != nil {
			break
		}
		eg.Go(func() error {
			cur, err := g.d.store.Stat(ectx, a.Key)
			if errors.Is(err, storage.ErrNotFound) {
				g.mu.Lock()
				g.dealt()
				g.mu.Unlock()
				return nil // deleted by someone else
			}
			if err != nil {
				return fmt.Errorf("gc %s: stat %s before deleting it: %w", g.d.url, a.Key, err)
			}
			if g.young(cur) || g.leased(cur) {
				g.mu.Lock()
				if g.young(cur) {
					g.report.Young.add(cur.Size)
				} else {
					g.report.Leased.add(cur.Size)
				}
				g.dealt()
				g.mu.Unlock()
				return nil
			}
			if err := g.markExpired(ectx, a.Key); err != nil {
				return err
			}
			if err := g.d.store.Delete(ectx, a.Key); err != nil {
				return fmt.Errorf("gc %s: delete %s: %w", g.d.url, a.Key, err)
			}
			g.mu.Lock()
			g.deleted(cur)
			g.dealt()
			g.mu.Unlock()
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// dealt reports one more object of the delete phase dealt with; the caller
// holds g.mu or is alone.
func (g *gc) dealt() {
	g.done++
	g.progress("delete", g.done, g.total)
}

// deleted counts a deleted object; the caller holds g.mu or is alone.
func (g *gc) deleted(a storage.Attrs) {
	g.report.Deleted.add(a.Size)
	kind, id, _ := keys.Parse(a.Key)
	if kind == keys.Commit && g.expired[id] {
		g.report.Expired++
	}
	k := g.report.ByKind[kind.Dir()]
	k.add(a.Size)
	g.report.ByKind[kind.Dir()] = k
}
