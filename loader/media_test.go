package loader

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/chunkcache"
	"github.com/lochdata/loch/internal/mediatest"
	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/loader/order"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/transform"
)

func mediaDataset(t *testing.T, videos int) (*loch.Dataset, []string) {
	t.Helper()
	d, err := loch.Create(ctx, filepath.Join(t.TempDir(), "ds"), schema.Schema{Columns: []schema.Column{
		{Name: "clip", Kind: schema.Video, DType: schema.Uint8, SampleCompression: schema.VideoCompression, ChunkBytes: 64 << 10},
		{Name: "sound", Kind: schema.Audio, DType: schema.Float32, SampleCompression: schema.AudioCompression},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	dir := t.TempDir()
	var paths []string
	for i := 0; i < videos; i++ {
		v := mediatest.Video(t, dir, fmt.Sprintf("v%d.mp4", i), 64, 48, 25, 1+0.2*float64(i), 10)
		a := mediatest.Audio(t, dir, fmt.Sprintf("a%d.wav", i), 16000, 2, 0.5+0.1*float64(i))
		paths = append(paths, v)
		require.NoError(t, d.Append(ctx, loch.Row{
			"clip":  loch.Media(schema.VideoCompression, mediatest.Read(t, v)),
			"sound": loch.Media(schema.AudioCompression, mediatest.Read(t, a)),
		}))
	}
	_, err = d.Commit(ctx, "media")
	require.NoError(t, err)
	return d, paths
}

// TestMediaTransforms: clips and audio segments decoded in the workers,
// with seeded random starts that are the same whatever the worker count
// and, for a fixed start, frames equal to ffmpeg's own decode.
func TestMediaTransforms(t *testing.T) {
	d, paths := mediaDataset(t, 6)
	run := func(workers int, spec string) [][]byte {
		l, err := New(ctx, d.Scan(), Config{BatchSize: 4, Shuffle: "block", Seed: 7, Workers: workers,
			Transforms: map[string]string{"clip": spec, "sound": "resample=8000,segment=2000,mono"}})
		require.NoError(t, err)
		defer l.Close()
		var out [][]byte
		for _, b := range drain(t, l) {
			c, s := b.Columns["clip"], b.Columns["sound"]
			require.Equal(t, []int{b.Len(), 2000, 1}, s.Shape)
			require.Equal(t, schema.Float32, s.DType)
			out = append(out, append(append([]byte(nil), c.Data...), s.Data...))
		}
		return out
	}
	random := "clip=4:stride=2:size=32x24"
	require.Equal(t, run(1, random), run(3, random))

	l, err := New(ctx, d.Scan(), Config{BatchSize: 6, Columns: []string{"clip"}, Transforms: map[string]string{"clip": "clip=2:stride=3:start=5"}})
	require.NoError(t, err)
	defer l.Close()
	bs := drain(t, l)
	require.Len(t, bs, 1)
	c := bs[0].Columns["clip"]
	require.Equal(t, []int{6, 2, 48, 64, 3}, c.Shape)
	frame := 48 * 64 * 3
	for i, p := range paths {
		require.Equal(t, mediatest.Frame(t, p, 8), c.Data[(2*i+1)*frame:(2*i+2)*frame], "row %d", i)
	}

	l, err = New(ctx, d.Scan(), Config{BatchSize: 2, Columns: []string{"clip"}, Transforms: map[string]string{"clip": "clip=2:size=8x8:float"}})
	require.NoError(t, err)
	defer l.Close()
	for _, b := range drain(t, l) {
		require.Equal(t, []int{b.Len(), 2, 3, 8, 8}, b.Columns["clip"].Shape)
		require.Equal(t, schema.Float32, b.Columns["clip"].DType)
	}
}

// TestClipTooLong: a clip longer than a video (fetched whole) stops the
// loader naming the row, the column and the chunk, or with SkipBadSamples
// skips that row.
func TestClipTooLong(t *testing.T) {
	d, _ := mediaDataset(t, 3) // 25, 30 and 35 frames
	spec := map[string]string{"clip": "clip=30:size=8x8"}
	l, err := New(ctx, d.Scan(), Config{BatchSize: 1, Columns: []string{"clip"}, Transforms: spec})
	require.NoError(t, err)
	defer l.Close()
	for err == nil {
		_, err = l.Next(ctx)
	}
	require.NotErrorIs(t, err, io.EOF)
	t.Log(err)
	require.ErrorContains(t, err, `column "clip"`)
	require.ErrorContains(t, err, "chunk "+firstChunk(t, d))
	require.ErrorContains(t, err, "needs frame 29, the video has 25 frames")

	l, err = New(ctx, d.Scan(), Config{BatchSize: 1, Columns: []string{"clip"}, Transforms: spec, SkipBadSamples: true})
	require.NoError(t, err)
	defer l.Close()
	rows := 0
	for _, b := range drain(t, l) {
		rows += b.Len()
	}
	require.Equal(t, 2, rows)
}

// longVideos writes n synthetic 320x240 H.264 videos of 20 to 20+n-1 seconds
// at 25 fps (keyframe every 25 frames) into a new dataset at url, and
// returns their paths and the bytes they store.
func longVideos(t *testing.T, url string, n int) (*loch.Dataset, []string, int64) {
	t.Helper()
	d, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{
		{Name: "clip", Kind: schema.Video, DType: schema.Uint8, SampleCompression: schema.VideoCompression},
	}})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	dir := t.TempDir()
	var paths []string
	var total int64
	for i := 0; i < n; i++ {
		p := mediatest.Video(t, dir, fmt.Sprintf("long%d.mp4", i), 320, 240, 25, 20+float64(i), 25)
		b := mediatest.Read(t, p)
		total += int64(len(b))
		paths = append(paths, p)
		require.NoError(t, d.Append(ctx, loch.Row{"clip": loch.Media(schema.VideoCompression, b)}))
	}
	_, err = d.Commit(ctx, "long videos")
	require.NoError(t, err)
	return d, paths, total
}

// clipsByRow runs a loader and returns each row's clip bytes by row id.
func clipsByRow(t *testing.T, d *loch.Dataset, cfg Config, batches int) (map[uint64][]byte, State, Stats) {
	t.Helper()
	l, err := New(ctx, d.Scan(), cfg)
	require.NoError(t, err)
	defer l.Close()
	out := map[uint64][]byte{}
	for k := 0; batches < 0 || k < batches; k++ {
		b, err := l.Next(ctx)
		if errors.Is(err, io.EOF) {
			break
		}
		require.NoError(t, err)
		c := b.Columns["clip"]
		per := len(c.Data) / max(b.Len(), 1)
		for i, id := range b.RowIDs {
			out[id] = append([]byte(nil), c.Data[i*per:(i+1)*per]...)
		}
		l.Release(b)
	}
	return out, l.State(), l.Stats()
}

// TestClipsReadByRange: the loader decodes clips of long videos from the
// byte ranges the decoder asks for, on local disk and on MinIO: a 16-frame
// clip of each video fetches a small fraction of the column's stored
// bytes; a fixed-start clip is ffmpeg's frames; a random clip (start and
// crop) is what the pipeline makes of the whole stored bytes with the
// row's rng.
func TestClipsReadByRange(t *testing.T) {
	for _, where := range []string{"local", "minio"} {
		t.Run(where, func(t *testing.T) {
			url := filepath.Join(t.TempDir(), "ds")
			if where == "minio" {
				url = testserver.MinIO(t).URL
			}
			d, paths, total := longVideos(t, url, 4)
			for k, spec := range []string{"clip=16:size=160x120:random_crop=112", "clip=4:stride=3:random_crop=96x64:float"} {
				cfg := Config{BatchSize: 2, Seed: 5, Epoch: 1, Transforms: map[string]string{"clip": spec}}
				got, _, st := clipsByRow(t, d, cfg, -1)
				require.Len(t, got, 4)
				if k == 0 {
					t.Logf("%s: 4 clips fetched %d of %d stored bytes (%.1f%%)", where, st.BytesFetched, total, 100*float64(st.BytesFetched)/float64(total))
					require.Positive(t, st.BytesFetched)
					require.Less(t, st.BytesFetched, total/5)
				}
				p, err := transform.Parse(spec)
				require.NoError(t, err)
				for i, path := range paths {
					id, err := d.Scan().RowID(int64(i))
					require.NoError(t, err)
					rng := rand.New(rand.NewPCG(cfg.Seed^(uint64(cfg.Epoch)*0x9e3779b97f4a7c15), id))
					want, err := p.Apply(transform.Image{Shape: []int{(20 + i) * 25, 240, 320, 3}, DType: schema.Uint8, Encoded: "video", Data: mediatest.Read(t, path)}, rng, nil)
					require.NoError(t, err)
					require.Equal(t, want.Data, got[id], "%s: row %d", spec, i)
				}
			}

			fixed, _, _ := clipsByRow(t, d, Config{BatchSize: 4, Transforms: map[string]string{"clip": "clip=2:start=130:crop=300x200"}}, -1)
			for i, path := range paths {
				id, err := d.Scan().RowID(int64(i))
				require.NoError(t, err)
				for k := 0; k < 2; k++ {
					f := mediatest.Frame(t, path, 130+k)
					var want []byte
					for y := 20; y < 220; y++ {
						want = append(want, f[(y*320+10)*3:(y*320+310)*3]...)
					}
					require.Equal(t, want, fixed[id][k*200*300*3:(k+1)*200*300*3], "row %d frame %d", i, 130+k)
				}
			}

			// A clip longer than a video: the error names the row, the
			// column and the chunk; skipped with SkipBadSamples.
			l, err := New(ctx, d.Scan(), Config{BatchSize: 1, Shuffle: order.ModeNone, Transforms: map[string]string{"clip": "clip=530:size=8x8"}})
			require.NoError(t, err)
			_, err = l.Next(ctx)
			l.Close()
			t.Log(err)
			require.ErrorContains(t, err, "row id 0 (position 0)")
			require.ErrorContains(t, err, `column "clip"`)
			require.ErrorContains(t, err, "chunk "+firstChunk(t, d))
			require.ErrorContains(t, err, "needs frame 529, the video has 500 frames")
			long, _, st := clipsByRow(t, d, Config{BatchSize: 1, SkipBadSamples: true, Transforms: map[string]string{"clip": "clip=530:size=8x8"}}, -1)
			require.Len(t, long, 2)
			require.Equal(t, int64(2), st.Skipped)

			// With a chunk cache: range reads never fill it (that would read
			// whole chunks), and read from it once it holds the chunks.
			if where == "local" {
				c, err := chunkcache.Open(t.TempDir(), 64<<20, nil)
				require.NoError(t, err)
				cfg := Config{BatchSize: 2, Seed: 5, Epoch: 1, Cache: c, Transforms: map[string]string{"clip": "clip=16:size=160x120:random_crop=112"}}
				got, _, st := clipsByRow(t, d, cfg, -1)
				require.Positive(t, st.BytesFetched)
				require.Zero(t, c.Stats().Puts)
				sc := d.Scan().WithCache(c)
				require.NoError(t, sc.Load(ctx, 1))
				sch := sc.Schema()
				col, _ := sch.Column("clip")
				require.NotEmpty(t, sc.Chunks(col.UID))
				for _, id := range sc.Chunks(col.UID) {
					_, err := sc.Fetch(ctx, loch.Read{Chunk: id})
					require.NoError(t, err)
				}
				hits := c.Stats().Hits
				again, _, st := clipsByRow(t, d, cfg, -1)
				require.Greater(t, c.Stats().Hits, hits)
				require.Equal(t, got, again)
				require.Zero(t, st.BytesFetched)
			}
		})
	}
}

// firstChunk is the key of the chunk of row 0's clip.
func firstChunk(t *testing.T, d *loch.Dataset) string {
	sc := d.Scan()
	require.NoError(t, sc.Load(ctx, 1))
	r, err := sc.Locate(0)
	require.NoError(t, err)
	sch := sc.Schema()
	c, ok := sch.Column("clip")
	require.True(t, ok)
	return sc.ChunkKey(sc.Slot(r, c.UID).Chunk(0))
}

// TestSeededClipsResume: random clip starts and crops, drawn per row and
// epoch, are the same with 1, 2 and 4 workers and after a mid-epoch
// resume, for samples read by range (long videos) and whole (short ones);
// another epoch draws others.
func TestSeededClipsResume(t *testing.T) {
	long, _, _ := longVideos(t, filepath.Join(t.TempDir(), "long"), 5)
	short, _ := mediaDataset(t, 6)
	for name, d := range map[string]*loch.Dataset{"by range": long, "whole": short} {
		cfg := Config{BatchSize: 2, Shuffle: "full", Seed: 11, Epoch: 2, Columns: []string{"clip"},
			Transforms: map[string]string{"clip": "clip=3:stride=2:random_crop=40x24"}}
		cfg.Workers = 1
		want, _, _ := clipsByRow(t, d, cfg, -1)
		for _, w := range []int{2, 4} {
			cfg.Workers = w
			got, _, _ := clipsByRow(t, d, cfg, -1)
			require.Equal(t, want, got, "%s: %d workers", name, w)
		}
		cfg.Workers = 1
		first, st, _ := clipsByRow(t, d, cfg, 1)
		require.Len(t, first, 2)
		resumed := cfg
		resumed.Workers, resumed.Resume = 4, &st
		rest, _, _ := clipsByRow(t, d, resumed, -1)
		for id, c := range rest {
			first[id] = c
		}
		require.Equal(t, want, first, "%s: resumed after a batch", name)

		cfg.Epoch = 3
		other, _, _ := clipsByRow(t, d, cfg, -1)
		require.NotEqual(t, want, other, "%s: epoch 3 draws other clips", name)
	}
}

// BenchmarkLoaderClips streams 16-frame 112x112 clips (stride 2, random
// starts) of 10 s 640x360 25 fps H.264 videos (keyframe every 50 frames)
// through the loader, on local disk and on MinIO: the samples read by
// range (what the loader does) beside the same clips from samples fetched
// whole (the baseline, in the same run). It reports clips/s and the bytes
// fetched per clip.
func BenchmarkLoaderClips(b *testing.B) {
	const videos = 8
	dir := b.TempDir()
	var files [][]byte
	var total int64
	for i := 0; i < videos; i++ {
		p := mediatest.Video(b, dir, fmt.Sprintf("v%d.mp4", i), 640, 360, 25, 10, 50)
		files = append(files, mediatest.Read(b, p))
		total += int64(len(files[i]))
	}
	for _, where := range []string{"local", "minio"} {
		url := filepath.Join(b.TempDir(), "ds")
		if where == "minio" {
			url = testserver.MinIO(b).URL
		}
		d, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{
			{Name: "clip", Kind: schema.Video, DType: schema.Uint8, SampleCompression: schema.VideoCompression},
		}})
		require.NoError(b, err)
		for _, f := range files {
			require.NoError(b, d.Append(ctx, loch.Row{"clip": loch.Media(schema.VideoCompression, f)}))
		}
		_, err = d.Commit(ctx, "bench")
		require.NoError(b, err)
		for _, mode := range []string{"whole", "range"} {
			b.Run(where+"/"+mode, func(b *testing.B) {
				defer func(m int64) { rangeMin = m }(rangeMin)
				if mode == "whole" {
					rangeMin = 1 << 62
				}
				var fetched int64
				for i := 0; i < b.N; i++ {
					l, err := New(ctx, d.Scan(), Config{BatchSize: 4, Seed: uint64(i), Transforms: map[string]string{"clip": "clip=16:stride=2:size=112x112"}})
					require.NoError(b, err)
					for {
						bt, err := l.Next(ctx)
						if errors.Is(err, io.EOF) {
							break
						}
						require.NoError(b, err)
						l.Release(bt)
					}
					fetched += l.Stats().BytesFetched
					l.Close()
				}
				b.ReportMetric(float64(b.N*videos)/b.Elapsed().Seconds(), "clips/s")
				b.ReportMetric(float64(fetched)/float64(b.N*videos), "bytes/clip")
				b.ReportMetric(float64(total)/videos, "file-bytes")
			})
		}
		d.Close()
	}
}

