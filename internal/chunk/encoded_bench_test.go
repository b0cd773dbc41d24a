package chunk

import (
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/lochdata/loch/schema"
)

// BenchmarkEncodedDecode decodes whole chunks of 1M int64 scalars (8 MB
// raw) as the SQL scan does, encoded (sequential ids: delta; labels below
// 1000: frame of reference; random floats) against the same values in a
// codec none chunk, whose raw data is the stored bytes (no decoding).
func BenchmarkEncodedDecode(b *testing.B) {
	r := rand.New(rand.NewPCG(1, 2))
	const n = 1 << 20
	for _, c := range []struct {
		name  string
		dtype schema.DType
		at    func(i int) float64
	}{
		{"ids", schema.Int64, func(i int) float64 { return float64(i) }},
		{"labels", schema.Int64, func(int) float64 { return float64(r.IntN(1000)) }},
		{"scores", schema.Float64, func(int) float64 { return r.Float64() }},
	} {
		samples := scalars(c.dtype, n, c.at, nil)
		obj := encode(b, c.dtype, SampleNone, CodecNone, samples)
		buf := make([]byte, n*8)
		b.Run(fmt.Sprintf("%s/%d-bytes", c.name, len(obj)), func(b *testing.B) {
			b.SetBytes(n * 8)
			for b.Loop() {
				if _, err := Decode(obj, buf); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
