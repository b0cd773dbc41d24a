package query

import (
	"testing"

	"github.com/stretchr/testify/require"
)

// TestStringBatchValid: a batch is valid UTF-8 only when each string is,
// even where the concatenation is (a character split across two).
func TestStringBatchValid(t *testing.T) {
	for _, tc := range []struct {
		strs  []string
		valid bool
	}{
		{[]string{"abc", "a longer ascii string", ""}, true},
		{[]string{"é", "ü-ö", "日本語のテキスト"}, true},
		{[]string{"\xc3", "\xa9"}, false}, // é split in two
		{[]string{"ok", "\xff"}, false},
		{[]string{"0123456789abcdef\x80"}, false},
	} {
		var b stringBatch
		for i, s := range tc.strs {
			b.add(i, []byte(s))
		}
		require.Equal(t, tc.valid, b.valid(), "%q", tc.strs)
		b.reset()
		require.True(t, b.valid())
	}
}
