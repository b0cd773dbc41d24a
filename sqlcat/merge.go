package sqlcat

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/query"
	"github.com/lochdata/loch/schema"
)

// This file runs MERGE INTO (docs/sql.md §4, "MERGE"): loch parses the
// statement's frame (target, source, condition, WHEN clauses) and DuckDB
// evaluates every expression. DuckDB 1.5 parses MERGE INTO itself, but it
// executes it only on its own tables (a catalog table is a view over
// loch's scan) and json_serialize_sql serializes SELECT statements only,
// so the frame is loch's, as for UPDATE.

// Merge actions.
const (
	mergeUpdate  = "update"
	mergeDelete  = "delete"
	mergeInsert  = "insert"
	mergeNothing = "nothing"
)

// Hidden columns of the queries a MERGE runs; a table column of one of
// these names would be shadowed.
const (
	mergeSrcColumn    = "_loch_src"    // the source row's number, for the order of inserts
	mergeClauseColumn = "_loch_clause" // the index of the WHEN clause that applies, -1 for none
)

// mergeStmt is a parsed MERGE INTO.
type mergeStmt struct {
	table, alias   string // the target table and its alias ("" without one)
	source, salias string // the source table reference's text and its alias
	on             string // the match condition (USING (cols) becomes one)
	using          []string
	matched        []mergeClause // WHEN MATCHED, in order
	notMatched     []mergeClause // WHEN NOT MATCHED [BY TARGET], in order
	bySource       []mergeClause // WHEN NOT MATCHED BY SOURCE, in order
}

// mergeClause is one WHEN clause.
type mergeClause struct {
	cond   string // the AND condition ("": always)
	action string // mergeUpdate, mergeDelete, mergeInsert or mergeNothing
	// star: UPDATE [SET *] or INSERT [*], the target columns from the
	// source's columns of the same name.
	star bool
	// cols and exprs: UPDATE SET col = expr, ...; INSERT (cols) VALUES
	// (exprs), where cols nil means every column by position.
	cols, exprs []string
}

// parseMerge parses
//
//	MERGE INTO name [[AS] alias] USING source [[AS] alias]
//	  (ON cond | USING (col, ...))
//	  {WHEN MATCHED [AND cond] THEN (UPDATE [SET (* | col = expr, ...)] | DELETE | DO NOTHING)
//	  | WHEN NOT MATCHED [BY TARGET] [AND cond] THEN (INSERT [(col, ...)] VALUES (expr, ...) | INSERT [*] | DO NOTHING)
//	  | WHEN NOT MATCHED BY SOURCE [AND cond] THEN (UPDATE SET col = expr, ... | DELETE | DO NOTHING)}
func (p *parser) parseMerge() (*mergeStmt, error) {
	st := &mergeStmt{}
	if err := p.expect("merge", "into"); err != nil {
		return nil, err
	}
	var err error
	if st.table, err = p.name("table"); err != nil {
		return nil, err
	}
	st.alias = p.alias()
	if err := p.expect("using"); err != nil {
		return nil, err
	}
	if st.source, st.salias, err = p.tableRef(); err != nil {
		return nil, err
	}
	if err := p.mergeOn(st); err != nil {
		return nil, err
	}
	for p.accept("when") {
		if err := p.mergeWhen(st); err != nil {
			return nil, err
		}
	}
	if p.peek().is("returning") {
		return nil, p.errorf("merge into %s: RETURNING is not supported", st.table)
	}
	if len(st.matched)+len(st.notMatched)+len(st.bySource) == 0 {
		return nil, p.errorf("merge into %s: want WHEN MATCHED or WHEN NOT MATCHED", st.table)
	}
	return st, p.end()
}

// mergeOn reads the match condition: ON cond or USING (col, ...).
func (p *parser) mergeOn(st *mergeStmt) error {
	switch {
	case p.accept("on"):
		st.on = p.until(func(t token) bool { return t.is("when") })
		if st.on == "" {
			return p.errorf("merge into %s: want a condition after ON", st.table)
		}
	case p.accept("using"):
		if err := p.expect("("); err != nil {
			return err
		}
		using, err := p.nameList()
		if err != nil {
			return err
		}
		st.using = using
	default:
		return p.errorf("merge into %s: want ON or USING after the source", st.table)
	}
	return nil
}

