package query

import (
	"context"
	"database/sql"
	"fmt"
)

// PostgreSQL's operators that DuckDB's parser reads as generic operators
// (a FUNCTION node named by the operator, which binds to the function or
// macro of that name, with PostgreSQL's precedence for such operators:
// tighter than comparisons, looser than + and -). The engine defines a
// macro for each (registerPG):
//
//   - pgvector's a <-> b (L2 distance), a <=> b (cosine distance) and
//     a <#> b (negative inner product) over embeddings and vector
//     literals ('[1, 2, 3]', [1, 2, 3]), in DOUBLE. DuckDB's lexer has no
//     # in operators, so <#> is written NegInnerProductOp;
//   - JSONTextOp and JSONOp, PostgreSQL's ->> and ->: DuckDB's own ->> and
//     -> (its lambda arrow) bind more loosely than AND, so
//     a = 1 AND m->>'k' = 'x' reads as ((a = 1 AND m) ->> 'k') = 'x'.
//
// Package sqlcat rewrites <#>, ->> and -> (before a string, number or
// parameter) into these spellings with its SQL lexer before DuckDB parses a
// statement (sqlcat/pg.go); SQL given to this package directly may use the
// macros' spellings, <-> and <=>.
const (
	L2DistanceOp       = "<->"
	CosineDistanceOp   = "<=>"
	NegInnerProductOp  = "<!>"
	JSONTextOp         = "~>>"
	JSONOp             = "~>"
	pgVectorCast       = "DOUBLE[]"
	pgJSONTextFunction = "json_extract_string"
)

// pgMacros are the macros of the operators above.
var pgMacros = []struct{ name, body string }{
	{L2DistanceOp, "list_distance(CAST(a AS " + pgVectorCast + "), CAST(b AS " + pgVectorCast + "))"},
	{CosineDistanceOp, "list_cosine_distance(CAST(a AS " + pgVectorCast + "), CAST(b AS " + pgVectorCast + "))"},
	{NegInnerProductOp, "-list_inner_product(CAST(a AS " + pgVectorCast + "), CAST(b AS " + pgVectorCast + "))"},
	{JSONTextOp, pgJSONTextFunction + "(a, b)"},
	{JSONOp, "json_extract(a, b)"},
}

// registerPG defines the macros of PostgreSQL's operators.
func registerPG(ctx context.Context, conn *sql.Conn) error {
	for _, m := range pgMacros {
		q := fmt.Sprintf("CREATE MACRO %s(a, b) AS %s", quoteIdent(m.name), m.body)
		if _, err := conn.ExecContext(ctx, q); err != nil {
			return fmt.Errorf("query: define operator %s: %w", m.name, err)
		}
	}
	return nil
}
