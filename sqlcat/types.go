package sqlcat

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/query"
	"github.com/lochdata/loch/schema"
)

// refused are DuckDB types loch cannot store.
var refused = map[string]bool{
	"hugeint": true, "uhugeint": true, "decimal": true, "numeric": true, "date": true, "time": true,
	"timestamp": true, "timestamptz": true, "timestamp_s": true, "timestamp_ms": true, "timestamp_ns": true,
	"datetime": true, "interval": true, "uuid": true, "bit": true, "bitstring": true, "enum": true,
	"struct": true, "map": true, "union": true, "varint": true, "bignum": true,
}

// supported lists the types a column may have, for errors: DuckDB's that
// loch stores, then the names of typeRules.
var supported = "BOOLEAN, TINYINT..BIGINT, UTINYINT..UBIGINT, FLOAT, DOUBLE, VARCHAR, JSON, BLOB, numeric T[n] and T[], " +
	typeRuleNames()

// typeError is an unsupported or malformed type of column col.
func typeError(col, format string, a ...any) error {
	return fmt.Errorf("column %s: %s: %w", col, fmt.Sprintf(format, a...), loch.ErrInvalidArgument)
}

// parseType reads a type (DuckDB's or loch's) for column col and returns
// the column it makes (name set, not yet normalized).
func (p *parser) parseType(col string) (schema.Column, error) {
	c := schema.Column{Name: col}
	t := p.peek()
	if t.kind != tokIdent {
		return c, p.errorf("column %s: want a type", col)
	}
	p.next()
	name := t.text
	if name == "double" {
		p.accept("precision")
	}
	if refused[name] {
		return c, typeError(col, "type %s is not supported (supported: %s)", strings.ToUpper(name), supported)
	}
	if dt, ok := query.DTypeNamed(name); ok {
		if p.accept("(") { // VARCHAR(n), FLOAT(p): the arguments are not kept
			for !p.accept(")") {
				if p.next().kind == tokEOF {
					return c, p.errorf("column %s: unclosed (", col)
				}
			}
		}
		c.DType = dt
		switch dt {
		case schema.Text:
			c.Kind = schema.TextKind
		case schema.JSON:
			c.Kind = schema.JSONKind
		}
		var dims []int
		for p.peek().is("[") {
			p.next()
			n := -1
			if t := p.peek(); t.kind == tokNumber {
				v, err := strconv.Atoi(t.text)
				if err != nil || v <= 0 {
					return c, p.errorf("column %s: array size", col)
				}
				n = v
				p.next()
			}
			if err := p.expect("]"); err != nil {
				return c, err
			}
			dims = append(dims, n)
		}
		if len(dims) > 0 {
			if dt.Variable() {
				return c, typeError(col, "type %s%s is not supported: arrays must be of numbers (supported: %s)", strings.ToUpper(name), strings.Repeat("[]", len(dims)), supported)
			}
			// DuckDB nests outermost last: FLOAT[3][2] is 2 arrays of 3.
			c.Shape = make(schema.Shape, len(dims))
			for i, d := range dims {
				c.Shape[len(dims)-1-i] = d
			}
		} else if !dt.Variable() {
			c.Shape = schema.Shape{}
		}
		return c, nil
	}
	args, err := p.typeArgs(col)
	if err != nil {
		return c, err
	}
	return lochType(col, name, args)
}

// typeArg is one argument of a loch type: a string, a bare word (a dtype
// or NORMALIZED), a number, NULL, or a [shape].
type typeArg struct {
	kind  tokKind // tokString, tokIdent, tokNumber; tokPunct for a shape
	text  string
	shape schema.Shape
}