// mergeWhen reads one WHEN clause after its WHEN and adds it to st.
func (p *parser) mergeWhen(st *mergeStmt) error {
	matched := !p.accept("not")
	if err := p.expect("matched"); err != nil {
		return err
	}
	bySource := false
	if !matched && p.accept("by") {
		if bySource = p.accept("source"); !bySource {
			if err := p.expect("target"); err != nil {
				return err
			}
		}
	}
	var c mergeClause
	if p.accept("and") {
		if c.cond = p.until(func(t token) bool { return t.is("then") }); c.cond == "" {
			return p.errorf("merge into %s: want a condition after AND", st.table)
		}
	}
	if err := p.expect("then"); err != nil {
		return err
	}
	if err := p.mergeAction(&c, matched || bySource); err != nil {
		return fmt.Errorf("merge into %s: %w", st.table, err)
	}
	switch {
	case bySource && c.star:
		return fmt.Errorf("merge into %s: WHEN NOT MATCHED BY SOURCE has no source row to UPDATE SET * from; list the columns: %w", st.table, loch.ErrInvalidArgument)
	case bySource:
		st.bySource = append(st.bySource, c)
	case matched:
		st.matched = append(st.matched, c)
	default:
		st.notMatched = append(st.notMatched, c)
	}
	return nil
}

// alias reads an optional [AS] alias.
func (p *parser) alias() string {
	if p.accept("as") {
		if t := p.peek(); t.kind == tokIdent || t.kind == tokQuoted {
			p.next()
			return t.text
		}
		p.i--
		return ""
	}
	t := p.peek()
	if t.kind == tokQuoted || t.kind == tokIdent && !t.is("using") && !t.is("on") && !t.is("when") {
		p.next()
		return t.text
	}
	return ""
}

// tableRef reads a table reference: a (parenthesized query), or a name
// (dotted parts) with an optional (argument list) of a table function,
// then an optional [AS] alias with an optional (column list). text is all
// of it; the alias defaults to a plain table name.
func (p *parser) tableRef() (text, alias string, err error) {
	start := p.peek().pos
	plain := false
	if p.peek().is("(") {
		p.group()
	} else {
		if _, err := p.name("source table"); err != nil {
			return "", "", err
		}
		for p.accept(".") {
			if _, err := p.name("source table"); err != nil {
				return "", "", err
			}
		}
		plain = !p.peek().is("(")
		if !plain {
			p.group()
		}
	}
	last := p.toks[p.i-1]
	if alias = p.alias(); alias == "" && plain {
		alias = last.text
	} else if alias != "" && p.peek().is("(") {
		p.group()
	}
	return p.src[start:p.toks[p.i-1].end], alias, nil
}

// group skips a parenthesized group, the parser at its "(".
func (p *parser) group() {
	depth := 0
	for {
		t := p.next()
		switch {
		case t.kind == tokEOF:
			return
		case t.is("("):
			depth++
		case t.is(")"):
			if depth--; depth == 0 {
				return
			}
		}
	}
}

// byName reads an optional BY NAME (the star forms go by name) and
// refuses BY POSITION.
func (p *parser) byName() error {
	if p.peek().is("by") && p.toks[p.i+1].is("position") {
		return p.errorf("BY POSITION is not supported (columns go by name)")
	}
	p.accept("by", "name")
	return nil
}

// mergeAction reads a WHEN clause's action after THEN.
func (p *parser) mergeAction(c *mergeClause, matched bool) error {
	switch {
	case p.accept("do", "nothing"):
		c.action = mergeNothing
	case matched && p.accept("delete"):
		c.action = mergeDelete
	case matched && p.accept("update"):
		c.action = mergeUpdate
		return p.mergeUpdate(c)
	case !matched && p.accept("insert"):
		c.action = mergeInsert
		return p.mergeInsert(c)
	case matched:
		return p.errorf("WHEN MATCHED or NOT MATCHED BY SOURCE: want UPDATE, DELETE or DO NOTHING")
	default:
		return p.errorf("WHEN NOT MATCHED: want INSERT or DO NOTHING")
	}
	return nil
}

