//go:build race

package loader

// raceEnabled: the race detector multiplies memory use, so RSS bounds are
// checked only in builds without it (make test runs TestBoundedMemory
// both ways).
const raceEnabled = true
