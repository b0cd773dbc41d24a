package storage

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
)

// localStore keeps each object in a file under dir, at the path named by its
// key. Writes go to a temporary file in the object's own directory (so that
// rename and link stay within one file system), are synced, and are then
// renamed (Put) or hard-linked (PutIfAbsent) into place; the directory is
// synced after. An object of 1 MiB or more is written to its temporary
// file past the page cache (writeData, direct_linux.go) when the store was
// opened WithDirectWrites (see directWrites). Temporary files
// are named ".loch-tmp-*", a reserved segment prefix, and List skips them.
//
// Caveat: a file system cannot hold both "a" and "a/b" as files; the second
// such Put fails.
type localStore struct {
	dir    string
	url    string
	files  *openFiles // for ReadRange
	direct bool       // large objects past the page cache (writeData)
}

func openLocal(loc location, direct bool) (*localStore, error) {
	fi, err := os.Stat(loc.bucket)
	switch {
	case err == nil && !fi.IsDir():
		return nil, invalidURL(fmt.Sprintf("%s is not a directory", loc.bucket), nil)
	case err != nil && !errors.Is(err, fs.ErrNotExist):
		return nil, mapOSError(err)
	}
	return &localStore{dir: loc.bucket, url: loc.String(), files: newOpenFiles(), direct: direct}, nil
}

// directWrites is whether a local store opened WithDirectWrites(asked)
// writes past the page cache: $LOCH_STORAGE_DIRECT_WRITES, when 0 or 1,
// decides instead.
func directWrites(asked bool) bool {
	switch os.Getenv("LOCH_STORAGE_DIRECT_WRITES") {
	case "0":
		return false
	case "1":
		return true
	}
	return asked
}

func (s *localStore) path(key string) string {
	return filepath.Join(s.dir, filepath.FromSlash(key))
}

func (s *localStore) fail(op, key string, err error) error {
	return &Error{Op: op, URL: s.url, Key: key, Err: err}
}

func (s *localStore) Get(ctx context.Context, key string) ([]byte, error) {
	if err := ValidateKey(key); err != nil {
		return nil, s.fail("get", key, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, s.fail("get", key, err)
	}
	b, err := os.ReadFile(s.path(key))
	if err != nil {
		return nil, s.fail("get", key, mapOSError(err))
	}
	return b, nil
}

func (s *localStore) ReadRange(ctx context.Context, key string, off int64, dst []byte) error {
	if err := ValidateKey(key); err != nil {
		return s.fail("read", key, err)
	}
	if off < 0 {
		return s.fail("read", key, fmt.Errorf("negative offset %d", off))
	}
	if err := ctx.Err(); err != nil {
		return s.fail("read", key, err)
	}
	of, err := s.files.acquire(s.path(key))
	if err != nil {
		return s.fail("read", key, mapOSError(err))
	}
	defer s.files.release(of)
	if off+int64(len(dst)) > of.size {
		return s.fail("read", key, pastEnd(off, len(dst), of.size))
	}
	n, err := of.f.ReadAt(dst, off)
	if n == len(dst) {
		return nil
	}
	if err == io.EOF {
		// The file shrank since Stat: it was replaced by a shorter one.
		return s.fail("read", key, pastEnd(off, len(dst), off+int64(n)))
	}
	return s.fail("read", key, mapOSError(err))
}

func (s *localStore) Put(ctx context.Context, key string, data []byte) error {
	return s.put(ctx, "put", key, data, false)
}

func (s *localStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	return s.put(ctx, "put-if-absent", key, data, true)
}

// put checks key and writes data there as write does, its errors naming
// op.
func (s *localStore) put(ctx context.Context, op, key string, data []byte, exclusive bool) error {
	if err := ValidateKey(key); err != nil {
		return s.fail(op, key, err)
	}
	if err := s.write(ctx, key, data, exclusive); err != nil {
		return s.fail(op, key, err)
	}
	return nil
}

// write stores data at key through a synced temporary file. With exclusive
// set it publishes with link(2), which fails atomically (EEXIST) when the
// key exists, whoever the other writer is; otherwise with rename(2), which
// atomically replaces.
func (s *localStore) write(ctx context.Context, key string, data []byte, exclusive bool) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	final := s.path(key)
	defer s.files.forget(final)
	dir := filepath.Dir(final)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return mapWriteError(err)
	}
	tmp, err := createTemp(dir)
	if err != nil {
		return mapWriteError(err)
	}
	tmpName := tmp.Name()
	defer os.Remove(tmpName) // after a link or a failure; a no-op after a rename
	err = writeData(tmp, data, s.direct)
	if err == nil {
		err = tmp.Sync()
	}
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return mapWriteError(err)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if exclusive {
		if err := os.Link(tmpName, final); err != nil {
			if errors.Is(err, fs.ErrExist) {
				return exists()
			}
			return mapWriteError(err)
		}
	} else if err := os.Rename(tmpName, final); err != nil {
		return mapWriteError(err)
	}
	if err := syncDir(dir); err != nil {
		return mapWriteError(err)
	}
	return nil
}

