package schema

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/lochdata/loch/internal/base"
)

// CheckSample validates one sample of the column: its shape against the
// declared shape and the kind's rules, and, for text and json, its bytes. data
// is the sample's decoded bytes (for png/jpeg-compressed input, pass nil and
// only the shape is checked). The error wraps ErrInvalid and names the
// column, what was expected and what was found.
func (c *Column) CheckSample(shape []int, data []byte) error {
	bad := func(format string, a ...any) error {
		return base.Markf(ErrInvalid, "column %q (%s %s): %s", c.Name, c.Kind, c.DType, fmt.Sprintf(format, a...))
	}
	if c.DType.Variable() {
		if len(shape) != 1 {
			return bad("a %s sample has shape [length], got %v", c.DType, shape)
		}
		if data != nil {
			if len(data) != shape[0] {
				return bad("sample length %d disagrees with its shape %v", len(data), shape)
			}
			switch c.DType {
			case Text:
				if !utf8.Valid(data) {
					return bad("text is not valid UTF-8")
				}
			case JSON:
				if !json.Valid(data) {
					return bad("value is not valid JSON: %.60q", data)
				}
			}
		}
		return nil
	}
	if c.Shape != nil {
		if len(shape) != len(c.Shape) {
			return bad("shape %v has %d dimensions, want %d (declared %s)", shape, len(shape), len(c.Shape), FormatShape(c.Shape))
		}
		for i, d := range c.Shape {
			if d >= 0 && shape[i] != d {
				return bad("shape %v, want %s", shape, FormatShape(c.Shape))
			}
		}
	}
	for _, d := range shape {
		if d < 0 {
			return bad("negative dimension in shape %v", shape)
		}
	}
	n := NumElements(shape)
	if data != nil && len(data) != n*c.DType.Size() {
		return bad("%d bytes for shape %v, want %d", len(data), shape, n*c.DType.Size())
	}
	if rule := kindRules[c.Kind]; rule.shape != nil && !rule.shape(shape) {
		return bad("shape %v, want %s", shape, rule.shapeWant)
	}
	if c.Kind == ClassLabel && len(c.ClassNames) > 0 && data != nil {
		for i := 0; i < n; i++ {
			v := c.DType.Int(data, i)
			if v < 0 || v >= int64(len(c.ClassNames)) {
				return bad("label %d out of range [0, %d)", v, len(c.ClassNames))
			}
		}
	}
	return nil
}

// NumElements is the product of the dimensions (1 for a scalar).
func NumElements(shape []int) int {
	n := 1
	for _, d := range shape {
		n *= d
	}
	return n
}

// FormatShape writes a shape with '?' for ragged dimensions.
func FormatShape(s []int) string {
	out := "["
	for i, d := range s {
		if i > 0 {
			out += ", "
		}
		if d < 0 {
			out += "?"
		} else {
			out += fmt.Sprint(d)
		}
	}
	return out + "]"
}

// ClassName is the name of class v of a class-label column; ok is false
// when c names no class v.
func (c *Column) ClassName(v int64) (name string, ok bool) {
	if v >= 0 && v < int64(len(c.ClassNames)) {
		return c.ClassNames[v], true
	}
	return "", false
}
