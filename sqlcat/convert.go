package sqlcat

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"reflect"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/internal/half"
	"github.com/lochdata/loch/schema"
)

// toSample converts one DuckDB value (as database/sql returns it) to a
// sample of column c. Its shape is checked against the column when the
// row is staged (Dataset.Extend, Update).
func toSample(c *schema.Column, v any) (loch.Sample, error) {
	if v == nil {
		return loch.Sample{Null: true}, nil
	}
	return convert(c, v)
}

// describe names a value's DuckDB-side type for an error.
func describe(v any) string {
	switch x := v.(type) {
	case string:
		return fmt.Sprintf("VARCHAR %q", cut(x, 40))
	case []byte:
		return fmt.Sprintf("a BLOB of %d bytes", len(x))
	case []any:
		return fmt.Sprintf("a LIST of %d", len(x))
	case map[string]any:
		return "a STRUCT"
	case bool:
		return fmt.Sprintf("BOOLEAN %v", x)
	}
	return fmt.Sprintf("%T %v", v, v)
}

func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n] + "..."
}

func convert(c *schema.Column, v any) (loch.Sample, error) {
	bad := func(want string) (loch.Sample, error) {
		return loch.Sample{}, fmt.Errorf("%s, want %s", describe(v), want)
	}
	switch c.DType {
	case schema.Text:
		s, ok := v.(string)
		if !ok {
			return bad("VARCHAR")
		}
		return loch.Sample{Data: []byte(s)}, nil
	case schema.JSON:
		var b []byte
		switch x := v.(type) {
		case string:
			b = []byte(x)
		case []byte:
			b = x
		default:
			var err error
			if b, err = json.Marshal(x); err != nil {
				return bad("JSON")
			}
		}
		if !json.Valid(b) {
			return bad("valid JSON")
		}
		return loch.Sample{Data: b}, nil
	case schema.Bytes:
		switch x := v.(type) {
		case []byte:
			return loch.Sample{Data: x}, nil
		case string:
			return loch.Sample{Data: []byte(x)}, nil
		}
		return bad("BLOB or VARCHAR")
	}
	if c.Kind == schema.ClassLabel {
		if s, ok := v.(string); ok && len(c.Shape) == 0 {
			for i, n := range c.ClassNames {
				if n == s {
					return loch.Sample{Shape: []int{}, Data: binary.LittleEndian.AppendUint64(nil, uint64(i))[:c.DType.Size()]}, nil
				}
			}
			if len(c.ClassNames) > 0 {
				return bad(fmt.Sprintf("one of the class names %s", strings.Join(quoteAll(c.ClassNames), ", ")))
			}
		}
	}
	if b, ok := v.([]byte); ok {
		if c.Kind == schema.Image || c.Kind == schema.Mask || c.Kind == schema.Generic && c.DType == schema.Uint8 {
			format, _, err := imaging.Config(b)
			if err == nil && (format == "png" || format == "jpeg") {
				return loch.Sample{Data: b, Encoding: schema.SampleCompression(format)}, nil
			}
			n := min(len(b), 4)
			return bad(fmt.Sprintf("png or jpeg bytes (first bytes % x)", b[:n]))
		}
		return bad(fmt.Sprintf("a number or a LIST of numbers (a %s column)", c.DType))
	}
	var shape []int
	var data []byte
	if err := flatten(c.DType, v, 0, &shape, &data, true); err != nil {
		return loch.Sample{}, fmt.Errorf("%s: %w", describe(v), err)
	}
	if shape == nil {
		shape = []int{}
	}
	if c.Kind == schema.ClassLabel && len(c.ClassNames) > 0 {
		n := schema.NumElements(shape)
		for i := range n {
			k := c.DType.Int(data, i)
			if k < 0 || k >= int64(len(c.ClassNames)) {
				return bad(fmt.Sprintf("a class index in [0, %d)", len(c.ClassNames)))
			}
		}
	}
	return loch.Sample{Shape: shape, Data: data}, nil
}

func quoteAll(ss []string) []string {
	out := make([]string, len(ss))
	for i, s := range ss {
		out[i] = strconv.Quote(s)
	}
	return out
}

// flatten appends the numbers of a value (a number, or nested LISTs or
// ARRAYs of numbers) to data, recording the shape from the first element
// at each depth and requiring every other to match.
func flatten(dt schema.DType, v any, depth int, shape *[]int, data *[]byte, first bool) error {
	rv := reflect.ValueOf(v)
	if rv.Kind() == reflect.Slice && rv.Type().Elem().Kind() != reflect.Uint8 || rv.Kind() == reflect.Array {
		n := rv.Len()
		if first {
			*shape = append(*shape, n)
		} else if depth >= len(*shape) || (*shape)[depth] != n {
			return fmt.Errorf("ragged nested list: want every list at depth %d to have the same length", depth+1)
		}
		for i := range n {
			if err := flatten(dt, rv.Index(i).Interface(), depth+1, shape, data, first && i == 0); err != nil {
				return err
			}
		}
		return nil
	}
	if !first && depth != len(*shape) {
		return fmt.Errorf("ragged nested list: a number at depth %d", depth)
	}
	var err error
	*data, err = appendNumber(*data, dt, v)
	return err
}

