package sqlcat

import (
	"fmt"
	"strings"

	"github.com/lochdata/loch"
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
// and case-folded or "quoted" and kept, 'strings' with ”, -- and /* */
// comments skipped, numbers.
func lex(s string) ([]token, error) {
	var out []token
	i := 0
	for i < len(s) {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case strings.HasPrefix(s[i:], "--"):
			j := strings.IndexByte(s[i:], '\n')
			if j < 0 {
				i = len(s)
			} else {
				i += j + 1
			}
		case strings.HasPrefix(s[i:], "/*"):
			j := strings.Index(s[i+2:], "*/")
			if j < 0 {
				return nil, fmt.Errorf("sql: unterminated /* comment at position %d: %w", i, loch.ErrInvalidArgument)
			}
			i += j + 4
		case c == '\'' || c == '"':
			var b strings.Builder
			j := i + 1
			for {
				if j >= len(s) {
					return nil, fmt.Errorf("sql: unterminated %c at position %d: %w", c, i, loch.ErrInvalidArgument)
				}
				if s[j] == c {
					if j+1 < len(s) && s[j+1] == c {
						b.WriteByte(c)
						j += 2
						continue
					}
					break
				}
				b.WriteByte(s[j])
				j++
			}
			k := tokString
			if c == '"' {
				k = tokQuoted
			}
			out = append(out, token{kind: k, text: b.String(), pos: i, end: j + 1})
			i = j + 1
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

func isIdentStart(c byte) bool {
	return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c == '_' || c >= 0x80
}

// parser walks the tokens of one statement.
type parser struct {
	src  string
	toks []token
	i    int
	// inferring: the type is DuckDB's name of a result column's type
	// (CREATE TABLE AS, ingest), where a DECIMAL (0.5 is one) is stored
	// as float64; in a CREATE TABLE it is refused.
	inferring bool
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

// Split cuts a script into the statements that end with a semicolon
// outside strings, quoted names and comments; each keeps its leading
// comments and loses its ';', and blank ones are dropped. rest is the
// text after the last ';' ("" if only spaces): the start of the next. An error is
// an unterminated string, name or comment: the script is incomplete.
func Split(script string) (stmts []string, rest string, err error) {
	toks, err := lex(script)
	if err != nil {
		return nil, script, err
	}
	start := 0
	for _, t := range toks {
		if t.is(";") {
			if s := strings.TrimSpace(script[start:t.pos]); s != "" && hasToken(s) {
				stmts = append(stmts, s)
			}
			start = t.end
		}
	}
	rest = script[start:]
	if strings.TrimSpace(rest) == "" {
		rest = ""
	}
	return stmts, rest, nil
}

// hasToken reports whether s has anything but spaces and comments.
func hasToken(s string) bool {
	toks, err := lex(s)
	return err != nil || toks[0].kind != tokEOF
}