// mergeUpdate reads what follows UPDATE: [SET (* | col = expr, ...)].
func (p *parser) mergeUpdate(c *mergeClause) error {
	if err := p.byName(); err != nil {
		return err
	}
	if !p.accept("set") || p.accept("*") {
		c.star = true
		return nil
	}
	stop := func(t token) bool { return t.is(",") || t.is("when") || t.is("returning") }
	var err error
	c.cols, c.exprs, err = p.setList(stop, "")
	return err
}

// mergeInsert reads what follows INSERT: [(col, ...)] VALUES (expr, ...)
// or [*].
func (p *parser) mergeInsert(c *mergeClause) error {
	if err := p.byName(); err != nil {
		return err
	}
	if p.accept("(") {
		var err error
		if c.cols, err = p.nameList(); err != nil {
			return err
		}
	}
	if !p.accept("values") {
		if c.cols != nil {
			return p.errorf("want VALUES after the column list")
		}
		p.accept("*")
		c.star = true
		return nil
	}
	if err := p.expect("("); err != nil {
		return err
	}
	stop := func(t token) bool { return t.is(",") || t.is(")") }
	for {
		expr := p.until(stop)
		if expr == "" {
			return p.errorf("want an expression")
		}
		c.exprs = append(c.exprs, expr)
		if p.accept(")") {
			return nil
		}
		if err := p.expect(","); err != nil {
			return err
		}
	}
}

// merge parses MERGE INTO and runs it as one commit (docs/sql.md §4):
// DuckDB joins the target (with its row ids) and the source on the
// condition and evaluates the matched rows' clauses, and the NOT MATCHED
// BY SOURCE clauses over the target rows no source row matches; loch
// stages an update or a deletion of each such row by id, refusing a row
// that two source rows would change. DuckDB then finds the source rows
// that match no target row (an anti-join) and evaluates their INSERT
// clauses, in source order; loch stages them as INSERT does, and commits
// once.
func (s *Session) merge(ctx context.Context, p *parser, stmt string) (Result, error) {
	res := Result{Statement: "MERGE"}
	st, err := p.parseMerge()
	if err != nil {
		return res, err
	}
	name := st.table
	res.Table = name
	d, msg, err := s.openStatement(ctx, "merge into", name, stmt)
	if err != nil {
		return res, err
	}
	defer d.Close() // without Commit, Close discards what was staged
	e, done, err := s.engine(ctx, stmt, name, d)
	if err != nil {
		return res, err
	}
	defer done()
	sch := d.Schema()
	m, err := newMergePlan(ctx, e, st, sch)
	if err != nil {
		return res, err
	}
	k, err := s.newKeyCheck(ctx, name, d, &sch, true)
	if err != nil {
		return res, fmt.Errorf("merge into %s: %w", name, err)
	}
	changes, deletes, err := m.changes(ctx, e)
	if err != nil {
		return res, err
	}
	q, targets, err := m.inserts()
	if err != nil {
		return res, err
	}
	if q != "" {
		if res.Inserted, err = stage(ctx, e, name, d, targets, q, nil, k); err != nil {
			return res, fmt.Errorf("merge into %s: WHEN NOT MATCHED: %w", name, err)
		}
	}
	for i, c := range changes {
		if k != nil {
			if err := k.update(c.id, c.row, int64(i+1)); err != nil {
				return res, fmt.Errorf("merge into %s (nothing written): %w", name, err)
			}
		}
		if err := d.Update(ctx, c.id, c.row); err != nil {
			if cerr := checkRow(c.cols, c.row); cerr != nil {
				err = cerr
			}
			return res, fmt.Errorf("merge into %s (nothing written): _rowid %d: %w", name, c.id, err)
		}
	}
	if len(deletes) > 0 {
		if k != nil {
			k.deleted(deletes)
		}
		if err := d.Delete(ctx, deletes...); err != nil {
			return res, fmt.Errorf("merge into %s: %w", name, err)
		}
	}
	res.Updated, res.Deleted = int64(len(changes)), int64(len(deletes))
	res.Rows = res.Updated + res.Deleted + res.Inserted
	return commitKeyed(ctx, k, d, res, "merge into", msg)
}

