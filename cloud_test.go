package loch

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// TestBackends runs the dataset life cycle on every backend against a real
// server: create, append images and tensors, commit, reopen, read, verify,
// race two appending writers (both land) and two deleting writers (one
// wins, the other gets a conflict), branch, diff and merge, and refuse a
// second create.
func TestBackends(t *testing.T) {
	backends := map[string]func(t *testing.T) string{
		"local": func(t *testing.T) string { return t.TempDir() + "/ds" },
		"mem": func(t *testing.T) string {
			return fmt.Sprintf("mem://backends-%s", strings.ReplaceAll(t.Name(), "/", "-"))
		},
		"s3":    func(t *testing.T) string { return testserver.MinIO(t).URL },
		"gcs":   func(t *testing.T) string { return testserver.GCS(t).URL },
		"azure": func(t *testing.T) string { return testserver.Azurite(t).URL },
	}
	for _, name := range sortedKeys(backends) {
		t.Run(name, func(t *testing.T) {
			url := backends[name](t)
			s := schema.Schema{Columns: []schema.Column{
				{Name: "img", Kind: schema.Image, SampleCompression: schema.PNG},
				{Name: "v", DType: schema.Float32, Shape: schema.Shape{-1}, ChunkCompression: schema.LZ4, ChunkBytes: 4096},
			}}
			d, err := Create(ctx, url, s)
			require.NoError(t, err)
			defer d.Close()
			_, err = Create(ctx, url, s)
			require.ErrorIs(t, err, ErrExists)
			m := &model{}
			var rows []Row
			for i := 0; i < 40; i++ {
				pix := make([]byte, 8*6*3)
				for k := range pix {
					pix[k] = byte(i * k)
				}
				v := make([]float32, i*10)
				for k := range v {
					v[k] = float32(i)
				}
				rows = append(rows, Row{"img": Tensor([]int{8, 6, 3}, pix), "v": Tensor([]int{len(v)}, v)})
				m.ids = append(m.ids, uint64(i))
			}
			m.rows = rows
			require.NoError(t, d.Extend(ctx, rows))
			_, err = d.Commit(ctx, "forty")
			require.NoError(t, err)

			d2 := mustOpen(t, url)
			checkModel(t, d2, m)

			// Two writers race; both appends land.
			errs := make(chan error, 2)
			for w := 0; w < 2; w++ {
				go func() {
					h, err := Open(ctx, url)
					if err == nil {
						err = h.Append(ctx, Row{"v": Tensor([]int{1}, []float32{float32(100 + w)})})
					}
					if err == nil {
						_, err = h.Commit(ctx, "racer")
					}
					if h != nil {
						h.Close()
					}
					errs <- err
				}()
			}
			require.NoError(t, <-errs)
			require.NoError(t, <-errs)
			require.NoError(t, d2.Refresh(ctx))
			require.EqualValues(t, 42, d2.Len())

			// Two writers delete at once: one wins, the other gets a
			// conflict and changes nothing.
			for i := 0; i < 2; i++ {
				go func() {
					h, err := Open(ctx, url)
					if err == nil {
						err = h.Delete(ctx, uint64(i))
					}
					if err == nil {
						_, err = h.Commit(ctx, "deleter")
					}
					if h != nil {
						h.Close()
					}
					errs <- err
				}()
			}
			e1, e2 := <-errs, <-errs
			if e1 != nil {
				e1, e2 = e2, e1
			}
			require.NoError(t, e1)
			if e2 != nil {
				require.ErrorIs(t, e2, ErrConflict)
			}
			require.NoError(t, d2.Refresh(ctx))
			deleted := int64(1)
			if e2 == nil { // the second deleter started after the first commit
				deleted = 2
			}
			require.EqualValues(t, 42-deleted, d2.Len())

			// A branch, a commit on it, a diff and a merge back.
			side := openNewBranch(t, d2, url, "side")
			require.NoError(t, side.Append(ctx, Row{"v": Tensor([]int{1}, []float32{7})}))
			_, err = side.Commit(ctx, "on side")
			require.NoError(t, err)
			df, err := d2.Diff(ctx, "main", "side", DiffOptions{})
			require.NoError(t, err)
			require.EqualValues(t, 1, df.Added)
			res, err := d2.Merge(ctx, "side", MergeOptions{})
			require.NoError(t, err)
			require.True(t, res.FastForward)
			require.Equal(t, side.Version(), d2.Version())
			_, problems, err := d2.Verify(ctx)
			require.NoError(t, err)
			require.Empty(t, problems)
		})
	}
}

