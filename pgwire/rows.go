package pgwire

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/lochdata/loch"
)

// errNoCursor is FETCH or CLOSE of a cursor that does not exist.
var errNoCursor = errors.New("no such cursor")

// sendRows sends up to limit rows of res (all when limit <= 0), a
// RowDescription first when describe, then CommandComplete SELECT n, or
// PortalSuspended when limit rows were sent and more may follow.
func (c *conn) sendRows(res *result, formats []int16, describe bool, limit int) error {
	if res.done {
		c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(res.tag)})
		return nil
	}
	if describe {
		c.be.Send(&pgproto3.RowDescription{Fields: res.fieldsIn(formats)})
	}
	more, err := c.sendSome(res, formats, limit)
	if err != nil {
		return err
	}
	if more {
		c.be.Send(&pgproto3.PortalSuspended{})
		return nil
	}
	verb := "SELECT"
	if res.fetchTag != "" {
		verb = res.fetchTag
	}
	res.done, res.tag = true, verb+" "+strconv.Itoa(res.sent)
	c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(res.tag)})
	return nil
}

// The server flushes what it sends of a result every flushRows rows, or
// sooner once flushBytes are pending (rows of images).
const (
	flushRows  = 256
	flushBytes = 1 << 20
)

// sendSome sends DataRows of res until limit rows (limit <= 0: all) and
// reports whether it stopped at the limit.
func (c *conn) sendSome(res *result, formats []int16, limit int) (bool, error) {
	fs := make([]int16, len(res.types))
	for i, t := range res.types {
		fs[i] = formatOf(formats, i, t)
	}
	n, pending := 0, 0
	more, err := res.pull(limit, func(vals []any) error {
		row := make([][]byte, len(vals))
		for i, v := range vals {
			b, err := encode(v, res.types[i], fs[i])
			if err != nil {
				return fmt.Errorf("column %s: %w", res.names[i], err)
			}
			row[i] = b
			pending += len(b)
		}
		c.be.Send(&pgproto3.DataRow{Values: row})
		n++
		if n%flushRows == 0 || pending >= flushBytes {
			pending = 0
			return c.be.Flush()
		}
		return nil
	})
	return more, err
}

// pull calls fn with the next rows of r, at most limit of them (limit <=
// 0: all); more is true when it stopped at the limit.
func (r *result) pull(limit int, fn func([]any) error) (more bool, err error) {
	n := 0
	full := func() bool { return limit > 0 && n >= limit }
	for ; r.si < len(r.static); r.si++ {
		if full() {
			return true, nil
		}
		if err := fn(r.static[r.si]); err != nil {
			return false, err
		}
		n++
		r.sent++
	}
	if r.rows == nil {
		return false, nil
	}
	vals := make([]any, len(r.names))
	ptrs := make([]any, len(vals))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for !full() {
		if !r.rows.Next() {
			return false, r.rows.Err()
		}
		if err := r.rows.Scan(ptrs...); err != nil {
			return false, err
		}
		if err := fn(vals); err != nil {
			return false, err
		}
		n++
		r.sent++
	}
	return true, nil
}

// each calls fn with every row of r that is left.
func (r *result) each(fn func([]any) error) error {
	_, err := r.pull(0, fn)
	return err
}

// cursor is a DECLAREd cursor: a running read whose rows FETCH sends.
type cursor struct {
	res    *result
	cancel context.CancelFunc
}

var (
	declareRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?is)^\s*declare\s+("(?:[^"]|"")+"|\w+)\s+(?:binary\s+)?(?:(?:no\s+)?scroll\s+)?cursor\s+(?:(?:with|without)\s+hold\s+)?for\s+(.*)$`)
	})
	fetchRE = sync.OnceValue(func() *regexp.Regexp {
		return regexp.MustCompile(`(?is)^\s*(fetch|move)\s+(?:(forward|next|all)\s+)?(?:(all|\d+)\s+)?(?:from\s+|in\s+)?("(?:[^"]|"")+"|\w+)\s*;?\s*$`)
	})
	closeRE = sync.OnceValue(func() *regexp.Regexp { return regexp.MustCompile(`(?is)^\s*close\s+("(?:[^"]|"")+"|\w+)\s*;?\s*$`) })
)

