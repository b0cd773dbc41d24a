package loch

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/lochdata/loch/schema"
)

// Bounds of a joined column (docs/format.md §2.7).
const (
	maxJoinedColumns = 1024
	maxJoinedDims    = 8
	maxJoinedValues  = 1 << 20 // values per row
	maxJoinedName    = 255
)

// JoinedColumn is one column of a selection's result that is not one of
// the selection's dataset's columns taken whole: a column of another
// table of a join (l.label) or an expression (f.score * 2 AS weight). It
// holds one value per selected row, in the selection's row order, and
// the loader delivers it as a batch column beside the dataset's columns
// (loader.Config.Joined). docs/format.md §2.7 specifies its stored form,
// which is also its JSON form.
//
// A value is a scalar or a fixed-size array of a numeric dtype (Shape),
// a bool, or a text or json string. The zero value is a column of no
// rows; Check reports whether the fields agree.
type JoinedColumn struct {
	// Name is the result column's name.
	Name string
	// DType is Bool, an integer or float dtype, Text or JSON.
	DType schema.DType
	// Shape is each value's shape: empty for a scalar, [n] or [n, m, ...]
	// for a fixed-size array (numeric dtypes only).
	Shape []int
	// ClassNames, for an int64 scalar that was a class label (a DuckDB
	// ENUM), are the names its values index.
	ClassNames []string
	// Data holds the numeric values: Rows() values of Shape each, C
	// order, little-endian; a null row's bytes are zero.
	Data []byte
	// Items holds the text and json values, one per row; nil is null.
	Items [][]byte
	// Null marks the null rows of a numeric column; nil when none is.
	Null []bool
}

// valueBytes is the size of one row's value of a numeric column.
func (c *JoinedColumn) valueBytes() int {
	n := c.DType.Size()
	for _, d := range c.Shape {
		n *= d
	}
	return n
}

// Rows is the number of rows the column holds values for.
func (c *JoinedColumn) Rows() int {
	if c.DType.Variable() {
		return len(c.Items)
	}
	if per := c.valueBytes(); per > 0 {
		return len(c.Data) / per
	}
	return 0
}

// IsNull reports whether row i's value is null.
func (c *JoinedColumn) IsNull(i int) bool {
	if c.DType.Variable() {
		return c.Items[i] == nil
	}
	return c.Null != nil && c.Null[i]
}

// Check reports, as ErrInvalidArgument, the first way in which c's
// fields disagree with each other or with the bounds of
// docs/format.md §2.7.
func (c *JoinedColumn) Check() error {
	bad := func(format string, a ...any) error {
		return invalidf("joined column %q: %s", c.Name, fmt.Sprintf(format, a...))
	}
	switch {
	case c.Name == "" || len(c.Name) > maxJoinedName || !utf8.ValidString(c.Name):
		return invalidf("joined column %q: a name is 1 to %d bytes of UTF-8", c.Name, maxJoinedName)
	case c.Name == "_rowid" || c.Name == "_pos":
		return bad("the name of a hidden column")
	case !c.DType.Valid() || c.DType == schema.Bytes:
		return bad("dtype %s: want bool, an integer or float dtype, text or json", c.DType)
	case len(c.Shape) > maxJoinedDims:
		return bad("%d dimensions, at most %d", len(c.Shape), maxJoinedDims)
	case len(c.ClassNames) > 0 && (c.DType != schema.Int64 || len(c.Shape) > 0):
		return bad("class names on a %s%v column: only int64 scalars have them", c.DType, c.Shape)
	}
	if c.DType.Variable() {
		if len(c.Shape) > 0 || c.Data != nil || c.Null != nil {
			return bad("a %s column has items only: no shape, data or nulls", c.DType)
		}
		for i, it := range c.Items {
			if c.DType == schema.JSON && it != nil && !json.Valid(it) {
				return bad("row %d: %q is not JSON", i, cut(string(it), 40))
			}
		}
		return nil
	}
	if c.Items != nil {
		return bad("a %s column has data, not items", c.DType)
	}
	values := 1
	for _, d := range c.Shape {
		if d < 1 || d > maxJoinedValues || values*d > maxJoinedValues {
			return bad("shape %v: each dimension at least 1, at most %d values per row", c.Shape, maxJoinedValues)
		}
		values *= d
	}
	per := c.valueBytes()
	if len(c.Data)%per != 0 {
		return bad("%d bytes of data, not a whole number of %d-byte values", len(c.Data), per)
	}
	if c.Null != nil && len(c.Null) != len(c.Data)/per {
		return bad("%d null marks for %d rows", len(c.Null), len(c.Data)/per)
	}
	return nil
}

