package storage

import (
	"context"
	"sync"
)

// Mapped is an object's bytes mapped into memory, read-only: a local
// directory's file, whose pages the process reads straight from the
// page cache (no copy into a buffer of its own, as ReadRange makes).
//
// Data is valid until Close, which unmaps it: reading Data after Close
// faults. The caller that maps an object closes it once, when nothing
// reads Data any more. Objects are immutable, and a mapping relies on
// it: a file rewritten in place under a mapping (truncated, not replaced
// by a rename, which is how a Store writes) makes a read of the lost
// pages fault.
type Mapped struct {
	Data  []byte
	once  sync.Once
	unmap func() error
	drop  func(off, n int64)
	err   error
}

// Drop takes the pages of Data[off:off+n] (widened to whole pages) out of
// the process's memory: they stay in the page cache, and a later read of
// them maps them again, so Data stays valid. A reader that is done with a
// range drops it, so that the process's resident memory holds the ranges
// in use rather than every page ever read through the mapping.
func (m *Mapped) Drop(off, n int64) {
	if m.drop != nil && n > 0 {
		m.drop(off, n)
	}
}

// Close unmaps the object; later calls do nothing and return the first's
// error.
func (m *Mapped) Close() error {
	m.once.Do(func() {
		if m.unmap != nil {
			m.err = m.unmap()
		}
		m.Data = nil
	})
	return m.err
}

// mapper is a Store that maps objects: a local directory, and the
// wrappers that keep its objects and keys (a RetryStore, a Sub view).
// A fault-injecting store is not one, so that every read it serves
// passes through its faults.
type mapper interface {
	mapObject(ctx context.Context, key string) (*Mapped, error)
}

// Map maps object key of s into memory, read-only, when s is a local
// directory (or a RetryStore or Sub view of one); ok is false, with no
// error, for any other store, which the caller reads by ReadRange or Get
// instead. Errors are *Error values, as a Get's would be (ErrNotFound for
// a missing object).
func Map(ctx context.Context, s Store, key string) (m *Mapped, ok bool, err error) {
	mp, ok := s.(mapper)
	if !ok {
		return nil, false, nil
	}
	m, err = mp.mapObject(ctx, key)
	if m == nil && err == nil {
		return nil, false, nil
	}
	return m, err == nil, err
}

// Mappable reports whether Map maps s's objects.
func Mappable(s Store) bool {
	switch v := s.(type) {
	case *RetryStore:
		return Mappable(v.inner)
	case *subStore:
		return Mappable(v.s)
	case *localStore:
		return mapSupported
	}
	return false
}

func (s *RetryStore) mapObject(ctx context.Context, key string) (*Mapped, error) {
	// A local file's mapping fails for good or not at all: no retries.
	if mp, ok := s.inner.(mapper); ok {
		return mp.mapObject(ctx, key)
	}
	return nil, nil
}

func (v *subStore) mapObject(ctx context.Context, key string) (*Mapped, error) {
	mp, ok := v.s.(mapper)
	if !ok {
		return nil, nil
	}
	k, err := v.check("map", key)
	if err != nil {
		return nil, err
	}
	m, err := mp.mapObject(ctx, k)
	return m, v.local(err)
}

func (s *localStore) mapObject(ctx context.Context, key string) (*Mapped, error) {
	if !mapSupported {
		return nil, nil
	}
	if err := ValidateKey(key); err != nil {
		return nil, s.fail("map", key, err)
	}
	if err := ctx.Err(); err != nil {
		return nil, s.fail("map", key, err)
	}
	of, err := s.files.acquire(s.path(key))
	if err != nil {
		return nil, s.fail("map", key, mapOSError(err))
	}
	defer s.files.release(of)
	m, err := mapFile(of.f, of.size)
	if err != nil {
		return nil, s.fail("map", key, err)
	}
	return m, nil
}
