package sqlcat

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/catalog"
	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/query"
	"github.com/lochdata/loch/schema"
)

// batchRows is the rows an INSERT stages per Dataset.Extend.
const batchRows = 256

func (s *Session) create(ctx context.Context, st *createStmt, stmt string) (Result, error) {
	res := Result{Statement: "CREATE TABLE", Table: st.name}
	if err := catalog.ValidName(st.name); err != nil {
		return res, fmt.Errorf("create table: %w", err)
	}
	if st.as != "" {
		return s.createAs(ctx, st, stmt)
	}
	sch, err := st.schemaOf()
	if err != nil {
		return res, err
	}
	d, err := s.cat.CreateTable(ctx, st.name, sch)
	if err != nil {
		if st.ifNotExists && errors.Is(err, loch.ErrExists) {
			return res, nil
		}
		return res, fmt.Errorf("create table %s: %w", st.name, err)
	}
	defer d.Close()
	res.Version = d.Version()
	return res, nil
}

// createAs is CREATE TABLE name AS SELECT: the schema from the result's
// DuckDB types, then the rows, one commit; the table is dropped again if
// the insert fails.
func (s *Session) createAs(ctx context.Context, st *createStmt, stmt string) (Result, error) {
	res := Result{Statement: "CREATE TABLE", Table: st.name}
	if _, err := s.cat.Table(ctx, st.name); err == nil {
		if st.ifNotExists {
			return res, nil
		}
	}
	e, done, err := s.engine(ctx, st.as, "", nil)
	if err != nil {
		return res, err
	}
	cols, err := e.ResultColumns(ctx, st.as)
	done()
	if err != nil {
		return res, fmt.Errorf("create table %s: %w", st.name, err)
	}
	cs := &createStmt{name: st.name, with: st.with}
	for _, c := range cols {
		if c.Name == query.RowIDColumn || c.Name == query.PosColumn {
			continue
		}
		col, err := stored(c)
		if err != nil {
			return res, fmt.Errorf("create table %s as: %w", st.name, err)
		}
		cs.cols = append(cs.cols, coldef{col: col, set: map[string]bool{}})
	}
	sch, err := cs.schemaOf()
	if err != nil {
		return res, err
	}
	d, err := s.cat.CreateTable(ctx, st.name, sch)
	if err != nil {
		return res, fmt.Errorf("create table %s: %w", st.name, err)
	}
	d.Close()
	r, err := s.insertFrom(ctx, st.name, nil, st.as, stmt)
	if err != nil {
		if derr := s.cat.DropTable(ctx, st.name); derr != nil {
			return res, fmt.Errorf("%w (and dropping the new table failed: %v)", err, derr)
		}
		return res, err
	}
	res.Rows, res.Version = r.Rows, r.Version
	return res, nil
}

// stored is the column that stores the values of a query's result column
// c, or an error naming it.
func stored(c query.ResultColumn) (schema.Column, error) {
	if c.DType == schema.Invalid {
		return c.Column, typeError(c.Name, "type %s is not supported (supported: %s)", c.DuckType, supported)
	}
	return c.Column, nil
}

func (s *Session) alter(ctx context.Context, st *alterStmt, stmt string) (Result, error) {
	res := Result{Statement: "ALTER TABLE", Table: st.name}
	if st.renameTo != "" {
		if err := s.cat.RenameTable(ctx, st.name, st.renameTo); err != nil {
			return res, fmt.Errorf("alter table %s: %w", st.name, err)
		}
		res.Table = st.renameTo
		return res, nil
	}
	d, err := s.openWrite(ctx, st.name)
	if err != nil {
		return res, fmt.Errorf("alter table %s: %w", st.name, err)
	}
	defer d.Close()
	sch := d.Schema()
	if _, ok := sch.Column(st.add.col.Name); ok && st.ifNotEx {
		res.Version = d.Version()
		return res, nil
	}
	col := st.add.col
	if err := col.Normalize(); err != nil {
		return res, fmt.Errorf("alter table %s: %w", st.name, err)
	}
	if err := d.AddColumn(ctx, col); err != nil {
		return res, fmt.Errorf("alter table %s: %w", st.name, err)
	}
	msg, err := s.message(stmt)
	if err != nil {
		return res, err
	}
	if res.Version, err = d.Commit(ctx, msg); err != nil {
		return res, commitErr("alter table", st.name, err)
	}
	return res, nil
}

