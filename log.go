package loch

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/internal/seqlog"
	"github.com/lochdata/loch/storage"
)

// This file is the dataset's log (docs/format.md §2.2), kept by
// internal/seqlog (which the catalog's log shares): reading root entries,
// and the one compare-and-swap that appends one (updateRoot), and
// writing the commit objects that an entry's references name (writeCommit).
// Every change a reader can see goes through updateRoot; creation writes
// the first entry with putRoot.

// rootLog returns the dataset's log of root entries.
func rootLog(st storage.Store) *seqlog.Log[manifest.Root] {
	return seqlog.New(st, keys.LogPrefix, manifest.KindRoot, func(r *manifest.Root) uint64 { return r.Seq }, func(r *manifest.Root) *string { return &r.PrevHash })
}

// latestRoot finds the log entry with the highest sequence number.
func (d *Dataset) latestRoot(ctx context.Context) (*manifest.Root, error) {
	r, err := d.log.Latest(ctx)
	if err != nil {
		return nil, d.logErr(err)
	}
	return r, nil
}

// logErr gives the dataset's own error for an empty log, and for one
// that lost its newest entries, the way out.
func (d *Dataset) logErr(err error) error {
	if errors.Is(err, seqlog.ErrEmpty) {
		return fmt.Errorf("open %s: empty log: %w", d.url, ErrNoDataset)
	}
	if errors.Is(err, seqlog.ErrLost) {
		return fmt.Errorf("open %s: %w (restore the missing entries, or accept their loss with 'loch verify --repair-log')", d.url, err)
	}
	var se *storage.Error
	if errors.As(err, &se) && (se.Op == "list" || storage.IsBucketNotFound(err)) {
		return fmt.Errorf("open %s: %w", d.url, err)
	}
	return err
}

func (d *Dataset) readRoot(ctx context.Context, seq uint64) (*manifest.Root, error) {
	return d.log.Read(ctx, seq)
}

func (d *Dataset) writeHint(ctx context.Context, seq uint64) { d.log.Hint(ctx, seq) }

// updateRoot writes the next root entry, made by change from the newest
// one, with put-if-absent, retrying when another writer takes the sequence
// number first. change may return an error to give up; it is called again
// on every retry with the newer root. It returns the written entry.
func (d *Dataset) updateRoot(ctx context.Context, op string, change func(root *manifest.Root, next *manifest.Root) error) (*manifest.Root, error) {
	var gaveUp error
	next, err := d.log.Append(ctx, maxCommitAttempts, func(root *manifest.Root) (*manifest.Root, error) {
		next := &manifest.Root{Seq: root.Seq + 1, Time: time.Now().UTC(), Prev: root.Seq,
			Refs: make(map[string]string, len(root.Refs)+1), NextRowID: root.NextRowID, NextColumnUID: root.NextColumnUID, Op: op}
		for k, v := range root.Refs {
			next.Refs[k] = v
		}
		if err := change(root, next); err != nil {
			gaveUp = err
			return nil, err
		}
		return next, nil
	})
	switch {
	case gaveUp != nil:
		return nil, gaveUp
	case errors.Is(err, seqlog.ErrEmpty) || errors.Is(err, ErrNotFound) || errors.Is(err, ErrCorrupt):
		return nil, d.logErr(err) // reading the log failed, as latestRoot says
	case err != nil:
		return nil, fmt.Errorf("%s %s: %w", op, d.url, err)
	}
	return next, nil
}

// putRoot writes root entry r if its sequence number is free: the
// conditional write (put-if-absent) that makes a change visible. It fails
// with storage.ErrExists when another writer took that number.
func (d *Dataset) putRoot(ctx context.Context, r *manifest.Root) error {
	return d.log.Put(ctx, r)
}

// writeCommit writes a snapshot's manifest and then the commit naming it
// (c.Manifest is set here) and returns the commit's id. Both are
// content-addressed and invisible until a root entry names the commit.
func (d *Dataset) writeCommit(ctx context.Context, man manifest.Manifest, c manifest.Commit) (string, error) {
	return d.writeCommitWith(ctx, man, c, &objectBatch{})
}

// writeCommitWith is writeCommit that puts the objects of batch (those the
// manifest names) together with the manifest and the commit, at once.
func (d *Dataset) writeCommitWith(ctx context.Context, man manifest.Manifest, c manifest.Commit, batch *objectBatch) (string, error) {
	manKey, err := batch.add(keys.Manifest, manifest.KindManifest, man)
	if err != nil {
		return "", err
	}
	c.Manifest = manKey
	key, err := batch.add(keys.Commit, manifest.KindCommit, c)
	if err != nil {
		return "", err
	}
	if err := batch.put(ctx, d); err != nil {
		return "", err
	}
	return strings.TrimPrefix(key, keys.Commit.Prefix()), nil
}

// objectBatch collects metadata objects to put together. Their keys are
// their content hashes, known before they are stored, so objects that
// name one another (fragments, the manifest naming them, the commit
// naming the manifest) can be put concurrently: all of them are stored
// before the commit point that makes any of them reachable.
type objectBatch struct {
	keys []string
	objs [][]byte
}

// add encodes v as an object of kind k and returns its key.
func (b *objectBatch) add(k keys.Kind, kind byte, v any) (string, error) {
	obj, err := manifest.Encode(kind, v)
	if err != nil {
		return "", err
	}
	key := keys.Make(k, manifest.Hash(obj))
	b.keys, b.objs = append(b.keys, key), append(b.objs, obj)
	return key, nil
}

// put stores the batch's objects, a few at a time, and empties it.
func (b *objectBatch) put(ctx context.Context, d *Dataset) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(gcParallelism)
	for i, key := range b.keys {
		g.Go(func() error {
			if err := d.store.Put(gctx, key, b.objs[i]); err != nil {
				return fmt.Errorf("write %s: %w", key, err)
			}
			return nil
		})
	}
	err := g.Wait()
	b.keys, b.objs = nil, nil
	return err
}