// mergePlan is a MERGE resolved against its table's schema and its
// source's columns: the SQL that DuckDB runs.
type mergePlan struct {
	st      *mergeStmt
	sch     schema.Schema
	target  string // the target in FROM: "t" [AS "a"]
	tq, sq  string // the target's and the source's qualifiers, quoted
	source  string // the source in FROM, its rows numbered, with its alias
	on      string
	srcCols []string // the source's column names (for the star forms)
}

func newMergePlan(ctx context.Context, e *query.Engine, st *mergeStmt, sch schema.Schema) (*mergePlan, error) {
	m := &mergePlan{st: st, sch: sch, target: quoteIdent(st.table), tq: quoteIdent(st.table)}
	if st.alias != "" {
		m.target += " AS " + quoteIdent(st.alias)
		m.tq = quoteIdent(st.alias)
	}
	salias := st.salias
	if salias == "" {
		salias = "_loch_source"
	}
	m.sq = quoteIdent(salias)
	m.source = fmt.Sprintf("(SELECT *, row_number() OVER () AS %s FROM %s) AS %s", mergeSrcColumn, st.source, m.sq)
	m.on = st.on
	for i, c := range st.using {
		if i > 0 {
			m.on += " AND "
		}
		m.on += fmt.Sprintf("%s.%s = %s.%s", m.tq, quoteIdent(c), m.sq, quoteIdent(c))
	}
	star := false
	for _, c := range append(append([]mergeClause(nil), st.matched...), st.notMatched...) { // BY SOURCE has no star
		star = star || c.star
	}
	if star {
		rows, closeRows, err := e.Rows(ctx, fmt.Sprintf("SELECT * FROM %s LIMIT 0", st.source))
		if err != nil {
			return nil, fmt.Errorf("merge into %s: source: %w", st.table, err)
		}
		m.srcCols, err = rows.Columns()
		closeRows()
		if err != nil {
			return nil, fmt.Errorf("merge into %s: source: %w", st.table, err)
		}
	}
	return m, nil
}

// assignments resolves a clause's target columns and their expressions:
// its SET list or column list, every column by position for an INSERT
// without one, or for a star form each source column by name (the hidden
// _rowid and _pos skipped; another column the table lacks is an error).
func (m *mergePlan) assignments(c mergeClause) ([]*schema.Column, []string, error) {
	name := m.st.table
	var cols []*schema.Column
	var exprs []string
	add := func(col, expr string) error {
		t, ok := m.sch.Column(col)
		if !ok {
			return fmt.Errorf("merge into %s: no column %q (have %s): %w", name, col, strings.Join(m.sch.Names(), ", "), loch.ErrInvalidArgument)
		}
		for _, o := range cols {
			if o.Name == t.Name {
				return fmt.Errorf("merge into %s: column %s is set twice: %w", name, t.Name, loch.ErrInvalidArgument)
			}
		}
		cols, exprs = append(cols, t), append(exprs, expr)
		return nil
	}
	switch {
	case c.star:
		for _, sc := range m.srcCols {
			if sc == query.RowIDColumn || sc == query.PosColumn {
				continue
			}
			if _, ok := m.sch.Column(sc); !ok {
				return nil, nil, fmt.Errorf("merge into %s: %s * takes the source's columns by name, and the source's column %q is not a column of %s (have %s); list the columns: %w",
					name, strings.ToUpper(c.action), sc, name, strings.Join(m.sch.Names(), ", "), loch.ErrInvalidArgument)
			}
			if err := add(sc, m.sq+"."+quoteIdent(sc)); err != nil {
				return nil, nil, err
			}
		}
		if len(cols) == 0 {
			return nil, nil, fmt.Errorf("merge into %s: %s *: the source has none of the columns of %s (%s): %w",
				name, strings.ToUpper(c.action), name, strings.Join(m.sch.Names(), ", "), loch.ErrInvalidArgument)
		}
	case c.action == mergeInsert && c.cols == nil:
		if len(c.exprs) != len(m.sch.Columns) {
			return nil, nil, fmt.Errorf("merge into %s: INSERT VALUES has %d values, the table %d columns (%s); name the columns: %w",
				name, len(c.exprs), len(m.sch.Columns), strings.Join(m.sch.Names(), ", "), loch.ErrInvalidArgument)
		}
		for i, expr := range c.exprs {
			if err := add(m.sch.Columns[i].Name, expr); err != nil {
				return nil, nil, err
			}
		}
	default:
		if len(c.cols) != len(c.exprs) {
			return nil, nil, fmt.Errorf("merge into %s: INSERT names %d columns and has %d values: %w", name, len(c.cols), len(c.exprs), loch.ErrInvalidArgument)
		}
		for i, col := range c.cols {
			if err := add(col, c.exprs[i]); err != nil {
				return nil, nil, err
			}
		}
	}
	return cols, exprs, nil
}

