package sqlcat

import (
	"strings"

	"github.com/lochdata/loch/query"
)

// opChars are the characters of DuckDB's (and PostgreSQL's) operators.
const opChars = "+-*/<>=~!@#%^&|`?"

// PostgresOperators rewrites the PostgreSQL operators that DuckDB reads
// otherwise into the spellings package query defines them under
// (query/pg.go), by sqlcat's lexer, so that strings, quoted names,
// comments and dollar-quoted bodies are never touched: ->> into
// query.JSONTextOp, -> before a string, a number or a parameter into
// query.JSONOp (before anything else, such as a name, -> stays DuckDB's
// lambda arrow), and <#> into query.NegInnerProductOp. Each is one of
// DuckDB's generic operators, which bind as PostgreSQL's do, so only the
// operator's spelling changes, never the expression's shape. A statement
// the lexer refuses is returned as it is: DuckDB reports the error.
// Session.Run and Session.Select apply it; a caller that hands SQL to
// package query directly (loch query over a dataset, the viewer) applies it
// first so the same forms work there.
func PostgresOperators(stmt string) string {
	toks, err := lex(stmt)
	if err != nil {
		return stmt
	}
	var b strings.Builder
	last := 0
	for i := 0; i < len(toks); i++ {
		op, n := pgOperatorAt(toks, i)
		if op == "" {
			continue
		}
		b.WriteString(stmt[last:toks[i].pos])
		// spaces keep the operator apart from its operands' characters
		if toks[i].pos > 0 && !isSpace(stmt[toks[i].pos-1]) {
			b.WriteByte(' ')
		}
		b.WriteString(op)
		last = toks[i+n-1].end
		if last < len(stmt) && !isSpace(stmt[last]) {
			b.WriteByte(' ')
		}
		i += n - 1
	}
	if last == 0 {
		return stmt
	}
	b.WriteString(stmt[last:])
	return b.String()
}

// pgOperatorAt returns the spelling of the operator that starts at
// toks[i] when it is one PostgresOperators rewrites, and its number of tokens.
func pgOperatorAt(toks []token, i int) (string, int) {
	spelled := func(s string) bool {
		if i+len(s) >= len(toks) {
			return false
		}
		for j := range len(s) {
			t := toks[i+j]
			if t.kind != tokPunct || t.text != s[j:j+1] || j > 0 && toks[i+j-1].end != t.pos {
				return false
			}
		}
		// not part of a longer operator
		before, after := i > 0 && isOpChar(toks[i-1]) && toks[i-1].end == toks[i].pos, toks[i+len(s)]
		return !before && !(isOpChar(after) && after.pos == toks[i+len(s)-1].end)
	}
	switch {
	case spelled("->>"):
		return query.JSONTextOp, 3
	case spelled("<#>"):
		return query.NegInnerProductOp, 3
	case spelled("->"):
		if next := toks[i+2]; next.kind == tokString || next.kind == tokNumber || next.is("$") || next.is("?") {
			return query.JSONOp, 2
		}
	}
	return "", 0
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}

// isOpChar reports whether t is one operator character.
func isOpChar(t token) bool {
	return t.kind == tokPunct && len(t.text) == 1 && strings.Contains(opChars, t.text)
}
