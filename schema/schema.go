// Package schema defines loch's column model: data types, kinds, shapes and
// compressions, their validation, and the schema files users write.
package schema

import (
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"sync"

	"github.com/lochdata/loch/internal/base"
)

// ErrInvalid marks a schema or a sample that breaks the rules of its column.
// It matches loch.ErrInvalidArgument too.
var ErrInvalid = base.Mark(base.ErrInvalidArgument, "invalid", nil)

// Kind gives a column its meaning and validation rules.
type Kind string

// The kinds.
const (
	Generic    Kind = "generic"
	Image      Kind = "image"
	Video      Kind = "video"
	Audio      Kind = "audio"
	ClassLabel Kind = "class_label"
	BBox       Kind = "bbox"
	Mask       Kind = "mask"
	Embedding  Kind = "embedding"
	TextKind   Kind = "text"
	JSONKind   Kind = "json"
	PointCloud Kind = "point_cloud"
	Link       Kind = "link"
)

// Kinds lists every kind.
func Kinds() []Kind {
	return []Kind{Generic, Image, Video, Audio, ClassLabel, BBox, Mask, Embedding, TextKind, JSONKind, PointCloud, Link}
}

// SampleCompression is applied to each sample on its own.
type SampleCompression string

// Sample compressions. PNG is lossless; JPEG is lossy.
const (
	SampleNone SampleCompression = "none"
	PNG        SampleCompression = "png"
	JPEG       SampleCompression = "jpeg"
	// VideoCompression and AudioCompression (format 1.7) keep a media
	// file's container bytes as ingested; see media.go.
	VideoCompression SampleCompression = "video"
	AudioCompression SampleCompression = "audio"
)

// ChunkCodec compresses whole chunks.
type ChunkCodec string

// Chunk codecs.
const (
	CodecNone ChunkCodec = "none"
	LZ4       ChunkCodec = "lz4"
	Zstd      ChunkCodec = "zstd"
)

// DefaultChunkBytes is the default target of decoded bytes per chunk.
const DefaultChunkBytes = 8 << 20

// BBox coordinate conventions.
const (
	BBoxXYXY   = "xyxy"   // x_min, y_min, x_max, y_max
	BBoxXYWH   = "xywh"   // x_min, y_min, width, height (COCO)
	BBoxCXCYWH = "cxcywh" // center x, center y, width, height (YOLO)
)

// Column defines one column. The statistics a dataset keeps of a column's
// samples are not part of it: a snapshot keeps them beside the definition
// (Entry).
type Column struct {
	UID   int    `json:"uid,omitempty"`
	Name  string `json:"name"`
	DType DType  `json:"dtype"`
	Kind  Kind   `json:"kind,omitempty"`
	// Shape is the declared per-sample shape: -1 marks a ragged dimension
	// (null in JSON). A nil Shape accepts any shape.
	Shape             Shape             `json:"shape"`
	SampleCompression SampleCompression `json:"sample_compression,omitempty"`
	ChunkCompression  ChunkCodec        `json:"chunk_compression,omitempty"`
	ChunkBytes        int               `json:"chunk_bytes,omitempty"`
	ClassNames        []string          `json:"class_names,omitempty"`
	BBoxFormat        string            `json:"bbox_format,omitempty"`
	BBoxNormalized    bool              `json:"bbox_normalized,omitempty"`
	// Key (format 1.13) makes the column a key of its table: KeyPrimary
	// (unique and never null) or KeyUnique (unique among its non-null
	// values). SQL writes enforce it (package sqlcat, docs/sql.md);
	// Dataset.Extend and Update do not check it.
	Key string `json:"key,omitempty"`
	// Serial (format 1.13) makes SQL inserts fill the column's omitted or
	// null values with the next integer (docs/sql.md): an integer scalar
	// column.
	Serial bool `json:"serial,omitempty"`
}

// Equal reports whether c and o define the same column. Lists compare by
// their elements: a nil list equals an empty one (an empty class list is
// omitted from JSON, and comes back nil).
func (c Column) Equal(o Column) bool {
	if !slices.Equal(c.Shape, o.Shape) || !slices.Equal(c.ClassNames, o.ClassNames) {
		return false
	}
	c.Shape, c.ClassNames, o.Shape, o.ClassNames = nil, nil, nil, nil
	return reflect.DeepEqual(c, o)
}

// Entry is a snapshot's entry for one column: its definition and the
// statistics of its samples there. Its JSON is one flat object, the
// column's fields then the statistics' (docs/format.md §2.4): the form of a
// manifest's columns, of a staged write's (with zero statistics) and of the
// schema the C ABI gives.
type Entry struct {
	Column
	Stats
}