// appendNumber appends v as dtype dt: an integer column takes integers
// in range (and floats without a fraction), a float column any number,
// a bool column booleans (and 0 or 1); VARCHAR holding a number is read.
func appendNumber(dst []byte, dt schema.DType, v any) ([]byte, error) {
	var i int64
	var u uint64
	var f float64
	kind := 'i' // i: in i; u: in u; f: in f
	switch x := v.(type) {
	case bool:
		if x {
			i = 1
		}
		if dt == schema.Bool {
			return append(dst, byte(i)), nil
		}
	case int8:
		i = int64(x)
	case int16:
		i = int64(x)
	case int32:
		i = int64(x)
	case int64:
		i = x
	case int:
		i = int64(x)
	case uint8:
		u, kind = uint64(x), 'u'
	case uint16:
		u, kind = uint64(x), 'u'
	case uint32:
		u, kind = uint64(x), 'u'
	case uint64:
		u, kind = x, 'u'
	case float32:
		f, kind = float64(x), 'f'
	case float64:
		f, kind = x, 'f'
	case *big.Int:
		if !x.IsInt64() {
			return nil, fmt.Errorf("%s is out of range of %s", x, dt)
		}
		i = x.Int64()
	case string:
		s := strings.TrimSpace(x)
		if n, err := strconv.ParseInt(s, 10, 64); err == nil {
			i = n
		} else if n, err := strconv.ParseUint(s, 10, 64); err == nil {
			u, kind = n, 'u'
		} else if n, err := strconv.ParseFloat(s, 64); err == nil {
			f, kind = n, 'f'
		} else {
			return nil, fmt.Errorf("%q is not a number (a %s column)", cut(x, 40), dt)
		}
	case interface{ Float64() float64 }: // DuckDB's DECIMAL (0.5 is one)
		f, kind = x.Float64(), 'f'
	case nil:
		return nil, fmt.Errorf("NULL inside a list (a %s column takes no nulls in a tensor)", dt)
	default:
		return nil, fmt.Errorf("a %T is not a number (a %s column)", v, dt)
	}
	if kind == 'u' && u <= math.MaxInt64 {
		i, kind = int64(u), 'i'
	}
	if dt.Float() {
		switch kind {
		case 'i':
			f = float64(i)
		case 'u':
			f = float64(u)
		}
		le := binary.LittleEndian
		switch dt {
		case schema.Float16:
			return le.AppendUint16(dst, half.Float16(float32(f))), nil
		case schema.BFloat16:
			return le.AppendUint16(dst, half.BFloat16(float32(f))), nil
		case schema.Float32:
			return le.AppendUint32(dst, math.Float32bits(float32(f))), nil
		}
		return le.AppendUint64(dst, math.Float64bits(f)), nil
	}
	// integer or bool target
	if kind == 'f' {
		if f != math.Trunc(f) || math.IsInf(f, 0) || math.IsNaN(f) {
			return nil, fmt.Errorf("%v has a fraction (a %s column takes integers)", f, dt)
		}
		if f >= 0 && f >= 1<<63 {
			u, kind = uint64(f), 'u'
			if f >= 1<<64 {
				return nil, fmt.Errorf("%v is out of range of %s", f, dt)
			}
		} else if f < -(1 << 63) {
			return nil, fmt.Errorf("%v is out of range of %s", f, dt)
		} else {
			i, kind = int64(f), 'i'
		}
	}
	lo, hi := intRange(dt)
	if kind == 'u' {
		if dt != schema.Uint64 {
			return nil, fmt.Errorf("%d is out of range of %s", u, dt)
		}
		return binary.LittleEndian.AppendUint64(dst, u), nil
	}
	if i < lo || i > hi {
		return nil, fmt.Errorf("%d is out of range of %s", i, dt)
	}
	le := binary.LittleEndian
	switch dt.Size() {
	case 1:
		return append(dst, byte(i)), nil
	case 2:
		return le.AppendUint16(dst, uint16(i)), nil
	case 4:
		return le.AppendUint32(dst, uint32(i)), nil
	}
	return le.AppendUint64(dst, uint64(i)), nil
}

// intRange is the range of an integer or bool dtype within int64 (hi for
// uint64 is MaxInt64: larger values come as uint64 and are handled apart).
func intRange(dt schema.DType) (int64, int64) {
	switch dt {
	case schema.Bool:
		return 0, 1
	case schema.Int8:
		return math.MinInt8, math.MaxInt8
	case schema.Int16:
		return math.MinInt16, math.MaxInt16
	case schema.Int32:
		return math.MinInt32, math.MaxInt32
	case schema.Uint8:
		return 0, math.MaxUint8
	case schema.Uint16:
		return 0, math.MaxUint16
	case schema.Uint32:
		return 0, math.MaxUint32
	case schema.Uint64:
		return 0, math.MaxInt64
	}
	return math.MinInt64, math.MaxInt64
}
