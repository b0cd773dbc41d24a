package vector

import (
	"context"
	"encoding/json"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/testseed"
	"github.com/lochdata/loch/internal/vindex"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// descriptorOf reads the descriptor an Info names.
func descriptorOf(t *testing.T, ds *loch.Dataset, info *Info) *vindex.Descriptor {
	t.Helper()
	obj, err := ds.Store().Get(context.Background(), info.Key)
	require.NoError(t, err)
	d, err := vindex.DecodeDescriptor(info.Key, obj)
	require.NoError(t, err)
	return d
}

// TestBuildInParts: an index built in parts (several row ranges, lists
// merged from their shares), whether by Build or by the four steps with
// their JSON round-tripped as tasks pass it, is the index built in one
// part: the same centroids and the same list objects; the merged parts'
// objects are deleted and the index searches as before.
func TestBuildInParts(t *testing.T) {
	seed := testseed.Seed(t)
	ctx := context.Background()
	for _, kind := range []string{KindFlat, KindPQ} {
		mx := newMixture(seed, 16, 8, 0.5)
		m := newModelChunks(t, filepath.Join(t.TempDir(), "ds"), 16, schema.Float32, 4<<10)
		for range 3 {
			var vs [][]float32
			for range 700 {
				vs = append(vs, mx.draw())
			}
			m.append(vs)
			m.commit("rows")
		}
		opts := BuildOptions{Metric: L2, NList: 12, Seed: seed, Kind: kind, M: 4}
		whole, err := Build(ctx, m.ds, "embedding", opts)
		require.NoError(t, err)
		want := descriptorOf(t, m.ds, whole)
		qs := [][]float32{mx.draw(), mx.draw()}
		hits, err := Search(ctx, m.ds, "embedding", L2, qs, 10, Options{NProbe: 3})
		require.NoError(t, err)

		opts.PartRows = 500
		parted, err := Build(ctx, m.ds, "embedding", opts)
		require.NoError(t, err)
		require.Equal(t, whole.Key, parted.Key)
		require.InDelta(t, whole.Bytes, parted.Bytes, 64, "the same objects; the descriptors differ in their time")
		got := descriptorOf(t, m.ds, parted)
		require.Equal(t, want.Centroids, got.Centroids)
		require.Equal(t, want.Lists, got.Lists)
		require.Equal(t, want.Codebook, got.Codebook)

		opts.PartRows = 333
		info := buildInSteps(t, m.ds, opts)
		require.Equal(t, want.Lists, descriptorOf(t, m.ds, info).Lists)
		again, err := Search(ctx, m.ds, "embedding", L2, qs, 10, Options{NProbe: 3})
		require.NoError(t, err)
		require.Equal(t, hits.Hits, again.Hits)
		require.Equal(t, whole.Key, again.Index)
		objects := 0
		require.NoError(t, m.ds.Store().List(ctx, keys.Vectors.Prefix(), func(storage.Attrs) error { objects++; return nil }))
		require.Equal(t, len(want.Objects()), objects, "%s: the parts' merged objects are deleted", kind)
	}
}

// roundTrip passes v through JSON, as the C ABI and Ray tasks do.
func roundTrip[T any](t *testing.T, v T) T {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	var out T
	require.NoError(t, json.Unmarshal(b, &out))
	return out
}

// buildInSteps builds the index with Train, EncodePart (each part twice,
// as a retried task would), MergeLists in two ranges of lists and Commit.
func buildInSteps(t *testing.T, ds *loch.Dataset, opts BuildOptions) *Info {
	t.Helper()
	ctx := context.Background()
	tr, err := Train(ctx, ds, "embedding", opts)
	require.NoError(t, err)
	tr = roundTrip(t, tr)
	require.Greater(t, len(tr.Parts), 2)
	var parts []*Part
	for _, r := range tr.Parts {
		p, err := EncodePart(ctx, ds, tr, r[0], r[1], Options{})
		require.NoError(t, err)
		retried, err := EncodePart(ctx, ds, tr, r[0], r[1], Options{})
		require.NoError(t, err)
		require.Equal(t, p, retried)
		parts = append(parts, roundTrip(t, p))
	}
	half := tr.NList / 2
	a, err := MergeLists(ctx, ds.Store(), tr, parts, 0, half, Options{})
	require.NoError(t, err)
	b, err := MergeLists(ctx, ds.Store(), tr, parts, half, tr.NList, Options{})
	require.NoError(t, err)
	info, err := Commit(ctx, ds, tr, parts, roundTrip(t, append(a, b...)))
	require.NoError(t, err)
	return info
}

// TestCommitRefusesBadParts: a part missing, given twice or of another
// version, or lists that disagree with the parts, commit nothing.
func TestCommitRefusesBadParts(t *testing.T) {
	seed := testseed.Seed(t)
	ctx := context.Background()
	mx := newMixture(seed, 8, 4, 0.5)
	m := newModelChunks(t, filepath.Join(t.TempDir(), "ds"), 8, schema.Float32, 2<<10)
	var vs [][]float32
	for range 900 {
		vs = append(vs, mx.draw())
	}
	m.append(vs)
	m.commit("rows")
	tr, err := Train(ctx, m.ds, "embedding", BuildOptions{Metric: Cosine, NList: 6, Seed: seed, PartRows: 300})
	require.NoError(t, err)
	require.Len(t, tr.Parts, 3)
	var parts []*Part
	for _, r := range tr.Parts {
		p, err := EncodePart(ctx, m.ds, tr, r[0], r[1], Options{})
		require.NoError(t, err)
		parts = append(parts, p)
	}
	lists, err := MergeLists(ctx, m.ds.Store(), tr, parts, 0, tr.NList, Options{})
	require.NoError(t, err)
	other := *parts[1]
	other.Version = "0000000000000000000000000000000000000000000000000000000000000000"
	for name, bad := range map[string][]*Part{
		"missing":    {parts[0], parts[2]},
		"twice":      {parts[0], parts[1], parts[1], parts[2]},
		"other":      {parts[0], &other, parts[2]},
		"short list": parts,
	} {
		ls := lists
		if name == "short list" {
			ls = append([]PartList{{List: lists[0].List, Key: lists[0].Key, Rows: lists[0].Rows - 1}}, lists[1:]...)
		}
		_, err := Commit(ctx, m.ds, tr, bad, ls)
		require.ErrorIs(t, err, loch.ErrInvalidArgument, name)
		_, err = Find(ctx, m.ds, "embedding", Cosine)
		require.ErrorIs(t, err, ErrNoIndex, "%s: nothing committed", name)
	}
	_, err = EncodePart(ctx, m.ds, tr, 800, 901, Options{})
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
	m.append(vs[:5])
	m.commit("more")
	_, err = EncodePart(ctx, m.ds, tr, 0, 300, Options{})
	require.ErrorIs(t, err, loch.ErrInvalidArgument, "the handle moved past the trained version")
}

// sizeStore counts the bytes of the objects under a prefix and their peak.
type sizeStore struct {
	storage.Store
	prefix      string
	mu          sync.Mutex
	size        map[string]int64
	total, peak int64
}

func (s *sizeStore) Put(ctx context.Context, key string, data []byte) error {
	if err := s.Store.Put(ctx, key, data); err != nil || !strings.HasPrefix(key, s.prefix) {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total += int64(len(data)) - s.size[key]
	s.size[key] = int64(len(data))
	s.peak = max(s.peak, s.total)
	return nil
}

func (s *sizeStore) Delete(ctx context.Context, key string) error {
	if err := s.Store.Delete(ctx, key); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.total -= s.size[key]
	delete(s.size, key)
	return nil
}

// TestBuildFreesPartsAsItMerges: Build deletes each range of lists' merged
// shares before merging the next, so that the store never holds the
// index's lists twice (the parts' and the merged), and keeps only the
// index's objects.
func TestBuildFreesPartsAsItMerges(t *testing.T) {
	seed := testseed.Seed(t)
	ctx := context.Background()
	for _, kind := range []string{KindFlat, KindPQ} {
		mx := newMixture(seed, 16, 8, 0.5)
		url := filepath.Join(t.TempDir(), "ds")
		m := newModelChunks(t, url, 16, schema.Float32, 4<<10)
		m.append(mx.drawN(2400))
		m.commit("rows")
		st, err := storage.Open(ctx, url)
		require.NoError(t, err)
		counted := &sizeStore{Store: st, prefix: keys.Vectors.Prefix(), size: map[string]int64{}}
		ds, err := loch.Open(ctx, url, loch.WithStore(counted))
		require.NoError(t, err)
		info, err := Build(ctx, ds, "embedding", BuildOptions{Metric: L2, NList: 32, Seed: seed, Kind: kind, M: 4, PartRows: 600})
		require.NoError(t, err)
		require.NoError(t, ds.Close())
		require.Len(t, counted.size, len(descriptorOf(t, m.ds, info).Objects()), "%s: only the index's objects are left", kind)
		require.Less(t, counted.peak, counted.total*3/2, "%s: at most the parts and a sixteenth of the lists beside them (peak %d, index %d)", kind, counted.peak, counted.total)
	}
}
