package keys_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/keys"
)

func TestCheckPath(t *testing.T) {
	for _, tc := range []struct {
		key, want string // want: "" when valid
	}{
		{"chunks/ab/" + strings.Repeat("a", 32), ""},
		{"a/b.c/d-e_f", ""},
		{strings.Repeat("x", keys.MaxLen), ""},
		{"", "empty key"},
		{strings.Repeat("x", keys.MaxLen+1), "key of 1025 bytes is longer than 1024"},
		{"\xc3\x28", "key is not valid UTF-8"},
		{"/etc/passwd", "key is absolute"},
		{`a\..\..\x`, "key contains a backslash"},
		{"a\x00b", "key contains a control character"},
		{"a\x7fb", "key contains a control character"},
		{"a//b", "key has an empty segment"},
		{"a/", "key has an empty segment"},
		{"../x", `key has a "." or ".." segment`},
		{"a/../../x", `key has a "." or ".." segment`},
		{"a/.", `key has a "." or ".." segment`},
	} {
		err := keys.CheckPath(tc.key, nil)
		if tc.want == "" {
			require.NoError(t, err, "%q", tc.key)
		} else {
			require.EqualError(t, err, tc.want, "%q", tc.key)
		}
	}
}

func TestCheckPathSegmentRule(t *testing.T) {
	noTmp := func(seg string) error {
		if strings.HasPrefix(seg, "tmp-") {
			return errors.New("reserved")
		}
		return nil
	}
	require.NoError(t, keys.CheckPath("a/b", noTmp))
	require.EqualError(t, keys.CheckPath("a/tmp-1/b", noTmp), "reserved")
	// The common rules come first.
	require.EqualError(t, keys.CheckPath("tmp-1/..", noTmp), "reserved")
	require.EqualError(t, keys.CheckPath("../tmp-1", noTmp), `key has a "." or ".." segment`)
}
