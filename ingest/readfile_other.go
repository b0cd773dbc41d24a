//go:build !unix

package ingest

// appendFile appends the bytes of the local file name to buf (os.ReadFile;
// the size the listing gives is only a hint on unix).
func appendFile(buf []byte, name string, size int64) ([]byte, error) {
	return appendWhole(buf, name)
}

// openDir stands for the directory a job's files are opened relative to
// on unix; here each file is opened by its whole path.
type openDir struct{}

// appendFile appends the bytes of the file name to buf (appendFile).
func (*openDir) appendFile(buf []byte, dir, base, name string, size int64) ([]byte, error) {
	return appendWhole(buf, name)
}

func (*openDir) close() {}
