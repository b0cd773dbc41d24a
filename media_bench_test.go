package loch

import (
	"bytes"
	"math/rand/v2"
	"testing"

	"github.com/lochdata/loch/internal/mediatest"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/media"
	"github.com/lochdata/loch/schema"
	"github.com/stretchr/testify/require"
)

// BenchmarkMediaClip reads 16-frame 112x112 clips (stride 2, random
// starts) of 10-second 640x360 25 fps H.264 videos (keyframe every 2 s)
// stored in a dataset, on local disk and on MinIO: "range" opens the
// sample by range reads (ColumnReader.OpenMedia); the baseline in the same
// run, "whole", reads the whole stored file (ReadEncoded) and decodes the
// same clip from memory. It reports stored bytes read per clip and the
// file's size.
func BenchmarkMediaClip(b *testing.B) {
	data := mediatest.Read(b, mediatest.Video(b, b.TempDir(), "v.mp4", 640, 360, 25, 10, 50))
	in, err := media.ProbeVideoBytes(data)
	require.NoError(b, err)
	for _, where := range testserver.Stores {
		url := testserver.StoreURL(b, where)
		d, err := Create(ctx, url, mediaSchema(0))
		require.NoError(b, err)
		const videos = 8
		for i := 0; i < videos; i++ {
			require.NoError(b, d.Append(ctx, Row{"clip": Media(schema.VideoCompression, data)}))
		}
		_, err = d.Commit(ctx, "videos")
		require.NoError(b, err)
		clip, err := d.Column("clip")
		require.NoError(b, err)
		dst := make([]byte, 16*112*112*3)
		for _, mode := range []string{"range", "whole"} {
			b.Run(where+"/"+mode, func(b *testing.B) {
				rng := rand.New(rand.NewPCG(3, 4))
				var read int64
				for i := 0; i < b.N; i++ {
					row, start := int64(rng.IntN(videos)), rng.IntN(in.Frames-32)
					var v *media.Video
					var m *MediaSample
					if mode == "range" {
						var err error
						m, err = clip.OpenMedia(ctx, row)
						require.NoError(b, err)
						v, err = media.OpenVideo(m, m.Bytes, in)
						require.NoError(b, err)
					} else {
						s, err := clip.ReadEncoded(ctx, row)
						require.NoError(b, err)
						read += int64(len(s.Data))
						v, err = media.OpenVideo(bytes.NewReader(s.Data), int64(len(s.Data)), in)
						require.NoError(b, err)
					}
					require.NoError(b, v.Frames(dst, start, 16, 2, 112, 112))
					v.Close()
					if m != nil {
						read += m.BytesRead()
					}
				}
				b.ReportMetric(float64(read)/float64(b.N), "bytes/clip")
				b.ReportMetric(float64(len(data)), "file-bytes")
			})
		}
		d.Close()
	}
}
