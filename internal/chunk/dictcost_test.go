package chunk

import (
	"fmt"
	"testing"

	"github.com/lochdata/loch/schema"
)

// BenchmarkDictWorstCase encodes chunks of 200,000 text values for which
// the writer looks for a dictionary and gives up (unique: every value
// distinct; mostly-unique: 80% distinct, 20% one value), or finds one
// (few: 30 values), against the same values as a bytes column, for which
// it never looks (the baseline, in the same run).
func BenchmarkDictWorstCase(b *testing.B) {
	for _, name := range []string{"unique", "mostly-unique", "few"} {
		for _, dtype := range []schema.DType{schema.Text, schema.Bytes} {
			bl := NewBuilder(dtype, SampleNone, CodecLZ4, 0)
			for i := range 200000 {
				v := fmt.Appendf(nil, "caption number %024d", i)
				switch {
				case name == "mostly-unique" && i%5 == 0:
					v = []byte("-")
				case name == "few":
					v = fmt.Appendf(nil, "caption number %024d", i%30)
				}
				if err := bl.Add([]int{len(v)}, v, false); err != nil {
					b.Fatal(err)
				}
			}
			b.Run(name+"/"+dtype.String(), func(b *testing.B) {
				b.SetBytes(int64(bl.RawBytes()))
				for b.Loop() {
					if _, err := bl.Encode(); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}
