package query

import (
	"slices"
	"strings"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/lochdata/loch"
)

// SampleDataField is the field Options.SampleData adds to the STRUCT of
// an image, video, audio or large-tensor column: the sample's bytes as
// stored (png/jpeg columns: the encoded image; video and audio kept
// compressed: their container; other samples: their elements,
// little-endian, C order), what loch.ColumnReader.ReadEncoded returns.
const SampleDataField = "data"

// structType is the DuckDB STRUCT of a mapInfo or mapMedia column:
// shape, dtype and bytes; then container, codec, rate and duration for
// media; then data when the engine reads samples' bytes.
func (c column) structType() (duckdb.TypeInfo, error) {
	fields, err := infoFields()
	if err != nil {
		return nil, err
	}
	if c.kind == mapMedia {
		fields = append(fields, mediaFields()...)
	}
	if c.data {
		blob, _ := duckdb.NewTypeInfo(duckdb.TYPE_BLOB)
		fields = append(fields, structField{SampleDataField, blob})
	}
	return structOf(fields)
}

// structSQLType names structType.
func (c column) structSQLType() string {
	t := "STRUCT(shape INTEGER[], dtype VARCHAR, bytes BIGINT)"
	if c.kind == mapMedia {
		t = mediaSQLType
	}
	if c.data {
		t = strings.TrimSuffix(t, ")") + ", " + SampleDataField + " BLOB)"
	}
	return t
}

// addData sets the data field of v, column c's STRUCT for slot (nil for
// a null sample), when the column has one: the sample as stored, fetched
// as the scan fetches any other sample.
func (s *source) addData(c column, v any, slot loch.Slot, got *gathered) error {
	m, ok := v.(map[string]any)
	if !ok || !c.data {
		return nil
	}
	if err := s.pieces(slot, got); err != nil {
		return err
	}
	smp, err := s.sc.Sample(slot, got.f)
	if err != nil {
		return err
	}
	m[SampleDataField] = slices.Clone(smp.Data)
	return nil
}
