package ingest

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"strconv"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/half"
	"github.com/lochdata/loch/schema"
)

// vkind is the type of one source value, as JSON sees it.
type vkind uint8

const (
	vNull vkind = iota
	vBool
	vInt
	vFloat
	vString
	vJSON // object or array
	numVKinds
)

// value is one field value of a JSONL or CSV record.
type value struct {
	kind vkind
	raw  string // the value's text: JSON (JSONL) or the cell (CSV)
	str  string // the decoded string, for vString
}

// field is a named value of a record.
type field struct {
	name string
	v    value
}

// jsonValue classifies one JSON value (as raw text).
func jsonValue(raw []byte) (value, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return value{}, base.Markf(ErrInvalidSource, "empty value")
	}
	v := value{raw: string(raw)}
	switch raw[0] {
	case 'n':
		v.kind = vNull
	case 't', 'f':
		v.kind = vBool
	case '"':
		v.kind = vString
		if err := json.Unmarshal(raw, &v.str); err != nil {
			return value{}, base.Markf(ErrInvalidSource, "%v", err)
		}
	case '{', '[':
		v.kind = vJSON
	default:
		v.kind = numberKind(v.raw)
	}
	return v, nil
}

// numberKind says whether a JSON number is an integer that fits int64.
func numberKind(s string) vkind {
	if !strings.ContainsAny(s, ".eE") {
		if _, err := strconv.ParseInt(s, 10, 64); err == nil {
			return vInt
		}
	}
	return vFloat
}

// cellValue classifies one CSV cell: empty is null, then integer, number,
// boolean (true/false in any case), JSON object or array, else string.
func cellValue(cell string) value {
	v := value{raw: cell, str: cell}
	switch {
	case cell == "":
		v.kind = vNull
	case isInt(cell):
		v.kind = vInt
	case isFloat(cell):
		v.kind = vFloat
	case strings.EqualFold(cell, "true") || strings.EqualFold(cell, "false"):
		v.kind = vBool
	case (cell[0] == '{' || cell[0] == '[') && json.Valid([]byte(cell)):
		v.kind = vJSON
	default:
		v.kind = vString
	}
	return v
}

func isInt(s string) bool {
	if leadingZero(s) {
		return false
	}
	_, err := strconv.ParseInt(s, 10, 64)
	return err == nil
}

func isFloat(s string) bool {
	if leadingZero(s) || strings.ContainsAny(s, "_xXpP") { // Go syntax that no CSV writer means as a number
		return false
	}
	_, err := strconv.ParseFloat(s, 64)
	return err == nil
}

// leadingZero reports a number written with a leading zero ("007", "-01"):
// an identifier or a code (a zip code), not a number.
func leadingZero(s string) bool {
	s = strings.TrimLeft(s, "+-")
	return len(s) > 1 && s[0] == '0' && s[1] >= '0' && s[1] <= '9'
}

// kindSet is the set of value kinds seen in a field.
type kindSet uint8

func (k kindSet) with(v vkind) kindSet { return k | 1<<v }

// infer returns the column type of a field whose values had the kinds in k:
// integers give int64, numbers float64, booleans bool, strings text,
// objects and arrays json; a field never set gives text; any other mix
// gives mixed (json for JSONL, which keeps each value's type; text for CSV).
func (k kindSet) infer(mixed vkind) vkind {
	k &^= 1 << vNull
	switch k {
	case 0:
		return vString
	case 1 << vBool:
		return vBool
	case 1 << vInt:
		return vInt
	case 1 << vFloat, 1<<vInt | 1<<vFloat:
		return vFloat
	case 1 << vString:
		return vString
	case 1 << vJSON:
		return vJSON
	}
	return mixed
}

// inferredColumn returns the column of an inferred field type.
func inferredColumn(name string, k vkind) schema.Column {
	switch k {
	case vBool:
		return schema.Column{Name: name, DType: schema.Bool, Shape: schema.Shape{}}
	case vInt:
		return schema.Column{Name: name, DType: schema.Int64, Shape: schema.Shape{}}
	case vFloat:
		return schema.Column{Name: name, DType: schema.Float64, Shape: schema.Shape{}}
	case vJSON:
		return schema.Column{Name: name, Kind: schema.JSONKind, DType: schema.JSON}
	}
	return schema.Column{Name: name, Kind: schema.TextKind, DType: schema.Text}
}

