package vindex

import (
	"encoding/binary"
	"errors"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/keys"
)

func testPQList() *PQList {
	return &PQList{Dim: 4, M: 2, IDs: []uint64{3, 9, 12}, Codes: []byte{1, 2, 3, 4, 5, 255},
		Data: []float32{1, 2, 3, 4, 5, 6, 7, 8, -1, -2, -3, -4}}
}

// TestPQListRoundTrip: a PQ list decodes whole, by its head and by each
// row's range to what was encoded; a flipped byte in a row or the head is
// ErrCorrupt, and a row read under another id fails its checksum.
func TestPQListRoundTrip(t *testing.T) {
	l := testPQList()
	obj := EncodePQList(l)
	require.Equal(t, PQListSize(4, 2, 3), int64(len(obj)))
	key := VectorsKey(obj)
	got, err := DecodePQList(key, 4, 2, 3, obj)
	require.NoError(t, err)
	require.Equal(t, l, got)

	h, err := DecodePQHead(key, 4, 2, 3, obj[:PQHeadSize(2, 3)])
	require.NoError(t, err)
	require.Equal(t, l.IDs, h.IDs)
	require.Equal(t, l.Codes, h.Codes)
	for i, id := range l.IDs {
		dst := make([]float32, 4)
		off := PQRowOffset(4, 2, 3, i)
		require.NoError(t, DecodePQRow(key, id, obj[off:off+PQRowSize(4)], dst))
		require.Equal(t, l.Data[4*i:4*i+4], dst)
	}
	off := PQRowOffset(4, 2, 3, 1)
	require.ErrorIs(t, DecodePQRow(key, 3, obj[off:off+PQRowSize(4)], make([]float32, 4)), base.ErrCorrupt)

	bad := append([]byte(nil), obj...)
	bad[off+2] ^= 1
	require.ErrorIs(t, DecodePQRow(key, 9, bad[off:off+PQRowSize(4)], make([]float32, 4)), base.ErrCorrupt)
	_, err = DecodePQList(key, 4, 2, 3, bad)
	require.ErrorIs(t, err, base.ErrCorrupt)
	require.ErrorContains(t, err, key)
	bad = append([]byte(nil), obj...)
	bad[25] ^= 1
	_, err = DecodePQHead(key, 4, 2, 3, bad[:PQHeadSize(2, 3)])
	require.ErrorIs(t, err, base.ErrCorrupt)
	_, err = DecodePQHead(key, 4, 4, 3, obj[:PQHeadSize(4, 3)])
	require.ErrorIs(t, err, base.ErrCorrupt)
}

// FuzzDecodePQList: any bytes decode whole, by head or by row, or fail
// with ErrCorrupt, ErrNewerFormat or the decode limit, never panic; what
// decodes whole encodes to the same bytes.
func FuzzDecodePQList(f *testing.F) {
	f.Add(EncodePQList(testPQList()), uint8(2))
	f.Add(EncodePQList(&PQList{Dim: 1, M: 1}), uint8(1))
	f.Fuzz(func(t *testing.T, obj []byte, m uint8) {
		ok := func(err error) {
			require.True(t, errors.Is(err, base.ErrCorrupt) || errors.Is(err, base.ErrNewerFormat) || errors.Is(err, base.ErrInvalidArgument), err.Error())
		}
		dim, n := 4, 3
		if len(obj) >= 16 {
			dim, n = int(binary.LittleEndian.Uint32(obj[8:])), int(binary.LittleEndian.Uint32(obj[12:])%(1<<20))
		}
		dim = max(1, dim%(1<<16))
		mm := max(1, int(m))
		l, err := DecodePQList(VectorsKey(obj), dim, mm, n, obj)
		if err != nil {
			ok(err)
		} else {
			require.Equal(t, obj, EncodePQList(l))
		}
		if hs := PQHeadSize(mm, n); hs <= int64(len(obj)) {
			if _, err := DecodePQHead("k", dim, mm, n, obj[:hs]); err != nil {
				ok(err)
			}
		}
		if rs := PQRowSize(dim); rs <= int64(len(obj)) {
			if err := DecodePQRow("k", 1, obj[:rs], make([]float32, dim)); err != nil {
				ok(err)
			}
		}
	})
}

// TestPQDescriptor: an ivf-pq descriptor round-trips and names its
// codebook among its objects; m that does not divide dim, a missing
// codebook, or PQ fields on an ivf-flat descriptor are ErrCorrupt.
func TestPQDescriptor(t *testing.T) {
	key := keys.MakeIndex(commit, 3, "l2")
	d := testDescriptor()
	d.Type, d.M, d.Codebook = TypePQ, 2, "vectors/"+commit
	obj, err := EncodeDescriptor(d)
	require.NoError(t, err)
	got, err := DecodeDescriptor(key, obj)
	require.NoError(t, err)
	require.Equal(t, d, got)
	require.Len(t, got.Objects(), 3)
	for _, bad := range []func(d *Descriptor){
		func(d *Descriptor) { d.M = 3 },
		func(d *Descriptor) { d.M = 0 },
		func(d *Descriptor) { d.Codebook = "" },
		func(d *Descriptor) { d.Type = TypeFlat },
	} {
		d := testDescriptor()
		d.Type, d.M, d.Codebook = TypePQ, 2, "vectors/"+commit
		bad(d)
		obj, err := EncodeDescriptor(d)
		require.NoError(t, err)
		_, err = DecodeDescriptor(key, obj)
		require.ErrorIs(t, err, base.ErrCorrupt)
	}
}
