package chunk

import (
	"encoding/binary"
	"math"
	"math/rand/v2"
	"testing"
)

// benchData is 8 MiB (a chunk's default size) of each kind of column data
// the blocked layout is measured on.
func benchData() []struct {
	name string
	raw  []byte
} {
	const n = 8 << 20
	r := rand.New(rand.NewPCG(1, 2))
	// Pixels of 224x224x3 images: smooth gradients with a little sensor
	// noise (they compress about as well as photos do: lz4 0.48 to 0.65 and
	// zstd 0.46 to 0.56 on the two photos of golang.org/x/image/testdata).
	img := make([]byte, 0, n)
	for len(img) < n {
		fx, fy, ph := r.Float64()*0.05, r.Float64()*0.05, r.Float64()*6
		for y := range 224 {
			for x := range 224 {
				for c := range 3 {
					v := 128 + 90*math.Sin(fx*float64(x)+fy*float64(y)+ph+float64(c))
					if r.IntN(4) == 0 {
						v += float64(r.IntN(5) - 2)
					}
					img = append(img, byte(max(0, min(255, v))))
				}
			}
		}
	}
	// float32 activations quantized to 16 levels (the root benchmarks' data).
	quant := make([]byte, 0, n)
	for len(quant) < n {
		quant = binary.LittleEndian.AppendUint32(quant, math.Float32bits(float32(r.IntN(16))))
	}
	// int64 class labels of 1000 classes.
	labels := make([]byte, 0, n)
	for len(labels) < n {
		labels = binary.LittleEndian.AppendUint64(labels, uint64(r.IntN(1000)))
	}
	// float32 embeddings: nearly incompressible.
	emb := make([]byte, 0, n)
	for len(emb) < n {
		emb = binary.LittleEndian.AppendUint32(emb, math.Float32bits(float32(r.NormFloat64())))
	}
	return []struct {
		name string
		raw  []byte
	}{{"image", img[:n]}, {"quantized", quant[:n]}, {"labels", labels[:n]}, {"embedding", emb[:n]}}
}

// BenchmarkBlocked measures what 64 KiB blocks cost beside one block of the
// whole 8 MiB (the format 1.0 layout, the baseline), for lz4 and zstd:
// encode and decode speed (MB/s of raw data) and the stored size
// (stored/raw, reported as a metric). Run with -benchtime=10x or more.
func BenchmarkBlocked(b *testing.B) {
	for _, d := range benchData() {
		for _, codec := range []struct {
			name string
			code uint8
		}{{"lz4", CodecLZ4}, {"zstd", CodecZstd}} {
			for _, layout := range []struct {
				name string
				bs   int
			}{{"one", len(d.raw)}, {"blocked", BlockSize}} {
				var stored [][]byte
				for off := 0; off < len(d.raw); off += layout.bs {
					s, err := compress(codec.code, nil, d.raw[off:min(off+layout.bs, len(d.raw))])
					if err != nil {
						b.Fatal(err)
					}
					stored = append(stored, s)
				}
				var total int
				for _, s := range stored {
					total += len(s)
				}
				ratio := float64(total) / float64(len(d.raw))
				prefix := d.name + "/" + codec.name + "/" + layout.name
				b.Run(prefix+"/encode", func(b *testing.B) {
					b.SetBytes(int64(len(d.raw)))
					buf := make([]byte, 0, len(d.raw)+len(d.raw)/8+1024)
					for b.Loop() {
						out := buf[:0]
						for off := 0; off < len(d.raw); off += layout.bs {
							var err error
							if out, err = compress(codec.code, out, d.raw[off:min(off+layout.bs, len(d.raw))]); err != nil {
								b.Fatal(err)
							}
						}
					}
					b.ReportMetric(ratio, "stored/raw")
				})
				b.Run(prefix+"/decode", func(b *testing.B) {
					b.SetBytes(int64(len(d.raw)))
					raw := make([]byte, len(d.raw))
					for b.Loop() {
						for k, s := range stored {
							off := k * layout.bs
							end := min(off+layout.bs, len(raw))
							if err := decompress(codec.code, raw[off:end:end], s); err != nil {
								b.Fatal(err)
							}
						}
					}
					b.ReportMetric(ratio, "stored/raw")
				})
			}
		}
	}
}
