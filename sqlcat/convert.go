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
	return convertNumbers(c, v)
}

// convertNumbers converts a number or a (nested) list of numbers, or
// pgvector's text of one, to a sample of numeric column c.
func convertNumbers(c *schema.Column, v any) (loch.Sample, error) {
	bad := func(want string) (loch.Sample, error) {
		return loch.Sample{}, fmt.Errorf("%s, want %s", describe(v), want)
	}
	if str, ok := v.(string); ok && len(c.Shape) > 0 {
		// pgvector's text form of a vector, '[1, 2, 3]' (nested for a
		// tensor): a JSON array of numbers
		if list, ok := jsonNumbers(str); ok {
			v = list
		}
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

// jsonNumbers reads s as a JSON array (of arrays) of numbers, each an
// int64 when it is a whole number that fits, else a float64.
func jsonNumbers(s string) ([]any, bool) {
	s = strings.TrimSpace(s)
	if !strings.HasPrefix(s, "[") {
		return nil, false
	}
	dec := json.NewDecoder(strings.NewReader(s))
	dec.UseNumber()
	var list []any
	if err := dec.Decode(&list); err != nil || dec.More() {
		return nil, false
	}
	var conv func(x any) (any, bool)
	conv = func(x any) (any, bool) {
		switch y := x.(type) {
		case json.Number:
			if n, err := y.Int64(); err == nil {
				return n, true
			}
			f, err := y.Float64()
			return f, err == nil
		case []any:
			for i, e := range y {
				var ok bool
				if y[i], ok = conv(e); !ok {
					return nil, false
				}
			}
			return y, true
		}
		return nil, false
	}
	out, ok := conv(list)
	if !ok {
		return nil, false
	}
	return out.([]any), true
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
	if b, ok := v.(bool); ok && dt == schema.Bool {
		if b {
			return append(dst, 1), nil
		}
		return append(dst, 0), nil
	}
	n, err := readNumber(dt, v)
	if err != nil {
		return nil, err
	}
	if dt.Float() {
		return appendFloat(dst, dt, n.float()), nil
	}
	return appendInt(dst, dt, n)
}

// number is a value read as a number: an integer in i, one above
// math.MaxInt64 in u, or a float in f, as kind says.
type number struct {
	kind byte // 'i', 'u' or 'f'
	i    int64
	u    uint64
	f    float64
}

// readNumber reads v (a Go value as database/sql returns DuckDB's) as a
// number for a column of dtype dt (named in errors).
func readNumber(dt schema.DType, v any) (number, error) {
	switch x := v.(type) {
	case bool:
		if x {
			return number{kind: 'i', i: 1}, nil
		}
		return number{kind: 'i'}, nil
	case int8:
		return number{kind: 'i', i: int64(x)}, nil
	case int16:
		return number{kind: 'i', i: int64(x)}, nil
	case int32:
		return number{kind: 'i', i: int64(x)}, nil
	case int64:
		return number{kind: 'i', i: x}, nil
	case int:
		return number{kind: 'i', i: int64(x)}, nil
	case uint8:
		return number{kind: 'i', i: int64(x)}, nil
	case uint16:
		return number{kind: 'i', i: int64(x)}, nil
	case uint32:
		return number{kind: 'i', i: int64(x)}, nil
	case uint64:
		return unsigned(x), nil
	case float32:
		return number{kind: 'f', f: float64(x)}, nil
	case float64:
		return number{kind: 'f', f: x}, nil
	case *big.Int:
		if !x.IsInt64() {
			return number{}, fmt.Errorf("%s is out of range of %s", x, dt)
		}
		return number{kind: 'i', i: x.Int64()}, nil
	case string:
		return parseNumber(dt, x)
	case interface{ Float64() float64 }: // DuckDB's DECIMAL (0.5 is one)
		return number{kind: 'f', f: x.Float64()}, nil
	case nil:
		return number{}, fmt.Errorf("NULL inside a list (a %s column takes no nulls in a tensor)", dt)
	}
	return number{}, fmt.Errorf("a %T is not a number (a %s column)", v, dt)
}

// unsigned is u as a number: in i when it fits.
func unsigned(u uint64) number {
	if u <= math.MaxInt64 {
		return number{kind: 'i', i: int64(u)}
	}
	return number{kind: 'u', u: u}
}

// parseNumber reads VARCHAR x holding a number.
func parseNumber(dt schema.DType, x string) (number, error) {
	s := strings.TrimSpace(x)
	if n, err := strconv.ParseInt(s, 10, 64); err == nil {
		return number{kind: 'i', i: n}, nil
	}
	if n, err := strconv.ParseUint(s, 10, 64); err == nil {
		return unsigned(n), nil
	}
	if n, err := strconv.ParseFloat(s, 64); err == nil {
		return number{kind: 'f', f: n}, nil
	}
	return number{}, fmt.Errorf("%q is not a number (a %s column)", cut(x, 40), dt)
}

// float is n as a float64.
func (n number) float() float64 {
	switch n.kind {
	case 'i':
		return float64(n.i)
	case 'u':
		return float64(n.u)
	}
	return n.f
}

// appendFloat appends f as float dtype dt (float16 and bfloat16 through
// internal/half).
func appendFloat(dst []byte, dt schema.DType, f float64) []byte {
	le := binary.LittleEndian
	switch dt {
	case schema.Float16:
		return le.AppendUint16(dst, half.Float16(float32(f)))
	case schema.BFloat16:
		return le.AppendUint16(dst, half.BFloat16(float32(f)))
	case schema.Float32:
		return le.AppendUint32(dst, math.Float32bits(float32(f)))
	}
	return le.AppendUint64(dst, math.Float64bits(f))
}

// appendInt appends n as integer (or bool) dtype dt: in range, and a
// float only without a fraction.
func appendInt(dst []byte, dt schema.DType, n number) ([]byte, error) {
	if n.kind == 'f' {
		var err error
		if n, err = n.integer(dt); err != nil {
			return nil, err
		}
	}
	if n.kind == 'u' {
		if dt != schema.Uint64 {
			return nil, fmt.Errorf("%d is out of range of %s", n.u, dt)
		}
		return binary.LittleEndian.AppendUint64(dst, n.u), nil
	}
	if lo, hi := intRange(dt); n.i < lo || n.i > hi {
		return nil, fmt.Errorf("%d is out of range of %s", n.i, dt)
	}
	le := binary.LittleEndian
	switch dt.Size() {
	case 1:
		return append(dst, byte(n.i)), nil
	case 2:
		return le.AppendUint16(dst, uint16(n.i)), nil
	case 4:
		return le.AppendUint32(dst, uint32(n.i)), nil
	}
	return le.AppendUint64(dst, uint64(n.i)), nil
}

// integer is float n as an integer, refused with a fraction or beyond
// the range of uint64 and int64.
func (n number) integer(dt schema.DType) (number, error) {
	f := n.f
	switch {
	case f != math.Trunc(f) || math.IsInf(f, 0) || math.IsNaN(f):
		return number{}, fmt.Errorf("%v has a fraction (a %s column takes integers)", f, dt)
	case f >= 1<<64 || f < -(1<<63):
		return number{}, fmt.Errorf("%v is out of range of %s", f, dt)
	case f >= 1<<63:
		return number{kind: 'u', u: uint64(f)}, nil
	}
	return number{kind: 'i', i: int64(f)}, nil
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