func (s *Session) drop(ctx context.Context, st *dropStmt) (Result, error) {
	res := Result{Statement: "DROP TABLE", Table: st.name}
	if err := s.cat.DropTable(ctx, st.name); err != nil {
		if st.ifExists && errors.Is(err, loch.ErrNotFound) {
			return res, nil
		}
		return res, fmt.Errorf("drop table %s: %w", st.name, err)
	}
	return res, nil
}

// insert parses INSERT INTO name [(columns)] source and runs it.
func (s *Session) insert(ctx context.Context, p *parser, stmt string) (Result, error) {
	if err := p.expect("insert", "into"); err != nil {
		return Result{Statement: "INSERT"}, err
	}
	name, err := p.name("table")
	if err != nil {
		return Result{Statement: "INSERT"}, err
	}
	var cols []string
	// a column list, unless the parenthesis opens the source, (SELECT ...)
	if p.peek().is("(") && !p.toks[p.i+1].is("select") && !p.toks[p.i+1].is("with") && !p.toks[p.i+1].is("values") {
		p.next()
		if cols, err = p.nameList(); err != nil {
			return Result{Statement: "INSERT", Table: name}, err
		}
	}
	if p.atEnd() {
		return Result{Statement: "INSERT", Table: name}, p.errorf("insert into %s: want VALUES or a SELECT", name)
	}
	return s.insertFrom(ctx, name, cols, p.rest(), stmt)
}

// insertFrom runs source in DuckDB and inserts its rows into table name,
// as one commit.
func (s *Session) insertFrom(ctx context.Context, name string, cols []string, source, stmt string) (Result, error) {
	res := Result{Statement: "INSERT", Table: name}
	d, msg, err := s.openStatement(ctx, "insert into", name, stmt)
	if err != nil {
		return res, err
	}
	defer d.Close() // without Commit, Close discards what was staged
	res.Table = name
	sch := d.Schema()
	targets := make([]*schema.Column, 0, len(sch.Columns))
	if cols == nil {
		for i := range sch.Columns {
			targets = append(targets, &sch.Columns[i])
		}
	} else {
		for _, c := range cols {
			col, ok := sch.Column(c)
			if !ok {
				return res, fmt.Errorf("insert into %s: no column %q (have %s): %w", name, c, strings.Join(sch.Names(), ", "), loch.ErrInvalidArgument)
			}
			targets = append(targets, col)
		}
	}
	k, err := s.newKeyCheck(ctx, name, d, &sch, true)
	if err != nil {
		return res, fmt.Errorf("insert into %s: %w", name, err)
	}
	e, done, err := s.engine(ctx, source, name, d)
	if err != nil {
		return res, err
	}
	defer done()
	if res.Rows, err = stage(ctx, e, name, d, targets, source, nil, k); err != nil {
		return res, err
	}
	return commitKeyed(ctx, k, d, res, "insert into", msg)
}

// stageHooks are Stage's conversions in Go (IngestOptions.Fields), by
// target index (nil: the SQL conversion), and its skip rule; skipped
// collects the rows skipped.
type stageHooks struct {
	convert []func(any) (loch.Sample, error)
	skip    func(error) bool
	skipped []SkippedRow
}

