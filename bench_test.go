package loch

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/lochdata/loch/internal/chunk"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// Benchmarks run against a local directory, or against the store named by
// LOCH_BENCH_URL (for example an s3:// prefix on MinIO). Each prints its
// baseline, measured in the same run on the same backend, as a sibling
// sub-benchmark: "loch" versus "raw".

const benchRows = 2048 // x 16 KiB = 32 MiB per run

func benchURL(b *testing.B) string {
	if u := os.Getenv("LOCH_BENCH_URL"); u != "" {
		return strings.TrimSuffix(u, "/") + "/" + fmt.Sprintf("bench-%d", rand.Uint64())
	}
	return filepath.Join(b.TempDir(), "ds")
}

func benchSchema(codec schema.ChunkCodec) schema.Schema {
	return schema.Schema{Columns: []schema.Column{
		{Name: "x", DType: schema.Float32, Shape: schema.Shape{64, 64}, ChunkCompression: codec},
	}}
}

func benchRowsData() []Row {
	r := rand.New(rand.NewPCG(1, 1))
	rows := make([]Row, benchRows)
	for i := range rows {
		v := make([]float32, 64*64)
		for k := range v {
			v[k] = float32(r.IntN(16)) // compressible, like quantized activations
		}
		rows[i] = Row{"x": Tensor([]int{64, 64}, v)}
	}
	return rows
}

// BenchmarkWrite: Extend+Commit MB/s beside a raw Put of the same bytes in
// 8 MiB objects to the same backend.
func BenchmarkWrite(b *testing.B) {
	rows := benchRowsData()
	total := int64(benchRows * 64 * 64 * 4)
	for _, codec := range []schema.ChunkCodec{schema.CodecNone, schema.LZ4, schema.Zstd} {
		b.Run("loch/"+string(codec), func(b *testing.B) {
			b.SetBytes(total)
			for i := 0; i < b.N; i++ {
				d, err := Create(ctx, benchURL(b), benchSchema(codec))
				if err != nil {
					b.Fatal(err)
				}
				if err := d.Extend(ctx, rows); err != nil {
					b.Fatal(err)
				}
				if _, err := d.Commit(ctx, "bench"); err != nil {
					b.Fatal(err)
				}
				d.Close()
			}
		})
	}
	b.Run("raw", func(b *testing.B) {
		b.SetBytes(total)
		buf := make([]byte, 8<<20)
		for i := range buf {
			buf[i] = byte(i)
		}
		for i := 0; i < b.N; i++ {
			s, err := storage.Open(ctx, benchURL(b))
			if err != nil {
				b.Fatal(err)
			}
			for off, k := int64(0), 0; off < total; off, k = off+int64(len(buf)), k+1 {
				if err := s.Put(ctx, fmt.Sprintf("raw/%d", k), buf); err != nil {
					b.Fatal(err)
				}
			}
			s.Close()
		}
	})
}

