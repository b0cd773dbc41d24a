package memcopy

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/require"
)

// TestCopy checks that Copy copies what copy does, at every relative
// alignment and at lengths on both sides of minLen.
func TestCopy(t *testing.T) {
	src := make([]byte, 3*minLen+200)
	for i := range src {
		src[i] = byte(i*7 + 1)
	}
	for _, n := range []int{0, 1, 15, minLen - 1, minLen, minLen + 1, 3*minLen + 7} {
		for soff := range 70 {
			for _, doff := range []int{0, 1, 16, 63} {
				dst := make([]byte, n+doff+64)
				want := bytes.Clone(dst)
				copy(want[doff:doff+n], src[soff:soff+n])
				got := Copy(dst[doff:doff+n], src[soff:soff+n])
				require.Equal(t, n, got)
				require.Equal(t, want, dst, "n %d, source offset %d, destination offset %d", n, soff, doff)
			}
		}
	}
}

// TestCopyShorter checks the count when the slices differ in length.
func TestCopyShorter(t *testing.T) {
	src := bytes.Repeat([]byte{9}, 5000)
	dst := make([]byte, 4096+32)
	require.Equal(t, 4096, Copy(dst[16:16+4096], src[3:]))
	require.Equal(t, bytes.Repeat([]byte{9}, 4096), dst[16:16+4096])
	require.Equal(t, make([]byte, 16), dst[:16])
	require.Equal(t, 2500, Copy(dst[16:], src[:2500]))
}

// BenchmarkCopy gathers 64 samples of 12 KiB into a batch from a source
// aligned like the batch and not (offset 60: a chunk of 64x64x3 images),
// with copy (the baseline) and Copy.
func BenchmarkCopy(b *testing.B) {
	const sample = 12288
	src := make([]byte, 64<<20)
	dst := make([]byte, 64*sample)
	for _, bc := range []struct {
		name string
		off  int
		f    func(d, s []byte) int
	}{
		{"aligned/copy", 0, func(d, s []byte) int { return copy(d, s) }},
		{"aligned/Copy", 0, Copy},
		{"offset60/copy", 60, func(d, s []byte) int { return copy(d, s) }},
		{"offset60/Copy", 60, Copy},
	} {
		b.Run(bc.name, func(b *testing.B) {
			b.SetBytes(64 * sample)
			for i := 0; b.Loop(); i++ {
				for k := range 64 {
					s := ((i*977+k*37)%5000)*sample + bc.off
					bc.f(dst[k*sample:(k+1)*sample], src[s:s+sample])
				}
			}
		})
	}
}
