package sqlcat

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"

	"github.com/lochdata/loch"
)

// What servers that run statements for other people (package pgwire) ask
// of a statement before they run it, to decide whether its user may.

// Target is the table that the write or DDL statement stmt changes: the
// table of INSERT INTO, UPDATE, DELETE FROM, MERGE INTO, OPTIMIZE, CREATE,
// ALTER and DROP TABLE, as the statement spells it, and the table of a
// CALL loch_merge (whose branches ParseBranchMerge reads). It is "" for
// every other kind of statement.
func Target(stmt string) (string, error) {
	kind := Kind(stmt)
	if kind == KindBranchMerge {
		m, err := ParseBranchMerge(stmt)
		return m.Table, err
	}
	words := map[string][]string{
		"INSERT": {"insert", "into"}, "UPDATE": {"update"}, "DELETE": {"delete", "from"},
		"MERGE": {"merge", "into"}, "OPTIMIZE": {"optimize"},
		"CREATE TABLE": {"create", "table"}, "ALTER TABLE": {"alter", "table"}, "DROP TABLE": {"drop", "table"},
	}[kind]
	if words == nil {
		return "", nil
	}
	p, err := newParser(stmt)
	if err != nil {
		return "", err
	}
	if err := p.expect(words...); err != nil {
		return "", err
	}
	switch kind {
	case "OPTIMIZE":
		p.accept("table")
	case "CREATE TABLE":
		p.accept("if", "not", "exists")
	case "DROP TABLE":
		p.accept("if", "exists")
	}
	return p.name("table")
}

// Tables returns the catalog's tables that stmt names, as the catalog
// spells them: the tables a read of stmt opens (Run reads no other), the
// target of a write among them when it exists.
func (s *Session) Tables(ctx context.Context, stmt string) ([]string, error) {
	tables, err := s.cat.Tables(ctx)
	if err != nil {
		return nil, err
	}
	toks, err := lex(stmt)
	if err != nil {
		return nil, err
	}
	named := map[string]bool{}
	for _, t := range toks {
		if t.kind == tokIdent || t.kind == tokQuoted || t.kind == tokString {
			named[strings.ToLower(t.text)] = true
		}
	}
	var out []string
	for _, t := range tables {
		if named[strings.ToLower(t.Name)] {
			out = append(out, t.Name)
		}
	}
	return out, nil
}

// ReadRef is the ref a read of table name sees in this session (the
// session's branch where the table has it, else "main"), and whether that
// ref is a tag.
func (s *Session) ReadRef(ctx context.Context, name string) (string, bool, error) {
	if s.Branch == "" {
		return "main", false, nil
	}
	d, err := s.cat.OpenTable(ctx, name, loch.WithRef(s.Branch))
	if errors.Is(err, loch.ErrNotFound) {
		if _, terr := s.cat.Table(ctx, name); terr != nil {
			return "", false, terr
		}
		return "main", false, nil
	}
	if err != nil {
		return "", false, err
	}
	defer d.Close()
	tag, err := IsTag(ctx, d, s.Branch)
	return s.Branch, tag, err
}

// IsTag reports whether ref is one of d's tags (not a branch, and not a
// version id, which also opens read-only).
func IsTag(ctx context.Context, d *loch.Dataset, ref string) (bool, error) {
	refs, err := d.Refs(ctx)
	if err != nil {
		return false, err
	}
	for _, r := range refs {
		if r.Name == ref && r.Kind == loch.RefTag {
			return true, nil
		}
	}
	return false, nil
}

// Rows runs the read stmt (Kind KindQuery) as Run does and returns
// DuckDB's rows for callers that read the result as Go values, and the
// function that closes them and the statement's engine (it may be called
// more than once); nothing else of the session runs until then.
func (s *Session) Rows(ctx context.Context, stmt string) (*sql.Rows, func(), error) {
	stmt = PostgresOperators(stmt)
	if k := Kind(stmt); k != KindQuery {
		return nil, nil, fmt.Errorf("sql: %s is not a read: %w", k, loch.ErrInvalidArgument)
	}
	e, done, err := s.engine(ctx, stmt, "", nil)
	if err != nil {
		return nil, nil, err
	}
	rows, closeRows, err := e.Rows(ctx, stmt)
	if err != nil {
		done()
		return nil, nil, err
	}
	return rows, func() { closeRows(); done() }, nil
}