func benchDataset(b *testing.B, codec schema.ChunkCodec) *Dataset {
	d, err := Create(ctx, benchURL(b), benchSchema(codec))
	if err != nil {
		b.Fatal(err)
	}
	if err := d.Extend(ctx, benchRowsData()); err != nil {
		b.Fatal(err)
	}
	if _, err := d.Commit(ctx, "bench"); err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkScan: full-scan read MB/s through ReadRange (decoded samples)
// beside a raw sequential Get of the same chunk objects.
func BenchmarkScan(b *testing.B) {
	for _, codec := range []schema.ChunkCodec{schema.CodecNone, schema.LZ4, schema.Zstd} {
		d := benchDataset(b, codec)
		total := int64(benchRows * 64 * 64 * 4)
		b.Run("loch/"+string(codec), func(b *testing.B) {
			b.SetBytes(total)
			for i := 0; i < b.N; i++ {
				d.chunks = newChunkCache(d.opts.cacheBytes) // cold cache each pass
				col, _ := d.Column("x")
				if _, err := col.ReadRange(ctx, 0, col.Len()); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("raw/"+string(codec), func(b *testing.B) {
			f := d.current().frags[0]
			if err := f.load(ctx, d); err != nil {
				b.Fatal(err)
			}
			refs := f.cols[1]
			b.SetBytes(total)
			for i := 0; i < b.N; i++ {
				for _, r := range refs {
					if _, err := d.store.Get(ctx, r.Key); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("raw+decode/"+string(codec), func(b *testing.B) {
			f := d.current().frags[0]
			refs := f.cols[1]
			b.SetBytes(total)
			for i := 0; i < b.N; i++ {
				for _, r := range refs {
					obj, err := d.store.Get(ctx, r.Key)
					if err != nil {
						b.Fatal(err)
					}
					if _, err := chunk.Decode(obj, nil); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		d.Close()
	}
}

// BenchmarkRandomRead: single-sample random reads, with a cache too small
// for chunks (1 MiB) so that every read goes to the store; chunk headers,
// a few hundred bytes each, stay cached after their first read. Reports p50
// and p99 latency. The raw baseline is one range read of the same number of
// bytes at the same offset.
func BenchmarkRandomRead(b *testing.B) {
	d := benchDataset(b, schema.CodecNone)
	defer d.Close()
	d.chunks = newChunkCache(1 << 20)
	col, _ := d.Column("x")
	r := rand.New(rand.NewPCG(2, 2))
	report := func(b *testing.B, lat []time.Duration) {
		slices.Sort(lat)
		b.ReportMetric(float64(lat[len(lat)/2].Microseconds()), "p50-µs")
		b.ReportMetric(float64(lat[len(lat)*99/100].Microseconds()), "p99-µs")
	}
	b.Run("loch", func(b *testing.B) {
		lat := make([]time.Duration, 0, b.N)
		buf := make([]byte, 64*64*4)
		for i := 0; i < b.N; i++ {
			t0 := time.Now()
			if _, err := col.Read(ctx, r.Int64N(col.Len()), buf); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		report(b, lat)
	})
	b.Run("raw", func(b *testing.B) {
		f := d.current().frags[0]
		refs := f.cols[1]
		lat := make([]time.Duration, 0, b.N)
		buf := make([]byte, 64*64*4)
		for i := 0; i < b.N; i++ {
			ref := refs[r.IntN(len(refs))]
			off := int64(ref.Header) + r.Int64N(ref.Rows)*int64(len(buf))
			t0 := time.Now()
			if err := d.store.ReadRange(ctx, ref.Key, off, buf); err != nil {
				b.Fatal(err)
			}
			lat = append(lat, time.Since(t0))
		}
		report(b, lat)
	})
}

// BenchmarkVersions times, on a dataset of 1,000,000 int64 rows in 16
// fragments, creating a branch, diffing a branch with 1,000 appended rows
// and 10 updated rows against main, and merging it back (main also took
// 1,000 rows), beside the baseline of opening the dataset (reading its log
// entry, commit and manifest).
func BenchmarkVersions(b *testing.B) {
	const rows, frags = 1_000_000, 16
	url := benchURL(b)
	d, err := Create(ctx, url, schema.Schema{Columns: []schema.Column{{Name: "v", DType: schema.Int64, ChunkCompression: schema.LZ4}}})
	if err != nil {
		b.Fatal(err)
	}
	defer d.Close()
	batch := make([]Row, rows/frags)
	for f := 0; f < frags; f++ {
		for i := range batch {
			batch[i] = Row{"v": Scalar(int64(f*len(batch) + i))}
		}
		if err := d.Extend(ctx, batch); err != nil {
			b.Fatal(err)
		}
		if _, err := d.Commit(ctx, "fragment"); err != nil {
			b.Fatal(err)
		}
	}
	prepare := func(b *testing.B, name string, shift uint64) {
		if _, err := d.CreateBranch(ctx, name, "main"); err != nil {
			b.Fatal(err)
		}
		side, err := Open(ctx, url, WithRef(name))
		if err != nil {
			b.Fatal(err)
		}
		defer side.Close()
		for i := 0; i < 1000; i++ {
			if err := side.Append(ctx, Row{"v": Scalar(int64(-i))}); err != nil {
				b.Fatal(err)
			}
		}
		for id := uint64(0); id < 10; id++ {
			if err := side.Update(ctx, id*99_991+shift, Row{"v": Scalar(int64(-1))}); err != nil {
				b.Fatal(err)
			}
		}
		if _, err := side.Commit(ctx, "side"); err != nil {
			b.Fatal(err)
		}
	}
	b.Run("open", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			h, err := Open(ctx, url)
			if err != nil {
				b.Fatal(err)
			}
			h.Close()
		}
	})
	b.Run("branch", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			if _, err := d.CreateBranch(ctx, fmt.Sprintf("b%d", rand.Uint64()), ""); err != nil {
				b.Fatal(err)
			}
		}
	})
	prepare(b, "diffed", 0)
	b.Run("diff", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			h, err := Open(ctx, url)
			if err != nil {
				b.Fatal(err)
			}
			df, err := h.Diff(ctx, "main", "diffed", DiffOptions{Limit: -1})
			h.Close()
			if err != nil || df.Added != 1000 || df.Modified != 10 {
				b.Fatalf("diff: %+v, %v", df, err)
			}
		}
	})
	b.Run("merge", func(b *testing.B) {
		for i := 0; i < b.N; i++ {
			b.StopTimer()
			name := fmt.Sprintf("m%d", rand.Uint64())
			prepare(b, name, uint64(1+i+b.N*1000))
			if err := d.Refresh(ctx); err != nil {
				b.Fatal(err)
			}
			if err := d.Extend(ctx, batch[:1000]); err != nil {
				b.Fatal(err)
			}
			if _, err := d.Commit(ctx, "main moves on"); err != nil {
				b.Fatal(err)
			}
			b.StartTimer()
			res, err := d.Merge(ctx, name, MergeOptions{})
			if err != nil || res.FastForward || res.Added != 1000 || res.Modified != 10 {
				b.Fatalf("merge: %+v, %v", res, err)
			}
		}
	})
}
