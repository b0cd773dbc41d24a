package pgwire

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/sqlcat"
)

// copyFromRE is COPY table [(columns)] FROM STDIN [options].
var copyFromRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?is)^\s*copy\s+("(?:[^"]|"")+"|\w+)\s*(?:\(([^)]*)\))?\s*from\s+stdin\b(.*)$`)
})

// copyIn is a COPY FROM STDIN's target and format.
type copyIn struct {
	table  string
	cols   []string
	csv    bool
	header bool
	delim  byte
	null   string
	tmp    string // the rows as CSV, for DuckDB's read_csv
	binary bool   // PostgreSQL's binary COPY format (pgx's CopyFrom)
	oids   []uint32
}

// copyFrom runs COPY table [(columns)] FROM STDIN [WITH] [(FORMAT
// text|csv, HEADER, DELIMITER 'c', NULL 's')]: the rows the client sends
// are inserted as one commit (an INSERT ... SELECT over them), after the
// same checks as an INSERT. ok is false when q is no COPY FROM STDIN.
func (c *conn) copyFrom(ctx context.Context, q string) (*result, bool, error) {
	m := copyFromRE().FindStringSubmatch(q)
	if m == nil {
		return nil, false, nil
	}
	ci := &copyIn{table: unquoteIdent(m[1]), delim: '\t', null: `\N`}
	if err := ci.options(m[3]); err != nil {
		return nil, true, err
	}
	ref := c.sess.Branch
	if ref == "" {
		ref = "main"
	}
	a := access{right: RightWrite, table: ci.table, ref: ref}
	if !c.role.allows(a) {
		return nil, true, refusal(c.user, c.roleName, a)
	}
	types, err := c.copyColumns(ctx, ci, m[2])
	if err != nil {
		return nil, true, err
	}
	dir, err := os.MkdirTemp("", "loch-pg-copy-")
	if err != nil {
		return nil, true, fmt.Errorf("copy from stdin: %w", err)
	}
	defer os.RemoveAll(dir)
	ci.tmp = filepath.Join(dir, "rows.csv")
	if err := c.receiveCopy(ci); err != nil {
		return nil, true, err
	}
	return c.insertCopied(ctx, ci, types)
}

// options reads COPY's options.
func (ci *copyIn) options(s string) error {
	words := strings.Fields(strings.NewReplacer("(", " ", ")", " ", ",", " ", ";", " ").Replace(s))
	for i := 0; i < len(words); i++ {
		w := strings.ToLower(words[i])
		arg := func() (string, error) {
			if i+1 >= len(words) {
				return "", fmt.Errorf("COPY option %s: want a value: %w", w, loch.ErrInvalidArgument)
			}
			i++
			return strings.Trim(words[i], "'"), nil
		}
		switch w {
		case "with", "true":
		case "binary":
			ci.binary = true
		case "csv":
			ci.csv, ci.delim, ci.null = true, ',', ""
		case "header":
			ci.header = true
		case "format":
			f, err := arg()
			if err != nil {
				return err
			}
			switch strings.ToLower(f) {
			case "csv":
				ci.csv, ci.delim, ci.null = true, ',', ""
			case "binary":
				ci.binary = true
			case "text":
			default:
				return fmt.Errorf("COPY FROM STDIN format %s: want text or csv: %w", f, errUnsupported)
			}
		case "delimiter":
			d, err := arg()
			if err != nil || len(d) != 1 {
				return fmt.Errorf("COPY DELIMITER: want one character: %w", loch.ErrInvalidArgument)
			}
			ci.delim = d[0]
		case "null":
			v, err := arg()
			if err != nil {
				return err
			}
			ci.null = v
		default:
			return fmt.Errorf("COPY option %s is not supported (FORMAT, HEADER, DELIMITER, NULL): %w", words[i], errUnsupported)
		}
	}
	return nil
}

