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
	col := schema.Column{Name: "clip", Kind: schema.Video, DType: schema.Uint8, SampleCompression: schema.VideoCompression}
	return mediaColumn(t, url, col, n, func(dir string, i int) string {
		return mediatest.Video(t, dir, fmt.Sprintf("long%d.mp4", i), 320, 240, 25, 20+float64(i), 25)
	})
}

// longSounds writes n synthetic 20 s 44.1 kHz stereo tones, wav and flac
// in turn (a wav is 3.5 MB), into a new dataset at url (column "sound"),
// and returns their paths and the bytes they store.
func longSounds(t *testing.T, url string, n int) (*loch.Dataset, []string, int64) {
	t.Helper()
	col := schema.Column{Name: "sound", Kind: schema.Audio, DType: schema.Float32, SampleCompression: schema.AudioCompression}
	return mediaColumn(t, url, col, n, func(dir string, i int) string {
		return mediatest.Audio(t, dir, fmt.Sprintf("long%d.%s", i, []string{"wav", "flac"}[i%2]), 44100, 2, 20)
	})
}

// mediaColumn creates a dataset at url of the one media column col and
// commits n rows, the files that file(dir, i) writes; it returns their
// paths and the bytes they store.
func mediaColumn(t *testing.T, url string, col schema.Column, n int, file func(dir string, i int) string) (*loch.Dataset, []string, int64) {
	t.Helper()
	d, err := loch.Create(ctx, url, schema.Schema{Columns: []schema.Column{col}})
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	dir := t.TempDir()
	var paths []string
	var total int64
	for i := 0; i < n; i++ {
		p := file(dir, i)
		b := mediatest.Read(t, p)
		total += int64(len(b))
		paths = append(paths, p)
		require.NoError(t, d.Append(ctx, loch.Row{col.Name: loch.Media(col.SampleCompression, b)}))
	}
	_, err = d.Commit(ctx, "long "+col.Name)
	require.NoError(t, err)
	return d, paths, total
}

// clipsByRow runs a loader and returns each row's clip bytes by row id.
func clipsByRow(t *testing.T, d *loch.Dataset, cfg Config, batches int) (map[uint64][]byte, State, Stats) {
	t.Helper()
	return samplesByRow(t, d, "clip", cfg, batches)
}

// samplesByRow runs a loader and returns each row's bytes of column col
// by row id, with the loader's state and stats after batches batches (-1:
// all).
func samplesByRow(t *testing.T, d *loch.Dataset, col string, cfg Config, batches int) (map[uint64][]byte, State, Stats) {
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
		c := b.Columns[col]
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
	for _, where := range testserver.Stores {
		t.Run(where, func(t *testing.T) {
			url := testserver.StoreURL(t, where)
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
				requireApplied(t, d, cfg, spec, paths, got, func(i int, data []byte) transform.Image {
					return transform.Image{Shape: []int{(20 + i) * 25, 240, 320, 3}, DType: schema.Uint8, Encoded: "video", Data: data}
				})
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
				fillCache(t, d, c, "clip")
				hits := c.Stats().Hits
				again, _, st := clipsByRow(t, d, cfg, -1)
				require.Greater(t, c.Stats().Hits, hits)
				require.Equal(t, got, again)
				require.Zero(t, st.BytesFetched)
			}
		})
	}
}

// fillCache fetches every chunk of column col through cache c.
func fillCache(t *testing.T, d *loch.Dataset, c chunkcache.Cache, col string) {
	sc := d.Scan().WithCache(c)
	require.NoError(t, sc.Load(ctx, 1))
	sch := sc.Schema()
	cl, ok := sch.Column(col)
	require.True(t, ok)
	require.NotEmpty(t, sc.Chunks(cl.UID))
	for _, id := range sc.Chunks(cl.UID) {
		_, err := sc.Fetch(ctx, loch.Read{Chunk: id})
		require.NoError(t, err)
	}
}

// firstChunk is the key of the chunk of row 0's clip.
func firstChunk(t *testing.T, d *loch.Dataset) string { return chunkOfRow0(t, d, "clip") }

