package pgwire

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/csv"
	"fmt"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"
	"github.com/lochdata/loch"
	"github.com/lochdata/loch/query"
)

// copySpec is a COPY ... TO STDOUT: its rows' format.
type copySpec struct {
	csv    bool
	header bool
	binary bool // PostgreSQL's binary COPY format (copybinary.go)
}

// copyStatement runs COPY (query) TO STDOUT and COPY table TO STDOUT
// [WITH] [(FORMAT text|csv|binary, HEADER)]: the query's rows as CopyData.
// COPY FROM STDIN is copyFrom's; COPY to or from a file of the server is
// refused.
func (c *conn) copyStatement(ctx context.Context, q string) (*result, error) {
	if res, ok, err := c.copyFrom(ctx, q); ok {
		return res, err
	}
	body := strings.TrimSpace(q[strings.Index(strings.ToLower(q), "copy")+4:])
	var src, rest string
	if strings.HasPrefix(body, "(") {
		depth, end := 0, -1
		scanSQL(body, func(i int) int {
			if end >= 0 {
				return 1
			}
			switch body[i] {
			case '(':
				depth++
			case ')':
				depth--
				if depth == 0 {
					end = i
				}
			}
			return 1
		})
		if end < 0 {
			return nil, fmt.Errorf("COPY: unbalanced parentheses: %w", loch.ErrInvalidArgument)
		}
		src, rest = body[1:end], body[end+1:]
	} else {
		src, rest = copyTableSource(body)
	}
	words := strings.Fields(strings.ToLower(strings.NewReplacer("(", " ", ")", " ", ",", " ").Replace(rest)))
	if len(words) < 2 || words[0] != "to" || words[1] != "stdout" {
		return nil, fmt.Errorf("COPY over the PostgreSQL protocol is COPY (query) TO STDOUT or COPY table TO STDOUT (no server files, no COPY FROM; INSERT writes rows): %w", errUnsupported)
	}
	spec := &copySpec{}
	for _, w := range words[2:] {
		switch w {
		case "csv":
			spec.csv = true
		case "header":
			spec.header = true
		case "binary":
			spec.binary = true
		}
	}
	res, err := c.read(ctx, src)
	if err != nil {
		return nil, err
	}
	res.copyOut = spec
	return res, nil
}

// copyTableSource is the query of COPY table [(columns)] TO ...: the
// table's columns as COPY table FROM reads them (not _rowid and _pos),
// or those named; rest is what follows.
func copyTableSource(body string) (src, rest string) {
	name, rest, _ := strings.Cut(body, " ")
	if i := strings.IndexByte(name, '('); i > 0 {
		name, rest = name[:i], body[i:]
	}
	cols := "* EXCLUDE (" + query.RowIDColumn + ", " + query.PosColumn + ")"
	if r := strings.TrimSpace(rest); strings.HasPrefix(r, "(") {
		if end := strings.IndexByte(r, ')'); end > 0 {
			cols, rest = r[1:end], r[end+1:]
		}
	}
	return "SELECT " + cols + " FROM " + name, rest
}

// sendCopy sends a COPY's rows: CopyOutResponse, a CopyData per row,
// CopyDone, CommandComplete COPY n.
func (c *conn) sendCopy(res *result) error {
	spec := res.copyOut
	if spec.binary {
		return c.sendCopyBinary(res)
	}
	c.be.Send(&pgproto3.CopyOutResponse{OverallFormat: 0, ColumnFormatCodes: make([]uint16, len(res.names))})
	var buf bytes.Buffer
	line := func(cells []string, null []bool) {
		buf.Reset()
		if spec.csv {
			w := csv.NewWriter(&buf)
			w.Write(cells)
			w.Flush()
		} else {
			for i, s := range cells {
				if i > 0 {
					buf.WriteByte('\t')
				}
				if null != nil && null[i] {
					buf.WriteString(`\N`)
					continue
				}
				buf.WriteString(copyEscaper.Replace(s))
			}
			buf.WriteByte('\n')
		}
		c.be.Send(&pgproto3.CopyData{Data: bytes.Clone(buf.Bytes())})
	}
	if spec.header {
		line(res.names, nil)
	}
	cells := make([]string, len(res.names))
	null := make([]bool, len(res.names))
	return c.copyRows(res, func(vals []any) (int, error) {
		for i, v := range vals {
			b, err := encode(v, res.types[i], 0)
			if err != nil {
				return 0, err
			}
			cells[i], null[i] = string(b), v == nil
		}
		line(cells, null)
		return buf.Len(), nil
	}, nil)
}

// copyRows sends a CopyData of each row of res that send makes (send
// returns its size; flushed every flushRows rows or flushBytes bytes),
// then last as one more CopyData when not nil, CopyDone and
// CommandComplete COPY n.
func (c *conn) copyRows(res *result, send func([]any) (int, error), last func() []byte) error {
	n, pending := 0, 0
	err := res.each(func(vals []any) error {
		size, err := send(vals)
		if err != nil {
			return err
		}
		n++
		if pending += size; n%flushRows == 0 || pending >= flushBytes {
			pending = 0
			return c.be.Flush()
		}
		return nil
	})
	if err != nil {
		return err
	}
	if last != nil {
		c.be.Send(&pgproto3.CopyData{Data: last()})
	}
	c.be.Send(&pgproto3.CopyDone{})
	res.done, res.tag = true, "COPY "+strconv.Itoa(n)
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(res.tag)})
	return nil
}

// copyEscaper escapes a value of COPY's text format.
var copyEscaper = strings.NewReplacer(`\`, `\\`, "\t", `\t`, "\n", `\n`, "\r", `\r`)

// randomString is a random secret no one knows.
func randomString() string {
	b := make([]byte, 24)
	rand.Read(b)
	return base64.StdEncoding.EncodeToString(b)
}