// stage runs source in e and stages its rows into d's columns targets
// (by position), batchRows rows per Dataset.Extend, converted as SQL
// INSERT does (h nil) or by h; it returns the number of rows staged, and
// on an error (naming the source row and column) stops with what it
// staged left for the caller to discard. k, when not nil, fills serial
// columns and records key values.
func stage(ctx context.Context, e *query.Engine, name string, d *loch.Dataset, targets []*schema.Column, source string, h *stageHooks, k *keyCheck) (int64, error) {
	rows, closeRows, err := e.Rows(ctx, fmt.Sprintf("SELECT * FROM (%s)", source))
	if err != nil {
		return 0, fmt.Errorf("insert into %s: %w", name, err)
	}
	defer closeRows()
	srcCols, err := rows.Columns()
	if err != nil {
		return 0, fmt.Errorf("insert into %s: %w", name, err)
	}
	keep, err := dataColumns(name, srcCols, targets)
	if err != nil {
		return 0, err
	}
	vals := make([]any, len(srcCols))
	ptrs := make([]any, len(srcCols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	b := batcher{d: d, name: name, targets: targets, keys: k}
	src := int64(0) // source rows read
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return b.n, fmt.Errorf("insert into %s: row %d: %w", name, src+1, err)
		}
		src++
		row, err := stageRow(b.newRow(), name, targets, keep, vals, src, h)
		if err != nil {
			return b.n, err
		}
		if row == nil { // skipped
			continue
		}
		if err := b.add(ctx, row, src); err != nil {
			return b.n, err
		}
	}
	if err := rows.Err(); err != nil {
		return b.n, fmt.Errorf("insert into %s (nothing written): %s: %w", name, oneLine(err), loch.ErrInvalidArgument)
	}
	if err := b.flush(ctx); err != nil {
		return b.n, err
	}
	return b.n, nil
}

// dataColumns returns the indices of the source's columns that are data
// (not the hidden columns of a catalog table, SELECT * FROM t), one for
// each of targets.
func dataColumns(name string, srcCols []string, targets []*schema.Column) ([]int, error) {
	keep := make([]int, 0, len(srcCols))
	for i, c := range srcCols {
		if c != query.RowIDColumn && c != query.PosColumn {
			keep = append(keep, i)
		}
	}
	if len(keep) != len(targets) {
		return nil, fmt.Errorf("insert into %s: the source has %d columns, the target %d (%s): %w",
			name, len(keep), len(targets), strings.Join(namesOf(targets), ", "), loch.ErrInvalidArgument)
	}
	return keep, nil
}

// stageRow converts source row src (values vals, the data columns at
// keep) to a row of targets, filling row (empty); nil when h skips it.
func stageRow(row loch.Row, name string, targets []*schema.Column, keep []int, vals []any, src int64, h *stageHooks) (loch.Row, error) {
	for k, i := range keep {
		c := targets[k]
		var smp loch.Sample
		var err error
		if h != nil && h.convert[k] != nil && vals[i] != nil {
			smp, err = h.convert[k](vals[i])
			if err != nil && h.skip != nil && h.skip(err) {
				h.skipped = append(h.skipped, SkippedRow{Row: src, Err: err})
				return nil, nil
			}
		} else {
			smp, err = toSample(c, vals[i])
		}
		if err != nil {
			return nil, rowError("insert into", name, src, fmt.Errorf("column %s: %w", c.Name, err))
		}
		row[c.Name] = smp
	}
	return row, nil
}

// batcher stages rows into d's columns targets, batchRows rows per
// Dataset.Extend; n counts the rows added.
type batcher struct {
	d       *loch.Dataset
	name    string
	targets []*schema.Column
	keys    *keyCheck // nil: the table has no keys or serial columns
	batch   []loch.Row
	from    []int64 // the source row of each row of batch (rows may be skipped)
	n       int64
	// free holds the rows of the last batch staged, emptied for newRow:
	// Extend copies what it stages, and a row's map costs more to
	// allocate than its scalars to convert.
	free []loch.Row
}

// newRow returns an empty row, a recycled one when there is one.
func (b *batcher) newRow() loch.Row {
	if n := len(b.free); n > 0 {
		row := b.free[n-1]
		b.free = b.free[:n-1]
		return row
	}
	return make(loch.Row, len(b.targets))
}

