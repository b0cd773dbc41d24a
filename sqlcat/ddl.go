package sqlcat

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/dustin/go-humanize"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// coldef is a parsed column definition: the column, and which of its
// fields the type's arguments set explicitly (an option may not
// contradict them).
type coldef struct {
	col  schema.Column
	set  map[string]bool // option names the type or a column option set
	opts []option
}

// option is one name = value of a WITH list.
type option struct {
	name  string
	value typeArg // kind tokString, tokNumber, tokIdent (true/false); tokPunct: a list in strs
	strs  []string
	pos   int
}

// parseWith reads WITH (name = value, ...) if it comes next.
func (p *parser) parseWith() ([]option, error) {
	if !p.accept("with") {
		return nil, nil
	}
	if err := p.expect("("); err != nil {
		return nil, err
	}
	var opts []option
	for {
		n := p.peek()
		name, err := p.name("option")
		if err != nil {
			return nil, err
		}
		if err := p.expect("="); err != nil {
			return nil, err
		}
		o := option{name: strings.ToLower(name), pos: n.pos}
		t := p.next()
		switch {
		case t.kind == tokString || t.kind == tokNumber || t.is("true") || t.is("false"):
			o.value = typeArg{kind: t.kind, text: t.text}
		case t.is("["):
			o.value.kind = tokPunct
			for !p.accept("]") {
				s := p.next()
				if s.kind != tokString {
					p.i--
					return nil, p.errorf("option %s: want a list of 'strings'", o.name)
				}
				o.strs = append(o.strs, s.text)
				if !p.accept(",") && !p.peek().is("]") {
					return nil, p.errorf("option %s: want , or ]", o.name)
				}
			}
		default:
			p.i--
			return nil, p.errorf("option %s: want a number, a 'string', true, false or a ['list']", o.name)
		}
		opts = append(opts, o)
		if p.accept(")") {
			return opts, nil
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
	}
}

// applies reports whether option name can be set on column c.
func applies(name string, c *schema.Column) bool {
	switch name {
	case "chunk_bytes", "chunk_compression":
		return true
	case "sample_compression":
		return (c.Kind == schema.Image || c.Kind == schema.Mask || c.Kind == schema.Generic) && c.DType == schema.Uint8
	case "class_names":
		return c.Kind == schema.ClassLabel
	case "bbox_format", "bbox_normalized":
		return c.Kind == schema.BBox
	}
	return false
}

// options are the names WITH accepts.
var options = []string{"chunk_bytes", "chunk_compression", "sample_compression", "class_names", "bbox_format", "bbox_normalized"}

var optionNames = strings.Join(options, ", ")

// apply sets option o on column d; table says it came from the table's
// WITH (where a column's own setting wins).
func (d *coldef) apply(o option, table bool) error {
	c := &d.col
	bad := func(want string) error {
		return fmt.Errorf("column %s: option %s: want %s: %w", c.Name, o.name, want, loch.ErrInvalidArgument)
	}
	if !applies(o.name, c) {
		if table {
			return nil
		}
		if slices.Contains(options, o.name) {
			return fmt.Errorf("column %s: option %s does not apply to a %s %s column: %w", c.Name, o.name, c.Kind, c.DType, loch.ErrInvalidArgument)
		}
		return fmt.Errorf("column %s: unknown option %s (known: %s): %w", c.Name, o.name, optionNames, loch.ErrInvalidArgument)
	}
	if d.set[o.name] {
		if table {
			return nil
		}
		return fmt.Errorf("column %s: option %s conflicts with the column's type or an earlier option, which set it: %w", c.Name, o.name, loch.ErrInvalidArgument)
	}
	str := o.value.kind == tokString
	switch o.name {
	case "chunk_bytes":
		var n uint64
		var err error
		switch o.value.kind {
		case tokNumber:
			n, err = strconv.ParseUint(o.value.text, 10, 64)
		case tokString:
			n, err = humanize.ParseBytes(o.value.text)
		default:
			return bad("a number of bytes or a size such as '4MiB'")
		}
		if err != nil || n > 1<<30 {
			return bad("a number of bytes or a size such as '4MiB', at most 1GiB")
		}
		c.ChunkBytes = int(n)
	case "chunk_compression":
		v := strings.ToLower(o.value.text)
		if !str || v != "none" && v != "lz4" && v != "zstd" {
			return bad("'none', 'lz4' or 'zstd'")
		}
		c.ChunkCompression = schema.ChunkCodec(v)
		if v != "none" && !d.set["sample_compression"] {
			c.SampleCompression = schema.SampleNone // the two are exclusive
		}
	case "sample_compression":
		v := strings.ToLower(o.value.text)
		if !str || v != "none" && v != "png" && v != "jpeg" {
			return bad("'none', 'png' or 'jpeg'")
		}
		c.SampleCompression = schema.SampleCompression(v)
	case "class_names":
		if o.value.kind != tokPunct {
			return bad("a list of names such as ['cat', 'dog']")
		}
		c.ClassNames = o.strs
	case "bbox_format":
		if !str {
			return bad("'xyxy', 'xywh' or 'cxcywh'")
		}
		c.BBoxFormat = strings.ToLower(o.value.text)
	case "bbox_normalized":
		if o.value.kind != tokIdent {
			return bad("true or false")
		}
		c.BBoxNormalized = o.value.text == "true"
	}
	d.set[o.name] = true
	return nil
}

// createStmt is a parsed CREATE TABLE.
type createStmt struct {
	name        string
	ifNotExists bool
	cols        []coldef
	with        []option
	as          string // the SELECT of CREATE TABLE ... AS
}

// constraints are refused with their name: loch enforces PRIMARY KEY and
// UNIQUE only (readKeys, tableKey).
var constraints = map[string]string{"primary": "PRIMARY KEY", "not": "NOT NULL", "null": "NULL", "default": "DEFAULT",
	"check": "CHECK", "unique": "UNIQUE", "references": "REFERENCES", "constraint": "CONSTRAINT", "collate": "COLLATE", "generated": "GENERATED"}

// tableKey reads a table constraint, [CONSTRAINT name] PRIMARY KEY (col)
// or UNIQUE (col), if one comes next, and sets the column's key; a key
// of several columns and other constraints are refused.
func (p *parser) tableKey(st *createStmt) (bool, error) {
	t := p.peek()
	if t.kind != tokIdent || !(t.is("primary") || t.is("unique") || t.is("check") || t.is("constraint")) {
		return false, nil
	}
	if p.accept("constraint") {
		if _, err := p.name("constraint"); err != nil {
			return false, err
		}
	}
	key := schema.KeyUnique
	switch {
	case p.accept("primary", "key"):
		key = schema.KeyPrimary
	case p.accept("unique"):
	default:
		return false, fmt.Errorf("create table %s: %s constraints are not supported: loch enforces PRIMARY KEY and UNIQUE: %w", st.name, strings.ToUpper(p.peek().text), loch.ErrInvalidArgument)
	}
	if err := p.expect("("); err != nil {
		return false, err
	}
	cols, err := p.nameList()
	if err != nil {
		return false, err
	}
	if len(cols) != 1 {
		return false, fmt.Errorf("create table %s: a key of several columns (%s) is not supported: loch's keys are one column each: %w", st.name, strings.Join(cols, ", "), loch.ErrInvalidArgument)
	}
	i := slices.IndexFunc(st.cols, func(d coldef) bool { return d.col.Name == cols[0] })
	if i < 0 {
		return false, fmt.Errorf("create table %s: key column %q is not a column of the table: %w", st.name, cols[0], loch.ErrInvalidArgument)
	}
	if st.cols[i].col.Key != schema.KeyPrimary {
		st.cols[i].col.Key = key
	}
	return true, nil
}

// readKeys reads a column's PRIMARY KEY and UNIQUE constraints into d.
func (p *parser) readKeys(d *coldef) {
	for {
		switch {
		case p.accept("primary", "key"):
			d.col.Key = schema.KeyPrimary
		case p.accept("unique"):
			if d.col.Key == "" {
				d.col.Key = schema.KeyUnique
			}
		default:
			return
		}
	}
}

func (p *parser) parseCreate() (*createStmt, error) {
	st := &createStmt{}
	if err := p.expect("create", "table"); err != nil {
		return nil, err
	}
	st.ifNotExists = p.accept("if", "not", "exists")
	var err error
	if st.name, err = p.name("table"); err != nil {
		return nil, err
	}
	if p.peek().is(".") {
		return nil, p.errorf("table names have no schema or catalog prefix")
	}
	if !p.peek().is("(") {
		if st.with, err = p.parseWith(); err != nil {
			return nil, err
		}
		if err := p.expect("as"); err != nil {
			return nil, err
		}
		st.as = p.rest()
		if st.as == "" {
			return nil, p.errorf("want a SELECT after AS")
		}
		return st, nil
	}
	p.next()
	if err := p.createElements(st); err != nil {
		return nil, err
	}
	if st.with, err = p.parseWith(); err != nil {
		return nil, err
	}
	if p.accept("as") {
		return nil, fmt.Errorf("create table %s: a column list and AS SELECT together are not supported: create the table, then INSERT: %w", st.name, loch.ErrInvalidArgument)
	}
	return st, p.end()
}

// createElements reads CREATE TABLE's column definitions and table
// constraints up to the closing parenthesis.
func (p *parser) createElements(st *createStmt) error {
	for {
		ok, err := p.tableKey(st)
		if err != nil {
			return err
		}
		if !ok {
			d, err := p.parseColdef(true)
			if err != nil {
				return fmt.Errorf("create table %s: %w", st.name, err)
			}
			st.cols = append(st.cols, d)
		}
		if p.accept(")") {
			return nil
		}
		if err := p.expect(","); err != nil {
			return err
		}
	}
}

// parseColdef reads name type [PRIMARY KEY | UNIQUE] [WITH (...)]; keys
// says whether a key may be declared (CREATE TABLE, not ALTER TABLE ADD).
func (p *parser) parseColdef(keys bool) (coldef, error) {
	name, err := p.name("column")
	if err != nil {
		return coldef{}, err
	}
	start := p.i
	col, err := p.parseType(name)
	if err != nil {
		return coldef{}, err
	}
	d := coldef{col: col, set: map[string]bool{}}
	// the type's arguments set these explicitly
	for _, t := range p.toks[start:p.i] {
		if t.kind == tokString || t.kind == tokIdent && t.text == "normalized" {
			switch col.Kind {
			case schema.Image, schema.Video:
				d.set["sample_compression"], d.set["chunk_compression"] = true, true
			case schema.ClassLabel:
				d.set["class_names"] = true
			case schema.BBox:
				d.set["bbox_format"] = t.kind == tokString || d.set["bbox_format"]
				d.set["bbox_normalized"] = t.kind == tokIdent || d.set["bbox_normalized"]
			}
		}
	}
	if keys {
		p.readKeys(&d)
	}
	if t := p.peek(); t.kind == tokIdent && constraints[t.text] != "" {
		c := constraints[t.text]
		if t.text == "not" {
			c = "NOT NULL"
		} else if t.text == "primary" {
			c = "PRIMARY KEY"
		}
		return coldef{}, fmt.Errorf("column %s: %s is not supported: loch enforces PRIMARY KEY and UNIQUE in CREATE TABLE only: %w", name, c, loch.ErrInvalidArgument)
	}
	if d.opts, err = p.parseWith(); err != nil {
		return coldef{}, err
	}
	for _, o := range d.opts {
		if err := d.apply(o, false); err != nil {
			return coldef{}, err
		}
	}
	return d, nil
}

// schemaOf is the schema of a CREATE TABLE's columns with the table's
// options applied, normalized.
func (st *createStmt) schemaOf() (schema.Schema, error) {
	var s schema.Schema
	for _, o := range st.with {
		if !slices.Contains(options, o.name) {
			return s, fmt.Errorf("create table %s: unknown option %s (known: %s): %w", st.name, o.name, optionNames, loch.ErrInvalidArgument)
		}
	}
	for i := range st.cols {
		d := &st.cols[i]
		for _, o := range st.with {
			if err := d.apply(o, true); err != nil {
				return s, fmt.Errorf("create table %s: %w", st.name, err)
			}
		}
		s.Columns = append(s.Columns, d.col)
	}
	if err := s.Normalize(); err != nil {
		return s, fmt.Errorf("create table %s: %w", st.name, err)
	}
	return s, nil
}

// alterStmt is ALTER TABLE name ADD COLUMN coldef, or RENAME TO.
type alterStmt struct {
	name     string
	add      *coldef
	ifNotEx  bool
	renameTo string
}

func (p *parser) parseAlter() (*alterStmt, error) {
	st := &alterStmt{}
	if err := p.expect("alter", "table"); err != nil {
		return nil, err
	}
	var err error
	if st.name, err = p.name("table"); err != nil {
		return nil, err
	}
	switch {
	case p.accept("add"):
		p.accept("column")
		st.ifNotEx = p.accept("if", "not", "exists")
		d, err := p.parseColdef(false)
		if err != nil {
			return nil, fmt.Errorf("alter table %s: %w", st.name, err)
		}
		st.add = &d
	case p.accept("rename", "to"):
		if st.renameTo, err = p.name("table"); err != nil {
			return nil, err
		}
	default:
		return nil, p.errorf("alter table %s: want ADD [COLUMN] or RENAME TO (other changes are not supported)", st.name)
	}
	return st, p.end()
}

// dropStmt is DROP TABLE [IF EXISTS] name.
type dropStmt struct {
	name     string
	ifExists bool
}

func (p *parser) parseDrop() (*dropStmt, error) {
	st := &dropStmt{}
	if err := p.expect("drop", "table"); err != nil {
		return nil, err
	}
	st.ifExists = p.accept("if", "exists")
	var err error
	if st.name, err = p.name("table"); err != nil {
		return nil, err
	}
	return st, p.end()
}
