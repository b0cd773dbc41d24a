package pgwire

import (
	"math"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
)

func TestBindParams(t *testing.T) {
	for _, tc := range []struct{ q, want string }{
		{"SELECT $1, $2", "SELECT 7, 'it''s'"},
		{"SELECT '$1', \"$2\" -- $1\n, $1", "SELECT '$1', \"$2\" -- $1\n, 7"},
		{"SELECT $$ $1 $$, $tag$ $2 $tag$, $2", "SELECT $$ $1 $$, $tag$ $2 $tag$, 'it''s'"},
		{"SELECT E'\\' $1', /* $1 /* $2 */ */ $1", "SELECT E'\\' $1', /* $1 /* $2 */ */ 7"},
	} {
		got, err := bindParams(tc.q, []string{"7", "'it''s'"})
		require.NoError(t, err, tc.q)
		require.Equal(t, tc.want, got)
	}
	_, err := bindParams("SELECT $3", []string{"1"})
	require.ErrorContains(t, err, "$3")
	require.Equal(t, 2, paramCount("SELECT $2, '$9'"))
}

func TestSplitStatements(t *testing.T) {
	require.Equal(t, []string{"SELECT 1", "SELECT ';'", "SELECT 2 -- ;"},
		splitStatements("SELECT 1; SELECT ';' ;; SELECT 2 -- ;"))
	require.Empty(t, splitStatements(" -- nothing\n"))
}

func TestLiteralRefusesInjection(t *testing.T) {
	for _, tc := range []struct {
		raw  string
		oid  uint32
		want string
	}{
		{"42", oidInt8, "42"},
		{"2.5", oidFloat8, "2.5"},
		{"t", oidBool, "TRUE"},
		{"x'); DROP TABLE t; --", oidText, "'x''); DROP TABLE t; --'"},
		{"[1, 2.5,3]", VectorOID, "[1,2.5,3]::FLOAT[3]"},
		{`\x0aff`, oidBytea, "from_hex('0aff')"},
	} {
		got, err := literal([]byte(tc.raw), 0, tc.oid)
		require.NoError(t, err, tc.raw)
		require.Equal(t, tc.want, got)
	}
	for _, bad := range []struct {
		raw string
		oid uint32
	}{{"1; DROP TABLE t", oidInt8}, {"1e3)", oidFloat8}, {"[1,2]) --", VectorOID}} {
		_, err := literal([]byte(bad.raw), 0, bad.oid)
		require.Error(t, err, bad.raw)
	}
}

// TestBinaryVectorParameter: pgvector's binary form (what a driver sends
// for a vector parameter in binary) binds as the text form does; a length
// that does not match its dimensions, or a NaN, is refused.
func TestBinaryVectorParameter(t *testing.T) {
	raw, err := vectorBinary([]any{float32(1), float32(2.5), float32(-3)})
	require.NoError(t, err)
	got, err := literal(raw, 1, VectorOID)
	require.NoError(t, err)
	want, err := literal([]byte("[1,2.5,-3]"), 0, VectorOID)
	require.NoError(t, err)
	require.Equal(t, want, got)
	empty, err := literal([]byte{0, 0, 0, 0}, 1, VectorOID)
	require.NoError(t, err)
	require.Equal(t, "[]::FLOAT[0]", empty)
	nan, err := vectorBinary([]any{math.NaN()})
	require.NoError(t, err)
	for _, bad := range [][]byte{{0, 1}, raw[:len(raw)-1], append(raw, 0), {0xff, 0xff, 0, 0}, nan} {
		_, err := literal(bad, 1, VectorOID)
		require.ErrorIs(t, err, loch.ErrInvalidArgument, "%x", bad)
	}
}

func TestVerifierRoundTrip(t *testing.T) {
	v, err := NewVerifier("pw", 0)
	require.NoError(t, err)
	require.Equal(t, DefaultIterations, v.Iterations)
	back, err := ParseVerifier(v.String())
	require.NoError(t, err)
	require.Equal(t, v, back)
	require.NotContains(t, v.String(), "pw")
	_, err = ParseVerifier("md5abc")
	require.Error(t, err)
}

// TestPGOIDMacroAgreesWithTypeFor: the system catalogs' OIDs (loch_pg_oid
// in SQL) are those the server sends (typeFor).
func TestPGOIDMacroAgreesWithTypeFor(t *testing.T) {
	f := newFixture(t, Options{})
	m, err := f.srv.getMirror(ctx)
	require.NoError(t, err)
	names := []string{"VARCHAR", "ENUM", "INTERVAL", "HUGEINT", "DECIMAL(18,3)", "FLOAT[3]", "DOUBLE[]", "FLOAT[3][2]",
		"INTEGER[]", "STRUCT(shape INTEGER[], dtype VARCHAR, bytes BIGINT)", "MAP(VARCHAR, INTEGER)"}
	for n := range scalarTypes {
		names = append(names, n)
	}
	for _, n := range names {
		rows, done, err := m.Rows(ctx, "SELECT loch_pg_oid($1)", n)
		require.NoError(t, err)
		require.True(t, rows.Next())
		var oid int64
		require.NoError(t, rows.Scan(&oid))
		done()
		require.Equal(t, int64(typeFor(n).oid), oid, n)
	}
}
