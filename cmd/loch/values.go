package main

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// labelString formats a class label with its class name when it has one.
func labelString(c *schema.Column, data []byte, i int) string {
	v := c.DType.Int(data, i)
	if n, ok := c.ClassName(v); ok {
		return fmt.Sprintf("%d (%s)", v, n)
	}
	return strconv.FormatInt(v, 10)
}

// shapeRange formats the observed shape range of a column, one entry per
// dimension: "32..480" where samples differ, the size where they agree. A
// column without samples shows its declared shape ("any" when undeclared).
func shapeRange(c *schema.Entry) string {
	lo, hi := observedShapes(c)
	if lo == nil || hi == nil || len(lo) != len(hi) {
		if c.Shape == nil {
			return "any"
		}
		return schema.FormatShape(c.Shape)
	}
	parts := make([]string, len(lo))
	for i := range lo {
		if lo[i] == hi[i] {
			parts[i] = strconv.Itoa(lo[i])
		} else {
			parts[i] = fmt.Sprintf("%d..%d", lo[i], hi[i])
		}
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

// observedShapes returns the column's smallest and largest sample shapes,
// nil when it has no samples. The statistics of a column of scalars have no
// shapes (their empty shapes are dropped when stored), so a column with
// samples and no shapes holds scalars: shape [].
func observedShapes(c *schema.Entry) (lo, hi []int) {
	if c.MinShape == nil && c.MaxShape == nil && c.Samples > 0 {
		return []int{}, []int{}
	}
	return c.MinShape, c.MaxShape
}

// compression is the column's effective compression: its sample
// compression when it has one, else its chunk codec.
func compression(c *schema.Column) string {
	if c.SampleCompression != "" && c.SampleCompression != schema.SampleNone {
		return string(c.SampleCompression)
	}
	if c.ChunkCompression == "" {
		return string(schema.CodecNone)
	}
	return string(c.ChunkCompression)
}

// ratio is raw bytes over stored bytes, 0 when nothing is stored.
func ratio(c *schema.Stats) float64 {
	if c.StoredBytes <= 0 {
		return 0
	}
	return float64(c.RawBytes) / float64(c.StoredBytes)
}

// entryOf returns column c of d's version with its statistics there
// (none when d has no column of c's uid).
func entryOf(d *loch.Dataset, c *schema.Column) schema.Entry {
	for _, e := range d.Columns() {
		if e.UID == c.UID {
			return e
		}
	}
	return schema.Entry{Column: *c}
}
