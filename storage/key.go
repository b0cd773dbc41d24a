package storage

import (
	"strings"
	"unicode/utf8"
)

// tmpPrefix starts the names of the local backend's temporary files. Key
// segments may not start with it, on every backend, so that keys stay
// portable between backends and a temporary file is never mistaken for an
// object.
const tmpPrefix = ".loch-tmp-"

// ValidateKey reports whether key is a valid object key, returning an error
// wrapping ErrInvalidKey if not. A valid key is non-empty valid UTF-8 of at
// most 1024 bytes, made of '/'-separated segments that are all non-empty,
// none "." or "..", none starting with ".loch-tmp-"; it contains no
// backslash and no control character (NUL included). So a key never starts
// or ends with '/' and can never escape the store's root.
//
// Every Store in this package validates keys before any I/O.
func ValidateKey(key string) error {
	if key == "" {
		return invalidKey("empty key")
	}
	if err := validatePath(key); err != nil {
		return err
	}
	return nil
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
	if len(key) > 1024 {
		return invalidKey("key longer than 1024 bytes")
	}
	if !utf8.ValidString(key) {
		return invalidKey("key is not valid UTF-8")
	}
	for _, r := range key {
		switch {
		case r == '\\':
			return invalidKey("key contains a backslash")
		case r < 0x20 || r == 0x7f:
			return invalidKey("key contains a control character")
		}
	}
	if strings.HasPrefix(key, "/") {
		return invalidKey("key is absolute")
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return invalidKey("key has an empty segment")
		case seg == "." || seg == "..":
			return invalidKey("key has a \".\" or \"..\" segment")
		case strings.HasPrefix(seg, tmpPrefix):
			return invalidKey("key segment starts with the reserved " + tmpPrefix)
		}
	}
	return nil
}
