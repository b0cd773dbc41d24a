//go:build cgo && !noffmpeg

package viewer

import (
	"net/http"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/ingest"
	"github.com/lochdata/loch/internal/mediatest"
	"github.com/lochdata/loch/media"
	"github.com/lochdata/loch/schema"
)

// mediaSource is one row of the media fixture: the files its video and
// audio samples were made from.
type mediaSource struct {
	video, audio []byte
	videoType    string
	audioType    string // the Content-Type served; audio/wav when served decoded
}

// makeMedia writes the media fixture at url, with the columns that `loch
// ingest video` and `loch ingest audio` make (ingest.MediaColumn) and a
// tiny picture: row 0 a 2 s 64×48 H.264 mp4 and a 2 s 44.1 kHz mp3, row 1
// a 2 s VP9 webm and a 2 s 22.05 kHz stereo aiff (a container browsers do
// not play, served decoded as WAV).
func makeMedia(t testing.TB, url string) []mediaSource {
	t.Helper()
	dir := t.TempDir()
	src := []mediaSource{
		{video: mediatest.Read(t, mediatest.Video(t, dir, "v.mp4", 64, 48, 25, 2, 25)), videoType: "video/mp4",
			audio: mediatest.Read(t, mediatest.Audio(t, dir, "a.mp3", 44100, 1, 2)), audioType: "audio/mpeg"},
		{video: mediatest.Read(t, mediatest.Video(t, dir, "v.webm", 64, 48, 25, 2, 25)), videoType: "video/webm",
			audio: mediatest.Read(t, mediatest.Audio(t, dir, "a.aiff", 22050, 2, 2)), audioType: "audio/wav"},
	}
	d, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{
		ingest.MediaColumn("video", schema.VideoCompression),
		ingest.MediaColumn("audio", schema.AudioCompression),
		{Name: "image", Kind: schema.Image, DType: schema.Uint8, Shape: schema.Shape{-1, -1, 3}, SampleCompression: schema.PNG},
	}})
	require.NoError(t, err)
	defer d.Close()
	for _, s := range src {
		require.NoError(t, d.Append(ctx, loch.Row{
			"video": loch.Media(schema.VideoCompression, s.video),
			"audio": loch.Media(schema.AudioCompression, s.audio),
			"image": loch.Tensor([]int{8, 8, 3}, tinyPix(8, 8)),
		}))
	}
	_, err = d.Commit(ctx, "media")
	require.NoError(t, err)
	return src
}

// TestMediaSamples: a video sample is served as the file ingested, with
// its container's type and Range support, and plays for the source's
// duration at its size; an audio sample likewise (an mp3 at 44.1 kHz
// lasts its 2 s, not 5.5 s at 16 kHz), or decoded as WAV at its own rate
// when browsers do not play its container.
func TestMediaSamples(t *testing.T) {
	u := filepath.Join(t.TempDir(), "clips")
	src := makeMedia(t, u)
	ts, _ := newTestServer(t, u, Options{})
	_, page := get(t, ts, "/t/clips/")
	v := between(page, `<code id="version">`, "<")
	require.Len(t, v, 32)
	_, grid := get(t, ts, "/t/clips/grid?v="+v+"&start=0&limit=10")
	require.Contains(t, grid, `<video controls preload="none" src="/t/clips/sample?col=video&amp;row=0&amp;v=`+v)
	require.Contains(t, grid, `<audio controls preload="none" src="/t/clips/sample?col=audio&amp;row=1&amp;v=`+v)

	for row, s := range src {
		path := "/t/clips/sample?v=" + v + "&row=" + strconv.Itoa(row) + "&col="
		resp, body := get(t, ts, path+"video")
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Equal(t, s.videoType, resp.Header.Get("Content-Type"))
		require.Equal(t, "bytes", resp.Header.Get("Accept-Ranges"))
		require.Equal(t, immutable, resp.Header.Get("Cache-Control"))
		require.Equal(t, string(s.video), body, "the file as ingested")
		want, err := media.ProbeVideoBytes(s.video)
		require.NoError(t, err)
		got, err := media.ProbeVideoBytes([]byte(body))
		require.NoError(t, err)
		require.Equal(t, [3]int{50, 48, 64}, [3]int{got.Frames, got.Height, got.Width})
		require.InDelta(t, 2.0, got.Duration.Seconds(), 1.0/25, "within a frame of 2 s")
		require.InDelta(t, want.Duration.Seconds(), got.Duration.Seconds(), 1.0/25)

		// A player's range request.
		resp, part := get(t, ts, path+"video", "Range", "bytes=100-1099")
		require.Equal(t, http.StatusPartialContent, resp.StatusCode)
		require.Equal(t, "bytes 100-1099/"+strconv.Itoa(len(s.video)), resp.Header.Get("Content-Range"))
		require.Equal(t, string(s.video[100:1100]), part)
		resp, part = get(t, ts, path+"video", "Range", "bytes=-10")
		require.Equal(t, http.StatusPartialContent, resp.StatusCode)
		require.Equal(t, string(s.video[len(s.video)-10:]), part)

		resp, body = get(t, ts, path+"audio")
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		require.Equal(t, s.audioType, resp.Header.Get("Content-Type"))
		want, err = media.ProbeAudioBytes(s.audio)
		require.NoError(t, err)
		got, err = media.ProbeAudioBytes([]byte(body))
		require.NoError(t, err)
		require.Equal(t, want.SampleRate, got.SampleRate)
		require.Equal(t, want.Channels, got.Channels)
		sample := time.Second / time.Duration(want.SampleRate)
		require.InDelta(t, want.Duration, got.Duration, float64(sample), "the source's duration, within a sample")
		require.InDelta(t, 2*time.Second, got.Duration, float64(30*time.Millisecond), "2 s (within an mp3 frame)")
		if s.audioType == "audio/wav" {
			require.Equal(t, want.Samples, got.Samples)
		} else {
			require.Equal(t, string(s.audio), body, "the file as ingested")
		}
	}
	// A row out of range.
	resp, body := get(t, ts, "/t/clips/sample?v="+v+"&row=2&col=video")
	require.Equal(t, http.StatusNotFound, resp.StatusCode, body)
}
