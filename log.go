package loch

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/storage"
)

// This file is the dataset's log (docs/format.md §2.2): reading root
// entries, and the one compare-and-swap that appends one (updateRoot), and
// writing the commit objects that an entry's references name (writeCommit).
// Every change a reader can see goes through updateRoot; creation writes
// the first entry with putRoot.

// latestRoot finds the log entry with the highest sequence number.
func (d *Dataset) latestRoot(ctx context.Context) (*manifest.Root, error) {
	start := uint64(0)
	if b, err := d.store.Get(ctx, keys.LatestKey); err == nil {
		if n, err := strconv.ParseUint(strings.TrimSpace(string(b)), 10, 64); err == nil && n > 0 {
			start = n
		}
	}
	var best *manifest.Root
	if start > 0 {
		r, err := d.readRoot(ctx, start)
		if err == nil {
			best = r
		} else if !errors.Is(err, ErrNotFound) {
			return nil, err
		}
	}
	if best == nil { // no usable hint: list the log
		var max uint64
		err := d.store.List(ctx, keys.LogPrefix, func(a storage.Attrs) error {
			if n, ok := keys.ParseLog(a.Key); ok && n > max {
				max = n
			}
			return nil
		})
		if err != nil {
			return nil, fmt.Errorf("open %s: list log: %w", d.url, err)
		}
		if max == 0 {
			return nil, fmt.Errorf("open %s: empty log: %w", d.url, ErrNoDataset)
		}
		if best, err = d.readRoot(ctx, max); err != nil {
			return nil, err
		}
	}
	for {
		next, err := d.readRoot(ctx, best.Seq+1)
		if errors.Is(err, ErrNotFound) {
			return best, nil
		}
		if err != nil {
			return nil, err
		}
		best = next
	}
}

func (d *Dataset) readRoot(ctx context.Context, seq uint64) (*manifest.Root, error) {
	key := keys.MakeLog(seq)
	obj, err := d.store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	var r manifest.Root
	if err := manifest.Decode(manifest.KindRoot, obj, &r); err != nil {
		return nil, fmt.Errorf("read %s: %w", key, err)
	}
	if r.Seq != seq {
		return nil, fmt.Errorf("read %s: entry says sequence %d: %w", key, r.Seq, ErrCorrupt)
	}
	return &r, nil
}

func (d *Dataset) writeHint(ctx context.Context, seq uint64) {
	// Best effort: a stale or missing hint costs readers a few extra reads.
	_ = d.store.Put(ctx, keys.LatestKey, []byte(strconv.FormatUint(seq, 10)))
}

// updateRoot writes the next root entry, made by change from the newest
// one, with put-if-absent, retrying when another writer takes the sequence
// number first. change may return an error to give up; it is called again
// on every retry with the newer root. It returns the written entry.
func (d *Dataset) updateRoot(ctx context.Context, op string, change func(root *manifest.Root, next *manifest.Root) error) (*manifest.Root, error) {
	for attempt := 0; ; attempt++ {
		root, err := d.latestRoot(ctx)
		if err != nil {
			return nil, err
		}
		next := &manifest.Root{Seq: root.Seq + 1, Time: time.Now().UTC(), Prev: root.Seq,
			Refs: make(map[string]string, len(root.Refs)+1), NextRowID: root.NextRowID, NextColumnUID: root.NextColumnUID, Op: op}
		for k, v := range root.Refs {
			next.Refs[k] = v
		}
		if err := change(root, next); err != nil {
			return nil, err
		}
		err = d.putRoot(ctx, next)
		if errors.Is(err, storage.ErrExists) {
			if attempt+1 >= maxCommitAttempts {
				return nil, fmt.Errorf("%s %s: lost the race for the log %d times: %w", op, d.url, maxCommitAttempts, ErrConflict)
			}
			continue // another writer took this sequence number: re-read and retry
		}
		if err != nil {
			return nil, fmt.Errorf("%s %s: write %s: %w", op, d.url, keys.MakeLog(next.Seq), err)
		}
		d.writeHint(ctx, next.Seq)
		return next, nil
	}
}

// putRoot writes root entry r if its sequence number is free: the
// conditional write (put-if-absent) that makes a change visible. It fails
// with storage.ErrExists when another writer took that number.
func (d *Dataset) putRoot(ctx context.Context, r *manifest.Root) error {
	obj, err := manifest.Encode(manifest.KindRoot, r)
	if err != nil {
		return err
	}
	return d.store.PutIfAbsent(ctx, keys.MakeLog(r.Seq), obj)
}

// writeCommit writes a snapshot's manifest and then the commit naming it
// (c.Manifest is set here) and returns the commit's id. Both are
// content-addressed and invisible until a root entry names the commit.
func (d *Dataset) writeCommit(ctx context.Context, man manifest.Manifest, c manifest.Commit) (string, error) {
	manKey, err := d.putObject(ctx, keys.Manifest, manifest.KindManifest, man)
	if err != nil {
		return "", err
	}
	c.Manifest = manKey
	key, err := d.putObject(ctx, keys.Commit, manifest.KindCommit, c)
	if err != nil {
		return "", err
	}
	return strings.TrimPrefix(key, keys.Commit.Prefix()), nil
}
