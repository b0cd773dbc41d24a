package keys

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
)

const id = "0123456789abcdef0123456789abcdef"

func TestMakeParse(t *testing.T) {
	for _, tc := range []struct {
		kind Kind
		key  string
	}{
		{Commit, "commits/" + id},
		{Manifest, "manifests/" + id},
		{Fragment, "fragments/" + id},
		{Extension, "extensions/" + id},
		{Deletion, "deletions/" + id},
		{Chunk, "chunks/01/" + id},
	} {
		require.Equal(t, tc.key, Make(tc.kind, id))
		k, got, ok := Parse(tc.key)
		require.True(t, ok, tc.key)
		require.Equal(t, tc.kind, k)
		require.Equal(t, id, got)
		require.True(t, strings.HasPrefix(tc.key, tc.kind.Prefix()))
	}
	require.Equal(t, "log/00000000000000000042", MakeLog(42))
	seq, ok := ParseLog(MakeLog(42))
	require.True(t, ok)
	require.EqualValues(t, 42, seq)
	for key, want := range map[string]Kind{MarkerKey: Marker, LatestKey: Latest} {
		k, _, ok := Parse(key)
		require.True(t, ok)
		require.Equal(t, want, k)
	}
	require.Panics(t, func() { Make(Marker, id) })
	for key, want := range map[string]Kind{MakeLease(id): Lease, MakeExpired(id): Expired} {
		k, got, ok := Parse(key)
		require.True(t, ok, key)
		require.Equal(t, want, k)
		require.Equal(t, id, got)
	}
	require.Equal(t, "_loch/leases/"+id, MakeLease(id))
	require.Equal(t, "_loch/expired/"+id, MakeExpired(id))
}

func TestParseRefuses(t *testing.T) {
	for _, key := range []string{
		"", "commits", "commits/", "commits/" + id[:31], "commits/" + strings.ToUpper(id),
		"commits/" + id + "0", "chunks/" + id, "chunks/02/" + id, "chunks/01/" + id + "/x",
		"log/42", "log/abc", "log/0000000000000000004x", "_loch/other", "refs/main", "commits/" + id + "/",
		"manifests/not-a-hash", ".loch-tmp-1", "other/" + id,
		"_loch/leases/" + id[:31], "_loch/expired/x", "_loch/leases/" + id + "/x",
	} {
		_, _, ok := Parse(key)
		require.False(t, ok, "%q", key)
	}
}

func TestIndexKey(t *testing.T) {
	k := MakeIndex(id, 3, "cosine")
	require.Equal(t, "indexes/"+id+"/3.cosine", k)
	commit, uid, m, ok := ParseIndex(k)
	require.True(t, ok)
	require.Equal(t, id, commit)
	require.Equal(t, 3, uid)
	require.Equal(t, "cosine", m)
	kind, got, ok := Parse(k)
	require.True(t, ok)
	require.Equal(t, Index, kind)
	require.Equal(t, k, Make(Index, got))
	for _, bad := range []string{"indexes/abc/3.l2", "indexes/" + id + "/03.l2", "indexes/" + id + "/-1.l2",
		"indexes/" + id + "/x.dot", "indexes/" + id + "/3.", "indexes/" + id + "/3.L2", "indexes/" + id + "/3"} {
		_, _, _, ok := ParseIndex(bad)
		require.False(t, ok, bad)
		_, _, ok = Parse(bad)
		require.False(t, ok, bad)
	}
	require.Equal(t, "vectors/"+id, Make(Vectors, id))
	_, _, _, ok = ParseIndex(Make(Vectors, id))
	require.False(t, ok)
}

func TestValidID(t *testing.T) {
	require.True(t, ValidID(id))
	require.False(t, ValidID(id[:31]))
	require.False(t, ValidID(strings.Replace(id, "a", "A", 1)))
	require.False(t, ValidID(strings.Replace(id, "a", "g", 1)))
}

// FuzzParse: a key that parses is made again, byte for byte, from its
// kind and id.
func FuzzParse(f *testing.F) {
	for _, s := range []string{"commits/" + id, "chunks/01/" + id, "log/00000000000000000007", MarkerKey, LatestKey, "x/y", "", "_loch/leases/" + id, "_loch/expired/" + id, "indexes/" + id + "/3.l2"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, key string) {
		k, got, ok := Parse(key)
		if !ok {
			return
		}
		switch k {
		case Marker:
			require.Equal(t, MarkerKey, key)
		case Latest:
			require.Equal(t, LatestKey, key)
		case Log:
			seq, ok := ParseLog(key)
			require.True(t, ok)
			require.Equal(t, key, MakeLog(seq))
		case Lease:
			require.Equal(t, key, MakeLease(got))
		case Expired:
			require.Equal(t, key, MakeExpired(got))
		case Index:
			commit, uid, metric, ok := ParseIndex(key)
			require.True(t, ok)
			require.Equal(t, key, MakeIndex(commit, uid, metric))
			require.Equal(t, key, Make(k, got))
		default:
			require.True(t, ValidID(got))
			require.Equal(t, key, Make(k, got))
		}
	})
}

func TestCatalogKeys(t *testing.T) {
	require.Equal(t, "_catalog/log/00000000000000000007", MakeLogIn(CatalogLogPrefix, 7))
	require.Equal(t, "_catalog/log/_latest", LatestIn(CatalogLogPrefix))
	require.Equal(t, LatestKey, LatestIn(LogPrefix))
	require.Equal(t, MakeLog(9), MakeLogIn(LogPrefix, 9))
	require.Equal(t, "tables/frames-0123456789abcdef/", MakeTable("frames-0123456789abcdef"))
	seq, ok := ParseLogIn(CatalogLogPrefix, MakeLogIn(CatalogLogPrefix, 7))
	require.True(t, ok)
	require.EqualValues(t, 7, seq)
	for _, key := range []string{
		"_catalog/log/_latest", "_catalog/log/7", "_catalog/log/0000000000000000000x", MakeLog(7),
		"_catalog/log/+0000000000000000007", "_catalog/log/00000000000000000007/x",
	} {
		_, ok := ParseLogIn(CatalogLogPrefix, key)
		require.False(t, ok, "%q", key)
	}
	// A dataset's keys never parse as a catalog's, nor the reverse.
	_, _, ok = Parse(MakeLogIn(CatalogLogPrefix, 7))
	require.False(t, ok)
}

func TestContentAddressed(t *testing.T) {
	for _, k := range Hashed {
		require.Equal(t, k != Index, k.ContentAddressed(), k.String())
	}
	for _, k := range []Kind{Invalid, Marker, Log, Latest, Lease, Expired} {
		require.False(t, k.ContentAddressed(), k.String())
	}
}
