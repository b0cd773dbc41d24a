package chunk

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/schema"
	"github.com/stretchr/testify/require"
)

func TestMediaTable(t *testing.T) {
	b := NewBuilder(schema.Uint8, SampleVideo, CodecNone, 0)
	m := Media{Container: "mp4", Codec: "h264", RateNum: 30000, RateDen: 1001}
	require.NoError(t, b.AddMedia([]int{10, 4, 6, 3}, []byte("container bytes"), false, m))
	require.NoError(t, b.AddMedia(nil, nil, true, Media{}))
	require.NoError(t, b.AddMedia([]int{5, 4, 6, 3}, []byte("more"), false, Media{Container: "a-very-long-name", Codec: "vp9", RateNum: 25, RateDen: 1}))
	obj, err := b.Encode()
	require.NoError(t, err)
	require.Equal(t, byte(MediaMinor), obj[5])
	h, err := ParseHeader(obj)
	require.NoError(t, err)
	require.Equal(t, m, h.Media(0))
	require.Equal(t, Media{}, h.Media(1))
	require.Equal(t, Media{Container: "a-very-l", Codec: "vp9", RateNum: 25, RateDen: 1}, h.Media(2))
	require.Equal(t, []int{5, 4, 6, 3}, h.Shape(2))
	ch, err := Decode(obj, nil)
	require.NoError(t, err)
	require.Equal(t, []byte("more"), ch.Sample(2))
}

func TestUnknownSampleCompression(t *testing.T) {
	b := NewBuilder(schema.Uint8, SampleAudio, CodecNone, 0)
	require.NoError(t, b.Add([]int{4, 1}, []byte("abcd"), false))
	obj, err := b.Encode()
	require.NoError(t, err)
	reseal := func(minor byte) []byte {
		b := bytes.Clone(obj)
		b[5], b[7] = minor, SampleAudio+1
		h := int(binary.LittleEndian.Uint32(b[16:]))
		binary.LittleEndian.PutUint32(b[h-4:], Checksum(b[:h-4]))
		return b
	}
	_, err = ParseHeader(reseal(Minor + 1))
	require.ErrorIs(t, err, base.ErrNewerFormat)
	_, err = ParseHeader(reseal(Minor))
	require.ErrorIs(t, err, base.ErrCorrupt)
}