// copyColumns sets ci.cols (the named ones, else every column but _rowid
// and _pos) and returns their DuckDB types, from the mirror.
func (c *conn) copyColumns(ctx context.Context, ci *copyIn, list string) ([]string, error) {
	sel := "* EXCLUDE (_rowid, _pos)"
	if strings.TrimSpace(list) != "" {
		var quoted []string
		for _, col := range strings.Split(list, ",") {
			quoted = append(quoted, quoteIdent(unquoteIdent(strings.TrimSpace(col))))
		}
		sel = strings.Join(quoted, ", ")
	}
	d, err := c.mirrorDescribe(ctx, "SELECT "+sel+" FROM "+quoteIdent(ci.table))
	if err != nil {
		return nil, fmt.Errorf("copy %s from stdin: %w", ci.table, err)
	}
	ci.cols = d.Names
	for _, t := range d.Types {
		ci.oids = append(ci.oids, typeFor(t).oid)
	}
	return d.Types, nil
}

// receiveCopy takes the client's CopyData until CopyDone and writes the
// rows to ci.tmp as CSV (text format decoded; csv as sent).
func (c *conn) receiveCopy(ci *copyIn) error {
	f, err := os.Create(ci.tmp)
	if err != nil {
		return fmt.Errorf("copy from stdin: %w", err)
	}
	defer f.Close()
	w := bufio.NewWriter(f)
	c.be.Send(&pgproto3.CopyInResponse{OverallFormat: 0, ColumnFormatCodes: make([]uint16, len(ci.cols))})
	if err := c.be.Flush(); err != nil {
		return err
	}
	var partial []byte
	for {
		msg, err := c.be.Receive()
		if err != nil {
			return err
		}
		switch m := msg.(type) {
		case *pgproto3.CopyData:
			data := append(partial, m.Data...)
			if ci.csv || ci.binary {
				w.Write(data)
				partial = nil
				continue
			}
			last := strings.LastIndexByte(string(data), '\n')
			if last < 0 {
				partial = data
				continue
			}
			if err := ci.textLines(w, string(data[:last+1])); err != nil {
				return err
			}
			partial = append([]byte(nil), data[last+1:]...)
		case *pgproto3.CopyDone:
			if len(partial) > 0 && !ci.csv && !ci.binary {
				if err := ci.textLines(w, string(partial)+"\n"); err != nil {
					return err
				}
			}
			if err := w.Flush(); err != nil {
				return err
			}
			if ci.binary {
				return ci.binaryToCSV()
			}
			return nil
		case *pgproto3.CopyFail:
			return fmt.Errorf("COPY from stdin failed: %s: %w", m.Message, loch.ErrInvalidArgument)
		case *pgproto3.Flush, *pgproto3.Sync:
		default:
			return fmt.Errorf("message %T during COPY FROM STDIN: %w", msg, errUnsupported)
		}
	}
}

// textLines decodes lines of COPY's text format into CSV: every value
// quoted, NULL as an empty unquoted field.
func (ci *copyIn) textLines(w *bufio.Writer, s string) error {
	for _, line := range strings.Split(strings.TrimSuffix(s, "\n"), "\n") {
		line = strings.TrimSuffix(line, "\r")
		if line == `\.` {
			continue
		}
		if ci.header {
			ci.header = false
			continue
		}
		for i, field := range strings.Split(line, string(ci.delim)) {
			if i > 0 {
				w.WriteByte(',')
			}
			if field == ci.null {
				continue
			}
			v, err := unescapeCopy(field)
			if err != nil {
				return err
			}
			w.WriteString(`"` + strings.ReplaceAll(v, `"`, `""`) + `"`)
		}
		w.WriteByte('\n')
	}
	return nil
}

