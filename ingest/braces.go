package ingest

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lochdata/loch/internal/base"
)

// maxExpansion bounds the number of names one pattern may expand to.
const maxExpansion = 1_000_000

// ExpandBraces expands the brace patterns of shard names, as a shell does:
// a list {a,b,c} gives one name per item, a numeric range {000..009} one name
// per number (zero-padded to the wider bound when either bound has a leading
// zero, counting down when the first bound is larger). Patterns combine and
// nest: "s3://b/{train,val}-{0..1}.tar" gives four names in that order. A
// brace pair holding neither a comma nor a range is kept as it is. An
// unbalanced brace, or more than a million names, is an error wrapping
// ErrInvalidSource.
func ExpandBraces(pattern string) ([]string, error) {
	out, err := expand(pattern, 0)
	if err != nil {
		return nil, base.Markf(ErrInvalidSource, "pattern %q: %v", pattern, err)
	}
	return out, nil
}

// expand expands s; depth bounds the nesting.
func expand(s string, depth int) ([]string, error) {
	if depth > 32 {
		return nil, fmt.Errorf("braces nested deeper than 32")
	}
	open := strings.IndexByte(s, '{')
	if open < 0 {
		if strings.IndexByte(s, '}') >= 0 {
			return nil, fmt.Errorf("'}' without '{'")
		}
		return []string{s}, nil
	}
	if strings.IndexByte(s[:open], '}') >= 0 {
		return nil, fmt.Errorf("'}' without '{'")
	}
	end, commas := matchBrace(s, open)
	if end < 0 {
		return nil, fmt.Errorf("'{' without '}'")
	}
	alts, err := alternatives(s[open+1:end], commas, depth)
	if err != nil {
		return nil, err
	}
	tails, err := expand(s[end+1:], depth+1)
	if err != nil {
		return nil, err
	}
	if len(alts)*len(tails) > maxExpansion {
		return nil, fmt.Errorf("expands to more than %d names", maxExpansion)
	}
	out := make([]string, 0, len(alts)*len(tails))
	for _, a := range alts {
		for _, t := range tails {
			out = append(out, s[:open]+a+t)
		}
	}
	return out, nil
}

// matchBrace returns the index of the brace that closes the one at open
// (-1 when there is none) and the offsets, relative to open+1, of the
// commas at its top level.
func matchBrace(s string, open int) (end int, commas []int) {
	level := 0
	for i := open; i < len(s); i++ {
		switch s[i] {
		case '{':
			level++
		case '}':
			level--
			if level == 0 {
				return i, commas
			}
		case ',':
			if level == 1 {
				commas = append(commas, i-open-1)
			}
		}
	}
	return -1, nil
}

// alternatives expands the body of a brace pair, split at its top-level
// commas: the expansions of each item of a list, the numbers of a range,
// or, for neither, the body's own expansions in literal braces (as a shell
// keeps them).
func alternatives(body string, commas []int, depth int) ([]string, error) {
	if len(commas) == 0 {
		r, ok, err := numericRange(body)
		if err != nil || ok {
			return r, err
		}
		inner, err := expand(body, depth+1)
		if err != nil {
			return nil, err
		}
		alts := make([]string, len(inner))
		for i, x := range inner {
			alts[i] = "{" + x + "}"
		}
		return alts, nil
	}
	var alts []string
	start := 0
	for _, c := range append(commas, len(body)) {
		sub, err := expand(body[start:c], depth+1)
		if err != nil {
			return nil, err
		}
		alts = append(alts, sub...)
		if len(alts) > maxExpansion {
			return nil, fmt.Errorf("expands to more than %d names", maxExpansion)
		}
		start = c + 1
	}
	return alts, nil
}

// numericRange expands "lo..hi" (decimal, optionally negative); ok is false
// when body is not of that form.
func numericRange(body string) (names []string, ok bool, err error) {
	a, b, found := strings.Cut(body, "..")
	if !found || !isDecimal(a) || !isDecimal(b) {
		return nil, false, nil
	}
	lo, err1 := strconv.ParseInt(a, 10, 64)
	hi, err2 := strconv.ParseInt(b, 10, 64)
	if err1 != nil || err2 != nil {
		return nil, false, fmt.Errorf("range {%s} out of bounds", body)
	}
	width := 0
	if padded(a) || padded(b) {
		width = max(len(a), len(b))
	}
	step, span := int64(1), uint64(hi)-uint64(lo) // exact, modulo 2^64
	if lo > hi {
		step, span = -1, uint64(lo)-uint64(hi)
	}
	if span >= maxExpansion {
		return nil, false, fmt.Errorf("range {%s} has more than %d names", body, maxExpansion)
	}
	n := int(span) + 1
	out := make([]string, 0, n)
	for v := lo; ; v += step {
		s := strconv.FormatInt(v, 10)
		if width > 0 {
			neg := v < 0
			digits := strings.TrimPrefix(s, "-")
			w := width
			if neg {
				w--
			}
			if len(digits) < w {
				digits = strings.Repeat("0", w-len(digits)) + digits
			}
			if neg {
				digits = "-" + digits
			}
			s = digits
		}
		out = append(out, s)
		if v == hi {
			break
		}
	}
	return out, true, nil
}

func isDecimal(s string) bool {
	s = strings.TrimPrefix(s, "-")
	if s == "" || len(s) > 19 {
		return false
	}
	for _, c := range s {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}

// padded reports whether a range bound is written with a leading zero.
func padded(s string) bool {
	s = strings.TrimPrefix(s, "-")
	return len(s) > 1 && s[0] == '0'
}
