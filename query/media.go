package query

import (
	"github.com/duckdb/duckdb-go/v2"

	"github.com/lochdata/loch"
)

// mapMedia (issue 16) maps a video or audio column (sample compression
// video or audio) to mapInfo's STRUCT plus the media entry of its chunk
// headers: STRUCT(shape INTEGER[], dtype VARCHAR, bytes BIGINT,
// container VARCHAR, codec VARCHAR, rate DOUBLE, duration DOUBLE), where
// rate is frames or samples per second and duration is in seconds; no
// sample is decoded.
const mapMedia mapKind = 100

const mediaSQLType = "STRUCT(shape INTEGER[], dtype VARCHAR, bytes BIGINT, container VARCHAR, codec VARCHAR, rate DOUBLE, duration DOUBLE)"

// mediaFields are the fields mapMedia's STRUCT adds to mapInfo's.
func mediaFields() []structField {
	str, _ := duckdb.NewTypeInfo(duckdb.TYPE_VARCHAR)
	f64, _ := duckdb.NewTypeInfo(duckdb.TYPE_DOUBLE)
	return []structField{{"container", str}, {"codec", str}, {"rate", f64}, {"duration", f64}}
}

// mediaValue is a mapMedia column's value.
func (c column) mediaValue(m loch.MediaInfo) any {
	v := c.infoValue(m.Shape, m.Bytes).(map[string]any)
	v["container"], v["codec"] = m.Container, m.Codec
	v["rate"], v["duration"] = m.Rate(), m.Duration().Seconds()
	return v
}
