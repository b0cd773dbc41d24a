package sqlcat

import (
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// TestStageFields: a Field converts its column in Go and gives a new
// dataset its column; rows whose Convert error Skip accepts are skipped
// and listed by source row; another error names its source row (counted
// with the skipped rows) and column.
func TestStageFields(t *testing.T) {
	dir := t.TempDir()
	s := newSession(t, filepath.Join(dir, "lake"))
	pq := filepath.Join(dir, "f.parquet")
	run(t, s, fmt.Sprintf("COPY (SELECT * FROM (VALUES (1, 'a'), (2, 'skip me'), (3, NULL), (4, 'bb'), (5, 'fail')) v(id, word)) TO '%s' (FORMAT parquet)", pq))
	errSkip := errors.New("skippable")
	o := IngestOptions{
		Fields: map[string]Field{"word": {
			Column: schema.Column{Kind: schema.Generic, DType: schema.Uint8, Shape: schema.Shape{-1}},
			Convert: func(v any) (loch.Sample, error) {
				w := v.(string)
				switch w {
				case "skip me":
					return loch.Sample{}, errSkip
				case "fail":
					return loch.Sample{}, errors.New("no good")
				}
				return loch.Sample{Shape: []int{len(w)}, Data: []byte(strings.ToUpper(w))}, nil
			},
		}},
		Skip: func(err error) bool { return errors.Is(err, errSkip) },
	}
	src := ParquetSource(pq, nil)
	sch, err := SourceSchema(ctx, src, o)
	require.NoError(t, err)
	require.Equal(t, "word", sch.Columns[1].Name)
	require.Equal(t, schema.Uint8, sch.Columns[1].DType)

	// The first four rows: one skipped, a null kept.
	d, err := loch.Create(ctx, filepath.Join(dir, "ds"), sch)
	require.NoError(t, err)
	defer d.Close()
	res, err := Stage(ctx, d, src+" WHERE id < 5", o)
	require.NoError(t, err)
	require.EqualValues(t, 3, res.Rows)
	require.Equal(t, []SkippedRow{{Row: 2, Err: errSkip}}, res.Skipped)
	_, err = d.Commit(ctx, "words")
	require.NoError(t, err)
	words, err := d.Column("word")
	require.NoError(t, err)
	got, err := words.ReadRange(ctx, 0, 3)
	require.NoError(t, err)
	require.Equal(t, "A", string(got[0].Data))
	require.True(t, got[1].Null)
	require.Equal(t, "BB", string(got[2].Data))

	// An error Skip refuses names the source row.
	_, err = Stage(ctx, d, src, o)
	require.ErrorContains(t, err, "row 5, column word: no good")
}