// add adds row (source row src), staging the batch when it is full.
func (b *batcher) add(ctx context.Context, row loch.Row, src int64) error {
	if b.keys != nil {
		if err := b.keys.insert(row, src); err != nil {
			return fmt.Errorf("insert into %s (nothing written): %w", b.name, err)
		}
	}
	b.batch, b.from = append(b.batch, row), append(b.from, src)
	b.n++
	if len(b.batch) == batchRows {
		return b.flush(ctx)
	}
	return nil
}

// flush stages the rows of the batch; an error names the first bad row.
func (b *batcher) flush(ctx context.Context) error {
	if len(b.batch) == 0 {
		return nil
	}
	if err := b.d.Extend(ctx, b.batch); err != nil {
		// Name the first bad row (the error path only: Extend checks
		// every sample).
		for k, row := range b.batch {
			if rerr := checkRow(b.targets, row); rerr != nil {
				return rowError("insert into", b.name, b.from[k], rerr)
			}
		}
		return fmt.Errorf("insert into %s (nothing written): rows %d to %d: %w", b.name, b.from[0], b.from[len(b.from)-1], err)
	}
	for _, row := range b.batch {
		clear(row)
		b.free = append(b.free, row)
	}
	b.batch, b.from = b.batch[:0], b.from[:0]
	return nil
}

// commitWrite ends a write statement that staged res.Rows rows on d
// (op and res.Table name it in errors): one commit with msg, or none when
// no row changed; res.Version is the version after it.
func commitWrite(ctx context.Context, d *loch.Dataset, res Result, op, msg string) (Result, error) {
	if res.Rows == 0 {
		res.Version = d.Version()
		return res, nil
	}
	v, err := d.Commit(ctx, msg)
	if err != nil {
		return res, commitErr(op, res.Table, err)
	}
	res.Version = v
	return res, nil
}

// checkRow checks each sample of row against its column, as staging
// does, so that an error can name the row.
func checkRow(cols []*schema.Column, row loch.Row) error {
	for _, c := range cols {
		smp, ok := row[c.Name]
		if !ok || smp.Null {
			continue
		}
		shape, data := smp.Shape, smp.Data
		if smp.Encoding == schema.PNG || smp.Encoding == schema.JPEG {
			_, cshape, err := imaging.Config(smp.Data)
			if err != nil {
				return fmt.Errorf("column %s: %w", c.Name, err)
			}
			shape, data = cshape, nil
		} else if c.DType.Variable() {
			continue
		}
		if err := c.CheckSample(shape, data); err != nil {
			return err
		}
	}
	return nil
}

// rowError is a row that does not fit its table: nothing was written.
// err names the column.
func rowError(op, table string, row int64, err error) error {
	if errors.Is(err, loch.ErrInvalidArgument) {
		return fmt.Errorf("%s %s (nothing written): row %d, %w", op, table, row, err)
	}
	return fmt.Errorf("%s %s (nothing written): row %d, %v: %w", op, table, row, err, loch.ErrInvalidArgument)
}

// commitErr is the error of a statement whose commit failed. Commit
// rebases the statement's rows onto other writers' commits by itself; rows
// that one of them deleted or changed since the statement read them are
// named, with what to do.
func commitErr(op, table string, err error) error {
	var ce *loch.RowConflictError
	if errors.As(err, &ce) {
		return base.Markf(loch.ErrConflict, "%s %s: another commit deleted or changed %s since this statement read them; nothing was changed: run the statement again",
			op, table, ce.Rows())
	}
	return fmt.Errorf("%s %s: %w", op, table, err)
}

func oneLine(err error) string { return strings.Join(strings.Fields(err.Error()), " ") }

func namesOf(cs []*schema.Column) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.Name
	}
	return out
}