// clauseCase is the SQL expression whose value is the index of the first
// of clauses whose condition holds, -1 when none does.
func clauseCase(clauses []mergeClause) string {
	var b strings.Builder
	b.WriteString("CASE")
	for i, c := range clauses {
		cond := "TRUE"
		if c.cond != "" {
			cond = "(" + c.cond + ")"
		}
		fmt.Fprintf(&b, " WHEN %s THEN %d", cond, i)
	}
	b.WriteString(" ELSE -1 END")
	return b.String()
}

// mergeChange is an update of one row by id.
type mergeChange struct {
	id   uint64
	row  loch.Row
	cols []*schema.Column // row's columns
}

// changes evaluates the clauses that change target rows: WHEN MATCHED
// over the join of the target and the source, then WHEN NOT MATCHED BY
// SOURCE over the target rows no source row matches (an anti-join). It
// returns the rows to update, with their new values, and the ids to
// delete. A target row that two source rows would change is refused (the
// SQL standard's cardinality violation), naming its row id.
func (m *mergePlan) changes(ctx context.Context, e *query.Engine) ([]mergeChange, []uint64, error) {
	var changes []mergeChange
	var deletes []uint64
	seen := map[uint64]bool{}
	for _, part := range []struct {
		clauses []mergeClause
		join    string
	}{
		{m.st.matched, "JOIN"},
		{m.st.bySource, "ANTI JOIN"},
	} {
		from := fmt.Sprintf("%s %s %s ON (%s)", m.target, part.join, m.source, m.on)
		if err := m.rowChanges(ctx, e, part.clauses, from, seen, &changes, &deletes); err != nil {
			return nil, nil, err
		}
	}
	return changes, deletes, nil
}