// cut shortens s to n bytes for a message.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "..."
}

// joinedJSON is a joined column's stored and JSON form (docs/format.md
// §2.7).
type joinedJSON struct {
	Name       string       `json:"name"`
	DType      schema.DType `json:"dtype"`
	Shape      []int        `json:"shape,omitempty"`
	ClassNames []string     `json:"class_names,omitempty"`
	Data       []byte       `json:"data,omitempty"`
	Nulls      string       `json:"nulls,omitempty"`
	Items      []*string    `json:"items,omitempty"`
}

// MarshalJSON writes the form of docs/format.md §2.7.
func (c JoinedColumn) MarshalJSON() ([]byte, error) {
	j := joinedJSON{Name: c.Name, DType: c.DType, Shape: c.Shape, ClassNames: c.ClassNames, Data: c.Data}
	if c.DType.Variable() {
		j.Data = nil
		j.Items = make([]*string, len(c.Items))
		for i, it := range c.Items {
			if it != nil {
				s := string(it)
				j.Items[i] = &s
			}
		}
	}
	if nulls := nullBitmap(c.Null); nulls != nil {
		j.Nulls = base64.StdEncoding.EncodeToString(nulls)
	}
	return json.Marshal(j)
}

// nullBitmap packs null marks, least significant bit first; nil when no
// mark is set.
func nullBitmap(null []bool) []byte {
	var out []byte
	for i, n := range null {
		if n {
			if out == nil {
				out = make([]byte, (len(null)+7)/8)
			}
			out[i/8] |= 1 << (i % 8)
		}
	}
	return out
}

// UnmarshalJSON reads the form of docs/format.md §2.7 and checks it
// (Check); its errors are ErrInvalidArgument. It allocates nothing in
// proportion to a count the input claims: every buffer is at most the
// size of what it decoded.
func (c *JoinedColumn) UnmarshalJSON(b []byte) error {
	var j joinedJSON
	if err := json.Unmarshal(b, &j); err != nil {
		return invalidf("joined column: %v", err)
	}
	*c = JoinedColumn{Name: j.Name, DType: j.DType, Shape: j.Shape, ClassNames: j.ClassNames, Data: j.Data}
	if c.DType.Variable() {
		if j.Data != nil || j.Nulls != "" {
			return invalidf("joined column %q: a %s column has items only: no data or nulls", c.Name, c.DType)
		}
		c.Data = nil
		c.Items = make([][]byte, len(j.Items))
		for i, s := range j.Items {
			if s != nil {
				c.Items[i] = []byte(*s)
			}
		}
		if c.Items == nil {
			c.Items = [][]byte{}
		}
	} else if j.Items != nil {
		return invalidf("joined column %q: a %s column has data, not items", c.Name, c.DType)
	}
	if err := c.Check(); err != nil {
		return err
	}
	if j.Nulls != "" {
		bits, err := base64.StdEncoding.DecodeString(j.Nulls)
		if err != nil {
			return invalidf("joined column %q: nulls: %v", c.Name, err)
		}
		rows := c.Rows()
		if len(bits) != (rows+7)/8 {
			return invalidf("joined column %q: a null bitmap of %d bytes for %d rows", c.Name, len(bits), rows)
		}
		c.Null = make([]bool, rows)
		for i := range c.Null {
			c.Null[i] = bits[i/8]&(1<<(i%8)) != 0
		}
		if rows%8 != 0 && bits[len(bits)-1]>>(rows%8) != 0 {
			return invalidf("joined column %q: null bits set past the last row", c.Name)
		}
	}
	return nil
}

// checkJoined checks a selection's joined columns: each well formed, of
// rows rows, with a name that is unique and, when cols is not nil, none of
// cols (the dataset's columns).
func checkJoined(joined []JoinedColumn, rows int, cols []string) error {
	if len(joined) > maxJoinedColumns {
		return invalidf("%d joined columns, at most %d", len(joined), maxJoinedColumns)
	}
	seen := map[string]bool{}
	for i := range joined {
		c := &joined[i]
		if err := c.Check(); err != nil {
			return err
		}
		if n := c.Rows(); n != rows {
			return invalidf("joined column %q has %d values for %d rows", c.Name, n, rows)
		}
		key := strings.ToLower(c.Name)
		if seen[key] {
			return invalidf("joined column %q appears twice", c.Name)
		}
		seen[key] = true
		for _, n := range cols {
			if strings.EqualFold(n, c.Name) {
				return invalidf("joined column %q has the name of a column of the dataset", c.Name)
			}
		}
	}
	return nil
}