// update parses UPDATE name SET col = expr, ... [WHERE cond] and runs it:
// DuckDB evaluates the expressions for the matching rows' ids, loch
// stages an update of each row by id, then commits once.
func (s *Session) update(ctx context.Context, p *parser, stmt string) (Result, error) {
	res := Result{Statement: "UPDATE"}
	if err := p.expect("update"); err != nil {
		return res, err
	}
	name, err := p.name("table")
	if err != nil {
		return res, err
	}
	res.Table = name
	if err := p.expect("set"); err != nil {
		return res, err
	}
	stop := func(t token) bool { return t.is(",") || t.is("where") || t.is("from") || t.is("returning") }
	cols, exprs, err := p.setList(stop, "update "+name+": ")
	if err != nil {
		return res, err
	}
	where, err := p.where("update", name)
	if err != nil {
		return res, err
	}
	d, msg, err := s.openStatement(ctx, "update", name, stmt)
	if err != nil {
		return res, err
	}
	defer d.Close()
	sch := d.Schema()
	targets, err := updateTargets(name, &sch, cols)
	if err != nil {
		return res, err
	}
	list := make([]string, len(exprs))
	for i, x := range exprs {
		list[i] = fmt.Sprintf("(%s)", x)
	}
	q := fmt.Sprintf("SELECT %s, %s FROM %s%s", query.RowIDColumn, strings.Join(list, ", "), quoteIdent(name), where)
	changes, err := s.updateRows(ctx, name, d, q, targets)
	if err != nil {
		return res, err
	}
	k, err := s.newKeyCheck(ctx, name, d, &sch, false)
	if err != nil {
		return res, fmt.Errorf("update %s: %w", name, err)
	}
	for i, c := range changes {
		if k != nil {
			if err := k.update(c.id, c.row, int64(i+1)); err != nil {
				return res, fmt.Errorf("update %s (nothing written): %w", name, err)
			}
		}
		if err := d.Update(ctx, c.id, c.row); err != nil {
			if cerr := checkRow(targets, c.row); cerr != nil {
				err = cerr
			}
			return res, rowError("update", name, int64(i+1), err)
		}
	}
	res.Rows = int64(len(changes))
	return commitKeyed(ctx, k, d, res, "update", msg)
}

// openStatement opens table name to write statement stmt (op, as errors
// name it: "update", "delete from", ...) and returns the table, which the
// caller closes, and the commit message stmt gives.
func (s *Session) openStatement(ctx context.Context, op, name, stmt string) (*loch.Dataset, string, error) {
	msg, err := s.message(stmt)
	if err != nil {
		return nil, "", err
	}
	d, err := s.openWrite(ctx, name)
	if err != nil {
		return nil, "", fmt.Errorf("%s %s: %w", op, name, err)
	}
	return d, msg, nil
}

// rowID is the row id v that DuckDB gave for a row that op (as errors
// name it) on table name writes.
func rowID(op, name string, v any) (uint64, error) {
	id, ok := v.(uint64)
	if !ok {
		return 0, fmt.Errorf("%s %s: row id %v is not a UBIGINT", op, name, v)
	}
	return id, nil
}

// updateTargets returns the columns of table name (schema sch) that
// UPDATE SET names, each once.
func updateTargets(name string, sch *schema.Schema, cols []string) ([]*schema.Column, error) {
	targets := make([]*schema.Column, len(cols))
	for i, col := range cols {
		c, ok := sch.Column(col)
		if !ok {
			return nil, fmt.Errorf("update %s: no column %q (have %s): %w", name, col, strings.Join(sch.Names(), ", "), loch.ErrInvalidArgument)
		}
		if slices.ContainsFunc(targets[:i], func(t *schema.Column) bool { return t.Name == c.Name }) {
			return nil, fmt.Errorf("update %s: column %s is set twice: %w", name, c.Name, loch.ErrInvalidArgument)
		}
		targets[i] = c
	}
	return targets, nil
}

// change is the new values of one row, by row id.
type change struct {
	id  uint64
	row loch.Row
}

