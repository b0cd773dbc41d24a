package fts

import (
	"fmt"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/ftsindex"
)

// A query (see the package documentation for its grammar) parses into a
// tree of nodes: terms and phrases at the leaves, and groups of required,
// optional and excluded clauses.
type node struct {
	terms  []ftsindex.Token // a term (one) or a phrase (several)
	must   []*node
	should []*node
	not    []*node
}

func (n *node) leaf() bool { return n.terms != nil }

type modifier int

const (
	optional modifier = iota
	required
	excluded
)

type lexeme struct {
	kind byte // 'w' word, 'p' phrase, '(' ')', '+', '-', 'A' AND, 'O' OR, 'N' NOT
	text string
}

func lex(q string) ([]lexeme, error) {
	var out []lexeme
	for i := 0; i < len(q); {
		c := q[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r':
			i++
		case c == '(' || c == ')':
			out = append(out, lexeme{kind: c})
			i++
		case (c == '+' || c == '-') && i+1 < len(q) && q[i+1] != ' ':
			out = append(out, lexeme{kind: c})
			i++
		case c == '"':
			end := strings.IndexByte(q[i+1:], '"')
			if end < 0 {
				return nil, fmt.Errorf("query %q: a phrase opened at byte %d is not closed with '\"': %w", q, i, loch.ErrInvalidArgument)
			}
			out = append(out, lexeme{kind: 'p', text: q[i+1 : i+1+end]})
			i += end + 2
		default:
			j := i
			for j < len(q) && !strings.ContainsRune(" \t\n\r()\"", rune(q[j])) {
				j++
			}
			w := q[i:j]
			switch w {
			case "AND", "&&":
				out = append(out, lexeme{kind: 'A'})
			case "OR", "||":
				out = append(out, lexeme{kind: 'O'})
			case "NOT":
				out = append(out, lexeme{kind: 'N'})
			default:
				out = append(out, lexeme{kind: 'w', text: w})
			}
			i = j
		}
	}
	return out, nil
}

type parser struct {
	q     string
	ls    []lexeme
	depth int
}

// maxDepth bounds the nesting of parentheses and NOTs.
const maxDepth = 64

// parse parses a query. A query whose words are all stop words parses
// into an empty group, which matches nothing.
func parse(q string) (*node, error) {
	ls, err := lex(q)
	if err != nil {
		return nil, err
	}
	p := &parser{q: q, ls: ls}
	n, err := p.group()
	if err != nil {
		return nil, err
	}
	if len(p.ls) > 0 {
		return nil, p.errorf("unexpected ')'")
	}
	return n, nil
}

func (p *parser) errorf(format string, a ...any) error {
	return fmt.Errorf("query %q: %s: %w", p.q, fmt.Sprintf(format, a...), loch.ErrInvalidArgument)
}

func (p *parser) peek() byte {
	if len(p.ls) == 0 {
		return 0
	}
	return p.ls[0].kind
}

// group := item { item }, up to ')' or the end.
func (p *parser) group() (*node, error) {
	g := &node{}
	for k := p.peek(); k != 0 && k != ')'; k = p.peek() {
		n, mod, err := p.or()
		if err != nil {
			return nil, err
		}
		if n == nil {
			continue
		}
		switch mod {
		case required:
			g.must = append(g.must, n)
		case excluded:
			g.not = append(g.not, n)
		default:
			g.should = append(g.should, n)
		}
	}
	if len(g.must) == 0 && len(g.should) == 0 && len(g.not) > 0 {
		return nil, p.errorf("only excluded clauses: add a term to match")
	}
	return g, nil
}

// or := and { OR and }
func (p *parser) or() (*node, modifier, error) {
	n, mod, err := p.and()
	if err != nil || p.peek() != 'O' {
		return n, mod, err
	}
	g := &node{}
	for first := true; first || p.peek() == 'O'; first = false {
		if !first {
			p.ls = p.ls[1:]
			if n, mod, err = p.and(); err != nil {
				return nil, 0, err
			}
		}
		if mod == excluded {
			return nil, 0, p.errorf("NOT or '-' under OR: exclude at the top or under AND")
		}
		if n != nil {
			g.should = append(g.should, n)
		}
	}
	if len(g.should) == 0 {
		return nil, 0, nil
	}
	return g, optional, nil
}

// and := unary { AND unary }
func (p *parser) and() (*node, modifier, error) {
	n, mod, err := p.unary()
	if err != nil || p.peek() != 'A' {
		return n, mod, err
	}
	g := &node{}
	for first := true; first || p.peek() == 'A'; first = false {
		if !first {
			p.ls = p.ls[1:]
			if n, mod, err = p.unary(); err != nil {
				return nil, 0, err
			}
		}
		switch {
		case n == nil:
		case mod == excluded:
			g.not = append(g.not, n)
		default:
			g.must = append(g.must, n)
		}
	}
	if len(g.must) == 0 {
		if len(g.not) > 0 {
			return nil, 0, p.errorf("AND of excluded clauses only: add a term to match")
		}
		return nil, 0, nil
	}
	return g, optional, nil
}

// unary := NOT unary | '+' unary | '-' unary | primary
func (p *parser) unary() (*node, modifier, error) {
	switch k := p.peek(); k {
	case 'N', '-', '+':
		p.ls = p.ls[1:]
		if p.depth++; p.depth > maxDepth {
			return nil, 0, p.errorf("nested more than %d deep", maxDepth)
		}
		n, _, err := p.unary()
		p.depth--
		if k == '+' {
			return n, required, err
		}
		return n, excluded, err
	}
	n, err := p.primary()
	return n, optional, err
}

// primary := WORD | "PHRASE" | ( group )
func (p *parser) primary() (*node, error) {
	if len(p.ls) == 0 {
		return nil, p.errorf("ends after an operator")
	}
	l := p.ls[0]
	p.ls = p.ls[1:]
	switch l.kind {
	case 'w', 'p':
		ts := english.query(l.text)
		if len(ts) == 0 {
			return nil, nil // stop words only
		}
		return &node{terms: ts}, nil
	case '(':
		if p.depth++; p.depth > maxDepth {
			return nil, p.errorf("nested more than %d deep", maxDepth)
		}
		g, err := p.group()
		p.depth--
		if err != nil {
			return nil, err
		}
		if p.peek() != ')' {
			return nil, p.errorf("'(' not closed")
		}
		p.ls = p.ls[1:]
		if len(g.must) == 0 && len(g.should) == 0 {
			return nil, nil
		}
		return g, nil
	}
	return nil, p.errorf("unexpected %s", describe(l))
}

func describe(l lexeme) string {
	switch l.kind {
	case 'A':
		return "AND"
	case 'O':
		return "OR"
	}
	return fmt.Sprintf("%q", string(l.kind))
}

// terms returns the distinct terms of the query's leaves.
func (n *node) termSet(out map[string]bool) {
	for _, t := range n.terms {
		out[t.Term] = true
	}
	for _, k := range [][]*node{n.must, n.should, n.not} {
		for _, c := range k {
			c.termSet(out)
		}
	}
}