// Snapshot is the JSON form of a snapshot's schema: its columns with their
// statistics, as a manifest holds them.
type Snapshot struct {
	Columns []Entry `json:"columns"`
}

// Stats are the statistics of a column's samples in a snapshot (or of a
// change to it): the elementwise minimum and maximum shape of its non-null
// samples, their bytes as stored and decoded, and their number.
type Stats struct {
	MinShape    []int `json:"min_shape"`
	MaxShape    []int `json:"max_shape"`
	StoredBytes int64 `json:"stored_bytes,omitempty"`
	RawBytes    int64 `json:"raw_bytes,omitempty"`
	Samples     int64 `json:"samples,omitempty"`
	// Classes (format 1.9) counts a class-label column's labels in live
	// rows by class id; nil where they were not counted from the column's
	// first sample on (a column written before 1.9), and then never
	// partial.
	Classes *ClassCounts `json:"classes,omitempty"`
}

// ClassCounts counts labels by class id: Counts[i] labels i, Other the
// labels below 0.
type ClassCounts struct {
	Counts []int64 `json:"counts"`
	Other  int64   `json:"other,omitempty"`
}

// Merge adds o's counts to s and widens s's shape bounds to o's: bounds
// not yet set take o's (copied); bounds of another number of dimensions
// are left as they are (such a column records the first rank it saw).
// Class counts add when both have them; a column without samples takes
// o's; otherwise they are lost (nil), never partial.
func (s *Stats) Merge(o Stats) {
	switch {
	case s.Samples == 0 && s.Classes == nil && o.Classes != nil:
		s.Classes = &ClassCounts{}
		s.Classes.add(o.Classes)
	case s.Classes != nil && o.Classes != nil:
		s.Classes.add(o.Classes)
	case s.Classes != nil && o.Samples != 0:
		s.Classes = nil
	}
	s.Samples += o.Samples
	s.RawBytes += o.RawBytes
	s.StoredBytes += o.StoredBytes
	s.MergeShape(o.MinShape, o.MaxShape)
}

func (c *ClassCounts) add(o *ClassCounts) {
	for len(c.Counts) < len(o.Counts) {
		c.Counts = append(c.Counts, 0)
	}
	for i, n := range o.Counts {
		c.Counts[i] = max(c.Counts[i]+n, 0)
	}
	c.Other = max(c.Other+o.Other, 0)
}

// Sub returns a - b, signed (a change to add with Merge), or nil if either
// is nil.
func (a *ClassCounts) Sub(b *ClassCounts) *ClassCounts {
	if a == nil || b == nil {
		return nil
	}
	out := &ClassCounts{Counts: slices.Clone(a.Counts), Other: a.Other - b.Other}
	for len(out.Counts) < len(b.Counts) {
		out.Counts = append(out.Counts, 0)
	}
	for i, n := range b.Counts {
		out.Counts[i] -= n
	}
	return out
}

// CountLabels adds sign (1 or -1) to the counts of the labels in data,
// a stored sample of class-label column c (one or more integers of its
// dtype). It does nothing for other columns or when s does not count
// classes.
func (s *Stats) CountLabels(c *Column, data []byte, sign int64) {
	if s.Classes == nil || c.Kind != ClassLabel || c.DType.Size() <= 0 {
		return
	}
	for i := 0; i < len(data)/c.DType.Size(); i++ {
		v := c.DType.Int(data, i)
		if v < 0 {
			s.Classes.Other = max(s.Classes.Other+sign, 0)
			continue
		}
		for int64(len(s.Classes.Counts)) <= v {
			if v > 1<<24 { // a label no class list has: not counted by id
				s.Classes.Other = max(s.Classes.Other+sign, 0)
				break
			}
			s.Classes.Counts = append(s.Classes.Counts, 0)
		}
		if v < int64(len(s.Classes.Counts)) {
			s.Classes.Counts[v] = max(s.Classes.Counts[v]+sign, 0)
		}
	}
}

// Clone returns a deep copy.
func (s Stats) Clone() Stats {
	s.MinShape, s.MaxShape = slices.Clone(s.MinShape), slices.Clone(s.MaxShape)
	if s.Classes != nil {
		s.Classes = &ClassCounts{Counts: slices.Clone(s.Classes.Counts), Other: s.Classes.Other}
	}
	return s
}

// MergeShape widens the shape bounds to [lo, hi] (see Merge).
func (s *Stats) MergeShape(lo, hi []int) {
	switch {
	case lo == nil:
	case s.MinShape == nil:
		s.MinShape, s.MaxShape = slices.Clone(lo), slices.Clone(hi)
	case len(s.MinShape) == len(lo):
		for i := range lo {
			s.MinShape[i] = min(s.MinShape[i], lo[i])
			s.MaxShape[i] = max(s.MaxShape[i], hi[i])
		}
	}
}

