package sqlcat

import (
	"errors"
	"fmt"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/query"
)

// tokKind is the kind of a token.
type tokKind int

const (
	tokEOF    tokKind = iota
	tokIdent          // an unquoted identifier or keyword, lower-cased in text
	tokQuoted         // a "quoted" identifier, text unquoted
	tokString         // a 'string', text unquoted
	tokNumber
	tokPunct // one of ( ) , [ ] = ; . and any other operator character
)

// token is one lexeme: text as described by its kind; pos and end are its
// byte offsets in the statement.
type token struct {
	kind     tokKind
	text     string
	pos, end int
}

// is reports whether t is the unquoted keyword or punctuation s.
func (t token) is(s string) bool {
	return (t.kind == tokIdent || t.kind == tokPunct) && t.text == s
}

// lex splits a statement by DuckDB's lexical rules: identifiers unquoted
// and case-folded or "quoted" and kept; 'strings' (a quote doubled is one), E'strings' with
// backslash escapes and $tag$dollar-quoted strings$tag$; -- and nested /* */
// comments skipped; numbers. It serves loch's own frames (the types of a
// CREATE TABLE, the target and lists of a write); DuckDB lexes everything
// it runs, and Split asks DuckDB where statements end.
func lex(s string) ([]token, error) {
	var out []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v':
			i++
		case strings.HasPrefix(s[i:], "--"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				i = len(s)
			} else {
				i += j + 1
			}
		case strings.HasPrefix(s[i:], "/*"):
			j, ok := commentEnd(s, i)
			if !ok {
				return nil, fmt.Errorf("sql: unterminated /* comment at position %d: %w", i, loch.ErrInvalidArgument)
			}
			i = j
		case c == '\'' || c == '"':
			t, err := quoted(s, i, i, c, false)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
			i = t.end
		case (c == 'e' || c == 'E') && i+1 < len(s) && s[i+1] == '\'':
			t, err := quoted(s, i, i+1, '\'', true)
			if err != nil {
				return nil, err
			}
			out = append(out, t)
			i = t.end
		case c == '$' && dollarTag(s[i:]) != "":
			tag := dollarTag(s[i:])
			j := strings.Index(s[i+len(tag):], tag)
			if j < 0 {
				return nil, fmt.Errorf("sql: unterminated dollar-quoted string at position %d: %w", i, loch.ErrInvalidArgument)
			}
			body := s[i+len(tag) : i+len(tag)+j]
			out = append(out, token{kind: tokString, text: body, pos: i, end: i + 2*len(tag) + j})
			i += 2*len(tag) + j
		case isIdentStart(c):
			j := i
			for j < len(s) && (isIdentStart(s[j]) || s[j] >= '0' && s[j] <= '9' || s[j] == '$') {
				j++
			}
			out = append(out, token{kind: tokIdent, text: strings.ToLower(s[i:j]), pos: i, end: j})
			i = j
		case c >= '0' && c <= '9':
			j := i
			for j < len(s) && (s[j] >= '0' && s[j] <= '9' || s[j] == '.' || s[j] == '_' || s[j] == 'e' || s[j] == 'E') {
				j++
			}
			out = append(out, token{kind: tokNumber, text: s[i:j], pos: i, end: j})
			i = j
		default:
			out = append(out, token{kind: tokPunct, text: string(c), pos: i, end: i + 1})
			i++
		}
	}
	out = append(out, token{kind: tokEOF, pos: len(s), end: len(s)})
	return out, nil
}

// commentEnd returns the end of the /* comment at s[i:], which nests as
// in DuckDB, or false when it is not closed.
func commentEnd(s string, i int) (int, bool) {
	depth := 0
	for j := i; j+1 < len(s); {
		switch s[j : j+2] {
		case "/*":
			depth++
			j += 2
		case "*/":
			depth--
			j += 2
			if depth == 0 {
				return j, true
			}
		default:
			j++
		}
	}
	return 0, false
}

