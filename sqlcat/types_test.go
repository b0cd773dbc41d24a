package sqlcat

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// TestTypeRules runs every row of typeRules: each accepted form makes the
// column written out here (as parsed, before Normalize), and each
// malformed argument list is refused with an error that names the column
// and what the type takes. A row without both kinds of case fails.
func TestTypeRules(t *testing.T) {
	image := func(shape schema.Shape, sc schema.SampleCompression, cc schema.ChunkCodec) schema.Column {
		return schema.Column{Kind: schema.Image, DType: schema.Uint8, Shape: shape, SampleCompression: sc, ChunkCompression: cc}
	}
	video := schema.Column{Kind: schema.Video, DType: schema.Uint8, Shape: schema.Shape{-1, -1, -1, 3}, SampleCompression: schema.SampleNone}
	bbox := schema.Column{Kind: schema.BBox, DType: schema.Float32, Shape: schema.Shape{-1, 4}}
	accepted := []struct {
		sql  string
		want schema.Column
	}{
		{"IMAGE", image(schema.Shape{-1, -1, 3}, schema.PNG, "")},
		{"IMAGE('JPEG')", image(schema.Shape{-1, -1, 3}, schema.JPEG, "")},
		{"IMAGE('lz4', 1)", image(schema.Shape{-1, -1, 1}, schema.SampleNone, schema.LZ4)},
		{"VIDEO", video},
		{"VIDEO('zstd')", func() schema.Column { c := video; c.ChunkCompression = schema.Zstd; return c }()},
		{"AUDIO", schema.Column{Kind: schema.Audio, DType: schema.Float32, Shape: schema.Shape{-1}}},
		{"AUDIO(int16)", schema.Column{Kind: schema.Audio, DType: schema.Int16, Shape: schema.Shape{-1}}},
		{"AUDIO(float32, 2)", schema.Column{Kind: schema.Audio, DType: schema.Float32, Shape: schema.Shape{-1, 2}}},
		{"MASK", schema.Column{Kind: schema.Mask, DType: schema.Bool, Shape: schema.Shape{-1, -1}}},
		{"MASK(uint8)", schema.Column{Kind: schema.Mask, DType: schema.Uint8, Shape: schema.Shape{-1, -1}}},
		{"BBOX", bbox},
		{"BBOX('XYWH')", func() schema.Column { c := bbox; c.BBoxFormat = "xywh"; return c }()},
		{"BBOX(NORMALIZED)", func() schema.Column { c := bbox; c.BBoxNormalized = true; return c }()},
		{"BBOX('cxcywh', NORMALIZED)", func() schema.Column { c := bbox; c.BBoxFormat, c.BBoxNormalized = "cxcywh", true; return c }()},
		{"CLASS_LABEL", schema.Column{Kind: schema.ClassLabel, DType: schema.Int64, Shape: schema.Shape{}}},
		{"CLASS_LABEL('Cat', 'dog')", schema.Column{Kind: schema.ClassLabel, DType: schema.Int64, Shape: schema.Shape{}, ClassNames: []string{"Cat", "dog"}}},
		{"CLASS_LABELS('a')", schema.Column{Kind: schema.ClassLabel, DType: schema.Int64, Shape: schema.Shape{-1}, ClassNames: []string{"a"}}},
		{"EMBEDDING(768)", schema.Column{Kind: schema.Embedding, DType: schema.Float32, Shape: schema.Shape{768}}},
		{"EMBEDDING(4, int8)", schema.Column{Kind: schema.Embedding, DType: schema.Int8, Shape: schema.Shape{4}}},
		{"TENSOR(float64)", schema.Column{Kind: schema.Generic, DType: schema.Float64}},
		{"TENSOR(uint8, [3, NULL])", schema.Column{Kind: schema.Generic, DType: schema.Uint8, Shape: schema.Shape{3, -1}}},
		{"TENSOR(int8, [])", schema.Column{Kind: schema.Generic, DType: schema.Int8, Shape: schema.Shape{}}},
		{"POINT_CLOUD(3)", schema.Column{Kind: schema.PointCloud, DType: schema.Float32, Shape: schema.Shape{-1, 3}}},
		{"LINK", schema.Column{Kind: schema.Link, DType: schema.Text}},
		{"VECTOR(1536)", schema.Column{Kind: schema.Embedding, DType: schema.Float32, Shape: schema.Shape{1536}}},
		{"JSONB", schema.Column{Kind: schema.JSONKind, DType: schema.JSON}},
		{"SMALLSERIAL", schema.Column{DType: schema.Int16, Shape: schema.Shape{}, Serial: true}},
		{"SERIAL", schema.Column{DType: schema.Int32, Shape: schema.Shape{}, Serial: true}},
		{"BIGSERIAL", schema.Column{DType: schema.Int64, Shape: schema.Shape{}, Serial: true}},
	}
	refused := []struct{ sql, msg string }{
		{"IMAGE(png)", "IMAGE takes a compression in quotes: 'png', 'jpeg', 'lz4', 'zstd' or 'none'"},
		{"IMAGE('gif')", "IMAGE takes a compression: 'png', 'jpeg', 'lz4', 'zstd' or 'none'"},
		{"IMAGE('png', 0)", "IMAGE takes a number of channels (1, 3 or 4)"},
		{"IMAGE('png', 3, 1)", "IMAGE takes (compression [, channels])"},
		{"VIDEO('png', 3, 3)", "VIDEO takes (compression [, channels])"},
		{"AUDIO('int16')", `AUDIO: want a dtype such as float32, got "int16"`},
		{"AUDIO(int17)", "AUDIO: "},
		{"AUDIO(int16, x)", "AUDIO takes a number of channels"},
		{"AUDIO(int16, 2, 2)", "AUDIO takes ([dtype [, channels]])"},
		{"MASK(uint8, 2)", "MASK takes ([dtype])"},
		{"BBOX(NORMALIZED, 'xyxy')", "BBOX takes (['xyxy'|'xywh'|'cxcywh'] [, NORMALIZED])"},
		{"BBOX(3)", "BBOX takes (['xyxy'|'xywh'|'cxcywh'] [, NORMALIZED])"},
		{"CLASS_LABEL(cat)", "CLASS_LABEL takes class names in quotes"},
		{"CLASS_LABELS('a', 1)", "CLASS_LABELS takes class names in quotes"},
		{"EMBEDDING", "EMBEDDING takes (dimensions [, dtype]) with dimensions > 0"},
		{"EMBEDDING(0)", "EMBEDDING takes (dimensions [, dtype]) with dimensions > 0"},
		{"EMBEDDING(4, int8, 2)", "EMBEDDING takes (dimensions [, dtype]) with dimensions > 0"},
		{"EMBEDDING(4, 'int8')", `EMBEDDING: want a dtype such as float32, got "int8"`},
		{"TENSOR", "TENSOR takes (dtype [, [shape]])"},
		{"TENSOR(float32, 3)", "TENSOR takes (dtype [, [shape]]) with the shape in brackets, e.g. [3, NULL]"},
		{"POINT_CLOUD", "POINT_CLOUD takes (dimensions), at least 3"},
		{"POINT_CLOUD(3, 4)", "POINT_CLOUD takes (dimensions), at least 3"},
		{"LINK('x')", "LINK takes no arguments"},
		{"VECTOR", "VECTOR takes (dimensions) with dimensions > 0"},
		{"VECTOR(3, int8)", "VECTOR takes (dimensions) with dimensions > 0"},
		{"JSONB(1)", "JSONB takes no arguments"},
		{"SMALLSERIAL(2)", "SMALLSERIAL takes no arguments"},
		{"SERIAL(4)", "SERIAL takes no arguments"},
		{"BIGSERIAL('x')", "BIGSERIAL takes no arguments"},
		{"FOO(1)", "type FOO is not supported (supported: BOOLEAN, "},
	}
	parse := func(sql string) (schema.Column, error) {
		p, err := newParser(sql)
		require.NoError(t, err, sql)
		return p.parseType("c")
	}
	ruleOf := func(sql string) string { return strings.ToLower(strings.Split(sql, "(")[0]) }
	ok, bad := map[string]bool{}, map[string]bool{}
	for _, tc := range accepted {
		got, err := parse(tc.sql)
		require.NoError(t, err, tc.sql)
		want := tc.want
		want.Name = "c"
		require.Equal(t, want, got, tc.sql)
		ok[ruleOf(tc.sql)] = true
	}
	for _, tc := range refused {
		_, err := parse(tc.sql)
		require.ErrorIs(t, err, loch.ErrInvalidArgument, tc.sql)
		require.ErrorContains(t, err, "column c: "+tc.msg, tc.sql)
		bad[ruleOf(tc.sql)] = true
	}
	for _, r := range typeRules {
		require.True(t, ok[r.name], "typeRules row %s: no accepted form tested", r.name)
		require.True(t, bad[r.name], "typeRules row %s: no malformed form tested", r.name)
		require.Contains(t, supported, strings.ToUpper(r.name))
	}
}