// cursorName unquotes a cursor's name.
func cursorName(s string) string {
	if strings.HasPrefix(s, `"`) {
		return strings.ReplaceAll(s[1:len(s)-1], `""`, `"`)
	}
	return strings.ToLower(s)
}

// cursorStatement runs DECLARE name CURSOR FOR query, FETCH [FORWARD]
// [n|ALL] [FROM] name and CLOSE name|ALL (psycopg's server-side cursors).
// A cursor lives until CLOSE or the end of the connection (as WITH HOLD).
func (c *conn) cursorStatement(q, verb string) (*result, error) {
	switch verb {
	case "declare":
		m := declareRE().FindStringSubmatch(q)
		if m == nil {
			return nil, fmt.Errorf("DECLARE: want DECLARE name CURSOR FOR query: %w", loch.ErrInvalidArgument)
		}
		name := cursorName(m[1])
		if _, ok := c.cursors[name]; ok {
			return nil, fmt.Errorf("cursor %q already exists: %w", name, loch.ErrExists)
		}
		ctx, cancel := context.WithCancel(c.ctx)
		res, err := c.read(ctx, strings.TrimSuffix(strings.TrimSpace(m[2]), ";"))
		if err != nil {
			cancel()
			return nil, err
		}
		c.cursors[name] = &cursor{res: res, cancel: cancel}
		return tagResult("DECLARE CURSOR"), nil
	case "close":
		if strings.EqualFold(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(q), ";")), "close all") {
			c.closeCursors()
			return tagResult("CLOSE CURSOR"), nil
		}
		m := closeRE().FindStringSubmatch(q)
		if m == nil {
			return nil, fmt.Errorf("CLOSE: want CLOSE name: %w", loch.ErrInvalidArgument)
		}
		name := cursorName(m[1])
		cur, err := c.cursor(name)
		if err != nil {
			return nil, err
		}
		cur.res.close()
		cur.cancel()
		delete(c.cursors, name)
		return tagResult("CLOSE CURSOR"), nil
	}
	return c.fetch(q)
}

// cursor returns the cursor DECLAREd as name (errNoCursor if none).
func (c *conn) cursor(name string) (*cursor, error) {
	cur, ok := c.cursors[name]
	if !ok {
		return nil, fmt.Errorf("cursor %q does not exist: %w", name, errNoCursor)
	}
	return cur, nil
}

// fetch answers FETCH and MOVE: a result whose rows are the cursor's next
// ones.
func (c *conn) fetch(q string) (*result, error) {
	m := fetchRE().FindStringSubmatch(q)
	if m == nil {
		return nil, fmt.Errorf("FETCH: want FETCH [FORWARD] [n|ALL] [FROM] name: %w", loch.ErrInvalidArgument)
	}
	cur, err := c.cursor(cursorName(m[4]))
	if err != nil {
		return nil, err
	}
	limit := 1
	switch {
	case strings.EqualFold(m[2], "all"), strings.EqualFold(m[3], "all"):
		limit = 0
	case m[3] != "":
		limit, _ = strconv.Atoi(m[3])
	}
	out := &result{names: cur.res.names, types: cur.res.types}
	_, err = cur.res.pull(limit, func(vals []any) error {
		out.static = append(out.static, append([]any(nil), vals...))
		return nil
	})
	if err != nil {
		return nil, err
	}
	verb := strings.ToUpper(m[1])
	if verb == "MOVE" {
		return tagResult("MOVE " + strconv.Itoa(len(out.static))), nil
	}
	out.fetchTag = "FETCH"
	return out, nil
}

// closeCursors closes every cursor.
func (c *conn) closeCursors() {
	for name, cur := range c.cursors {
		cur.res.close()
		cur.cancel()
		delete(c.cursors, name)
	}
}
