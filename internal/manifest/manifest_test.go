package manifest

import (
	"testing"

	"github.com/lochdata/loch/internal/base"
	"github.com/stretchr/testify/require"
)

func TestEnvelopeRoundTrip(t *testing.T) {
	big := Deletion{}
	for i := int64(0); i < 5000; i++ {
		big.Offsets = append(big.Offsets, i*3)
	}
	for _, v := range []Deletion{{Offsets: []int64{1, 2, 3}}, big} {
		obj, err := Encode(KindDeletion, v)
		require.NoError(t, err)
		var got Deletion
		require.NoError(t, Decode(KindDeletion, obj, &got))
		require.Equal(t, v, got)
		require.ErrorIs(t, Decode(KindFragment, obj, &got), base.ErrCorrupt, "kind is checked")
	}
}

func TestEnvelopeRejects(t *testing.T) {
	obj, err := Encode(KindRoot, Root{Seq: 3, Refs: map[string]string{"heads/main": "abc"}})
	require.NoError(t, err)
	var r Root
	for i := range obj {
		bad := append([]byte(nil), obj...)
		bad[i] ^= 1
		require.Error(t, Decode(KindRoot, bad, &r), "flip of byte %d accepted", i)
	}
	require.ErrorIs(t, Decode(KindRoot, obj[:len(obj)-3], &r), base.ErrCorrupt)
	newer := append([]byte(nil), obj...)
	newer[5] = Major + 1
	err = Decode(KindRoot, newer, &r)
	require.ErrorIs(t, err, base.ErrNewerFormat)
	require.Contains(t, err.Error(), "upgrade loch")
}

func FuzzDecode(f *testing.F) {
	for _, v := range []any{
		Root{Seq: 1, Refs: map[string]string{"heads/main": "x"}},
		Manifest{Rows: 3, Fragments: []FragmentRef{{Key: "fragments/a", Rows: 3}}},
		Fragment{Rows: 2, Columns: map[string][]ChunkRef{"1": {{Key: "chunks/ab/ab", Rows: 2}}}},
	} {
		obj, err := Encode(KindManifest, v)
		require.NoError(f, err)
		f.Add(obj)
	}
	f.Fuzz(func(t *testing.T, obj []byte) {
		var m Manifest
		_ = Decode(KindManifest, obj, &m)
		var fr Fragment
		_ = Decode(KindFragment, obj, &fr)
	})
}
