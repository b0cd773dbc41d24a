package ingest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync"

	"github.com/lochdata/loch/storage"
)

// isURL reports whether ref is a URL (file://, s3://, mem://, ...) rather
// than a local path.
func isURL(ref string) bool { return strings.Contains(ref, "://") }

// plainPathError drops the *fs.PathError layer of err (its message repeats
// the path our own context already names), keeping what it wraps.
func plainPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readAll reads the whole file or object ref: a local path through the
// operating system, a URL through storage.ReadURL. The error names ref.
func readAll(ctx context.Context, ref string) ([]byte, error) {
	if isURL(ref) {
		b, err := storage.ReadURL(ctx, ref)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", storage.Redact(ref), err)
		}
		return b, nil
	}
	return readLocal(ref, -1)
}

// readLocal reads the local file path, of size bytes when known (else
// negative); the error names it.
func readLocal(path string, size int64) ([]byte, error) {
	b, err := appendFile(nil, path, size)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, plainPathError(err))
	}
	return b, nil
}

// appendWhole appends the bytes of the local file name to buf
// (os.ReadFile, whose buffer is returned as is when buf is nil).
func appendWhole(buf []byte, name string) ([]byte, error) {
	b, err := os.ReadFile(name)
	if buf == nil || err != nil {
		return b, err
	}
	return append(buf, b...), nil
}

// openSource opens ref for sequential reading: a local file is streamed, a
// URL is read whole into memory first. size is the number of bytes, or -1
// when unknown. The caller closes the reader.
func openSource(ctx context.Context, ref string) (r io.ReadCloser, size int64, err error) {
	if isURL(ref) {
		b, err := readAll(ctx, ref)
		if err != nil {
			return nil, 0, err
		}
		return io.NopCloser(bytes.NewReader(b)), int64(len(b)), nil
	}
	f, err := os.Open(ref)
	if err != nil {
		return nil, 0, fmt.Errorf("open %s: %w", ref, plainPathError(err))
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, 0, fmt.Errorf("stat %s: %w", ref, plainPathError(err))
	}
	if st.IsDir() {
		f.Close()
		return nil, 0, fmt.Errorf("open %s: %w: is a directory, want a file", ref, ErrInvalidSource)
	}
	return f, st.Size(), nil
}

// sourceFile is one source file that an ingest reads more than once (a
// first pass that infers the schema, or the headers of arrays before their
// rows): each open streams a local file again from disk, while a URL is
// read whole once and its bytes kept for the following opens. open is safe
// for concurrent use.
type sourceFile struct {
	ref  string
	once sync.Once
	data []byte
	err  error
}

// open opens the file for one pass; the caller closes the reader.
func (s *sourceFile) open(ctx context.Context) (io.ReadCloser, error) {
	if !isURL(s.ref) {
		r, _, err := openSource(ctx, s.ref)
		return r, err
	}
	s.once.Do(func() { s.data, s.err = readAll(ctx, s.ref) })
	if s.err != nil {
		return nil, s.err
	}
	return io.NopCloser(bytes.NewReader(s.data)), nil
}

// checkLocal fails when ref is a local path that cannot be read, so that a
// missing source is reported before a dataset is created.
func checkLocal(ref string) error {
	if isURL(ref) {
		return nil
	}
	if _, err := os.Stat(ref); err != nil {
		return fmt.Errorf("open %s: %w", ref, plainPathError(err))
	}
	return nil
}

// sourceSize returns the size of a local file, or -1 for a URL or when it
// cannot be known.
func sourceSize(ref string) int64 {
	if isURL(ref) {
		return -1
	}
	st, err := os.Stat(ref)
	if err != nil {
		return -1
	}
	return st.Size()
}

// resolve returns the location of ref, a path or URL found inside the
// source file or directory base: URLs and absolute paths are kept, relative
// paths are joined to base (a directory path or URL).
func resolve(base, ref string) string {
	if isURL(ref) || filepath.IsAbs(ref) || base == "" {
		return ref
	}
	if isURL(base) {
		u, err := url.Parse(base)
		if err != nil {
			return strings.TrimSuffix(base, "/") + "/" + ref
		}
		u.Path = path.Join(u.Path, ref)
		u.RawPath = ""
		return u.String()
	}
	return filepath.Join(base, filepath.FromSlash(ref))
}

// dirOf returns the directory (path or URL) holding the file ref.
func dirOf(ref string) string {
	if isURL(ref) {
		u, err := url.Parse(ref)
		if err != nil {
			return ref[:strings.LastIndex(ref, "/")+1]
		}
		u.Path = path.Dir(u.Path)
		u.RawPath = ""
		return u.String()
	}
	return filepath.Dir(ref)
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n += int64(n)
	return n, err
}
