package loch

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

var stagedSchema = schema.Schema{Columns: []schema.Column{
	{Name: "w", DType: schema.Int32},
	{Name: "n", DType: schema.Int64},
}}

// stageRows opens url, stages rows n = base..base+count-1 from writer w and
// returns the description, round-tripped through JSON as a committer on
// another machine would receive it.
func stageRows(t testing.TB, url string, w int32, base, count int64) *Staged {
	t.Helper()
	d, err := Open(ctx, url, WithParallelism(1))
	require.NoError(t, err)
	defer d.Close()
	rows := make([]Row, count)
	for i := range rows {
		rows[i] = Row{"w": Scalar(w), "n": Scalar(base + int64(i))}
	}
	require.NoError(t, d.Extend(ctx, rows))
	s, err := d.Stage(ctx)
	require.NoError(t, err)
	b, err := json.Marshal(s)
	require.NoError(t, err)
	got, err := ParseStaged(b)
	require.NoError(t, err)
	return got
}

// columnN reads column n of d at its snapshot, and the row ids.
func columnN(t testing.TB, d *Dataset) ([]int64, []uint64) {
	t.Helper()
	col := mustColumn(t, d, "n")
	all, err := col.ReadRange(ctx, 0, d.Len())
	require.NoError(t, err)
	var ns []int64
	var ids []uint64
	for i, s := range all {
		v, err := As[int64](s.Data)
		require.NoError(t, err)
		ns = append(ns, v[0])
		id := mustRowID(t, d, int64(i))
		ids = append(ids, id)
	}
	return ns, ids
}

// TestStagedModel runs random sequences of writers that stage, committers
// that publish some descriptions (retrying some, in any order) and
// ordinary commits, against a model: the set of published descriptions.
// After each step the dataset holds exactly the rows of the published
// descriptions and of the ordinary commits, each once, with distinct row ids.
func TestStagedModel(t *testing.T) {
	seed := testseed.Seed(t)
	r := rand.New(rand.NewPCG(seed, 15))
	d, url := mustCreate(t, stagedSchema)
	var pending, published []*Staged
	want := map[int64]bool{}
	next := int64(0)
	written := map[string][]int64{}
	for step := 0; step < 40; step++ {
		switch op := r.IntN(4); {
		case op == 0 || len(pending)+len(published) == 0: // a writer stages
			count := int64(1 + r.IntN(30))
			s := stageRows(t, url, int32(step), next, count)
			for i := int64(0); i < count; i++ {
				written[s.ID] = append(written[s.ID], next+i)
			}
			next += count
			pending = append(pending, s)
		case op == 1: // an ordinary commit
			require.NoError(t, d.Append(ctx, Row{"n": Scalar(next)}))
			_, err := d.Commit(ctx, "ordinary")
			require.NoError(t, err)
			want[next] = true
			next++
		default: // commit a random mix of pending and already published
			var batch []*Staged
			for _, s := range pending {
				if r.IntN(2) == 0 {
					batch = append(batch, s)
				}
			}
			for _, s := range published {
				if r.IntN(3) == 0 {
					batch = append(batch, s)
				}
			}
			r.Shuffle(len(batch), func(i, j int) { batch[i], batch[j] = batch[j], batch[i] })
			before := d.Version()
			res, err := d.CommitStaged(ctx, "staged", batch...)
			require.NoError(t, err, "seed %d step %d", seed, step)
			v := res.Version
			added := false
			for _, s := range batch {
				if i := slices.Index(pending, s); i >= 0 {
					pending = slices.Delete(pending, i, i+1)
					published = append(published, s)
					for _, n := range written[s.ID] {
						want[n] = true
					}
					added = true
				}
			}
			if !added {
				require.Equal(t, before, v, "a commit of published descriptions only writes nothing")
			}
		}
		ns, ids := columnN(t, d)
		got := map[int64]bool{}
		for _, n := range ns {
			require.False(t, got[n], "seed %d step %d: row %d twice", seed, step, n)
			got[n] = true
		}
		require.Equal(t, want, got, "seed %d step %d", seed, step)
		require.Len(t, ids, len(ns))
		slices.Sort(ids)
		require.Len(t, slices.Compact(ids), len(ns), "row ids are distinct")
	}
}

