package pgwire

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/jackc/pgx/v5/pgproto3"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/sqlcat"
)

// prepared is a statement of the extended protocol (Parse).
type prepared struct {
	sql       string
	paramOIDs []uint32 // as the client gave them (0: the server picks)
	desc      *description
}

// description is what Describe of a statement answers.
type description struct {
	params []uint32
	fields []pgproto3.FieldDescription // nil: no rows
}

// portal is a bound statement (Bind), run at its first Describe or
// Execute.
type portal struct {
	stmt    *prepared
	sql     string
	formats []int16
	res     *result
}

// loop reads and answers messages until the client leaves. After an
// error in the extended protocol, messages are skipped up to Sync.
func (c *conn) loop() {
	skipping := false
	for {
		msg, err := c.be.Receive()
		if err != nil {
			return
		}
		if skipping {
			if _, ok := msg.(*pgproto3.Sync); !ok {
				continue
			}
			skipping = false
		}
		var fail error
		switch m := msg.(type) {
		case *pgproto3.Query:
			c.simpleQuery(m.String)
		case *pgproto3.Parse:
			fail = c.parse(m)
		case *pgproto3.Bind:
			fail = c.bind(m)
		case *pgproto3.Describe:
			fail = c.describe(m)
		case *pgproto3.Execute:
			fail = c.execute(m)
		case *pgproto3.Close:
			c.closeObject(m)
		case *pgproto3.Sync:
			c.ready()
		case *pgproto3.Flush:
			c.be.Flush()
		case *pgproto3.Terminate:
			return
		default:
			fail = fmt.Errorf("message %T is not supported: %w", msg, errUnsupported)
		}
		if fail != nil {
			c.sendError(fail)
			skipping = true
		}
		c.mu.Lock()
		draining := c.draining
		c.mu.Unlock()
		if draining {
			c.fatal("57P01", "terminating connection due to administrator command")
			return
		}
	}
}

var errUnsupported = errors.New("not supported")

func (c *conn) parse(m *pgproto3.Parse) error {
	if m.Name != "" {
		if _, ok := c.stmts[m.Name]; ok {
			return fmt.Errorf("prepared statement %q already exists: %w", m.Name, loch.ErrExists)
		}
	}
	c.stmts[m.Name] = &prepared{sql: m.Query, paramOIDs: slices.Clone(m.ParameterOIDs)}
	c.be.Send(&pgproto3.ParseComplete{})
	return nil
}

func (c *conn) bind(m *pgproto3.Bind) error {
	st, d, err := c.statement(m.PreparedStatement)
	if err != nil {
		return err
	}
	if len(m.Parameters) != len(d.params) {
		return fmt.Errorf("bind message supplies %d parameters, but prepared statement %q requires %d: %w",
			len(m.Parameters), m.PreparedStatement, len(d.params), loch.ErrInvalidArgument)
	}
	lits := make([]string, len(m.Parameters))
	for i, raw := range m.Parameters {
		f := int16(0)
		switch len(m.ParameterFormatCodes) {
		case 0:
		case 1:
			f = m.ParameterFormatCodes[0]
		default:
			f = m.ParameterFormatCodes[i]
		}
		if lits[i], err = literal(raw, f, d.params[i]); err != nil {
			return fmt.Errorf("parameter $%d: %w", i+1, err)
		}
	}
	q, err := bindParams(st.sql, lits)
	if err != nil {
		return err
	}
	if old := c.portals[m.DestinationPortal]; old != nil && old.res != nil {
		old.res.close()
	}
	c.portals[m.DestinationPortal] = &portal{stmt: st, sql: q, formats: slices.Clone(m.ResultFormatCodes)}
	c.be.Send(&pgproto3.BindComplete{})
	return nil
}

// describeStatement learns a statement's parameter and result types from
// the catalog's mirror (query.Mirror) once.
// statement returns the prepared statement named name and its
// description (loch.ErrNotFound when there is none).
func (c *conn) statement(name string) (*prepared, *description, error) {
	st, ok := c.stmts[name]
	if !ok {
		return nil, nil, fmt.Errorf("prepared statement %q does not exist: %w", name, loch.ErrNotFound)
	}
	d, err := c.describeStatement(st)
	return st, d, err
}

func (c *conn) describeStatement(st *prepared) (*description, error) {
	if st.desc != nil {
		return st.desc, nil
	}
	n := paramCount(st.sql)
	d := &description{params: make([]uint32, n)}
	copy(d.params, st.paramOIDs)
	ctx, end := c.begin()
	defer end()
	desc, err := c.mirrorDescribe(ctx, st.sql)
	if ctx.Err() != nil {
		if err == nil { // cancelled just after the mirror answered
			err = ctx.Err()
		}
		return nil, stmtErr(ctx, err)
	}
	// A parameter DuckDB cannot type is text, as in PostgreSQL; where the
	// mirror cannot plan the statement at all, it stays unspecified (0):
	// clients send it as text, and it is bound as a string literal, which
	// DuckDB casts where it is compared or computed with.
	for i := range d.params {
		if d.params[i] == 0 && err == nil {
			d.params[i] = oidText
			if i < len(desc.Params) {
				d.params[i] = paramOID(desc.Params[i])
			}
		}
	}
	if sqlcat.Kind(st.sql) == sqlcat.KindBranchMerge {
		names, types := mergeFields()
		for i, name := range names {
			d.fields = append(d.fields, field(name, types[i], 0))
		}
	} else if err == nil && desc.Read {
		for i, name := range desc.Names {
			d.fields = append(d.fields, field(name, typeFor(desc.Types[i]), 0))
		}
	} else if err != nil && c.isRead(st.sql) {
		// The mirror cannot plan it (loch_table with a ref, ...): run it
		// with NULL parameters to see its columns.
		if d.fields, err = c.fieldsByRunning(ctx, st.sql, n); err != nil {
			return nil, stmtErr(ctx, err)
		}
	}
	st.desc = d
	return d, nil
}

