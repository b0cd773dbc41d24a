package loch

import (
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/schema"
)

// TestVerifyReportsEveryDamagedObject damages three objects of a dataset
// whose versions share fragments: a missing chunk, a corrupt fragment named
// by two manifests and a corrupt deletion vector. Verify reports each once,
// sorted by key, with its kind, and goes on past each.
func TestVerifyReportsEveryDamagedObject(t *testing.T) {
	d, dir := mustCreate(t, schema.Schema{Columns: []schema.Column{{Name: "v", DType: schema.Int64}}})
	for c := 0; c < 2; c++ {
		for i := 0; i < 10; i++ {
			require.NoError(t, d.Append(ctx, Row{"v": Scalar(int64(100*c + i))}))
		}
		_, err := d.Commit(ctx, "ten")
		require.NoError(t, err)
	}
	first, err := d.RowID(ctx, 0)
	require.NoError(t, err)
	require.NoError(t, d.Delete(ctx, first))
	_, err = d.Commit(ctx, "delete one")
	require.NoError(t, err)

	clean, problems, err := d.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, problems)

	// Which chunk each fragment names.
	frags := objects(t, dir, "fragments")
	require.Len(t, frags, 2)
	chunkOf := map[string]string{}
	for _, f := range frags {
		b, err := os.ReadFile(filepath.Join(dir, f))
		require.NoError(t, err)
		var fr manifest.Fragment
		require.NoError(t, manifest.Decode(manifest.KindFragment, b, &fr))
		require.Len(t, fr.Columns, 1)
		for _, refs := range fr.Columns {
			require.Len(t, refs, 1)
			chunkOf[f] = refs[0].Key
		}
	}
	dels := objects(t, dir, "deletions")
	require.Len(t, dels, 1)
	// The deleted row is in the first commit's fragment: keep that one
	// readable and lose its chunk; corrupt the other fragment.
	kept, corrupt := frags[0], frags[1]
	if !fragmentHasDeletions(t, d, kept) {
		kept, corrupt = corrupt, kept
	}
	require.NoError(t, os.Remove(filepath.Join(dir, chunkOf[kept])))
	flipByte(t, filepath.Join(dir, corrupt))
	flipByte(t, filepath.Join(dir, dels[0]))

	checked, problems, err := d.Verify(ctx)
	require.NoError(t, err)
	var got []string
	for _, p := range problems {
		got = append(got, p.Key)
	}
	want := []string{chunkOf[kept], dels[0], corrupt}
	slices.Sort(want)
	require.Equal(t, want, got, "each damaged object once, sorted: %v", problems)
	for _, p := range problems {
		if p.Key == chunkOf[kept] {
			require.ErrorIs(t, p.Err, ErrNotFound)
		} else {
			require.ErrorIs(t, p.Err, ErrCorrupt)
		}
	}
	// Everything but the corrupt fragment's chunk was still reached.
	require.Equal(t, clean-1, checked)
}

// objects lists the keys of the objects under a dataset directory's prefix.
func objects(t *testing.T, dir, prefix string) []string {
	t.Helper()
	var out []string
	require.NoError(t, filepath.WalkDir(filepath.Join(dir, prefix), func(p string, e os.DirEntry, err error) error {
		if err == nil && !e.IsDir() {
			rel, _ := filepath.Rel(dir, p)
			out = append(out, filepath.ToSlash(rel))
		}
		return err
	}))
	slices.Sort(out)
	return out
}

// fragmentHasDeletions reports whether the handle's manifest gives fragment
// key a deletion vector.
func fragmentHasDeletions(t *testing.T, d *Dataset, key string) bool {
	t.Helper()
	for _, f := range d.current().man.Fragments {
		if f.Key == key {
			return f.Deletions != ""
		}
	}
	t.Fatalf("fragment %s not in the manifest", key)
	return false
}

func flipByte(t *testing.T, path string) {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	b[len(b)/2] ^= 0x40
	require.NoError(t, os.WriteFile(path, b, 0o644))
}