// TestStagedConcurrentWriters stages from 8 goroutines at once while
// ordinary commits go on, then commits them in one commit (run with -race).
func TestStagedConcurrentWriters(t *testing.T) {
	d, url := mustCreate(t, stagedSchema)
	const writers, per = 8, 250
	descs := make([]*Staged, writers)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			descs[w] = stageRows(t, url, int32(w), int64(w*per), per)
		}()
	}
	other := mustOpen(t, url)
	for i := 0; i < 3; i++ {
		require.NoError(t, other.Append(ctx, Row{"n": Scalar(int64(-1 - i))}))
		_, err := other.Commit(ctx, "meanwhile")
		require.NoError(t, err)
	}
	wg.Wait()
	res, err := d.CommitStaged(ctx, "eight writers", descs...)
	require.NoError(t, err)
	v := res.Version
	require.Len(t, res.Published, writers)
	require.EqualValues(t, writers*per, res.Rows)
	require.EqualValues(t, writers*per+3, d.Len())
	info, err := d.Log(ctx)
	require.NoError(t, err)
	require.Equal(t, v, info[0].ID)
	ns, _ := columnN(t, d)
	// Rows come in the order of the descriptions given.
	require.Equal(t, []int64{-1, -2, -3, 0, 1}, ns[:5])
	// Statistics of the staged samples are merged.
	c := statsOf(t, d, "n")
	require.EqualValues(t, writers*per+3, c.Samples)
	require.Positive(t, c.StoredBytes)
}

func TestStagedRefused(t *testing.T) {
	for name, tc := range map[string]struct {
		spoil func(t *testing.T, d *Dataset, s *Staged) *Staged
		want  error
		msg   string
	}{
		"another dataset": {func(t *testing.T, d *Dataset, s *Staged) *Staged {
			_, url := mustCreate(t, stagedSchema)
			return stageRows(t, url, 9, 0, 3)
		}, ErrInvalidArgument, "is of dataset"},
		"newer format": {func(t *testing.T, d *Dataset, s *Staged) *Staged {
			s.Format = "1.9"
			require.NoError(t, s.seal())
			return s
		}, ErrNewerFormat, "upgrade loch"},
		"edited description": {func(t *testing.T, d *Dataset, s *Staged) *Staged {
			s.Fragments[0].Rows++
			s.Rows++
			return s
		}, ErrCorrupt, "altered"},
		"edited and resealed": {func(t *testing.T, d *Dataset, s *Staged) *Staged {
			s.Fragments[0].Rows++
			s.Rows++
			require.NoError(t, s.seal())
			return s
		}, ErrCorrupt, "the description says"},
		"missing fragment": {func(t *testing.T, d *Dataset, s *Staged) *Staged {
			require.NoError(t, d.Store().Delete(ctx, s.Fragments[0].Key))
			return s
		}, ErrNotFound, "is missing"},
		"altered fragment": {func(t *testing.T, d *Dataset, s *Staged) *Staged {
			obj, err := d.Store().Get(ctx, s.Fragments[0].Key)
			require.NoError(t, err)
			obj[len(obj)/2] ^= 1
			require.NoError(t, d.Store().Put(ctx, s.Fragments[0].Key, obj))
			return s
		}, ErrCorrupt, "was altered"},
		"schema changed since": {func(t *testing.T, d *Dataset, s *Staged) *Staged {
			require.NoError(t, d.AddColumn(ctx, schema.Column{Name: "extra", DType: schema.Int8}))
			_, err := d.Commit(ctx, "add column")
			require.NoError(t, err)
			return s
		}, ErrConflict, "other columns"},
	} {
		t.Run(name, func(t *testing.T) {
			d, url := mustCreate(t, stagedSchema)
			good := stageRows(t, url, 1, 0, 5)
			bad := tc.spoil(t, d, stageRows(t, url, 2, 100, 7))
			before, n := d.Version(), d.Len()
			_, err := d.CommitStaged(ctx, "refused", good, bad)
			require.ErrorIs(t, err, tc.want)
			require.ErrorContains(t, err, tc.msg)
			require.NoError(t, d.Refresh(ctx))
			require.Equal(t, before, d.Version(), "nothing committed")
			require.Equal(t, n, d.Len())
		})
	}
	t.Run("only appends", func(t *testing.T) {
		d, _ := mustCreate(t, stagedSchema)
		require.NoError(t, d.Append(ctx, Row{"n": Scalar(int64(1))}))
		_, err := d.Commit(ctx, "one")
		require.NoError(t, err)
		require.NoError(t, d.Delete(ctx, 0))
		_, err = d.Stage(ctx)
		require.ErrorIs(t, err, ErrInvalidArgument)
	})
	t.Run("partly published", func(t *testing.T) {
		d, url := mustCreate(t, stagedSchema)
		a := stageRows(t, url, 1, 0, 5)
		_, err := d.CommitStaged(ctx, "a", a)
		require.NoError(t, err)
		b := stageRows(t, url, 1, 10, 5)
		b.Fragments = append(b.Fragments, a.Fragments...)
		b.Rows += a.Rows
		require.NoError(t, b.seal())
		_, err = d.CommitStaged(ctx, "b", b)
		require.ErrorIs(t, err, ErrCorrupt, "a's fragment lacks b's nonce")
	})
}

