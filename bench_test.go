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

	"github.com/lochdata/loch/chunk"
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
