package keys

import (
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"
)

// MaxLen is the length in bytes of the longest key a store or a cache
// takes.
const MaxLen = 1024

// CheckPath checks the rules every key follows wherever it is kept, in an
// object store (storage.ValidateKey) or in a local cache
// (chunkcache.ValidateKey): non-empty valid UTF-8 of at most MaxLen bytes,
// with no backslash and no control character (NUL included), not starting
// with '/', made of '/'-separated segments that are non-empty and neither
// "." nor "..". So a key that passes is relative and never escapes the root
// it is joined to. segment, when not nil, adds the caller's own rule for
// each segment. The error says what is wrong; callers give it their kind.
func CheckPath(key string, segment func(string) error) error {
	switch {
	case key == "":
		return errors.New("empty key")
	case len(key) > MaxLen:
		return fmt.Errorf("key of %d bytes is longer than %d", len(key), MaxLen)
	case !utf8.ValidString(key):
		return errors.New("key is not valid UTF-8")
	case key[0] == '/':
		return errors.New("key is absolute")
	}
	for _, r := range key {
		switch {
		case r == '\\':
			return errors.New("key contains a backslash")
		case r < 0x20 || r == 0x7f:
			return errors.New("key contains a control character")
		}
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch {
		case seg == "":
			return errors.New("key has an empty segment")
		case seg == "." || seg == "..":
			return errors.New(`key has a "." or ".." segment`)
		}
		if segment != nil {
			if err := segment(seg); err != nil {
				return err
			}
		}
	}
	return nil
}