// TestStagedDeadWriterGC: what a writer staged and nobody committed is
// kept within the grace period and deleted after it; committed staged
// rows survive gc.
func TestStagedDeadWriterGC(t *testing.T) {
	d, url := mustCreate(t, stagedSchema)
	kept := stageRows(t, url, 1, 0, 10)
	_, err := d.CommitStaged(ctx, "kept", kept)
	require.NoError(t, err)
	dead := stageRows(t, url, 2, 100, 10)
	rep, err := d.GC(ctx, GCOptions{Grace: time.Hour})
	require.NoError(t, err)
	require.Zero(t, rep.ByKind[keys.Fragment.Dir()].Objects, "young: kept")
	_, err = d.Store().Stat(ctx, dead.Fragments[0].Key)
	require.NoError(t, err)
	// The writer's lease outlives its Stage by one ttl (docs/format.md
	// §5.1): gc keeps what it wrote until the lease expires, which the
	// test does by deleting it.
	rep, err = d.GC(ctx, GCOptions{})
	require.NoError(t, err)
	require.Positive(t, rep.Leased.Objects)
	var leases []string
	require.NoError(t, d.Store().List(ctx, keys.LeasePrefix, func(a storage.Attrs) error { leases = append(leases, a.Key); return nil }))
	require.NotEmpty(t, leases)
	for _, k := range leases {
		require.NoError(t, d.Store().Delete(ctx, k))
	}
	rep, err = d.GC(ctx, GCOptions{})
	require.NoError(t, err)
	_, err = d.Store().Stat(ctx, dead.Fragments[0].Key)
	require.ErrorIs(t, err, ErrNotFound, "the dead writer's fragment is collected: %+v", rep)
	_, err = d.CommitStaged(ctx, "too late", dead)
	require.ErrorIs(t, err, ErrNotFound)
	ns, _ := columnN(t, d)
	require.Len(t, ns, 10)
	_, problems, err := d.Verify(ctx)
	require.NoError(t, err)
	require.Empty(t, problems)
}

// TestStagedMinIO: writers and the committer on object storage.
func TestStagedMinIO(t *testing.T) {
	url := testserver.MinIO(t).URL
	d, err := Create(ctx, url, stagedSchema)
	require.NoError(t, err)
	defer d.Close()
	var descs []*Staged
	for w := range 3 {
		descs = append(descs, stageRows(t, url, int32(w), int64(w*100), 100))
	}
	v1, err := d.CommitStaged(ctx, "three", descs...)
	require.NoError(t, err)
	v2, err := d.CommitStaged(ctx, "retried", descs...)
	require.NoError(t, err)
	require.Equal(t, v1.Version, v2.Version)
	require.Empty(t, v2.Published)
	require.Len(t, v2.Skipped, 3)
	require.Zero(t, v2.Rows)
	require.EqualValues(t, 300, d.Len())
}

func FuzzParseStaged(f *testing.F) {
	d, err := Create(ctx, f.TempDir()+"/ds", stagedSchema)
	require.NoError(f, err)
	defer d.Close()
	require.NoError(f, d.Append(ctx, Row{"n": Scalar(int64(1))}))
	s, err := d.Stage(ctx)
	require.NoError(f, err)
	b, err := json.Marshal(s)
	require.NoError(f, err)
	f.Add(b)
	f.Add([]byte(`{"format":"1.9"}`))
	f.Fuzz(func(t *testing.T, b []byte) {
		s, err := ParseStaged(b)
		if err != nil {
			return
		}
		again, err := json.Marshal(s)
		require.NoError(t, err)
		_, err = ParseStaged(again)
		require.NoError(t, err, "a description that parses parses again")
	})
}

// TestStagedDescriptionGolden: testdata/staged_1.6.json is a staged-write
// description written when schema.Column embedded its statistics (its
// columns carry null min_shape and max_shape). It parses, its checksum
// verifies, and it encodes back to the same bytes.
func TestStagedDescriptionGolden(t *testing.T) {
	golden, err := os.ReadFile("testdata/staged_1.6.json")
	require.NoError(t, err)
	s, err := ParseStaged(golden)
	require.NoError(t, err)
	require.Equal(t, []string{"image", "label"}, (&schema.Schema{Columns: s.Columns}).Names())
	require.Equal(t, []string{"cat", "dog & <fox>"}, s.Columns[1].ClassNames)
	require.EqualValues(t, 12, s.Stats["1"].Samples)
	require.Equal(t, []int64{5, 7}, s.Stats["2"].Classes.Counts)
	b, err := json.MarshalIndent(s, "", "  ")
	require.NoError(t, err)
	require.Equal(t, string(golden), string(b)+"\n")
	sum, err := s.sum()
	require.NoError(t, err)
	require.Equal(t, s.Checksum, sum)
}