func (p *parser) typeArgs(col string) ([]typeArg, error) {
	if !p.accept("(") {
		return nil, nil
	}
	var args []typeArg
	for {
		t := p.next()
		switch {
		case t.kind == tokString || t.kind == tokIdent || t.kind == tokNumber:
			args = append(args, typeArg{kind: t.kind, text: t.text})
		case t.is("["):
			var sh schema.Shape
			for !p.accept("]") {
				d := p.next()
				switch {
				case d.kind == tokNumber:
					n, err := strconv.Atoi(d.text)
					if err != nil || n <= 0 {
						return nil, typeError(col, "shape dimension %q: want a positive size or NULL", d.text)
					}
					sh = append(sh, n)
				case d.is("null"):
					sh = append(sh, -1)
				default:
					p.i--
					return nil, p.errorf("column %s: want a size or NULL in a shape", col)
				}
				if !p.accept(",") && !p.peek().is("]") {
					return nil, p.errorf("column %s: want , or ] in a shape", col)
				}
			}
			if sh == nil {
				sh = schema.Shape{}
			}
			args = append(args, typeArg{kind: tokPunct, shape: sh})
		default:
			p.i--
			return nil, p.errorf("column %s: want a type argument", col)
		}
		if p.accept(")") {
			return args, nil
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
	}
}

// typeRule is one loch type form: a type name that is not DuckDB's, the
// column it makes, and the arguments it accepts. Adding a type is adding
// a row to typeRules.
type typeRule struct {
	name string // lower case, as the lexer gives it
	// column is the column the type makes before its arguments (Name
	// empty; Shape copied for each column).
	column schema.Column
	// min and max bound the number of arguments (max -1: any number);
	// takes says what they are ("(dimensions [, dtype])"), in the error
	// when they do not fit.
	min, max int
	takes    string
	// args reads the arguments into c, which starts as column; nil: the
	// type takes no arguments.
	args func(a typeArgs, c *schema.Column) error
}

// typeRules are the loch types, in the order errors list them.
var typeRules = []typeRule{
	{name: "image", column: schema.Column{Kind: schema.Image, DType: schema.Uint8, Shape: schema.Shape{-1, -1, 3}, SampleCompression: schema.PNG},
		max: 2, takes: "(compression [, channels])", args: mediaArgs},
	{name: "video", column: schema.Column{Kind: schema.Video, DType: schema.Uint8, Shape: schema.Shape{-1, -1, -1, 3}, SampleCompression: schema.SampleNone},
		max: 2, takes: "(compression [, channels])", args: mediaArgs},
	{name: "audio", column: schema.Column{Kind: schema.Audio, DType: schema.Float32, Shape: schema.Shape{-1}},
		max: 2, takes: "([dtype [, channels]])", args: audioArgs},
	{name: "mask", column: schema.Column{Kind: schema.Mask, DType: schema.Bool, Shape: schema.Shape{-1, -1}},
		max: 1, takes: "([dtype])", args: dtypeArg(0)},
	{name: "bbox", column: schema.Column{Kind: schema.BBox, DType: schema.Float32, Shape: schema.Shape{-1, 4}},
		max: -1, takes: "(['xyxy'|'xywh'|'cxcywh'] [, NORMALIZED])", args: bboxArgs},
	{name: "class_label", column: schema.Column{Kind: schema.ClassLabel, DType: schema.Int64, Shape: schema.Shape{}},
		max: -1, takes: "class names in quotes", args: classArgs},
	{name: "class_labels", column: schema.Column{Kind: schema.ClassLabel, DType: schema.Int64, Shape: schema.Shape{-1}},
		max: -1, takes: "class names in quotes", args: classArgs},
	{name: "embedding", column: schema.Column{Kind: schema.Embedding, DType: schema.Float32},
		min: 1, max: 2, takes: "(dimensions [, dtype]) with dimensions > 0", args: embeddingArgs},
	// pgvector's VECTOR(n), PostgreSQL's JSONB and serial types
	// (docs/sql.md §2).
	{name: "vector", column: schema.Column{Kind: schema.Embedding, DType: schema.Float32},
		min: 1, max: 1, takes: "(dimensions) with dimensions > 0", args: embeddingArgs},
	{name: "jsonb", column: schema.Column{Kind: schema.JSONKind, DType: schema.JSON}, takes: "no arguments"},
	{name: "smallserial", column: schema.Column{DType: schema.Int16, Shape: schema.Shape{}, Serial: true}, takes: "no arguments"},
	{name: "serial", column: schema.Column{DType: schema.Int32, Shape: schema.Shape{}, Serial: true}, takes: "no arguments"},
	{name: "bigserial", column: schema.Column{DType: schema.Int64, Shape: schema.Shape{}, Serial: true}, takes: "no arguments"},
	{name: "tensor", column: schema.Column{Kind: schema.Generic},
		min: 1, max: 2, takes: "(dtype [, [shape]])", args: tensorArgs},
	{name: "point_cloud", column: schema.Column{Kind: schema.PointCloud, DType: schema.Float32},
		min: 1, max: 1, takes: "(dimensions), at least 3", args: pointCloudArgs},
	{name: "link", column: schema.Column{Kind: schema.Link, DType: schema.Text},
		takes: "no arguments"},
}

// typeRuleNames lists the names of typeRules, upper case.
func typeRuleNames() string {
	names := make([]string, len(typeRules))
	for i, r := range typeRules {
		names[i] = strings.ToUpper(r.name)
	}
	return strings.Join(names, ", ")
}

// lochType builds column col of loch type name with its arguments.
func lochType(col, name string, args []typeArg) (schema.Column, error) {
	i := slices.IndexFunc(typeRules, func(r typeRule) bool { return r.name == name })
	if i < 0 {
		return schema.Column{Name: col}, typeError(col, "type %s is not supported (supported: %s)", strings.ToUpper(name), supported)
	}
	r := typeRules[i]
	c := r.column
	c.Name, c.Shape = col, slices.Clone(r.column.Shape)
	a := typeArgs{col: col, name: name, list: args}
	if len(args) < r.min || r.max >= 0 && len(args) > r.max {
		return c, a.bad(r.takes)
	}
	if r.args == nil {
		return c, nil
	}
	return c, r.args(a, &c)
}

// typeArgs are the arguments of type name of column col.
type typeArgs struct {
	col, name string
	list      []typeArg
}

// bad is the error of arguments that do not fit: the type takes want.
func (a typeArgs) bad(want string) error {
	return typeError(a.col, "%s takes %s", strings.ToUpper(a.name), want)
}

// str is argument i when it is a string, lower case.
func (a typeArgs) str(i int) (string, bool) {
	if i < len(a.list) && a.list[i].kind == tokString {
		return strings.ToLower(a.list[i].text), true
	}
	return "", false
}

// num is argument i when it is a positive number.
func (a typeArgs) num(i int) (int, bool) {
	if i < len(a.list) && a.list[i].kind == tokNumber {
		n, err := strconv.Atoi(a.list[i].text)
		return n, err == nil && n > 0
	}
	return 0, false
}

// dtype reads argument i (which must exist) as a dtype name.
func (a typeArgs) dtype(i int) (schema.DType, error) {
	if a.list[i].kind != tokIdent {
		return 0, typeError(a.col, "%s: want a dtype such as float32, got %q", strings.ToUpper(a.name), a.list[i].text)
	}
	d, err := schema.ParseDType(a.list[i].text)
	if err != nil {
		return 0, typeError(a.col, "%s: %v", strings.ToUpper(a.name), err)
	}
	return d, nil
}

// dtypeArg reads argument i, when given, as the column's dtype.
func dtypeArg(i int) func(a typeArgs, c *schema.Column) error {
	return func(a typeArgs, c *schema.Column) error {
		if i >= len(a.list) {
			return nil
		}
		d, err := a.dtype(i)
		if err != nil {
			return err
		}
		c.DType = d
		return nil
	}
}

// mediaArgs reads IMAGE and VIDEO's ([compression [, channels]]): a
// sample codec (png, jpeg) or a chunk codec (lz4, zstd, none).
func mediaArgs(a typeArgs, c *schema.Column) error {
	if len(a.list) >= 1 {
		s, ok := a.str(0)
		if !ok {
			return a.bad("a compression in quotes: 'png', 'jpeg', 'lz4', 'zstd' or 'none'")
		}
		switch s {
		case "png", "jpeg":
			c.SampleCompression = schema.SampleCompression(s)
		case "lz4", "zstd", "none":
			c.SampleCompression = schema.SampleNone
			c.ChunkCompression = schema.ChunkCodec(s)
		default:
			return a.bad("a compression: 'png', 'jpeg', 'lz4', 'zstd' or 'none'")
		}
	}
	if len(a.list) == 2 {
		n, ok := a.num(1)
		if !ok {
			return a.bad("a number of channels (1, 3 or 4)")
		}
		c.Shape[len(c.Shape)-1] = n
	}
	return nil
}

// audioArgs reads AUDIO's ([dtype [, channels]]).
func audioArgs(a typeArgs, c *schema.Column) error {
	if err := dtypeArg(0)(a, c); err != nil {
		return err
	}
	if len(a.list) == 2 {
		n, ok := a.num(1)
		if !ok {
			return a.bad("a number of channels")
		}
		c.Shape = schema.Shape{-1, n}
	}
	return nil
}

// bboxArgs reads BBOX's (['xyxy'|'xywh'|'cxcywh'] [, NORMALIZED]).
func bboxArgs(a typeArgs, c *schema.Column) error {
	for i, arg := range a.list {
		switch {
		case i == 0 && arg.kind == tokString:
			c.BBoxFormat = strings.ToLower(arg.text)
		case arg.kind == tokIdent && arg.text == "normalized":
			c.BBoxNormalized = true
		default:
			return a.bad("(['xyxy'|'xywh'|'cxcywh'] [, NORMALIZED])")
		}
	}
	return nil
}

// classArgs reads CLASS_LABEL's and CLASS_LABELS' class names.
func classArgs(a typeArgs, c *schema.Column) error {
	for _, arg := range a.list {
		if arg.kind != tokString {
			return a.bad("class names in quotes")
		}
		c.ClassNames = append(c.ClassNames, arg.text)
	}
	return nil
}

// embeddingArgs reads EMBEDDING's (dimensions [, dtype]).
func embeddingArgs(a typeArgs, c *schema.Column) error {
	n, ok := a.num(0)
	if !ok {
		return a.bad("(dimensions [, dtype]) with dimensions > 0")
	}
	c.Shape = schema.Shape{n}
	return dtypeArg(1)(a, c)
}

// tensorArgs reads TENSOR's (dtype [, [shape]]).
func tensorArgs(a typeArgs, c *schema.Column) error {
	if err := dtypeArg(0)(a, c); err != nil {
		return err
	}
	if len(a.list) == 2 {
		if a.list[1].kind != tokPunct {
			return a.bad("(dtype [, [shape]]) with the shape in brackets, e.g. [3, NULL]")
		}
		c.Shape = a.list[1].shape
	}
	return nil
}

// pointCloudArgs reads POINT_CLOUD's (dimensions).
func pointCloudArgs(a typeArgs, c *schema.Column) error {
	n, ok := a.num(0)
	if !ok {
		return a.bad("(dimensions), at least 3")
	}
	c.Shape = schema.Shape{-1, n}
	return nil
}
