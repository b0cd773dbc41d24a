package catalog

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/storage"
)

// MaxNameLen is the length in bytes of the longest table name.
const MaxNameLen = 255

// reservedPrefix starts the names loch keeps for itself (compared
// case-insensitively).
const reservedPrefix = "_loch"

// ValidName reports whether name may name a table (docs/format.md §6):
// 1 to 255 bytes of valid UTF-8, with no control character, '/', '\' or
// "..", no leading or trailing space, not ".", and not starting with
// "_loch" in any case. The error matches loch.ErrInvalidArgument and says
// what is wrong.
func ValidName(name string) error {
	if why := nameProblem(name); why != "" {
		return fmt.Errorf("table name %q: %s: %w", name, why, loch.ErrInvalidArgument)
	}
	return nil
}

func nameProblem(name string) string {
	switch {
	case name == "":
		return "empty"
	case len(name) > MaxNameLen:
		return fmt.Sprintf("%d bytes, longer than %d", len(name), MaxNameLen)
	case !utf8.ValidString(name):
		return "not valid UTF-8"
	case strings.ContainsAny(name, `/\`):
		return `contains "/" or "\"`
	case strings.Contains(name, ".."):
		return `contains ".."`
	case name == ".":
		return `is "."`
	case strings.HasPrefix(fold(name), reservedPrefix):
		return fmt.Sprintf("starts with %q, which loch reserves", reservedPrefix)
	}
	for _, r := range name {
		if unicode.IsControl(r) {
			return "contains a control character"
		}
	}
	first, _ := utf8.DecodeRuneInString(name)
	last, _ := utf8.DecodeLastRuneInString(name)
	if unicode.IsSpace(first) || unicode.IsSpace(last) {
		return "starts or ends with a space"
	}
	return ""
}

// fold is the form in which names are compared: "Frames" and "frames" are
// one table.
func fold(name string) string { return strings.ToLower(name) }

// maxSlug bounds the part of a directory taken from the table's name.
const maxSlug = 48

// newDir returns a fresh directory for a table named name: the name
// lowered, bytes outside [a-z0-9_-] replaced by '_', cut to 48 bytes, then
// '-' and 16 random hex digits (docs/format.md §6).
func newDir(name string) string {
	var b strings.Builder
	for _, c := range []byte(fold(name)) {
		if b.Len() == maxSlug {
			break
		}
		if c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '_' || c == '-' {
			b.WriteByte(c)
		} else {
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		b.WriteByte('t')
	}
	var r [8]byte
	if _, err := rand.Read(r[:]); err != nil {
		panic(fmt.Sprintf("catalog: no randomness: %v", err)) // crypto/rand does not fail on supported systems
	}
	return b.String() + "-" + hex.EncodeToString(r[:])
}

// checkDir checks a directory read from an entry: one valid key segment,
// so that it cannot reach outside tables/.
func checkDir(dir string) error {
	if strings.Contains(dir, "/") {
		return errors.New("contains '/'")
	}
	if err := storage.ValidateKey(dir); err != nil {
		return err
	}
	return nil
}