// fieldsByRunning runs q with NULL parameters (a query as a subquery
// with LIMIT 0) and returns its columns.
func (c *conn) fieldsByRunning(ctx context.Context, q string, n int) ([]pgproto3.FieldDescription, error) {
	lits := make([]string, n)
	for i := range lits {
		lits[i] = "NULL"
	}
	bound, err := bindParams(q, lits)
	if err != nil {
		return nil, err
	}
	switch firstWords(bound, 1)[0] {
	case "select", "with", "values", "from", "table":
		bound = "SELECT * FROM (\n" + strings.TrimSuffix(strings.TrimSpace(bound), ";") + "\n) LIMIT 0"
	}
	res, err := c.exec(ctx, bound)
	if err != nil {
		return nil, err
	}
	defer res.close()
	return res.fieldsIn(nil), nil
}

func (c *conn) describe(m *pgproto3.Describe) error {
	if m.ObjectType == 'S' {
		_, d, err := c.statement(m.Name)
		if err != nil {
			return err
		}
		c.be.Send(&pgproto3.ParameterDescription{ParameterOIDs: d.params})
		if d.fields == nil {
			c.be.Send(&pgproto3.NoData{})
		} else {
			c.be.Send(&pgproto3.RowDescription{Fields: d.fields})
		}
		return nil
	}
	p, ok := c.portals[m.Name]
	if cur := c.cursors[m.Name]; !ok && cur != nil { // a DECLAREd cursor is a portal too
		c.be.Send(&pgproto3.RowDescription{Fields: cur.res.fieldsIn(nil)})
		return nil
	}
	if !ok {
		return fmt.Errorf("portal %q does not exist: %w", m.Name, loch.ErrNotFound)
	}
	if err := c.startPortal(p); err != nil {
		return err
	}
	if p.res.rows == nil && p.res.static == nil {
		c.be.Send(&pgproto3.NoData{})
	} else {
		c.be.Send(&pgproto3.RowDescription{Fields: p.res.fieldsIn(p.formats)})
	}
	return nil
}

// startPortal runs p's statement, once.
func (c *conn) startPortal(p *portal) error {
	if p.res != nil {
		return nil
	}
	ctx, end := c.begin()
	res, err := c.exec(ctx, p.sql)
	if err != nil {
		err = stmtErr(ctx, err)
		end()
		return err
	}
	p.res = res
	if res.done { // a command: nothing of it runs on
		end()
		return nil
	}
	res.end = end
	return nil
}

func (c *conn) execute(m *pgproto3.Execute) error {
	p, ok := c.portals[m.Portal]
	if !ok {
		return fmt.Errorf("portal %q does not exist: %w", m.Portal, loch.ErrNotFound)
	}
	if err := c.startPortal(p); err != nil {
		return err
	}
	if p.res.done {
		c.be.Send(&pgproto3.CommandComplete{CommandTag: []byte(p.res.tag)})
		return nil
	}
	var err error
	if p.res.copyOut != nil {
		err = c.sendCopy(p.res)
	} else {
		err = c.sendRows(p.res, p.formats, false, int(m.MaxRows))
	}
	if p.res.done || err != nil {
		p.res.close()
	}
	if err != nil && c.ctx.Err() == nil && errors.Is(err, context.Canceled) {
		return fmt.Errorf("canceling statement due to user request: %w", context.Canceled)
	}
	return err
}

func (c *conn) closeObject(m *pgproto3.Close) {
	if m.ObjectType == 'S' {
		delete(c.stmts, m.Name)
	} else if p := c.portals[m.Name]; p != nil {
		if p.res != nil {
			p.res.close()
		}
		delete(c.portals, m.Name)
	}
	c.be.Send(&pgproto3.CloseComplete{})
}

// simpleQuery runs each statement of a Query message, stopping at the
// first error.
func (c *conn) simpleQuery(q string) {
	defer c.ready()
	stmts := splitStatements(q)
	if len(stmts) == 0 {
		c.be.Send(&pgproto3.EmptyQueryResponse{})
		return
	}
	for _, st := range stmts {
		if err := c.runSimple(st); err != nil {
			c.sendError(err)
			return
		}
	}
}

func (c *conn) runSimple(q string) error {
	ctx, end := c.begin()
	defer end()
	res, err := c.exec(ctx, q)
	if err != nil {
		return stmtErr(ctx, err)
	}
	defer res.close()
	if res.copyOut != nil {
		return stmtErr(ctx, c.sendCopy(res))
	}
	return stmtErr(ctx, c.sendRows(res, nil, true, 0))
}
