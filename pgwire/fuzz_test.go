package pgwire

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

// FuzzBindParams: a text parameter bound into a statement never adds a
// statement or a parameter to it, whatever its bytes.
func FuzzBindParams(f *testing.F) {
	f.Add("SELECT $1", "x'; DROP TABLE t; --")
	f.Add("SELECT '$1', $1 -- $1", "a$1b")
	f.Add("SELECT $tag$ $1 $tag$, $1", "$tag$; DROP TABLE t; $tag$")
	f.Add("SELECT /* $1 */ $1", "*/ ; SELECT 1 /*")
	f.Fuzz(func(t *testing.T, q, param string) {
		lit, err := literal([]byte(param), 0, oidText)
		require.NoError(t, err)
		bound, err := bindParams(q, []string{lit})
		if err != nil {
			return
		}
		require.Equal(t, len(splitStatements(q)), len(splitStatements(bound)), "q %q param %q: %q", q, param, bound)
	})
}

// FuzzBinaryLiteral: a binary parameter of any type and bytes gives a
// literal or an error, never a panic, and never a second statement.
func FuzzBinaryLiteral(f *testing.F) {
	for _, oid := range []uint32{oidBool, oidInt2, oidInt4, oidInt8, oidFloat4, oidFloat8, oidBytea, oidText, oidJSONB, oidDate, oidTimestamp, oidUUID, VectorOID} {
		f.Add(oid, []byte{0, 0, 0, 1}, int16(1))
		f.Add(oid, []byte("[1,2];"), int16(0))
	}
	f.Fuzz(func(t *testing.T, oid uint32, raw []byte, format int16) {
		lit, err := literal(raw, format, oid)
		if err != nil {
			return
		}
		require.Len(t, splitStatements("SELECT "+lit), 1, "oid %d raw %q: %s", oid, raw, lit)
	})
}

// FuzzSCRAMServer: client SCRAM messages of any bytes fail cleanly.
func FuzzSCRAMServer(f *testing.F) {
	f.Add([]byte("n,,n=,r=abc"), []byte("c=biws,r=abcdef,p=AAAA"))
	f.Add([]byte("y,,n=,r="), []byte(",p="))
	v, err := NewVerifier("pw", 0)
	require.NoError(f, err)
	f.Fuzz(func(t *testing.T, first, final []byte) {
		s := &scramServer{v: v}
		if _, err := s.first(first); err != nil {
			return
		}
		_, err := s.final(final)
		require.Error(t, err, "a proof made without the password")
	})
}

// FuzzCopyText: COPY's text escapes decode or fail, never panic.
func FuzzCopyText(f *testing.F) {
	f.Add(`a\tb\\c\x4g\101\`)
	f.Fuzz(func(t *testing.T, s string) {
		_, _ = unescapeCopy(s)
	})
}

// FuzzBinaryCopyField: a binary COPY field of any type and bytes gives
// text or an error, never a panic; a binary vector read back is sent
// again as the same bytes.
func FuzzBinaryCopyField(f *testing.F) {
	for _, oid := range []uint32{oidBool, oidInt8, oidFloat8, oidBytea, oidText, oidJSONB, oidDate, oidTimestamp, oidUUID, VectorOID} {
		f.Add(oid, []byte{0, 1, 0, 0, 0x3f, 0x80, 0, 0})
		f.Add(oid, []byte("[1,2]"))
	}
	f.Fuzz(func(t *testing.T, oid uint32, b []byte) {
		s, err := binaryText(b, oid)
		if err != nil || oid != VectorOID || len(b) < 4 || b[0] == '[' {
			return
		}
		var xs []any
		for _, p := range strings.Split(strings.Trim(s, "[]"), ",") {
			if p == "" {
				continue
			}
			v, err := strconv.ParseFloat(p, 32)
			if err != nil && !strings.Contains(p, "Inf") && !strings.Contains(p, "NaN") {
				require.NoError(t, err, "vector %q", s)
			}
			xs = append(xs, float32(v))
		}
		again, err := vectorBinary(xs)
		require.NoError(t, err)
		require.Len(t, again, len(b), "vector %q", s)
	})
}
