package vindex

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/keys"
)

const commit = "0123456789abcdef0123456789abcdef"

func TestKnownMetric(t *testing.T) {
	for _, m := range Metrics {
		require.True(t, KnownMetric(m), m)
	}
	require.False(t, KnownMetric("hamming"))
	_, err := DecodeDescriptor(keys.MakeIndex(commit, 3, "hamming"), nil)
	require.ErrorIs(t, err, base.ErrCorrupt)
}

func TestVectorsRoundTrip(t *testing.T) {
	v := &Vectors{Dim: 2, IDs: []uint64{3, 9, 10}, Data: []float32{1, 2, 3, 4, 5, -6}}
	obj := EncodeVectors(KindList, v)
	got, err := DecodeVectors(VectorsKey(obj), KindList, 2, 3, obj)
	require.NoError(t, err)
	require.Equal(t, v, got)

	// Another sound vectors object under this one's name is refused.
	other := EncodeVectors(KindList, &Vectors{Dim: 2, IDs: []uint64{3, 9, 11}, Data: []float32{1, 2, 3, 4, 5, -6}})
	_, err = DecodeVectors(VectorsKey(obj), KindList, 2, 3, other)
	require.ErrorIs(t, err, base.ErrCorrupt)
	require.ErrorContains(t, err, VectorsKey(obj))

	c := &Vectors{Dim: 3, Data: []float32{1, 0, 0}}
	cobj := EncodeVectors(KindCentroids, c)
	got, err = DecodeVectors(VectorsKey(cobj), KindCentroids, 3, -1, cobj)
	require.NoError(t, err)
	require.Equal(t, c.Data, got.Data)
	require.Nil(t, got.IDs)
}

func TestVectorsCorrupt(t *testing.T) {
	obj := EncodeVectors(KindList, &Vectors{Dim: 2, IDs: []uint64{3, 9}, Data: []float32{1, 2, 3, 4}})
	flip := append([]byte(nil), obj...)
	flip[20] ^= 1
	unordered := EncodeVectors(KindList, &Vectors{Dim: 1, IDs: []uint64{9, 3}, Data: []float32{1, 2}})
	huge := append([]byte(nil), obj...)
	binary.LittleEndian.PutUint32(huge[12:], 1<<31) // n far beyond the object's size: no allocation
	for name, tc := range map[string]struct {
		obj       []byte
		kind      byte
		dim, want int
	}{
		"checksum":   {flip, KindList, 2, 2},
		"truncated":  {obj[:len(obj)-5], KindList, 2, 2},
		"kind":       {obj, KindCentroids, 2, -1},
		"dimension":  {obj, KindList, 3, 2},
		"count":      {obj, KindList, 2, 5},
		"unordered":  {unordered, KindList, 1, 2},
		"huge count": {huge, KindList, 2, -1},
		"short":      {obj[:10], KindList, 2, 2},
	} {
		key := VectorsKey(tc.obj)
		_, err := DecodeVectors(key, tc.kind, tc.dim, tc.want, tc.obj)
		require.ErrorIs(t, err, base.ErrCorrupt, name)
		require.ErrorContains(t, err, key, name)
	}
	newer := append([]byte(nil), obj...)
	newer[4] = 2
	_, err := DecodeVectors(VectorsKey(newer), KindList, 2, 2, newer)
	require.ErrorIs(t, err, base.ErrNewerFormat)
}

func testDescriptor() *Descriptor {
	start := uint64(0)
	return &Descriptor{Header: Header{Version: commit, Column: "emb", UID: 3, Metric: "l2", Type: "ivf-flat"}, Dim: 2, DType: "float32",
		Rows: 5, Covered: []Covered{{Key: "fragments/" + commit, IDStart: &start}},
		Centroids: "vectors/" + commit, Lists: []List{{Key: "vectors/" + commit, Rows: 5}, {}},
		Time: time.Unix(1, 0).UTC()}
}

func TestDescriptor(t *testing.T) {
	d := testDescriptor()
	obj, err := EncodeDescriptor(d)
	require.NoError(t, err)
	key := keys.MakeIndex(commit, 3, "l2")
	got, err := DecodeDescriptor(key, obj)
	require.NoError(t, err)
	require.Equal(t, d, got)
	require.Equal(t, []string{"vectors/" + commit, "vectors/" + commit}, got.Objects())

	_, err = DecodeDescriptor(keys.MakeIndex(commit, 4, "l2"), obj)
	require.ErrorIs(t, err, base.ErrCorrupt)
	d.Rows = 6
	obj, err = EncodeDescriptor(d)
	require.NoError(t, err)
	_, err = DecodeDescriptor(key, obj)
	require.ErrorIs(t, err, base.ErrCorrupt)
	require.ErrorContains(t, err, key)
}

// FuzzDecodeVectors: any bytes decode or fail with ErrCorrupt or
// ErrNewerFormat, never panic, and allocate no more than the object's
// size says.
func FuzzDecodeVectors(f *testing.F) {
	f.Add(EncodeVectors(KindList, &Vectors{Dim: 2, IDs: []uint64{1, 2}, Data: []float32{1, 2, 3, 4}}), true)
	f.Add(EncodeVectors(KindCentroids, &Vectors{Dim: 2, Data: []float32{1, 2}}), false)
	f.Fuzz(func(t *testing.T, obj []byte, list bool) {
		kind := KindCentroids
		if list {
			kind = KindList
		}
		dim := 2
		if len(obj) >= 12 {
			dim = int(binary.LittleEndian.Uint32(obj[8:]))
		}
		v, err := DecodeVectors(VectorsKey(obj), kind, dim, -1, obj)
		if err != nil {
			require.True(t, errors.Is(err, base.ErrCorrupt) || errors.Is(err, base.ErrNewerFormat), err.Error())
			return
		}
		require.Equal(t, obj, EncodeVectors(kind, v))
	})
}

// FuzzDecodeDescriptor: any bytes decode and check or fail with
// ErrCorrupt or ErrNewerFormat, never panic.
func FuzzDecodeDescriptor(f *testing.F) {
	obj, _ := EncodeDescriptor(testDescriptor())
	f.Add(obj)
	pq := testDescriptor()
	pq.Type, pq.M, pq.Codebook = TypePQ, 2, "vectors/"+commit
	obj, _ = EncodeDescriptor(pq)
	f.Add(obj)
	f.Fuzz(func(t *testing.T, obj []byte) {
		d, err := DecodeDescriptor(keys.MakeIndex(commit, 3, "l2"), obj)
		if err != nil {
			require.True(t, errors.Is(err, base.ErrCorrupt) || errors.Is(err, base.ErrNewerFormat), err.Error())
			return
		}
		require.Equal(t, int64(len(d.Lists)) >= 1, true)
	})
}
