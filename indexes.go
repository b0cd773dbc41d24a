package loch

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch/internal/ftsindex"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/vindex"
	"github.com/lochdata/loch/storage"
)

// This file is what the engine knows of vector and full-text indexes
// (docs/format.md §2.8, §2.9; the indexes themselves are packages vector
// and fts): garbage collection keeps the
// descriptors of reachable commits and the objects they name, and Verify
// checks them.

// indexesOf lists the descriptors whose commit reached accepts.
func (d *Dataset) indexesOf(ctx context.Context, reached func(commitKey string) bool) ([]string, error) {
	var out []string
	err := d.store.List(ctx, keys.Index.Prefix(), func(a storage.Attrs) error {
		if v, _, m, ok := keys.ParseIndex(a.Key); ok && knownIndex(m) && reached(keys.Make(keys.Commit, v)) {
			out = append(out, a.Key)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", keys.Index.Prefix(), err)
	}
	return out, nil
}

// knownIndex reports whether an index key's metric is one this loch
// knows: a vector metric or bm25.
func knownIndex(metric string) bool {
	return vindex.KnownMetric(metric) || metric == ftsindex.Metric
}

// indexObjects reads a descriptor of either kind and returns the objects
// it names.
func (d *Dataset) indexObjects(ctx context.Context, key string) ([]string, error) {
	if !ftsindex.IsKey(key) {
		desc, err := d.readIndex(ctx, key)
		if err != nil {
			return nil, err
		}
		return desc.Objects(), nil
	}
	obj, err := d.store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	desc, err := ftsindex.DecodeDescriptor(key, obj)
	if err != nil {
		return nil, err
	}
	return desc.Objects(), nil
}

// readIndex reads a vector index descriptor.
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
			objs, err := g.d.indexObjects(ectx, key)
			if err != nil {
				return fmt.Errorf("index of a reachable version: %w (delete it with loch index drop)", err)
			}
			for _, o := range objs {
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
		if ftsindex.IsKey(key) {
			eg.Go(func() error { return v.verifyText(ectx, key) })
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

// verifyText checks a full-text descriptor and every segment it names:
// each decodes whole, has the size the descriptor says and is named by
// its hash.
func (v *verifier) verifyText(ctx context.Context, key string) error {
	obj, err := v.d.store.Get(ctx, key)
	if err != nil {
		return v.failed(key, err)
	}
	d, err := ftsindex.DecodeDescriptor(key, obj)
	if err != nil {
		return v.failed(key, err)
	}
	for _, s := range d.Segments {
		if !v.reach(s.Key) {
			continue
		}
		obj, err := v.d.store.Get(ctx, s.Key)
		if err == nil && int64(len(obj)) != s.Bytes {
			err = fmt.Errorf("full-text segment %s: %d bytes, descriptor says %d: %w", s.Key, len(obj), s.Bytes, ErrCorrupt)
		}
		if err == nil {
			_, err = ftsindex.DecodeSegment(s.Key, obj)
		}
		if err != nil {
			v.failed(s.Key, err)
		}
	}
	return nil
}
