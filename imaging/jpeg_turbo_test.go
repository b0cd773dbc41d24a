//go:build cgo && !noturbojpeg

package imaging

import (
	"fmt"
	"runtime"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// With chroma samples repeated as Go does, libjpeg-turbo differs from Go's
// image/jpeg only by its IDCT: a few levels at most, in colour too.
func TestTurboIDCTMatchesStdlib(t *testing.T) {
	for _, c := range []int{1, 3} {
		for _, sz := range jpegSizes {
			w, h := sz[0], sz[1]
			t.Run(fmt.Sprintf("%dx%dx%d", w, h, c), func(t *testing.T) {
				data := encodeJPEG(t, photo(w, h, c, uint64(w*h)), w, h, c, 90)
				got := make([]byte, w*h*c)
				require.NoError(t, turboDecode(got, data, w, h, c, decodeFlags|fastUpsample))
				maxd, mean := diff(stdDecode(t, data, c), got)
				t.Logf("max diff %d, mean %.3f", maxd, mean)
				require.LessOrEqual(t, maxd, 4)
				require.Less(t, mean, 0.5)
			})
		}
	}
}

// Decompressors that the pool drops are destroyed: none leak.
func TestDecompressorsAreFreed(t *testing.T) {
	held := make([]*decompressor, 64)
	for i := range held {
		d, err := getDecompressor()
		require.NoError(t, err)
		held[i] = d
	}
	require.GreaterOrEqual(t, liveHandles.Load(), int64(len(held)))
	// One that failed is destroyed at once.
	before := liveHandles.Load()
	held[0].release(true)
	require.Equal(t, before-1, liveHandles.Load())
	held = held[1:]
	for _, d := range held {
		decompressors.Put(d)
	}
	held = nil
	// Two collections empty a sync.Pool; cleanups then run in the background.
	require.Eventually(t, func() bool {
		runtime.GC()
		return liveHandles.Load() == 0
	}, 10*time.Second, 5*time.Millisecond, "live TurboJPEG handles: %d", liveHandles.Load())
}
