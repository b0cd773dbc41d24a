package storage

import (
	"errors"
	"strings"

	"github.com/lochdata/loch/internal/keys"
)

// tmpPrefix starts the names of the local backend's temporary files. Key
// segments may not start with it, on every backend, so that keys stay
// portable between backends and a temporary file is never mistaken for an
// object.
const tmpPrefix = ".loch-tmp-"

// ValidateKey reports whether key is a valid object key, returning an error
// wrapping ErrInvalidKey if not. A valid key follows the rules of every loch
// key (keys.CheckPath: non-empty valid UTF-8 of at most 1024 bytes, made of
// '/'-separated segments that are all non-empty, none "." or "..", with no
// backslash and no control character) and, in a store, has no segment
// starting with ".loch-tmp-". So a key never starts or ends with '/' and
// can never escape the store's root.
//
// Every Store in this package validates keys before any I/O.
func ValidateKey(key string) error {
	return validatePath(key)
}

// validatePrefix checks a List prefix: "" or a key, optionally with a
// trailing '/'; a partial last segment ("chunks/a") is fine.
func validatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	return validatePath(strings.TrimSuffix(prefix, "/"))
}

func validatePath(key string) error {
	if err := keys.CheckPath(key, notTemporary); err != nil {
		return invalidKey(err.Error())
	}
	return nil
}

// notTemporary refuses the segments the local backend names its
// temporary files with.
func notTemporary(seg string) error {
	if strings.HasPrefix(seg, tmpPrefix) {
		return errors.New("key segment starts with the reserved " + tmpPrefix)
	}
	return nil
}
