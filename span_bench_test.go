package loch

import (
	"math/rand/v2"
	"testing"

	"github.com/lochdata/loch/schema"
)

// BenchmarkSparseRead reads one random sample at a time from 8 MiB chunks
// of lz4 and zstd (the full-shuffle loader's access pattern) through the
// Scan API: "span" fetches the sample's blocks by range and decodes only
// them (format 1.1), beside the baseline "whole" in the same run, which
// fetches and decodes the whole chunk for each sample (what a format 1.0
// compressed chunk costs). The dataset is benchRowsData's 2048 samples of
// 16 KiB in a local directory (or LOCH_BENCH_URL); chunk headers stay in
// the Dataset's cache after their first read, as in a loader.
func BenchmarkSparseRead(b *testing.B) {
	for _, codec := range []schema.ChunkCodec{schema.LZ4, schema.Zstd} {
		d := benchDataset(b, codec)
		sc := d.Scan()
		if err := sc.Load(ctx, 1); err != nil {
			b.Fatal(err)
		}
		for _, mode := range []string{"span", "whole"} {
			b.Run(string(codec)+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				r := rand.New(rand.NewPCG(3, 3))
				var read int64
				for b.Loop() {
					slot := sc.Slot(mustLocateB(b, sc, r.Int64N(sc.Len())), 1)
					plan := Read{Chunk: slot.Chunk(0)}
					if mode == "span" {
						plan = sc.Reads(slot, true)[0]
					}
					f, err := sc.Fetch(ctx, plan)
					if err != nil {
						b.Fatal(err)
					}
					if f.Whole() != (mode == "whole") {
						b.Fatalf("%s read: whole %v", mode, f.Whole())
					}
					s, err := sc.Sample(slot, []*Fetched{f})
					if err != nil || len(s.Data) != 64*64*4 {
						b.Fatalf("sample: %v", err)
					}
					read += f.Bytes
				}
				b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "samples/s")
				b.ReportMetric(float64(read)/float64(b.N), "store-B/sample")
			})
		}
		d.Close()
	}
}

func mustLocateB(b *testing.B, sc *Scan, pos int64) RowLoc {
	r, err := sc.Locate(pos)
	if err != nil {
		b.Fatal(err)
	}
	return r
}
