package schema

import "slices"

// kindRule is what a kind asks of a column: a dtype, and a shape that the
// declared shape (where a null dimension matches any size) and every
// sample's shape must fit. Column.Normalize checks the declared dtype and
// shape against it, Column.CheckSample each sample's shape.
type kindRule struct {
	dtype     func(DType) bool // nil: any dtype
	dtypeWant string
	shape     func(Shape) bool // nil: any shape
	shapeWant string
	// fixed: the declared shape names every dimension's size (no nulls).
	fixed bool
}

// kindRules holds the rule of every kind; a kind missing here is unknown.
var kindRules = map[Kind]kindRule{
	Generic: {},
	Image: {
		dtype: dtypeIn(Uint8, Uint16, Float32), dtypeWant: "uint8, uint16 or float32",
		shape: func(s Shape) bool { return len(s) == 3 && sizeIn(s[2], 1, 3, 4) }, shapeWant: "[height, width, 1|3|4]",
	},
	Video: {
		dtype: dtypeIn(Uint8), dtypeWant: "uint8",
		shape: ndimIn(4), shapeWant: "[frames, height, width, channels]",
	},
	Audio: {
		dtype: numeric, dtypeWant: "a numeric dtype",
		shape: ndimIn(1, 2), shapeWant: "[samples] or [samples, channels]",
	},
	ClassLabel: {
		dtype: DType.Integer, dtypeWant: "an integer dtype",
		shape: ndimIn(0, 1), shapeWant: "[] (one label) or [n] (several)",
	},
	BBox: {
		dtype: numeric, dtypeWant: "a numeric dtype",
		shape: func(s Shape) bool { return len(s) == 2 && s[1] == 4 }, shapeWant: "[boxes, 4]",
	},
	Mask: {
		dtype: dtypeIn(Bool, Uint8), dtypeWant: "bool or uint8",
		shape: ndimIn(2, 3), shapeWant: "[height, width] or [height, width, n]",
	},
	Embedding: {
		dtype: func(d DType) bool { return d.Float() || d == Int8 || d == Uint8 }, dtypeWant: "a float dtype (or int8/uint8 quantized)",
		shape: ndimIn(1), shapeWant: "a fixed [dimensions]", fixed: true,
	},
	TextKind: {dtype: dtypeIn(Text), dtypeWant: "text"},
	Link:     {dtype: dtypeIn(Text), dtypeWant: "text"},
	JSONKind: {dtype: dtypeIn(JSON), dtypeWant: "json"},
	PointCloud: {
		dtype: func(d DType) bool { return d.Float() || d.Integer() }, dtypeWant: "a numeric dtype",
		shape: func(s Shape) bool { return len(s) == 2 && (s[1] < 0 || s[1] >= 3) }, shapeWant: "[points, >=3]",
	},
}

func dtypeIn(ds ...DType) func(DType) bool {
	return func(d DType) bool { return slices.Contains(ds, d) }
}

func numeric(d DType) bool { return !d.Variable() && d != Bool }

func ndimIn(ns ...int) func(Shape) bool {
	return func(s Shape) bool { return slices.Contains(ns, len(s)) }
}

// sizeIn reports whether dimension d is one of sizes, or null (any size).
func sizeIn(d int, sizes ...int) bool { return d < 0 || slices.Contains(sizes, d) }
