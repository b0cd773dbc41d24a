package sqlcat

import (
	"fmt"
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

const supported = "BOOLEAN, TINYINT..BIGINT, UTINYINT..UBIGINT, FLOAT, DOUBLE, VARCHAR, JSON, BLOB, numeric T[n] and T[], " +
	"IMAGE, VIDEO, AUDIO, MASK, BBOX, CLASS_LABEL, CLASS_LABELS, EMBEDDING, TENSOR, POINT_CLOUD, LINK"

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
	return lochType(c, name, args)
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

// lochType builds the column of a loch type name with its arguments.
func lochType(c schema.Column, name string, args []typeArg) (schema.Column, error) {
	col := c.Name
	bad := func(want string) (schema.Column, error) {
		return c, typeError(col, "%s takes %s", strings.ToUpper(name), want)
	}
	str := func(i int) (string, bool) {
		if i < len(args) && args[i].kind == tokString {
			return strings.ToLower(args[i].text), true
		}
		return "", false
	}
	dtype := func(i int) (schema.DType, error) {
		if args[i].kind != tokIdent {
			return 0, typeError(col, "%s: want a dtype such as float32, got %q", strings.ToUpper(name), args[i].text)
		}
		d, err := schema.ParseDType(args[i].text)
		if err != nil {
			return 0, typeError(col, "%s: %v", strings.ToUpper(name), err)
		}
		return d, nil
	}
	num := func(i int) (int, bool) {
		if i < len(args) && args[i].kind == tokNumber {
			n, err := strconv.Atoi(args[i].text)
			return n, err == nil && n > 0
		}
		return 0, false
	}
	switch name {
	case "image", "video":
		c.DType = schema.Uint8
		c.Kind = schema.Image
		c.Shape = schema.Shape{-1, -1, 3}
		c.SampleCompression = schema.PNG
		if name == "video" {
			c.Kind = schema.Video
			c.Shape = schema.Shape{-1, -1, -1, 3}
			c.SampleCompression = schema.SampleNone
		}
		if len(args) > 2 {
			return bad("(compression [, channels])")
		}
		if len(args) >= 1 {
			s, ok := str(0)
			if !ok {
				return bad("a compression in quotes: 'png', 'jpeg', 'lz4', 'zstd' or 'none'")
			}
			switch s {
			case "png", "jpeg":
				c.SampleCompression = schema.SampleCompression(s)
			case "lz4", "zstd", "none":
				c.SampleCompression = schema.SampleNone
				c.ChunkCompression = schema.ChunkCodec(s)
			default:
				return bad("a compression: 'png', 'jpeg', 'lz4', 'zstd' or 'none'")
			}
		}
		if len(args) == 2 {
			n, ok := num(1)
			if !ok {
				return bad("a number of channels (1, 3 or 4)")
			}
			c.Shape[len(c.Shape)-1] = n
		}
	case "audio":
		c.Kind, c.DType, c.Shape = schema.Audio, schema.Float32, schema.Shape{-1}
		if len(args) > 2 {
			return bad("([dtype [, channels]])")
		}
		if len(args) >= 1 {
			d, err := dtype(0)
			if err != nil {
				return c, err
			}
			c.DType = d
		}
		if len(args) == 2 {
			n, ok := num(1)
			if !ok {
				return bad("a number of channels")
			}
			c.Shape = schema.Shape{-1, n}
		}
	case "mask":
		c.Kind, c.DType, c.Shape = schema.Mask, schema.Bool, schema.Shape{-1, -1}
		if len(args) > 1 {
			return bad("([dtype])")
		}
		if len(args) == 1 {
			d, err := dtype(0)
			if err != nil {
				return c, err
			}
			c.DType = d
		}
	case "bbox":
		c.Kind, c.DType, c.Shape = schema.BBox, schema.Float32, schema.Shape{-1, 4}
		for i, a := range args {
			switch {
			case i == 0 && a.kind == tokString:
				c.BBoxFormat = strings.ToLower(a.text)
			case a.kind == tokIdent && a.text == "normalized":
				c.BBoxNormalized = true
			default:
				return bad("(['xyxy'|'xywh'|'cxcywh'] [, NORMALIZED])")
			}
		}
	case "class_label", "class_labels":
		c.Kind, c.DType, c.Shape = schema.ClassLabel, schema.Int64, schema.Shape{}
		if name == "class_labels" {
			c.Shape = schema.Shape{-1}
		}
		for i := range args {
			if args[i].kind != tokString {
				return bad("class names in quotes")
			}
			c.ClassNames = append(c.ClassNames, args[i].text)
		}
	case "embedding":
		n, ok := num(0)
		if !ok || len(args) > 2 {
			return bad("(dimensions [, dtype]) with dimensions > 0")
		}
		c.Kind, c.DType, c.Shape = schema.Embedding, schema.Float32, schema.Shape{n}
		if len(args) == 2 {
			d, err := dtype(1)
			if err != nil {
				return c, err
			}
			c.DType = d
		}
	case "tensor":
		if len(args) < 1 || len(args) > 2 {
			return bad("(dtype [, [shape]])")
		}
		d, err := dtype(0)
		if err != nil {
			return c, err
		}
		c.Kind, c.DType = schema.Generic, d
		if len(args) == 2 {
			if args[1].kind != tokPunct {
				return bad("(dtype [, [shape]]) with the shape in brackets, e.g. [3, NULL]")
			}
			c.Shape = args[1].shape
		}
	case "point_cloud":
		n, ok := num(0)
		if len(args) != 1 || !ok {
			return bad("(dimensions), at least 3")
		}
		c.Kind, c.DType, c.Shape = schema.PointCloud, schema.Float32, schema.Shape{-1, n}
	case "link":
		if len(args) > 0 {
			return bad("no arguments")
		}
		c.Kind, c.DType = schema.Link, schema.Text
	default:
		return c, typeError(col, "type %s is not supported (supported: %s)", strings.ToUpper(name), supported)
	}
	return c, nil
}