// updateRows runs q (the row id, then the value of each of targets) and
// returns the change of each row it reads.
func (s *Session) updateRows(ctx context.Context, name string, d *loch.Dataset, q string, targets []*schema.Column) ([]change, error) {
	var changes []change
	err := s.each(ctx, name, d, q, len(targets)+1, func(n int64, vals []any) error {
		id, err := rowID("update", name, vals[0])
		if err != nil {
			return err
		}
		row := make(loch.Row, len(targets))
		for i, c := range targets {
			smp, err := toSample(c, vals[i+1])
			if err != nil {
				return rowError("update", name, n, fmt.Errorf("column %s: %w", c.Name, err))
			}
			row[c.Name] = smp
		}
		changes = append(changes, change{id, row})
		return nil
	})
	return changes, err
}

// where reads [WHERE cond] to the end of the statement and returns it
// as " WHERE (cond)" ("" without one).
func (p *parser) where(op, name string) (string, error) {
	if p.atEnd() {
		return "", nil
	}
	if !p.accept("where") {
		return "", p.errorf("%s %s: want WHERE or the end (FROM, USING and RETURNING are not supported)", op, name)
	}
	cond := p.rest()
	if cond == "" {
		return "", p.errorf("%s %s: want a condition after WHERE", op, name)
	}
	return " WHERE (" + cond + ")", nil
}

// delete parses DELETE FROM name [WHERE cond] and runs it: DuckDB finds
// the matching rows' ids, loch deletes them by id in one commit.
func (s *Session) delete(ctx context.Context, p *parser, stmt string) (Result, error) {
	res := Result{Statement: "DELETE"}
	if err := p.expect("delete", "from"); err != nil {
		return res, err
	}
	name, err := p.name("table")
	if err != nil {
		return res, err
	}
	res.Table = name
	where, err := p.where("delete from", name)
	if err != nil {
		return res, err
	}
	d, msg, err := s.openStatement(ctx, "delete from", name, stmt)
	if err != nil {
		return res, err
	}
	defer d.Close()
	var ids []uint64
	q := fmt.Sprintf("SELECT %s FROM %s%s", query.RowIDColumn, quoteIdent(name), where)
	err = s.each(ctx, name, d, q, 1, func(_ int64, vals []any) error {
		id, err := rowID("delete from", name, vals[0])
		if err != nil {
			return err
		}
		ids = append(ids, id)
		return nil
	})
	if err != nil {
		return res, err
	}
	res.Rows = int64(len(ids))
	if res.Rows == 0 {
		res.Version = d.Version()
		return res, nil
	}
	if err := d.Delete(ctx, ids...); err != nil {
		return res, fmt.Errorf("delete from %s: %w", name, err)
	}
	if res.Version, err = d.Commit(ctx, msg); err != nil {
		return res, commitErr("delete from", name, err)
	}
	return res, nil
}

// each runs q (of n result columns) with table name read through d and
// calls fn with each row's values (1-based row number).
func (s *Session) each(ctx context.Context, name string, d *loch.Dataset, q string, n int, fn func(int64, []any) error) error {
	e, done, err := s.engine(ctx, q, name, d)
	if err != nil {
		return err
	}
	defer done()
	return eachRow(ctx, e, name, q, n, fn)
}

// eachRow runs q (of n result columns) in e and calls fn with each row's
// values (1-based row number); errors of q name table name.
func eachRow(ctx context.Context, e *query.Engine, name, q string, n int, fn func(int64, []any) error) error {
	rows, closeRows, err := e.Rows(ctx, q)
	if err != nil {
		return err
	}
	defer closeRows()
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	var k int64
	for rows.Next() {
		k++
		if err := rows.Scan(ptrs...); err != nil {
			return err
		}
		if err := fn(k, vals); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("%s: %s: %w", name, oneLine(err), loch.ErrInvalidArgument)
	}
	return nil
}

func quoteIdent(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