// chunkOfRow0 is the key of the chunk of row 0's sample of column col.
func chunkOfRow0(t *testing.T, d *loch.Dataset, col string) string {
	sc := d.Scan()
	require.NoError(t, sc.Load(ctx, 1))
	r, err := sc.Locate(0)
	require.NoError(t, err)
	sch := sc.Schema()
	c, ok := sch.Column(col)
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
	longAudio, _, _ := longSounds(t, filepath.Join(t.TempDir(), "sounds"), 5)
	for _, c := range []struct {
		name, col, spec string
		d               *loch.Dataset
	}{
		{"clips by range", "clip", "clip=3:stride=2:random_crop=40x24", long},
		{"clips whole", "clip", "clip=3:stride=2:random_crop=40x24", short},
		{"segments by range", "sound", "resample=16000,segment=4000,mono", longAudio},
		{"segments whole", "sound", "resample=16000,segment=4000,mono", short},
	} {
		d, name := c.d, c.name
		cfg := Config{BatchSize: 2, Shuffle: "full", Seed: 11, Epoch: 2, Columns: []string{c.col},
			Transforms: map[string]string{c.col: c.spec}}
		cfg.Workers = 1
		want, _, stats := samplesByRow(t, d, c.col, cfg, -1)
		t.Logf("%s: %d bytes fetched", name, stats.BytesFetched)
		for _, w := range []int{2, 4} {
			cfg.Workers = w
			got, _, _ := samplesByRow(t, d, c.col, cfg, -1)
			require.Equal(t, want, got, "%s: %d workers", name, w)
		}
		cfg.Workers = 1
		first, st, _ := samplesByRow(t, d, c.col, cfg, 1)
		require.Len(t, first, 2)
		resumed := cfg
		resumed.Workers, resumed.Resume = 4, &st
		rest, _, _ := samplesByRow(t, d, c.col, resumed, -1)
		for id, c := range rest {
			first[id] = c
		}
		require.Equal(t, want, first, "%s: resumed after a batch", name)

		cfg.Epoch = 3
		other, _, _ := samplesByRow(t, d, c.col, cfg, -1)
		require.NotEqual(t, want, other, "%s: epoch 3 draws others", name)
	}
}