// Schema is an ordered list of columns.
type Schema struct {
	Columns []Column `json:"columns"`
}

// Column returns the column named name.
func (s *Schema) Column(name string) (*Column, bool) {
	for i := range s.Columns {
		if s.Columns[i].Name == name {
			return &s.Columns[i], true
		}
	}
	return nil, false
}

// ByUID returns the column with the given uid.
func (s *Schema) ByUID(uid int) (*Column, bool) {
	for i := range s.Columns {
		if s.Columns[i].UID == uid {
			return &s.Columns[i], true
		}
	}
	return nil, false
}

// Names returns the column names in order.
func (s *Schema) Names() []string {
	out := make([]string, len(s.Columns))
	for i, c := range s.Columns {
		out[i] = c.Name
	}
	return out
}

// Clone returns a deep copy.
func (s Schema) Clone() Schema {
	out := Schema{Columns: make([]Column, len(s.Columns))}
	for i, c := range s.Columns {
		c.Shape = slices.Clone(c.Shape)
		c.ClassNames = slices.Clone(c.ClassNames)
		out.Columns[i] = c
	}
	return out
}

var nameRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_.\-]{0,127}$`) })

// The values of Column.Key.
const (
	KeyPrimary = "primary"
	KeyUnique  = "unique"
)

// Normalize fills defaults (kind generic, compressions none, chunk size,
// dtype implied by the kind) and validates every column. It returns an error
// wrapping ErrInvalid naming the column and the rule it breaks.
func (s *Schema) Normalize() error {
	seen := map[string]bool{}
	for i := range s.Columns {
		c := &s.Columns[i]
		if err := c.Normalize(); err != nil {
			return err
		}
		if seen[c.Name] {
			return base.Markf(ErrInvalid, "column %q appears twice", c.Name)
		}
		seen[c.Name] = true
	}
	var primary []string
	for _, c := range s.Columns {
		if c.Key == KeyPrimary {
			primary = append(primary, c.Name)
		}
	}
	if len(primary) > 1 {
		return base.Markf(ErrInvalid, "columns %s are each a primary key: a table has at most one", strings.Join(primary, ", "))
	}
	return nil
}

// checkKey checks the column's Key and Serial: a key is an integer or
// text scalar, a serial column an integer scalar.
func (c *Column) checkKey() error {
	scalar := c.Shape != nil && len(c.Shape) == 0 || c.DType.Variable() && c.Shape == nil
	switch c.Key {
	case "":
	case KeyPrimary, KeyUnique:
		if !scalar || !c.DType.Integer() && c.DType != Text {
			return base.Markf(ErrInvalid, "column %q: a %s key is an integer or text scalar, got %s %s shape %v", c.Name, c.Key, c.Kind, c.DType, c.Shape)
		}
	default:
		return base.Markf(ErrInvalid, "column %q: key %q (want primary or unique)", c.Name, c.Key)
	}
	if c.Serial && (!scalar || !c.DType.Integer()) {
		return base.Markf(ErrInvalid, "column %q: a serial column is an integer scalar, got %s %s shape %v", c.Name, c.Kind, c.DType, c.Shape)
	}
	return nil
}

// Normalize fills the column's defaults and validates it.
func (c *Column) Normalize() error {
	if !nameRE().MatchString(c.Name) {
		return base.Markf(ErrInvalid, "column name %q: want letters, digits, '_', '-', '.', starting with a letter or '_'", c.Name)
	}
	if c.Kind == "" {
		c.Kind = Generic
	}
	if c.DType == Invalid {
		switch c.Kind {
		case Image, Video, Mask:
			c.DType = Uint8
		case TextKind, Link:
			c.DType = Text
		case JSONKind:
			c.DType = JSON
		case ClassLabel:
			c.DType = Int64
		case BBox, Embedding, PointCloud, Audio:
			c.DType = Float32
		default:
			return base.Markf(ErrInvalid, "column %q: dtype is missing", c.Name)
		}
	}
	if !c.DType.Valid() {
		return base.Markf(ErrInvalid, "column %q: unknown dtype code %d", c.Name, uint8(c.DType))
	}
	if c.SampleCompression == "" {
		c.SampleCompression = SampleNone
	}
	if c.ChunkCompression == "" {
		c.ChunkCompression = CodecNone
	}
	if c.ChunkBytes == 0 {
		c.ChunkBytes = DefaultChunkBytes
	}
	if c.ChunkBytes < 1024 || c.ChunkBytes > 1<<30 {
		return base.Markf(ErrInvalid, "column %q: chunk_bytes %d out of range [1024, 1073741824]", c.Name, c.ChunkBytes)
	}
	switch c.SampleCompression {
	case SampleNone, PNG, JPEG, VideoCompression, AudioCompression:
	default:
		return base.Markf(ErrInvalid, "column %q: sample_compression %q (want none, png, jpeg, video or audio)", c.Name, c.SampleCompression)
	}
	switch c.ChunkCompression {
	case CodecNone, LZ4, Zstd:
	default:
		return base.Markf(ErrInvalid, "column %q: chunk_compression %q (want none, lz4 or zstd)", c.Name, c.ChunkCompression)
	}
	if c.SampleCompression != SampleNone {
		if c.ChunkCompression != CodecNone {
			return base.Markf(ErrInvalid, "column %q: sample compression %s and chunk compression %s are exclusive", c.Name, c.SampleCompression, c.ChunkCompression)
		}
		if err := c.checkMediaCompression(); err != nil || c.SampleCompression.Media() {
			return err
		}
		if c.DType != Uint8 || (c.Kind != Image && c.Kind != Mask && c.Kind != Generic) {
			return base.Markf(ErrInvalid, "column %q: %s compression needs a uint8 image column, got %s %s", c.Name, c.SampleCompression, c.Kind, c.DType)
		}
	}
	for _, d := range c.Shape {
		if d < -1 {
			return base.Markf(ErrInvalid, "column %q: shape %v: dimensions are sizes or null", c.Name, c.Shape)
		}
	}
	if err := c.checkKey(); err != nil {
		return err
	}
	return c.checkKind()
}

// checkKind checks the column against its kind's rule (kindRules).
func (c *Column) checkKind() error {
	bad := func(format string, a ...any) error {
		return base.Markf(ErrInvalid, "column %q (kind %s): %s", c.Name, c.Kind, fmt.Sprintf(format, a...))
	}
	rule, ok := kindRules[c.Kind]
	if !ok {
		return base.Markf(ErrInvalid, "column %q: unknown kind %q (want one of %s)", c.Name, c.Kind, kindList())
	}
	if rule.dtype != nil && !rule.dtype(c.DType) {
		return bad("dtype %s, want %s", c.DType, rule.dtypeWant)
	}
	if c.Shape != nil && rule.shape != nil && (!rule.shape(c.Shape) || rule.fixed && slices.Min(c.Shape) < 0) {
		return bad("shape %v, want %s", c.Shape, rule.shapeWant)
	}
	if c.Kind == BBox {
		if c.BBoxFormat == "" {
			c.BBoxFormat = BBoxXYXY
		}
		switch c.BBoxFormat {
		case BBoxXYXY, BBoxXYWH, BBoxCXCYWH:
		default:
			return bad("bbox_format %q, want xyxy, xywh or cxcywh", c.BBoxFormat)
		}
	}
	if c.DType.Variable() && len(c.Shape) > 0 {
		return bad("a %s column has no shape, got %v", c.DType, c.Shape)
	}
	if len(c.ClassNames) > 0 && c.Kind != ClassLabel {
		return bad("class_names only belong to class_label columns")
	}
	return nil
}

func kindList() string {
	var s []string
	for _, k := range Kinds() {
		s = append(s, string(k))
	}
	return strings.Join(s, ", ")
}

// Shape is a list of dimension sizes; -1 marks a ragged dimension. In JSON a
// ragged dimension is null.
type Shape []int

// MarshalJSON writes -1 as null, and a nil Shape as null.
func (s Shape) MarshalJSON() ([]byte, error) {
	if s == nil {
		return []byte("null"), nil
	}
	out := make([]*int, len(s))
	for i := range s {
		if s[i] >= 0 {
			v := s[i]
			out[i] = &v
		}
	}
	return json.Marshal(out)
}

// UnmarshalJSON reads null (or -1) as a ragged dimension.
func (s *Shape) UnmarshalJSON(b []byte) error {
	if string(b) == "null" {
		*s = nil
		return nil
	}
	var in []*int
	if err := json.Unmarshal(b, &in); err != nil {
		return base.Markf(ErrInvalid, "shape must be a list of sizes or nulls, got %s", b)
	}
	out := make(Shape, len(in))
	for i, v := range in {
		out[i] = -1
		if v != nil {
			out[i] = *v
		}
	}
	*s = out
	return nil
}

// Fixed reports whether every dimension has a declared size.
func (s Shape) Fixed() bool {
	if s == nil {
		return false
	}
	for _, d := range s {
		if d < 0 {
			return false
		}
	}
	return true
}
