//go:build !unix

package ingest

// appendFile appends the bytes of the local file name to buf (os.ReadFile;
// the size the listing gives is only a hint on unix).
func appendFile(buf []byte, name string, size int64) ([]byte, error) {
	return appendWhole(buf, name)
}
