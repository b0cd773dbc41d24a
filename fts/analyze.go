package fts

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/blevesearch/bleve/v2/analysis"
	"github.com/blevesearch/bleve/v2/analysis/lang/en"
	"github.com/blevesearch/bleve/v2/analysis/token/lowercase"
	"github.com/blevesearch/bleve/v2/analysis/token/stop"
	"github.com/blevesearch/bleve/v2/analysis/tokenizer/unicode"

	"github.com/lochdata/loch/internal/ftsindex"
)

// analyzer is the analyzer "en" (docs/format.md §2.9): bleve's unicode
// tokenizer, lower case, English stop words, Snowball English stemming.
// Safe for concurrent use.
type analyzer struct {
	tok   analysis.Tokenizer
	lower analysis.TokenFilter
	stop  analysis.TokenFilter
	stem  analysis.TokenFilter
}

// jsonGap separates the positions of a json document's string values.
const jsonGap = 100

var english = newAnalyzer()

func newAnalyzer() *analyzer {
	words := analysis.NewTokenMap()
	if err := words.LoadBytes(en.EnglishStopWords); err != nil {
		panic(err) // a broken invariant: bleve's own list
	}
	return &analyzer{tok: unicode.NewUnicodeTokenizer(), lower: lowercase.NewLowerCaseFilter(),
		stop: stop.NewStopTokensFilter(words), stem: en.NewEnglishStemmerFilter()}
}

// stems caches the stems of the words one goroutine analyses (a
// vocabulary is small next to its text): a hit costs neither the stemmer
// nor a string. nil caches nothing.
type stems map[string]string

// maxStems bounds a stems cache; a full one starts again.
const maxStems = 1 << 17

// text appends the tokens of text to dst, their positions after base,
// and returns the last position used.
func (a *analyzer) text(dst []ftsindex.Token, text []byte, base uint32, cache stems) ([]ftsindex.Token, uint32) {
	ts := a.tok.Tokenize(text)
	last := base
	if n := len(ts); n > 0 {
		last = base + uint32(ts[n-1].Position)
	}
	ts = a.stop.Filter(a.lower.Filter(ts))
	for _, t := range ts {
		term, ok := cache[string(t.Term)]
		if !ok {
			word := string(t.Term)
			term = string(a.stem.Filter(analysis.TokenStream{t})[0].Term)
			if cache != nil {
				if len(cache) >= maxStems {
					clear(cache)
				}
				cache[word] = term
			}
		}
		dst = append(dst, ftsindex.Token{Term: term, Pos: base + uint32(t.Position)})
	}
	return dst, last
}

// json appends the tokens of the string values of a json document.
// A document that does not parse is analysed as text.
func (a *analyzer) json(dst []ftsindex.Token, doc []byte, cache stems) []ftsindex.Token {
	dec := json.NewDecoder(bytes.NewReader(doc))
	dec.UseNumber()
	start := len(dst)
	var pos uint32
	var inObject []bool // per open container: an object, whose next string is a key
	expectKey := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			return dst
		}
		if err != nil {
			dst, _ = a.text(dst[:start], doc, 0, cache)
			return dst
		}
		switch v := tok.(type) {
		case json.Delim:
			switch v {
			case '{', '[':
				inObject = append(inObject, v == '{')
				expectKey = v == '{'
			default:
				inObject = inObject[:len(inObject)-1]
				expectKey = len(inObject) > 0 && inObject[len(inObject)-1]
			}
			continue
		case string:
			if !expectKey {
				dst, pos = a.text(dst, []byte(v), pos+jsonGap, cache)
			}
		}
		if len(inObject) > 0 && inObject[len(inObject)-1] {
			expectKey = !expectKey
		}
	}
}

// query returns the terms of a query word or phrase, with positions.
func (a *analyzer) query(text string) []ftsindex.Token {
	ts, _ := a.text(nil, []byte(text), 0, nil)
	return ts
}
