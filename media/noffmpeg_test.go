//go:build !cgo || noffmpeg

package media_test

import (
	"testing"

	"github.com/lochdata/loch/media"
	"github.com/stretchr/testify/require"
)

// TestNoFFmpeg: a build without FFmpeg imports and runs; the first probe or
// decode fails with ErrNoFFmpeg, naming the missing libraries.
func TestNoFFmpeg(t *testing.T) {
	require.False(t, media.FFmpeg)
	_, err := media.ProbeVideoBytes([]byte("anything"))
	require.ErrorIs(t, err, media.ErrNoFFmpeg)
	require.ErrorContains(t, err, "libavcodec")
	_, _, err = media.DecodeAudio(nil, 0, 0)
	require.ErrorIs(t, err, media.ErrNoFFmpeg)
	_, err = media.OpenVideo(nil, 0, media.Info{})
	require.ErrorIs(t, err, media.ErrNoFFmpeg)
}
