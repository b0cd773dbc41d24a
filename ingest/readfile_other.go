//go:build !unix

package ingest

import "os"

// readFileSized reads the local file name (os.ReadFile; the size the
// listing gives is only a hint on unix).
func readFileSized(name string, size int64) ([]byte, error) { return os.ReadFile(name) }
