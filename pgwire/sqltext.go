package pgwire

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lochdata/loch"
)

// The server reads SQL text only to find what lies outside strings,
// quoted identifiers and comments: the ';' between statements of a simple
// query and the $n parameters of an extended one. DuckDB parses the rest.

// scanSQL calls fn with the offset of every byte of q that is outside
// 'strings' (E'...' with backslash escapes), "identifiers", $tag$dollar
// strings$tag$, -- comments and nested /* */ comments; fn returns how many
// bytes it consumed (at least 1).
func scanSQL(q string, fn func(i int) int) {
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == '\'':
			esc := i > 0 && (q[i-1] == 'e' || q[i-1] == 'E') && (i < 2 || !isIdentByte(q[i-2]))
			i = skipQuoted(q, i, '\'', esc)
		case c == '"':
			i = skipQuoted(q, i, '"', false)
		case c == '-' && strings.HasPrefix(q[i:], "--"):
			if j := strings.IndexByte(q[i:], '\n'); j >= 0 {
				i += j + 1
			} else {
				i = len(q)
			}
		case c == '/' && strings.HasPrefix(q[i:], "/*"):
			i = skipComment(q, i)
		case c == '$' && dollarTag(q[i:]) != "" && (i == 0 || !isIdentByte(q[i-1])):
			tag := dollarTag(q[i:])
			if j := strings.Index(q[i+len(tag):], tag); j >= 0 {
				i += len(tag) + j + len(tag)
			} else {
				i = len(q)
			}
		default:
			i += fn(i)
		}
	}
}

func isIdentByte(c byte) bool {
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c >= 0x80
}

func skipQuoted(q string, i int, quote byte, backslash bool) int {
	for j := i + 1; j < len(q); j++ {
		switch {
		case backslash && q[j] == '\\':
			j++
		case q[j] == quote:
			if j+1 < len(q) && q[j+1] == quote {
				j++
				continue
			}
			return j + 1
		}
	}
	return len(q)
}

func skipComment(q string, i int) int {
	depth := 0
	for j := i; j+1 < len(q); j++ {
		switch {
		case q[j] == '/' && q[j+1] == '*':
			depth++
			j++
		case q[j] == '*' && q[j+1] == '/':
			depth--
			j++
			if depth == 0 {
				return j + 1
			}
		}
	}
	return len(q)
}

// dollarTag is the $tag$ that opens s, or "" ($1 is a parameter).
func dollarTag(s string) string {
	for j := 1; j < len(s); j++ {
		if s[j] == '$' {
			return s[:j+1]
		}
		if !isIdentByte(s[j]) || j == 1 && s[j] >= '0' && s[j] <= '9' {
			return ""
		}
	}
	return ""
}

// splitStatements splits a simple query at its top-level ';', dropping
// empty statements.
func splitStatements(q string) []string {
	var out []string
	start := 0
	scanSQL(q, func(i int) int {
		if q[i] == ';' {
			if s := strings.TrimSpace(q[start:i]); s != "" {
				out = append(out, s)
			}
			start = i + 1
		}
		return 1
	})
	if s := strings.TrimSpace(q[start:]); s != "" && !onlyComments(s) {
		out = append(out, s)
	}
	return out
}

// onlyComments reports whether s holds nothing but comments and space.
func onlyComments(s string) bool {
	only := true
	scanSQL(s, func(i int) int {
		if s[i] != ' ' && s[i] != '\t' && s[i] != '\n' && s[i] != '\r' {
			only = false
		}
		return 1
	})
	return only
}

// paramCount is the highest $n in q.
func paramCount(q string) int {
	n := 0
	scanSQL(q, func(i int) int {
		k, w := paramAt(q, i)
		n = max(n, k)
		return max(w, 1)
	})
	return n
}

// paramAt reads a $n at q[i]: n and its width, or 0, 0.
func paramAt(q string, i int) (int, int) {
	if q[i] != '$' || i > 0 && isIdentByte(q[i-1]) {
		return 0, 0
	}
	j := i + 1
	for j < len(q) && q[j] >= '0' && q[j] <= '9' {
		j++
	}
	if j == i+1 || j < len(q) && isIdentByte(q[j]) {
		return 0, 0
	}
	n, err := strconv.Atoi(q[i+1 : j])
	if err != nil {
		return 0, 0
	}
	return n, j - i
}

// bindParams replaces every $n of q by lits[n-1].
func bindParams(q string, lits []string) (string, error) {
	var b strings.Builder
	last := 0
	var err error
	scanSQL(q, func(i int) int {
		n, w := paramAt(q, i)
		if w == 0 {
			return 1
		}
		if n < 1 || n > len(lits) {
			err = fmt.Errorf("statement names $%d, %d parameters bound: %w", n, len(lits), loch.ErrInvalidArgument)
			return w
		}
		b.WriteString(q[last:i])
		b.WriteString(lits[n-1])
		last = i + w
		return w
	})
	b.WriteString(q[last:])
	return b.String(), err
}