func TestMissingBucket(t *testing.T) {
	b := testserver.MinIO(t)
	url := strings.Replace(b.URL, b.Name, "no-such-bucket-loch", 1)
	_, err := Open(ctx, url)
	require.ErrorIs(t, err, ErrNotFound)
	require.Contains(t, err.Error(), `bucket "no-such-bucket-loch" not found`, "the cause, not \"no loch dataset there\"")
	require.NotErrorIs(t, err, ErrNoDataset)
	_, err = Create(ctx, url, schema.Schema{Columns: []schema.Column{{Name: "v", DType: schema.Int8}}})
	require.ErrorIs(t, err, ErrNotFound)
	require.Regexp(t, `^create s3://no-such-bucket-loch/prefix\?endpoint=.*: bucket "no-such-bucket-loch" not found`, err.Error())
}

// TestMissingBucketEveryCloud: on each cloud, opening a dataset in a
// bucket (container) that does not exist names the bucket as the cause.
func TestMissingBucketEveryCloud(t *testing.T) {
	for name, b := range map[string]func(testing.TB) testserver.Bucket{
		"s3": testserver.MinIO, "gcs": testserver.GCS, "azure": testserver.Azurite,
	} {
		t.Run(name, func(t *testing.T) {
			bkt := b(t)
			url := strings.Replace(bkt.URL, bkt.Name, "no-such-bucket-loch", 1)
			_, err := Open(ctx, url)
			require.ErrorIs(t, err, ErrNotFound)
			require.Contains(t, err.Error(), `"no-such-bucket-loch" not found`)
			require.NotErrorIs(t, err, ErrNoDataset)
		})
	}
}

func TestRefusedCredentials(t *testing.T) {
	b := testserver.MinIO(t)
	t.Setenv("AWS_SECRET_ACCESS_KEY", "wrong-secret-value")
	_, err := Open(ctx, b.URL)
	require.ErrorIs(t, err, ErrPermission)
	require.NotContains(t, err.Error(), "wrong-secret-value")
}

func TestMissingCredentials(t *testing.T) {
	b := testserver.MinIO(t)
	for _, k := range []string{"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_PROFILE"} {
		t.Setenv(k, "")
	}
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_CONFIG_FILE", t.TempDir()+"/none")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	_, err := Open(ctx, b.URL)
	require.ErrorIs(t, err, ErrPermission)
	require.Contains(t, err.Error(), b.Name)
}

// TestLinkBucketsS3: on S3 (MinIO, two buckets of one server), a link
// reads the dataset's own bucket; another bucket only when the link policy
// names it; and never through an endpoint that neither the dataset's URL
// nor the policy gives (the reader's credentials would go there).
func TestLinkBucketsS3(t *testing.T) {
	t.Setenv(EnvLinkAllow, "")
	own, other := testserver.MinIO(t), testserver.MinIO(t)
	for _, b := range []testserver.Bucket{own, other} {
		st, err := storage.Open(ctx, "s3://"+b.Name+"?endpoint="+b.Endpoint)
		require.NoError(t, err)
		require.NoError(t, st.Put(ctx, "img.bin", []byte("in "+b.Name)))
		require.NoError(t, st.Close())
	}
	links := []string{
		"s3://" + own.Name + "/img.bin?endpoint=" + own.Endpoint,
		"s3://" + other.Name + "/img.bin?endpoint=" + other.Endpoint,
		"s3://" + other.Name + "/img.bin?endpoint=http://127.0.0.1:1",
	}
	d, err := Create(ctx, own.URL, schema.Schema{Columns: []schema.Column{{Name: "ref", Kind: schema.Link}}})
	require.NoError(t, err)
	for _, l := range links {
		require.NoError(t, d.Append(ctx, Row{"ref": String(l)}))
	}
	_, err = d.Commit(ctx, "links to two buckets")
	require.NoError(t, err)
	require.NoError(t, d.Close())
	column := func(p LinkPolicy) *ColumnReader {
		p.Retry = storage.RetryPolicy{MaxAttempts: 1}
		r, err := Open(ctx, own.URL, WithLinkPolicy(p))
		require.NoError(t, err)
		t.Cleanup(func() { r.Close() })
		col := mustColumn(t, r, "ref")
		return col
	}

	col := column(LinkPolicy{})
	b, err := col.Fetch(ctx, 0)
	require.NoError(t, err, "the dataset's own bucket")
	require.Equal(t, "in "+own.Name, string(b))
	_, err = col.Fetch(ctx, 1)
	require.ErrorIs(t, err, ErrPermission)
	require.ErrorContains(t, err, `column "ref" row 1`)
	require.ErrorContains(t, err, fmt.Sprintf("bucket s3://%s is not the dataset's own (the dataset's is s3://%s)", other.Name, own.Name))
	require.ErrorContains(t, err, "allow it with LOCH_LINK_ALLOW=s3://"+other.Name)

	col = column(LinkPolicy{Allow: []string{"s3://" + other.Name}})
	b, err = col.Fetch(ctx, 1)
	require.NoError(t, err, "named in the policy")
	require.Equal(t, "in "+other.Name, string(b))
	_, err = col.Fetch(ctx, 2)
	require.ErrorIs(t, err, ErrPermission)
	require.ErrorContains(t, err, "the link chooses its server or credentials (endpoint=http://127.0.0.1:1)")
}