// valueSample converts a non-image value to a sample of column c; classes
// maps c's class names to labels.
func valueSample(c *schema.Column, classes map[string]int64, v value) (loch.Sample, error) {
	if v.kind == vNull {
		return loch.Null(), nil
	}
	switch c.DType {
	case schema.Text:
		if v.kind == vString {
			return loch.String(v.str), nil
		}
		return loch.String(v.raw), nil
	case schema.Bytes:
		if v.kind == vString {
			return loch.Bytes([]byte(v.str)), nil
		}
		return loch.Bytes([]byte(v.raw)), nil
	case schema.JSON:
		switch {
		case v.kind == vBool:
			return loch.String(strings.ToLower(v.raw)), nil
		case v.kind != vString && json.Valid([]byte(v.raw)):
			return loch.Bytes([]byte(v.raw)), nil
		}
		s := v.str
		if v.kind != vString {
			s = v.raw
		}
		return loch.JSON(s)
	}
	if v.kind == vString && c.Kind == schema.ClassLabel && len(c.ClassNames) > 0 {
		label, ok := classes[v.str]
		if !ok {
			return loch.Sample{}, base.Markf(ErrInvalidSource, "%q is not a class of column %q", v.str, c.Name)
		}
		var b [8]byte
		binary.LittleEndian.PutUint64(b[:], uint64(label))
		data, err := convertInts(c.DType, b[:])
		if err != nil {
			return loch.Sample{}, err
		}
		return loch.Sample{Shape: []int{}, Data: data}, nil
	}
	var tree any
	if v.kind == vJSON || (v.kind == vString && strings.HasPrefix(strings.TrimSpace(v.str), "[")) {
		text := v.raw
		if v.kind == vString {
			text = v.str
		}
		dec := json.NewDecoder(strings.NewReader(text))
		dec.UseNumber()
		if err := dec.Decode(&tree); err != nil {
			return loch.Sample{}, base.Markf(ErrInvalidSource, "%v", err)
		}
	} else if v.kind == vBool {
		tree = strings.EqualFold(v.raw, "true")
	} else {
		tree = json.Number(v.raw)
		if v.kind == vString {
			tree = json.Number(strings.TrimSpace(v.str))
		}
	}
	shape, err := treeShape(tree)
	if err != nil {
		return loch.Sample{}, err
	}
	data := make([]byte, 0, schema.NumElements(shape)*c.DType.Size())
	data, err = appendTree(data, c.DType, tree)
	if err != nil {
		return loch.Sample{}, err
	}
	return loch.Sample{Shape: shape, Data: data}, nil
}

// treeShape returns the dimensions of nested JSON arrays (none for a
// scalar), checking that they are rectangular.
func treeShape(t any) ([]int, error) {
	shape := []int{}
	for x := t; ; {
		arr, ok := x.([]any)
		if !ok {
			break
		}
		shape = append(shape, len(arr))
		if len(shape) > 32 {
			return nil, base.Markf(ErrInvalidSource, "arrays nested deeper than 32")
		}
		if len(arr) == 0 {
			break
		}
		x = arr[0]
	}
	return shape, checkTree(t, shape, 0)
}

func checkTree(t any, shape []int, depth int) error {
	arr, ok := t.([]any)
	if depth == len(shape) {
		if ok {
			return base.Markf(ErrInvalidSource, "ragged nested arrays: an array at depth %d, want a number", depth)
		}
		if _, obj := t.(map[string]any); obj {
			return base.Markf(ErrInvalidSource, "an object where a number is expected")
		}
		return nil
	}
	if !ok || len(arr) != shape[depth] {
		return base.Markf(ErrInvalidSource, "ragged nested arrays at depth %d (want length %d)", depth, shape[depth])
	}
	for _, x := range arr {
		if err := checkTree(x, shape, depth+1); err != nil {
			return err
		}
	}
	return nil
}

