package loch

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
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
	first := mustRowID(t, d, 0)
	require.NoError(t, d.Delete(ctx, first))
	_, err := d.Commit(ctx, "delete one")
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

// logDataset makes a dataset at url with a log of six entries: creation,
// three commits, a saved selection and a tag.
func logDataset(t *testing.T, url string) *Dataset {
	t.Helper()
	d, err := Create(ctx, url, gcSchema)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	m := &model{}
	var v string
	for c := range 3 {
		v = gcAppend(t, d, m, gcRows(10*c, 10))
	}
	require.NoError(t, d.SaveSelection(ctx, "pick", &Selection{Version: v, RowIDs: []uint64{m.ids[3]}}))
	_, err = d.CreateTag(ctx, "v1", v)
	require.NoError(t, err)
	return d
}

// TestVerifyChecksEveryLogEntry damages each entry of a dataset's log in
// turn, one byte flipped, then deletes one in the middle: Verify reports
// the entry by its key each time, and nothing else.
func TestVerifyChecksEveryLogEntry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	d := logDataset(t, dir)
	clean, problems, err := d.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, problems)
	entries := objects(t, dir, "log")
	require.Len(t, entries, 7, "six entries and the hint")
	for _, key := range entries[:6] {
		path := filepath.Join(dir, key)
		good, err := os.ReadFile(path)
		require.NoError(t, err)
		flipByte(t, path)
		checked, problems, err := d.Verify(ctx)
		require.NoError(t, err)
		require.Len(t, problems, 1, "%s flipped: %v", key, problems)
		require.Equal(t, key, problems[0].Key)
		require.ErrorIs(t, problems[0].Err, ErrCorrupt)
		if key != entries[5] {
			require.Equal(t, clean, checked, "the walk goes on past a damaged old entry")
		}
		require.NoError(t, os.WriteFile(path, good, 0o644))
	}

	require.NoError(t, os.Remove(filepath.Join(dir, entries[2])))
	_, problems, err = d.Verify(ctx)
	require.NoError(t, err)
	require.Len(t, problems, 1, "%v", problems)
	require.Equal(t, entries[2], problems[0].Key)
	require.ErrorIs(t, problems[0].Err, ErrNotFound)
	require.ErrorContains(t, problems[0].Err, "missing (entries 3 to 3), though entry 4 exists")
}

// TestLostNewestLogEntry deletes the newest entry of a dataset's log (the
// tag that entry made would vanish, and the next change take its number):
// opening fails with ErrCorrupt naming the entry and log/_latest, a writer
// holding the dataset open cannot commit, Verify and VerifyLog report the
// entry, and RepairLog accepts the loss, after which the dataset opens at
// the entry before and takes writes again. Run on local disk and on MinIO,
// whose listing differs.
func TestLostNewestLogEntry(t *testing.T) {
	for _, name := range []string{"local", "s3"} {
		t.Run(name, func(t *testing.T) {
			url := filepath.Join(t.TempDir(), "ds")
			if name == "s3" {
				url = testserver.MinIO(t).URL
			}
			d := logDataset(t, url)
			st, err := storage.Open(ctx, url)
			require.NoError(t, err)
			defer st.Close()
			newest := keys.MakeLog(6)
			require.NoError(t, st.Delete(ctx, newest))

			_, err = Open(ctx, url)
			require.ErrorIs(t, err, ErrCorrupt)
			require.ErrorContains(t, err, "read "+newest+": missing (entries 6 to 6), though log/_latest names entry 6 and the highest entry is 5")
			require.ErrorContains(t, err, "loch verify --repair-log")

			require.NoError(t, d.Extend(ctx, gcRows(100, 1)))
			_, err = d.Commit(ctx, "after the loss")
			require.ErrorIs(t, err, ErrCorrupt)
			_, err = st.Stat(ctx, newest)
			require.ErrorIs(t, err, ErrNotFound, "no writer takes the lost number")
			_, err = d.CreateBranch(ctx, "b", d.Version())
			require.ErrorIs(t, err, ErrCorrupt)

			for _, verify := range []func() ([]Problem, error){
				func() ([]Problem, error) { _, p, err := d.Verify(ctx); return p, err },
				func() ([]Problem, error) { _, p, err := VerifyLog(ctx, url); return p, err },
			} {
				problems, err := verify()
				require.NoError(t, err)
				require.Len(t, problems, 1, "%v", problems)
				require.Equal(t, newest, problems[0].Key)
				require.ErrorIs(t, problems[0].Err, ErrCorrupt)
			}

			hint, high, err := RepairLog(ctx, url)
			require.NoError(t, err)
			require.Equal(t, []uint64{6, 5}, []uint64{hint, high})
			d2 := mustOpen(t, url)
			_, err = d2.Resolve(ctx, "v1")
			require.ErrorIs(t, err, ErrNotFound, "the lost entry's tag is gone")
			_, problems, err := d2.Verify(ctx)
			require.NoError(t, err)
			require.Empty(t, problems)
			_, err = d2.CreateTag(ctx, "v2", d2.Version())
			require.NoError(t, err)
			_, err = st.Stat(ctx, newest)
			require.NoError(t, err, "after the repair, the next change takes the number")
		})
	}
}

// TestVerifyFindsAnotherLogsEntry: a sound log entry of another dataset
// copied over an entry of the same number (the chaos campaign swapped a
// table's log/1 with another table's and verify said ok) is reported:
// each entry records the hash of the one it follows.
func TestVerifyFindsAnotherLogsEntry(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	d := logDataset(t, dir)
	otherDir := filepath.Join(t.TempDir(), "other")
	logDataset(t, otherDir)
	entries := objects(t, dir, "log")[:6]
	for _, i := range []int{0, 2, 5} {
		path := filepath.Join(dir, entries[i])
		own, err := os.ReadFile(path)
		require.NoError(t, err)
		other, err := os.ReadFile(filepath.Join(otherDir, entries[i]))
		require.NoError(t, err)
		require.NotEqual(t, own, other)
		require.NoError(t, os.WriteFile(path, other, 0o644))
		_, problems, err := d.Verify(ctx)
		require.NoError(t, err)
		var found bool
		for _, p := range problems {
			if errors.Is(p.Err, ErrCorrupt) && strings.Contains(p.Err.Error(), "another log's entry") {
				found = true
			}
		}
		require.True(t, found, "%s swapped: %v", entries[i], problems)
		require.NoError(t, os.WriteFile(path, own, 0o644))
	}
	_, problems, err := d.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, problems)
}