// TestAudioSegmentsReadByRange: the loader decodes audio segments of long
// wav and flac files from the byte ranges the decoder asks for, on local
// disk and on MinIO: a one-second segment of each file fetches a fraction
// of the stored bytes; a random segment (resampled too, mixed down) is
// what the loader gives fetching every sample whole, and what the pipeline
// makes of the whole stored bytes with the row's rng; a fixed one is
// ffmpeg's samples.
func TestAudioSegmentsReadByRange(t *testing.T) {
	for _, where := range testserver.Stores {
		t.Run(where, func(t *testing.T) {
			url := testserver.StoreURL(t, where)
			d, paths, total := longSounds(t, url, 4)
			var pcm [][]byte // ffmpeg's decode of each file
			for _, path := range paths {
				pcm = append(pcm, mediatest.Samples(t, path, 0))
			}
			for _, spec := range []string{"segment=44100", "resample=16000,segment=8000,mono", "segment=1000:start=881000"} {
				cfg := Config{BatchSize: 2, Seed: 5, Epoch: 1, Transforms: map[string]string{"sound": spec}}
				got, _, st := samplesByRow(t, d, "sound", cfg, -1)
				require.Len(t, got, 4)
				t.Logf("%s %s: 4 segments fetched %d of %d stored bytes (%.1f%%)", where, spec, st.BytesFetched, total, 100*float64(st.BytesFetched)/float64(total))
				require.Positive(t, st.BytesFetched)
				require.Less(t, st.BytesFetched, total/2)
				// The loader's whole path (every sample fetched whole,
				// decoded by the workers) gives the same samples.
				whole, _, wst := func() (map[uint64][]byte, State, Stats) {
					defer func(m int64) { rangeMin = m }(rangeMin)
					rangeMin = 1 << 62
					return samplesByRow(t, d, "sound", cfg, -1)
				}()
				require.Equal(t, whole, got, spec)
				require.GreaterOrEqual(t, wst.BytesFetched, total)
				requireApplied(t, d, cfg, spec, paths, got, func(i int, data []byte) transform.Image {
					return transform.Image{Shape: []int{len(pcm[i]) / 8, 2}, DType: schema.Float32, Encoded: "audio", Data: data}
				})
			}
			// A fixed segment is ffmpeg's samples; past the end it is padded
			// with zeros.
			fixed, _, _ := samplesByRow(t, d, "sound", Config{BatchSize: 4, Transforms: map[string]string{"sound": "segment=2000:start=881000"}}, -1)
			for i := range paths {
				id, err := d.Scan().RowID(int64(i))
				require.NoError(t, err)
				want := append(pcm[i][881000*8:], make([]byte, 1000*8)...)
				require.Equal(t, want, fixed[id], "row %d", i)
			}

			// With a chunk cache: range reads never fill it, and read from
			// it once it holds the chunks.
			if where == "local" {
				c, err := chunkcache.Open(t.TempDir(), 64<<20, nil)
				require.NoError(t, err)
				cfg := Config{BatchSize: 2, Seed: 5, Cache: c, Transforms: map[string]string{"sound": "segment=16000"}}
				got, _, st := samplesByRow(t, d, "sound", cfg, -1)
				require.Positive(t, st.BytesFetched)
				require.Zero(t, c.Stats().Puts)
				fillCache(t, d, c, "sound")
				again, _, st := samplesByRow(t, d, "sound", cfg, -1)
				require.Equal(t, got, again)
				require.Zero(t, st.BytesFetched)
			}
		})
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
	for _, where := range testserver.Stores {
		url := testserver.StoreURL(b, where)
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

	// The same for audio segments read by range.
	a, _, _ := longSounds(t, filepath.Join(t.TempDir(), "sounds"), 4)
	const seg = 44100 * 2 * 4
	l, err = New(ctx, a.Scan(), Config{BatchSize: 1, PrefetchBytes: 1, PrefetchBatches: 8, Transforms: map[string]string{"sound": "segment=44100"}})
	require.NoError(t, err)
	defer l.Close()
	require.Len(t, drain(t, l), 4)
	st = l.Stats()
	t.Logf("peak in flight %d bytes, a segment %d", st.PeakInFlight, seg)
	require.Positive(t, st.PeakInFlight)
	require.LessOrEqual(t, st.PeakInFlight, int64(2*seg))
}

// TestDamagedClipByRange: a stored video or wav whose bytes fail their
// block checksums (a flipped byte in row 0's container header) stops a
// loader that reads it by range with ErrCorrupt naming the row, the column
// and the chunk, or with SkipBadSamples skips that row alone.
func TestDamagedClipByRange(t *testing.T) {
	for _, c := range []struct {
		col, spec, marker string
		make              func(t *testing.T, url string, n int) (*loch.Dataset, []string, int64)
	}{
		{"clip", "clip=2:start=0", "ftyp", longVideos},
		{"sound", "segment=100:start=0", "WAVE", longSounds},
	} {
		dir := filepath.Join(t.TempDir(), "ds")
		d, _, _ := c.make(t, dir, 3)
		key := chunkOfRow0(t, d, c.col)
		p := filepath.Join(dir, filepath.FromSlash(key))
		b, err := os.ReadFile(p)
		require.NoError(t, err)
		at := bytes.Index(b, []byte(c.marker))
		require.Positive(t, at)
		b[at+4] ^= 0xff
		require.NoError(t, os.WriteFile(p, b, 0o644))
		fresh, err := loch.Open(ctx, dir)
		require.NoError(t, err)
		defer fresh.Close()

		spec := map[string]string{c.col: c.spec}
		l, err := New(ctx, fresh.Scan(), Config{BatchSize: 1, Shuffle: order.ModeNone, Transforms: spec})
		require.NoError(t, err)
		_, err = l.Next(ctx)
		l.Close()
		t.Log(err)
		require.ErrorIs(t, err, loch.ErrCorrupt)
		require.ErrorContains(t, err, "row id 0 (position 0)")
		require.ErrorContains(t, err, fmt.Sprintf("column %q", c.col))
		require.ErrorContains(t, err, key)

		got, _, st := samplesByRow(t, fresh, c.col, Config{BatchSize: 1, Shuffle: order.ModeNone, SkipBadSamples: true, Transforms: spec}, -1)
		require.Len(t, got, 2)
		require.Equal(t, []uint64{0}, st.SkippedRows)
	}
}

// requireApplied checks that got holds, for each row i of d (stored from
// the file paths[i]), spec applied to sample(i, the file's bytes) with the
// generator the loader seeds from cfg's seed and epoch and the row's id.
func requireApplied(t *testing.T, d *loch.Dataset, cfg Config, spec string, paths []string, got map[uint64][]byte,
	sample func(i int, data []byte) transform.Image) {
	t.Helper()
	p, err := transform.Parse(spec)
	require.NoError(t, err)
	for i, path := range paths {
		id, err := d.Scan().RowID(int64(i))
		require.NoError(t, err)
		rng := rand.New(rand.NewPCG(cfg.Seed^(uint64(cfg.Epoch)*0x9e3779b97f4a7c15), id))
		want, err := p.Apply(sample(i, mediatest.Read(t, path)), rng, nil)
		require.NoError(t, err)
		require.Equal(t, want.Data, got[id], "%s: row %d", spec, i)
	}
}