// createTemp creates a new temporary file in dir, mode 0644 before umask.
func createTemp(dir string) (*os.File, error) {
	var rnd [8]byte
	for range 10 {
		_, _ = rand.Read(rnd[:])
		name := filepath.Join(dir, tmpPrefix+hex.EncodeToString(rnd[:]))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o644)
		if errors.Is(err, fs.ErrExist) {
			continue
		}
		return f, err
	}
	return nil, errors.New("create temporary file: too many collisions")
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		return fmt.Errorf("sync directory: %w", err)
	}
	return nil
}

func (s *localStore) Delete(ctx context.Context, key string) error {
	if err := ValidateKey(key); err != nil {
		return s.fail("delete", key, err)
	}
	if err := ctx.Err(); err != nil {
		return s.fail("delete", key, err)
	}
	p := s.path(key)
	s.files.forget(p)
	fi, err := os.Lstat(p)
	if err != nil {
		if isNotExist(err) {
			return nil
		}
		return s.fail("delete", key, mapOSError(err))
	}
	if fi.IsDir() {
		return nil // "a" is a directory holding "a/..."; there is no object "a"
	}
	if err := os.Remove(p); err != nil && !isNotExist(err) {
		return s.fail("delete", key, mapOSError(err))
	}
	return nil
}

func (s *localStore) Stat(ctx context.Context, key string) (Attrs, error) {
	if err := ValidateKey(key); err != nil {
		return Attrs{}, s.fail("stat", key, err)
	}
	if err := ctx.Err(); err != nil {
		return Attrs{}, s.fail("stat", key, err)
	}
	fi, err := os.Stat(s.path(key))
	if err != nil {
		return Attrs{}, s.fail("stat", key, mapOSError(err))
	}
	if fi.IsDir() {
		return Attrs{}, s.fail("stat", key, notFound(nil))
	}
	return Attrs{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// List walks the smallest directory that holds every key with the prefix,
// collects the matching keys and reports them sorted: walk order is not key
// order ("a.b" sorts before "a/b", but the walk visits "a/" first).
func (s *localStore) List(ctx context.Context, prefix string, fn func(Attrs) error) error {
	if err := validatePrefix(prefix); err != nil {
		return s.fail("list", prefix, err)
	}
	root := s.dir
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		root = s.path(prefix[:i])
	}
	var found []Attrs
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if isNotExist(err) {
				return nil // the root or an entry vanished
			}
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		if strings.HasPrefix(d.Name(), tmpPrefix) {
			return nil
		}
		rel, err := filepath.Rel(s.dir, p)
		if err != nil {
			return err
		}
		key := filepath.ToSlash(rel)
		if d.IsDir() {
			if p != root && !strings.HasPrefix(key+"/", prefix) && !strings.HasPrefix(prefix, key+"/") {
				return filepath.SkipDir
			}
			return nil
		}
		if !d.Type().IsRegular() || !strings.HasPrefix(key, prefix) {
			return nil
		}
		fi, err := d.Info()
		if err != nil {
			if isNotExist(err) {
				return nil
			}
			return err
		}
		found = append(found, Attrs{Key: key, Size: fi.Size(), ModTime: fi.ModTime()})
		return nil
	})
	if err != nil {
		if ctx.Err() != nil {
			return s.fail("list", prefix, err)
		}
		return s.fail("list", prefix, mapOSError(err))
	}
	slices.SortFunc(found, func(a, b Attrs) int { return strings.Compare(a.Key, b.Key) })
	for _, a := range found {
		if err := fn(a); err != nil {
			return err
		}
	}
	return nil
}

func (s *localStore) URL() string { return s.url }

func (s *localStore) Close() error { return nil }

func isNotExist(err error) bool {
	return errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ENOTDIR)
}

// mapOSError ties file-system errors to the package sentinels.
func mapOSError(err error) error {
	switch {
	case err == nil:
		return nil
	case isNotExist(err), errors.Is(err, syscall.EISDIR):
		return notFound(nil)
	case errors.Is(err, fs.ErrPermission):
		return permission("", err)
	case errors.Is(err, syscall.EINTR), errors.Is(err, syscall.EAGAIN):
		return transient(err)
	}
	return err
}

// mapWriteError is mapOSError for writes, where a missing or misplaced
// directory is not "not found": "a/b" cannot be written when "a" is a file.
func mapWriteError(err error) error {
	if errors.Is(err, fs.ErrPermission) {
		return permission("", err)
	}
	return err
}
