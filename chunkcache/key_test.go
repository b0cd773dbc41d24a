package chunkcache_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/chunkcache"
)

func TestValidateKey(t *testing.T) {
	for _, tc := range []struct {
		key, why string // why is empty for a valid key
	}{
		{"chunks/ab/ab12", ""},
		{"a", ""},
		{"..a/b..", ""},
		{"with space/é", ""},
		{"", "empty key"},
		{"/etc/passwd", "key is absolute"},
		{"../x", `key has a "." or ".." segment`},
		{"a/../../x", `key has a "." or ".." segment`},
		{"a/.", `key has a "." or ".." segment`},
		{`a\..\..\x`, "key contains a backslash"},
		{"a\x00b", "key contains a control character"},
		{"a\tb", "key contains a control character"},
		{"a//b", "key has an empty segment"},
		{"a/", "key has an empty segment"},
		{"\xc3\x28", "key is not valid UTF-8"},
		{strings.Repeat("x", 1025), "key of 1025 bytes is longer than 1024"},
		{strings.Repeat("x", 256), "key segment of 256 bytes is longer than 255"},
	} {
		err := chunkcache.ValidateKey(tc.key)
		if tc.why == "" {
			require.NoError(t, err, "key %q", tc.key)
			continue
		}
		require.ErrorIs(t, err, chunkcache.ErrInvalidKey, "key %q", tc.key)
		require.EqualError(t, err, "invalid key: "+tc.why, "key %q", tc.key)
	}
}

// FuzzValidateKey: a valid key, joined to a directory, names a path strictly
// inside it, and is already clean.
func FuzzValidateKey(f *testing.F) {
	for _, k := range []string{"chunks/ab/ab12", "../x", "a/..", "/a", `a\b`, "a//b", ".", "a/./b", "..."} {
		f.Add(k)
	}
	f.Fuzz(func(t *testing.T, key string) {
		if chunkcache.ValidateKey(key) != nil {
			return
		}
		root := filepath.FromSlash("/cache/objects")
		p := filepath.Join(root, filepath.FromSlash(key))
		rel, err := filepath.Rel(root, p)
		require.NoError(t, err)
		require.False(t, rel == "." || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)), "key %q escapes to %q", key, p)
		require.Equal(t, filepath.ToSlash(rel), key, "key %q is not clean", key)
	})
}