// TestClipPrefetchBound: clips decoded by range count in the prefetch
// bound before they are decoded (from the pipeline's output shape): with a
// budget of one byte, one batch is in flight at a time, so the peak holds
// at most a clip being decoded and a collated batch.
func TestClipPrefetchBound(t *testing.T) {
	d, _, _ := longVideos(t, filepath.Join(t.TempDir(), "ds"), 4)
	const clip = 16 * 240 * 320 * 3
	l, err := New(ctx, d.Scan(), Config{BatchSize: 1, PrefetchBytes: 1, PrefetchBatches: 8, Transforms: map[string]string{"clip": "clip=16"}})
	require.NoError(t, err)
	defer l.Close()
	bs := drain(t, l)
	require.Len(t, bs, 4)
	st := l.Stats()
	t.Logf("peak in flight %d bytes, a clip %d", st.PeakInFlight, clip)
	require.LessOrEqual(t, st.PeakInFlight, int64(2*clip))
}

// TestDamagedClipByRange: a stored video whose bytes fail their block
// checksums (a flipped byte in row 0's container header) stops a loader
// that reads it by range with ErrCorrupt naming the row, the column and
// the chunk, or with SkipBadSamples skips that row alone.
func TestDamagedClipByRange(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "ds")
	d, _, _ := longVideos(t, dir, 3)
	key := firstChunk(t, d)
	p := filepath.Join(dir, filepath.FromSlash(key))
	b, err := os.ReadFile(p)
	require.NoError(t, err)
	at := bytes.Index(b, []byte("ftyp"))
	require.Positive(t, at)
	b[at+4] ^= 0xff
	require.NoError(t, os.WriteFile(p, b, 0o644))
	fresh, err := loch.Open(ctx, dir)
	require.NoError(t, err)
	defer fresh.Close()

	spec := map[string]string{"clip": "clip=2:start=0"}
	l, err := New(ctx, fresh.Scan(), Config{BatchSize: 1, Shuffle: order.ModeNone, Transforms: spec})
	require.NoError(t, err)
	_, err = l.Next(ctx)
	l.Close()
	t.Log(err)
	require.ErrorIs(t, err, loch.ErrCorrupt)
	require.ErrorContains(t, err, "row id 0 (position 0)")
	require.ErrorContains(t, err, `column "clip"`)
	require.ErrorContains(t, err, key)

	got, _, st := clipsByRow(t, fresh, Config{BatchSize: 1, Shuffle: order.ModeNone, SkipBadSamples: true, Transforms: spec}, -1)
	require.Len(t, got, 2)
	require.Equal(t, []uint64{0}, st.SkippedRows)
}
