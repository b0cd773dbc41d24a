package chunkcache_test

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/chunkcache"
)

// TestValidateKey: a cache key follows the rules every loch key follows
// (keys.CheckPath, tested there; two of them here), and its segments are
// file names of at most 255 bytes.
func TestValidateKey(t *testing.T) {
	for _, tc := range []struct {
		key, why string // why is empty for a valid key
	}{
		{"chunks/ab/ab12", ""},
		{"..a/b..", ""},
		{"with space/é", ""},
		{strings.Repeat("x", 255) + "/" + strings.Repeat("y", 255), ""},
		{"a/../../x", `key has a "." or ".." segment`},
		{`a\..\..\x`, "key contains a backslash"},
		{strings.Repeat("x", 256), "key segment of 256 bytes is longer than 255"},
		{"a/" + strings.Repeat("x", 256) + "/b", "key segment of 256 bytes is longer than 255"},
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
