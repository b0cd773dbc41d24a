//go:build cgo && !noffmpeg

package media_test

import (
	"bytes"
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/decodelimit"
	"github.com/lochdata/loch/internal/decodelimit/decodelimittest"
	"github.com/lochdata/loch/internal/mediatest"
	"github.com/lochdata/loch/media"
)

// Video: a frame larger than the limit is refused by the probe and by
// OpenVideo; frames are decoded while count x frame fits, and refused,
// naming both sizes, beyond.
func TestVideoDecodeLimit(t *testing.T) {
	b := mediatest.Read(t, mediatest.Video(t, t.TempDir(), "v.mp4", 64, 48, 25, 1, 10))
	const frame = 64 * 48 * 3
	decodelimittest.Set(t, 10*frame)
	in, err := media.ProbeVideoBytes(b)
	require.NoError(t, err)
	v, err := media.OpenVideo(bytes.NewReader(b), int64(len(b)), in)
	require.NoError(t, err)
	defer v.Close()
	require.NoError(t, v.Frames(make([]byte, 10*frame), 0, 10, 1, 0, 0))
	err = v.Frames(make([]byte, 11*frame), 0, 11, 1, 0, 0)
	require.ErrorIs(t, err, media.ErrTooLarge)
	require.NotErrorIs(t, err, base.ErrCorrupt)
	require.EqualError(t, err, "11 video frames of 64x48 pixels (RGB): 101376 bytes, more than the decode limit of 92160 bytes (LOCH_MAX_DECODE_BYTES or --max-decode-bytes sets it)")
	require.ErrorIs(t, v.Frames(make([]byte, 128*96*3), 0, 1, 1, 128*4, 96*4), media.ErrTooLarge, "an upscale past the limit")

	decodelimittest.Set(t, frame-1)
	_, err = media.ProbeVideoBytes(b)
	require.ErrorIs(t, err, media.ErrTooLarge)
	require.ErrorContains(t, err, "1 video frame of 64x48 pixels (RGB): 9216 bytes, more than the decode limit of 9215 bytes")
	_, err = media.OpenVideo(bytes.NewReader(b), int64(len(b)), in)
	require.ErrorIs(t, err, media.ErrTooLarge)
}

// wavHeader is a pcm s16le wav header whose data chunk declares n bytes.
func wavHeader(rate, channels int, n uint32) []byte {
	var b bytes.Buffer
	b.WriteString("RIFF\xff\xff\xff\xffWAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(channels), uint32(rate), uint32(rate * channels * 2), uint16(channels * 2), uint16(16)} {
		_ = binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString("data")
	_ = binary.Write(&b, binary.LittleEndian, n)
	return b.Bytes()
}

// Audio: a wav (read without FFmpeg) and a flac (through FFmpeg) whose
// samples are more than the lowered limit are refused before they are
// decoded, naming both sizes; a wav header declaring far more data than
// the file holds is read for what it holds.
func TestAudioDecodeLimit(t *testing.T) {
	dir := t.TempDir()
	wav := mediatest.Read(t, mediatest.Audio(t, dir, "a.wav", 8000, 1, 1))
	flac := mediatest.Read(t, mediatest.Audio(t, dir, "a.flac", 8000, 1, 1))
	samples := wav[bytes.Index(wav, []byte("data"))+8:]
	huge := append(wavHeader(8000, 1, 0xFFFFFFF0), samples...) // declares 2^32 bytes
	decodelimittest.Set(t, 16000)
	for name, data := range map[string][]byte{"wav": wav, "flac": flac, "wav declaring 4 GiB": huge} {
		_, _, err := media.DecodeAudio(bytes.NewReader(data), int64(len(data)), 0)
		require.ErrorIs(t, err, media.ErrTooLarge, name)
		require.NotErrorIs(t, err, base.ErrCorrupt, name)
		require.ErrorContains(t, err, "audio of 8000 samples x 1 channel (float32): 32000 bytes, more than the decode limit of 16000 bytes", name)
		_, err = media.ProbeAudioBytes(data)
		require.ErrorIs(t, err, media.ErrTooLarge, name)
	}
	decodelimittest.Set(t, 32000)
	for name, data := range map[string][]byte{"wav": wav, "flac": flac, "wav declaring 4 GiB": huge} {
		pcm, in, err := media.DecodeAudio(bytes.NewReader(data), int64(len(data)), 0)
		require.NoError(t, err, name)
		require.Equal(t, 8000, in.Samples, name)
		require.Len(t, pcm, 8000, name)
	}
}

// flacDeclaring is a real flac whose STREAMINFO declares total samples.
func flacDeclaring(t *testing.T, data []byte, total uint64) []byte {
	require.Equal(t, "fLaC", string(data[:4]))
	require.Equal(t, byte(0), data[4]&0x7f, "STREAMINFO first")
	out := append([]byte(nil), data...)
	v := binary.BigEndian.Uint64(out[18:])
	binary.BigEndian.PutUint64(out[18:], v&^(1<<36-1)|total)
	return out
}

// A flac declaring 2^36-1 samples (a day and more at 8 kHz; 275 GB
// decoded) is refused from its header by the default limit, without
// allocating; one declaring fewer samples than it holds is stopped as its
// decode passes the limit.
func TestAudioDeclaredSamples(t *testing.T) {
	flac := mediatest.Read(t, mediatest.Audio(t, t.TempDir(), "a.flac", 8000, 1, 1))
	decodelimittest.Set(t, decodelimit.Default)
	bomb := flacDeclaring(t, flac, 1<<36-1)
	var err error
	n := decodelimittest.Allocated(func() { _, _, err = media.DecodeAudio(bytes.NewReader(bomb), int64(len(bomb)), 0) })
	require.ErrorIs(t, err, media.ErrTooLarge)
	require.ErrorContains(t, err, "audio of 68719476735 samples x 1 channel (float32)")
	require.Less(t, n, uint64(1<<20))

	liar := flacDeclaring(t, flac, 100)
	decodelimittest.Set(t, 4000*4)
	n = decodelimittest.Allocated(func() { _, _, err = media.DecodeAudio(bytes.NewReader(liar), int64(len(liar)), 0) })
	require.ErrorIs(t, err, media.ErrTooLarge)
	require.ErrorContains(t, err, "decode past the declared 100 samples")
	require.Less(t, n, uint64(1<<20))
}