// appendTree appends the elements of a (nested) JSON value, in C order, as
// dtype dt.
func appendTree(dst []byte, dt schema.DType, t any) ([]byte, error) {
	switch x := t.(type) {
	case []any:
		var err error
		for _, e := range x {
			if dst, err = appendTree(dst, dt, e); err != nil {
				return nil, err
			}
		}
		return dst, nil
	case bool:
		if dt == schema.Bool {
			if x {
				return append(dst, 1), nil
			}
			return append(dst, 0), nil
		}
		return nil, base.Markf(ErrInvalidSource, "boolean %v for a %s column", x, dt)
	case json.Number:
		return appendNumber(dst, dt, string(x))
	case nil:
		return nil, base.Markf(ErrInvalidSource, "null inside an array")
	}
	return nil, base.Markf(ErrInvalidSource, "%T value for a %s column", t, dt)
}

// appendNumber appends the number s (decimal text) as one element of dt.
func appendNumber(dst []byte, dt schema.DType, s string) ([]byte, error) {
	le := binary.LittleEndian
	bad := func(why string) ([]byte, error) {
		return nil, base.Markf(ErrInvalidSource, "%q %s for a %s column", s, why, dt)
	}
	switch {
	case dt == schema.Bool:
		switch s {
		case "0":
			return append(dst, 0), nil
		case "1":
			return append(dst, 1), nil
		}
		return bad("is not a boolean")
	case dt.Integer():
		bits := dt.Size() * 8
		unsigned := dt == schema.Uint8 || dt == schema.Uint16 || dt == schema.Uint32 || dt == schema.Uint64
		var u uint64
		var err error
		if unsigned {
			u, err = strconv.ParseUint(s, 10, bits)
		} else {
			var v int64
			v, err = strconv.ParseInt(s, 10, bits)
			u = uint64(v)
		}
		if err != nil {
			// 3.0 is a fine integer; 3.5, 1e400 and "cat" are not.
			f, ferr := strconv.ParseFloat(s, 64)
			lo, hi := -math.Ldexp(1, bits-1), math.Ldexp(1, bits-1)
			if unsigned {
				lo, hi = 0, math.Ldexp(1, bits)
			}
			switch {
			case ferr != nil && !isRangeErr(ferr):
				return bad("is not a number")
			case f != math.Trunc(f):
				return bad("is not an integer")
			case ferr != nil || f < lo || f >= hi:
				return bad("is out of range")
			case unsigned:
				u = uint64(f)
			default:
				u = uint64(int64(f))
			}
		}
		switch dt.Size() {
		case 1:
			return append(dst, byte(u)), nil
		case 2:
			return le.AppendUint16(dst, uint16(u)), nil
		case 4:
			return le.AppendUint32(dst, uint32(u)), nil
		}
		return le.AppendUint64(dst, u), nil
	case dt.Float():
		f, err := strconv.ParseFloat(s, 64)
		if err != nil && !isRangeErr(err) {
			return bad("is not a number")
		}
		switch dt {
		case schema.Float64:
			return le.AppendUint64(dst, math.Float64bits(f)), nil
		case schema.Float32:
			return le.AppendUint32(dst, math.Float32bits(float32(f))), nil
		case schema.Float16:
			return le.AppendUint16(dst, half.Float16(float32(f))), nil
		case schema.BFloat16:
			return le.AppendUint16(dst, half.BFloat16(float32(f))), nil
		}
	}
	return bad("cannot be stored")
}

func isRangeErr(err error) bool {
	ne, ok := err.(*strconv.NumError)
	return ok && ne.Err == strconv.ErrRange
}

// convertInts converts one little-endian int64 to integer dtype dt.
func convertInts(dt schema.DType, b []byte) ([]byte, error) {
	v := int64(binary.LittleEndian.Uint64(b))
	return appendNumber(nil, dt, strconv.FormatInt(v, 10))
}