// unescapeCopy decodes the backslash escapes of COPY's text format.
func unescapeCopy(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' || i+1 == len(s) {
			b.WriteByte(s[i])
			continue
		}
		i++
		switch s[i] {
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'v':
			b.WriteByte('\v')
		case 'x':
			j := i + 1
			for j < len(s) && j < i+3 && strings.IndexByte("0123456789abcdefABCDEF", s[j]) >= 0 {
				j++
			}
			v, err := strconv.ParseUint(s[i+1:j], 16, 8)
			if err != nil {
				return "", fmt.Errorf("COPY value %q: bad \\x escape: %w", s, loch.ErrInvalidArgument)
			}
			b.WriteByte(byte(v))
			i = j - 1
		case '0', '1', '2', '3', '4', '5', '6', '7':
			j := i
			for j < len(s) && j < i+3 && s[j] >= '0' && s[j] <= '7' {
				j++
			}
			v, _ := strconv.ParseUint(s[i:j], 8, 8)
			b.WriteByte(byte(v))
			i = j - 1
		default:
			b.WriteByte(s[i])
		}
	}
	return b.String(), nil
}

// insertCopied inserts the copied rows as one commit: INSERT INTO table
// (columns) SELECT ... FROM read_csv(the rows), each value cast to its
// column's type. The statement is the server's own over its own file, so
// it runs outside the sandbox.
func (c *conn) insertCopied(ctx context.Context, ci *copyIn, types []string) (*result, bool, error) {
	var cols, exprs, spec []string
	for i, name := range ci.cols {
		q := quoteIdent(name)
		cols = append(cols, q)
		spec = append(spec, quote(name)+": 'VARCHAR'")
		exprs = append(exprs, copyCast(q, types[i]))
	}
	header := ci.header && ci.csv && !ci.binary
	stmt := fmt.Sprintf("INSERT INTO %s (%s) SELECT %s FROM read_csv(%s, header = %v, delim = %s, quote = '\"', escape = '\"', "+
		"nullstr = %s, allow_quoted_nulls = false, auto_detect = false, columns = {%s})",
		quoteIdent(ci.table), strings.Join(cols, ", "), strings.Join(exprs, ", "), quote(ci.tmp), header,
		quote(string(map[bool]byte{true: ci.delim, false: ','}[ci.csv && !ci.binary])), quote(map[bool]string{true: ci.null, false: ""}[ci.csv && !ci.binary]), strings.Join(spec, ", "))
	s := sqlcat.NewSession(c.srv.cat)
	s.Branch, s.Threads, s.MemoryLimit = c.sess.Branch, c.sess.Threads, c.sess.MemoryLimit
	s.Message = c.sess.Message
	if s.Message == "" {
		s.Message = "COPY " + ci.table + " FROM STDIN"
	}
	r, err := s.Run(ctx, stmt, sqlcat.Output{})
	if err != nil {
		return nil, true, fmt.Errorf("copy %s from stdin: %w", ci.table, err)
	}
	c.srv.logf("user %s: COPY %s FROM STDIN: %d rows (version %s)", c.user, ci.table, r.Rows, r.Version)
	return tagResult("COPY " + strconv.FormatInt(r.Rows, 10)), true, nil
}

// copyCast is the SQL that turns the VARCHAR column q into a value of the
// DuckDB type duck: a cast for numbers, booleans, times and UUIDs, bytea's
// \x hex for a BLOB; loch converts the rest from text (class names,
// JSON, pgvector's [1,2,3]).
func copyCast(q, duck string) string {
	switch {
	case duck == "BLOB", isSample(duck): // an image as bytea
		return fmt.Sprintf(`CASE WHEN starts_with(%s, '\x') THEN from_hex(substr(%s, 3)) ELSE encode(%s) END`, q, q, q)
	case duck == "VARCHAR", duck == "JSON", duck == "ENUM", strings.HasSuffix(duck, "]"), strings.HasPrefix(duck, "STRUCT"):
		return q
	}
	return fmt.Sprintf("CAST(%s AS %s)", q, duck)
}

// unquoteIdent is an identifier as written: "Quoted" kept, else lower-cased.
func unquoteIdent(s string) string {
	if strings.HasPrefix(s, `"`) && strings.HasSuffix(s, `"`) && len(s) >= 2 {
		return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return strings.ToLower(s)
}

// quoteIdent is s as a SQL identifier.
func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