// rowChanges runs clauses over the target rows of from, adding to changes
// and deletes; seen holds the row ids changed so far.
func (m *mergePlan) rowChanges(ctx context.Context, e *query.Engine, clauses []mergeClause, from string, seen map[uint64]bool, changes *[]mergeChange, deletes *[]uint64) error {
	name := m.st.table
	acts := false
	for _, c := range clauses {
		acts = acts || c.action != mergeNothing
	}
	if !acts {
		return nil
	}
	// Each clause's values are evaluated only for the rows it applies to.
	list := []string{m.tq + "." + query.RowIDColumn, clauseCase(clauses) + " AS " + mergeClauseColumn}
	targets := make([][]*schema.Column, len(clauses))
	first := make([]int, len(clauses)) // the clause's first value in the result row
	for k, c := range clauses {
		if c.action != mergeUpdate {
			continue
		}
		cols, exprs, err := m.assignments(c)
		if err != nil {
			return err
		}
		targets[k], first[k] = cols, len(list)
		for _, x := range exprs {
			list = append(list, fmt.Sprintf("CASE WHEN %s = %d THEN (%s) END", mergeClauseColumn, k, x))
		}
	}
	q := fmt.Sprintf("SELECT %s FROM %s", strings.Join(list, ", "), from)
	return eachRow(ctx, e, name, q, len(list), func(n int64, vals []any) error {
		id, err := rowID("merge into", name, vals[0])
		if err != nil {
			return err
		}
		k, err := clauseIndex(vals[1])
		if err != nil {
			return fmt.Errorf("merge into %s: %w", name, err)
		}
		if k < 0 || clauses[k].action == mergeNothing {
			return nil
		}
		if seen[id] {
			return fmt.Errorf("merge into %s: target row _rowid %d is matched by more than one source row; a MERGE changes a row at most once (make the source's keys unique): %w",
				name, id, loch.ErrInvalidArgument)
		}
		seen[id] = true
		if clauses[k].action == mergeDelete {
			*deletes = append(*deletes, id)
			return nil
		}
		row := make(loch.Row, len(targets[k]))
		for i, c := range targets[k] {
			smp, err := toSample(c, vals[first[k]+i])
			if err != nil {
				return rowError("merge into", name, n, fmt.Errorf("_rowid %d, column %s: %w", id, c.Name, err))
			}
			row[c.Name] = smp
		}
		*changes = append(*changes, mergeChange{id, row, targets[k]})
		return nil
	})
}

// clauseIndex reads a clause index from DuckDB (an INTEGER).
func clauseIndex(v any) (int, error) {
	switch k := v.(type) {
	case int32:
		return int(k), nil
	case int64:
		return int(k), nil
	}
	return 0, fmt.Errorf("clause index %v (%T) is not an integer", v, v)
}

// inserts returns the query of the rows that the WHEN NOT MATCHED clauses
// insert, in source order, and its columns (the target columns any INSERT
// clause sets; a clause's other columns are NULL); "" when no clause
// inserts.
func (m *mergePlan) inserts() (string, []*schema.Column, error) {
	type set struct {
		k    int
		expr string
	}
	byCol := map[string][]set{}
	var ks []string
	for k, c := range m.st.notMatched {
		if c.action != mergeInsert {
			continue
		}
		ks = append(ks, strconv.Itoa(k))
		cols, exprs, err := m.assignments(c)
		if err != nil {
			return "", nil, err
		}
		for i, col := range cols {
			byCol[col.Name] = append(byCol[col.Name], set{k, exprs[i]})
		}
	}
	if len(ks) == 0 {
		return "", nil, nil
	}
	var targets []*schema.Column
	var list []string
	for i := range m.sch.Columns {
		c := &m.sch.Columns[i]
		sets := byCol[c.Name]
		if len(sets) == 0 {
			continue
		}
		var b strings.Builder
		b.WriteString("CASE " + mergeClauseColumn)
		for _, s := range sets {
			fmt.Fprintf(&b, " WHEN %d THEN (%s)", s.k, s.expr)
		}
		b.WriteString(" END")
		targets, list = append(targets, c), append(list, b.String())
	}
	if len(targets) == 0 { // INSERT DEFAULT VALUES: not parsed
		return "", nil, nil
	}
	// The inner query finds the source rows no target row matches and the
	// clause for each; the outer one, under the source's alias, evaluates
	// that clause's values.
	q := fmt.Sprintf("SELECT %s FROM (SELECT %s.*, %s AS %s FROM %s ANTI JOIN %s ON (%s)) AS %s WHERE %s IN (%s) ORDER BY %s",
		strings.Join(list, ", "), m.sq, clauseCase(m.st.notMatched), mergeClauseColumn, m.source, m.target, m.on, m.sq,
		mergeClauseColumn, strings.Join(ks, ", "), mergeSrcColumn)
	return q, targets, nil
}
