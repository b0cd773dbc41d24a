// Package decodelimittest has what the tests of the decode limit share:
// setting the limit for one test, and measuring what a decode allocates.
package decodelimittest

import (
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/decodelimit"
)

// Set sets the process's decode limit to n (0: none) and restores the
// limit it replaced when t ends. Tests that call it must not run in
// parallel: the limit is one per process.
func Set(t testing.TB, n int64) {
	t.Helper()
	old, err := decodelimit.Set(n)
	require.NoError(t, err)
	t.Cleanup(func() { _, _ = decodelimit.Set(old) })
}

// Allocated is the bytes f allocates in Go (runtime.MemStats.TotalAlloc),
// a behaviour rather than a timing: a bomb refused from its header
// allocates kilobytes, one decoded allocates its pixels.
func Allocated(f func()) uint64 {
	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	f()
	runtime.ReadMemStats(&b)
	return b.TotalAlloc - a.TotalAlloc
}
