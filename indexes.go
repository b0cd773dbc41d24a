package loch

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/vindex"
	"github.com/lochdata/loch/storage"
)

// This file is what the engine knows of vector indexes (docs/format.md
// §2.8; the index itself is package vector): garbage collection keeps the
// descriptors of reachable commits and the objects they name, and Verify
// checks them.

// indexesOf lists the descriptors whose commit reached accepts.
func (d *Dataset) indexesOf(ctx context.Context, reached func(commitKey string) bool) ([]string, error) {
	var out []string
	err := d.store.List(ctx, keys.Index.Prefix(), func(a storage.Attrs) error {
		if v, _, m, ok := keys.ParseIndex(a.Key); ok && vindex.KnownMetric(m) && reached(keys.Make(keys.Commit, v)) {
			out = append(out, a.Key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", keys.Index.Prefix(), err)
	}
	return out, nil
}

// readIndex reads a descriptor.
func (d *Dataset) readIndex(ctx context.Context, key string) (*vindex.Descriptor, error) {
	obj, err := d.store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	return vindex.DecodeDescriptor(key, obj)
}

// markIndexes marks the descriptors of reachable commits and the objects
// they name. A descriptor that cannot be read stops the collection, as a
// missing reachable object does.
func (g *gc) markIndexes(ctx context.Context) error {
	descs, err := g.d.indexesOf(ctx, func(k string) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		_, ok := g.reached[k]
		return ok
	})
	if err != nil {
		return err
	}
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(gcParallelism)
	for _, key := range descs {
		if !g.reach(key) {
			continue
		}
		eg.Go(func() error {
			d, err := g.d.readIndex(ectx, key)
			if err != nil {
				return fmt.Errorf("vector index of a reachable version: %w (delete it with loch index drop)", err)
			}
			for _, o := range d.Objects() {
				g.reach(o)
			}
			return nil
		})
	}
	return eg.Wait()
}

// verifyIndexes checks the descriptors of the versions the walk reached
// and every object they name: each decodes, agrees with its descriptor and
// is named by its hash.
func (v *verifier) verifyIndexes(ctx context.Context) error {
	descs, err := v.d.indexesOf(ctx, func(k string) bool {
		v.mu.Lock()
		defer v.mu.Unlock()
		return v.seen[k]
	})
	if err != nil {
		return v.failed(keys.Index.Prefix(), err)
	}
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(gcParallelism)
	for _, key := range descs {
		if !v.reach(key) {
			continue
		}
		eg.Go(func() error {
			d, err := v.d.readIndex(ectx, key)
			if err != nil {
				return v.failed(key, err)
			}
			check := func(o string, kind byte, want int) {
				if !v.reach(o) {
					return
				}
				obj, err := v.d.store.Get(ectx, o)
				switch {
				case err != nil:
				case kind == vindex.KindPQList:
					_, err = vindex.DecodePQList(o, d.Dim, d.M, want, obj)
				default:
					_, err = vindex.DecodeVectors(o, kind, d.Dim, want, obj)
				}
				if err != nil {
					v.failed(o, err)
				}
			}
			check(d.Centroids, vindex.KindCentroids, len(d.Lists))
			listKind := vindex.KindList
			if d.Type == vindex.TypePQ {
				check(d.Codebook, vindex.KindCodebook, -1)
				listKind = vindex.KindPQList
			}
			for _, l := range d.Lists {
				if l.Key != "" {
					check(l.Key, listKind, l.Rows)
				}
			}
			return nil
		})
	}
	return eg.Wait()
}
