package loch

import (
	"context"
	"fmt"
	"strings"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/manifest"
)

// Problem is one broken object found by Verify.
type Problem struct {
	Key string
	Err error
}

func (p Problem) String() string { return p.Key + ": " + p.Err.Error() }

// Verify reads every object reachable from the handle's snapshot (for a
// branch handle: from every branch and tag of the newest log entry) and
// checks its checksums and that manifests, fragments and chunks agree. It
// returns the number of objects checked and the problems found; err is
// reserved for failures that stop the check (a cancelled context).
func (d *Dataset) Verify(ctx context.Context) (checked int, problems []Problem, err error) {
	v := &verifier{d: d, seen: map[string]bool{}}
	var heads []string
	if d.ReadOnly() {
		heads = []string{d.Version()}
	} else {
		root, err := d.latestRoot(ctx)
		if err != nil {
			return 0, []Problem{{Key: keys.LogPrefix, Err: err}}, nil
		}
		v.checked++
		for _, k := range sortedKeys(root.Refs) {
			heads = append(heads, root.Refs[k])
		}
	}
	for _, h := range heads {
		if err := ctx.Err(); err != nil {
			return v.checked, v.problems, err
		}
		v.commit(ctx, h)
	}
	return v.checked, v.problems, ctx.Err()
}

type verifier struct {
	d        *Dataset
	seen     map[string]bool
	checked  int
	problems []Problem
}

func (v *verifier) fail(key string, err error) {
	v.problems = append(v.problems, Problem{Key: key, Err: err})
}

// visit marks key as seen and reports whether it is new.
func (v *verifier) visit(key string) bool {
	if v.seen[key] {
		return false
	}
	v.seen[key] = true
	v.checked++
	return true
}

// get reads a metadata object and checks that its name is its hash,
// recording a problem when it fails.
func (v *verifier) get(ctx context.Context, key string, kind byte, out any) bool {
	if err := v.read(ctx, key, kind, out); err != nil {
		v.fail(key, err)
		return false
	}
	return true
}

// read reads and decodes a metadata object and checks that its name is its
// hash.
func (v *verifier) read(ctx context.Context, key string, kind byte, out any) error {
	obj, err := v.d.store.Get(ctx, key)
	if err != nil {
		return err
	}
	if err := manifest.Decode(kind, obj, out); err != nil {
		return err
	}
	if i := strings.LastIndexByte(key, '/'); manifest.Hash(obj) != key[i+1:] {
		return fmt.Errorf("content hash %s does not match the object's name: %w", manifest.Hash(obj), ErrCorrupt)
	}
	return nil
}

func (v *verifier) commit(ctx context.Context, id string) {
	for id != "" {
		key := keys.Make(keys.Commit, id)
		if !v.visit(key) {
			return
		}
		var c manifest.Commit
		if !v.get(ctx, key, manifest.KindCommit, &c) {
			return
		}
		v.manifest(ctx, c.Manifest)
		for _, p := range c.Parents[min(1, len(c.Parents)):] {
			v.commit(ctx, p)
		}
		id = ""
		if len(c.Parents) > 0 {
			id = c.Parents[0]
		}
	}
}

func (v *verifier) manifest(ctx context.Context, key string) {
	if !v.visit(key) {
		return
	}
	var m manifest.Manifest
	if !v.get(ctx, key, manifest.KindManifest, &m) {
		return
	}
	var live int64
	for _, f := range m.Fragments {
		live += f.Live()
		v.fragment(ctx, f)
	}
	if live != m.Rows {
		v.fail(key, fmt.Errorf("fragments hold %d live rows, manifest says %d: %w", live, m.Rows, ErrCorrupt))
	}
}

// fragment checks a fragment's objects (fragment, extensions, deletions),
// reading each once, and then its chunks.
func (v *verifier) fragment(ctx context.Context, ref manifest.FragmentRef) {
	fs := &fragState{ref: ref}
	var failed string // the object that failed, if it is the one to blame
	err := fs.loadWith(ctx, func(ctx context.Context, key string, kind byte, out any) error {
		v.visit(key)
		err := v.read(ctx, key, kind, out)
		if err != nil {
			failed = key
		}
		return err
	})
	if err != nil {
		if failed == "" {
			failed = ref.Key // the objects disagree with each other
		}
		v.fail(failed, err)
		return
	}
	for _, refs := range fs.cols {
		for _, cr := range refs {
			if !v.visit(cr.Key) {
				continue
			}
			v.chunk(ctx, cr)
		}
	}
}

func (v *verifier) chunk(ctx context.Context, ref manifest.ChunkRef) {
	obj, err := v.d.store.Get(ctx, ref.Key)
	if err != nil {
		v.fail(ref.Key, err)
		return
	}
	if h := manifest.Hash(obj); !strings.HasSuffix(ref.Key, "/"+h) {
		v.fail(ref.Key, fmt.Errorf("content hash %s does not match the chunk's name: %w", h, ErrCorrupt))
		return
	}
	if _, err := decodeChunk(obj, ref); err != nil {
		v.fail(ref.Key, err)
	}
}
