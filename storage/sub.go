package storage

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
)

// Sub returns a view of the keys of s below prefix: key k of the view is
// key prefix+"/"+k of s. The view is a Store like any other (it passes
// storagetest): its keys are checked before any I/O and cannot leave the
// prefix, its errors name its own URL and keys, and its URL is that of s
// with the prefix appended, so opening that URL gives the same objects.
//
// prefix is a valid key (see ValidateKey), optionally ending in '/';
// anything else gives an error wrapping ErrInvalidKey. The view shares s:
// its Close does nothing, and it is usable while s is open.
func Sub(s Store, prefix string) (Store, error) {
	p := strings.TrimSuffix(prefix, "/")
	if err := validatePath(p); err != nil {
		return nil, &Error{Op: "open", URL: s.URL(), Key: prefix, Err: err}
	}
	return &subStore{s: s, prefix: p + "/", url: joinURL(s.URL(), p)}, nil
}

// joinURL appends the key prefix p to a store URL (as URL returns it).
func joinURL(storeURL, p string) string {
	loc, err := parseLocation(storeURL)
	if err != nil { // not a URL Open makes: keep it readable anyway
		return strings.TrimSuffix(storeURL, "/") + "/" + p
	}
	if loc.scheme == "file" {
		loc.bucket = filepath.Join(loc.bucket, filepath.FromSlash(p))
	} else {
		loc.prefix += p + "/"
	}
	return loc.String()
}

// subStore is the view Sub returns.
type subStore struct {
	s      Store
	prefix string // ends in '/'
	url    string
}

// check validates key in the view's terms and returns the parent's key.
func (v *subStore) check(op, key string) (string, error) {
	if err := ValidateKey(key); err != nil {
		return "", &Error{Op: op, URL: v.url, Key: key, Err: err}
	}
	return v.prefix + key, nil
}

// local rewrites an error of the parent store in the view's terms: its
// URL and the key without the prefix.
func (v *subStore) local(err error) error {
	var se *Error
	if err == nil || !errors.As(err, &se) {
		return err
	}
	if e, ok := err.(*Error); ok {
		return &Error{Op: e.Op, URL: v.url, Key: strings.TrimPrefix(e.Key, v.prefix), Err: e.Err}
	}
	return err
}

func (v *subStore) Get(ctx context.Context, key string) ([]byte, error) {
	k, err := v.check("get", key)
	if err != nil {
		return nil, err
	}
	b, err := v.s.Get(ctx, k)
	return b, v.local(err)
}

func (v *subStore) ReadRange(ctx context.Context, key string, off int64, dst []byte) error {
	k, err := v.check("read", key)
	if err != nil {
		return err
	}
	return v.local(v.s.ReadRange(ctx, k, off, dst))
}

func (v *subStore) Put(ctx context.Context, key string, data []byte) error {
	k, err := v.check("put", key)
	if err != nil {
		return err
	}
	return v.local(v.s.Put(ctx, k, data))
}

func (v *subStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	k, err := v.check("put-if-absent", key)
	if err != nil {
		return err
	}
	return v.local(v.s.PutIfAbsent(ctx, k, data))
}

func (v *subStore) Delete(ctx context.Context, key string) error {
	k, err := v.check("delete", key)
	if err != nil {
		return err
	}
	return v.local(v.s.Delete(ctx, k))
}

func (v *subStore) Stat(ctx context.Context, key string) (Attrs, error) {
	k, err := v.check("stat", key)
	if err != nil {
		return Attrs{}, err
	}
	a, err := v.s.Stat(ctx, k)
	if err != nil {
		return Attrs{}, v.local(err)
	}
	a.Key = key
	return a, nil
}

func (v *subStore) List(ctx context.Context, prefix string, fn func(Attrs) error) error {
	if err := validatePrefix(prefix); err != nil {
		return &Error{Op: "list", URL: v.url, Key: prefix, Err: err}
	}
	var fnErr error
	err := v.s.List(ctx, v.prefix+prefix, func(a Attrs) error {
		a.Key = strings.TrimPrefix(a.Key, v.prefix)
		if err := fn(a); err != nil {
			fnErr = err
			return err
		}
		return nil
	})
	if fnErr != nil && errors.Is(err, fnErr) {
		return err
	}
	return v.local(err)
}

func (v *subStore) URL() string { return v.url }

// Close does nothing: the view shares its parent, which its owner closes.
func (v *subStore) Close() error { return nil }

// RetryCount reports the parent's retries (see RetryCounter).
func (v *subStore) RetryCount() int64 { return Retries(v.s) }

// RetryStats reports the parent's retry counters (see RetryCounter).
func (v *subStore) RetryStats() RetryStats { return RetryStatsOf(v.s) }