// quoted lexes the string or quoted name that opens with quote q at
// s[open] (pos is the token's start: an E before it): a doubled quote
// stands for one, and with escapes a backslash takes the next byte as it
// is (\n and the other C escapes are DuckDB's to decode: loch's frames
// take no such strings).
func quoted(s string, pos, open int, q byte, escapes bool) (token, error) {
	var b strings.Builder
	j := open + 1
	for {
		if j >= len(s) {
			return token{}, fmt.Errorf("sql: unterminated %c at position %d: %w", q, pos, loch.ErrInvalidArgument)
		}
		switch {
		case escapes && s[j] == '\\' && j+1 < len(s):
			b.WriteByte(s[j+1])
			j += 2
			continue
		case s[j] == q && j+1 < len(s) && s[j+1] == q:
			b.WriteByte(q)
			j += 2
			continue
		case s[j] == q:
			k := tokString
			if q == '"' {
				k = tokQuoted
			}
			return token{kind: k, text: b.String(), pos: pos, end: j + 1}, nil
		}
		b.WriteByte(s[j])
		j++
	}
}

// dollarTag returns the $tag$ (or $$) that opens a dollar-quoted string at
// the start of s, or "" ($1 is a parameter).
func dollarTag(s string) string {
	for j := 1; j < len(s); j++ {
		c := s[j]
		switch {
		case c == '$':
			return s[:j+1]
		case isIdentStart(c), j > 1 && c >= '0' && c <= '9':
		default:
			return ""
		}
	}
	return ""
}

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

// parser walks the tokens of one statement.
type parser struct {
	src  string
	toks []token
	i    int
}

func newParser(src string) (*parser, error) {
	toks, err := lex(src)
	if err != nil {
		return nil, err
	}
	return &parser{src: src, toks: toks}, nil
}

func (p *parser) peek() token { return p.toks[p.i] }

func (p *parser) next() token {
	t := p.toks[p.i]
	if t.kind != tokEOF {
		p.i++
	}
	return t
}

// accept consumes the keywords (or punctuation) kws if they come next.
func (p *parser) accept(kws ...string) bool {
	for k, kw := range kws {
		if p.i+k >= len(p.toks) || !p.toks[p.i+k].is(kw) {
			return false
		}
	}
	p.i += len(kws)
	return true
}

func (p *parser) expect(kws ...string) error {
	if !p.accept(kws...) {
		return p.errorf("want %s", strings.ToUpper(strings.Join(kws, " ")))
	}
	return nil
}

// errorf is a syntax error at the next token.
func (p *parser) errorf(format string, a ...any) error {
	t := p.peek()
	got := "end of statement"
	if t.kind != tokEOF {
		got = fmt.Sprintf("%q", p.src[t.pos:t.end])
	}
	return fmt.Errorf("sql: %s at position %d, got %s: %w", fmt.Sprintf(format, a...), t.pos, got, loch.ErrInvalidArgument)
}

// name reads an identifier (a table or column name).
func (p *parser) name(what string) (string, error) {
	t := p.peek()
	if t.kind != tokIdent && t.kind != tokQuoted {
		return "", p.errorf("want a %s name", what)
	}
	p.next()
	return t.text, nil
}

// nameList reads a list of column names up to its closing ), the (
// already read.
func (p *parser) nameList() ([]string, error) {
	var names []string
	for {
		c, err := p.name("column")
		if err != nil {
			return nil, err
		}
		names = append(names, c)
		if p.accept(")") {
			return names, nil
		}
		if err := p.expect(","); err != nil {
			return nil, err
		}
	}
}

// setList reads col = expr, ... (of UPDATE SET), each expression up to a
// top-level token for which stop is true (stop takes the comma). prefix
// starts the error of a missing expression ("update t: ").
func (p *parser) setList(stop func(token) bool, prefix string) (cols, exprs []string, err error) {
	for {
		col, err := p.name("column")
		if err != nil {
			return nil, nil, err
		}
		if err := p.expect("="); err != nil {
			return nil, nil, err
		}
		expr := p.until(stop)
		if expr == "" {
			return nil, nil, p.errorf("%swant an expression for %s", prefix, col)
		}
		cols, exprs = append(cols, col), append(exprs, expr)
		if !p.accept(",") {
			return cols, exprs, nil
		}
	}
}

