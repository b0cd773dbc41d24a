package main

import (
	"encoding/binary"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzStreamReports feeds the report reader's decoder (stream.take)
// arbitrary bytes in arbitrary pieces: records of any kind, cut anywhere.
// Addresses that were never sent are ignored, so nothing is freed and
// nothing panics; a record cut in two is kept until its rest arrives. The
// values are kept below 4 GiB, where no Go heap lives: a caller's bad
// address is a C address, and one into the Go heap would be reported by
// the garbage collector, not by the decoder.
func FuzzStreamReports(f *testing.F) {
	rec := func(kind int, v uint64) []byte { return appendRecord(nil, kind, v) }
	f.Add([]byte{16}, append(rec(2, 0x1000), rec(3, 0x2000)...))
	f.Add([]byte{5, 11, 1}, append(rec(4, 0x3000), rec(9, 0)...))
	f.Add([]byte{}, []byte{1, 2, 3})
	f.Fuzz(func(t *testing.T, cuts, data []byte) {
		for i := 8; i+8 <= len(data); i += 16 {
			binary.NativeEndian.PutUint32(data[i+4:], 0) // values below 4 GiB
		}
		s := &stream{buf: make([]byte, 256*recordSize)} // nothing sent
		fed := 0
		for k := 0; fed < len(data); k++ {
			n := len(data) - fed
			if k < len(cuts) && int(cuts[k]) > 0 {
				n = min(n, int(cuts[k]))
			}
			n = min(n, len(s.buf)-s.have)
			copy(s.buf[s.have:], data[fed:fed+n])
			s.take(n)
			fed += n
			require.Less(t, s.have, recordSize, "a whole record left undecoded")
		}
		require.Equal(t, len(data)%recordSize, s.have, "the cut record kept")
		require.Empty(t, s.sent)
	})
}
