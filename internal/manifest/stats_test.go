package manifest

import (
	"encoding/json"
	"os"
	"testing"

	"github.com/lochdata/loch/schema"
	"github.com/stretchr/testify/require"
)

// TestManifestStatsGolden: testdata/manifest_stats.json is a manifest body
// written when schema.Column embedded its statistics. It decodes into the
// definitions and, beside them, the statistics by uid, and encodes back to
// the same bytes (so that a manifest's content hash does not change).
func TestManifestStatsGolden(t *testing.T) {
	golden, err := os.ReadFile("testdata/manifest_stats.json")
	require.NoError(t, err)
	var m Manifest
	require.NoError(t, json.Unmarshal(golden, &m))

	require.Equal(t, []string{"image", "label", "boxes", "caption"}, m.Schema.Names())
	label, ok := m.Schema.Column("label")
	require.True(t, ok)
	require.Equal(t, schema.Column{UID: 2, Name: "label", DType: schema.Int64, Kind: schema.ClassLabel, Shape: schema.Shape{},
		SampleCompression: schema.SampleNone, ChunkCompression: schema.Zstd, ChunkBytes: 8 << 20, ClassNames: []string{"cat", "dog & <fox>"}}, *label)
	require.Equal(t, schema.Stats{MinShape: []int{32, 48, 3}, MaxShape: []int{480, 640, 3}, StoredBytes: 1234, RawBytes: 5678, Samples: 1000}, m.ColumnStats(1))
	require.Equal(t, schema.Stats{StoredBytes: 80, RawBytes: 8000, Samples: 1000, Classes: &schema.ClassCounts{Counts: []int64{600, 0, 399}, Other: 1}}, m.ColumnStats(2))
	require.Equal(t, schema.Stats{}, m.ColumnStats(5), "a column without samples")
	require.EqualValues(t, 1000, m.Rows)
	require.Equal(t, 6, m.NextColumnUID)
	require.Len(t, m.Fragments, 2)

	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.Equal(t, string(golden), string(b))
	obj, err := Encode(KindManifest, m)
	require.NoError(t, err)
	var back Manifest
	require.NoError(t, Decode(KindManifest, obj, &back))
	require.Equal(t, m, back)
}

// TestManifestStatsAreCopies: statistics changed through a manifest made
// with CloneStats, or read through ColumnStats and Entries, leave the
// manifest's own as they were.
func TestManifestStatsAreCopies(t *testing.T) {
	golden, err := os.ReadFile("testdata/manifest_stats.json")
	require.NoError(t, err)
	var m Manifest
	require.NoError(t, json.Unmarshal(golden, &m))
	next := Manifest{Schema: m.Schema.Clone(), Stats: m.CloneStats()}
	next.StatsOf(2).Merge(schema.Stats{Samples: 1, Classes: &schema.ClassCounts{Counts: []int64{1}}})
	next.StatsOf(1).MergeShape([]int{1, 1, 3}, []int{900, 900, 3})
	next.StatsOf(7).Samples = 3
	s := m.ColumnStats(1)
	s.MinShape[0] = 0
	m.Entries()[1].Classes.Counts[0] = 0

	b, err := json.Marshal(m)
	require.NoError(t, err)
	require.Equal(t, string(golden), string(b))
	require.EqualValues(t, 601, next.ColumnStats(2).Classes.Counts[0])
	require.Equal(t, []int{1, 1, 3}, next.ColumnStats(1).MinShape)
}