// atEnd reports whether only a ';' (or nothing) is left.
func (p *parser) atEnd() bool {
	t := p.peek()
	return t.kind == tokEOF || t.is(";") && p.toks[p.i+1].kind == tokEOF
}

func (p *parser) end() error {
	if !p.atEnd() {
		return p.errorf("want the end of the statement")
	}
	return nil
}

// rest is the source text from the next token to the end, without a
// final ';'.
func (p *parser) rest() string {
	s := strings.TrimSpace(p.src[p.peek().pos:])
	return strings.TrimSpace(strings.TrimSuffix(s, ";"))
}

// until returns the source text from the next token up to (not including)
// the first top-level (outside parentheses, brackets and CASE ... END)
// token for which stop is true, and leaves the parser at that token.
func (p *parser) until(stop func(token) bool) string {
	start := p.peek().pos
	depth := 0
	for {
		t := p.peek()
		if t.kind == tokEOF || depth == 0 && (stop(t) || t.is(";") && p.toks[p.i+1].kind == tokEOF) {
			return strings.TrimSpace(p.src[start:t.pos])
		}
		switch {
		case t.is("(") || t.is("[") || t.is("case"):
			depth++
		case t.is(")") || t.is("]") || t.is("end"):
			depth--
		}
		p.next()
	}
}

// Split cuts a script into statements where DuckDB's parser ends them: at
// each ';' outside strings ('...', E'...', $tag$...$tag$), quoted names and
// comments. Each statement keeps its leading comments and loses its ';',
// and blank ones are dropped. rest is the text after the last ';' ("" if
// only spaces): the start of the next. An error (query.ErrIncomplete) is
// an unterminated string, name or comment: the script is incomplete.
//
// DuckDB decides where it can parse the text before a ';'. Before a ';'
// it cannot parse (loch's OPTIMIZE, a CREATE TABLE with loch's types that
// DuckDB's lexer still reads, or a syntax error) the lexer of loch's
// frames, which follows DuckDB's lexical rules, decides.
func Split(script string) (stmts []string, rest string, err error) {
	start := 0
	for i := 0; i < len(script); i++ {
		if script[i] != ';' {
			continue
		}
		piece := script[start:i]
		blank, ok, err := statementEnds(piece)
		if err != nil {
			return nil, script, err
		}
		if !ok {
			continue
		}
		if !blank {
			stmts = append(stmts, strings.TrimSpace(piece))
		}
		start = i + 1
	}
	rest = script[start:]
	if _, err := query.Parse(rest); errors.Is(err, query.ErrIncomplete) {
		return nil, script, err
	}
	if _, err := lex(rest); err != nil {
		return nil, script, fmt.Errorf("%w: %w", query.ErrIncomplete, err)
	}
	if strings.TrimSpace(rest) == "" {
		rest = ""
	}
	return stmts, rest, nil
}

// statementEnds reports whether a ';' after piece ends a statement, and
// whether piece is blank (spaces and comments).
func statementEnds(piece string) (blank, ends bool, err error) {
	n, err := query.Parse(piece)
	switch {
	case errors.Is(err, query.ErrIncomplete):
		return false, false, nil
	case err == nil:
		// DuckDB parses piece; the ';' is in a -- comment if piece
		// followed by a stray ')' still parses.
		if _, err := query.Parse(piece + ")"); err == nil {
			return false, false, nil
		}
		return n == 0, true, nil
	case !errors.Is(err, loch.ErrInvalidArgument):
		return false, false, err // DuckDB's parser is not there
	}
	toks, err := lex(piece + ")")
	if err != nil {
		return false, false, nil
	}
	// the ')' is a token unless piece ends in a -- comment
	return false, len(toks) > 1 && toks[len(toks)-2].pos == len(piece), nil
}
