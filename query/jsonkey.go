package query

import (
	"bytes"
	"encoding/json"
	"regexp"
	"unicode/utf8"
)

// jsonKeyRE is the keys a pushed (col->>'key') may name: DuckDB reads such
// a key as a top-level member's name (a key that starts with $ or / would
// be a path).
var jsonKeyRE = regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`)

// What jsonMember found.
type jsonKind int

const (
	jsonUnsure jsonKind = iota // not an object, malformed, a duplicate or escaped key, ...: keep the row
	jsonAbsent                 // a well-formed object without the key
	jsonNull                   // the key's value is null
	jsonString                 // a string: its value, unescaped
	jsonOther                  // a number, bool, object or array
)

// jsonMember finds the value of key (which has no escapes) among the
// top-level members of the JSON object doc, as DuckDB's (doc->>'key')
// does, for the scan's pre-filter. It is sure of its answer only for a
// well-formed object whose keys have no escapes and name key at most
// once; otherwise it says jsonUnsure. A string value aliases doc unless it
// had escapes; another kind of value (jsonOther) is its text as written.
// doc is taken to be valid JSON, as loch checks json samples
// when they are written: the values it skips are not validated, and on a
// malformed document (on which DuckDB fails) its answer may be wrong, but
// it never panics.
func jsonMember(doc, key []byte) ([]byte, jsonKind) {
	i := skipWS(doc, 0)
	if i >= len(doc) || doc[i] != '{' {
		return nil, jsonUnsure
	}
	i = skipWS(doc, i+1)
	var val []byte
	kind := jsonAbsent
	if i < len(doc) && doc[i] == '}' {
		return nil, jsonAbsentAfter(doc, i+1)
	}
	for {
		if i >= len(doc) || doc[i] != '"' {
			return nil, jsonUnsure
		}
		end, esc := scanString(doc, i)
		if end < 0 || esc {
			return nil, jsonUnsure
		}
		match := bytes.Equal(doc[i+1:end-1], key)
		i = skipWS(doc, end)
		if i >= len(doc) || doc[i] != ':' {
			return nil, jsonUnsure
		}
		i = skipWS(doc, i+1)
		if i >= len(doc) {
			return nil, jsonUnsure
		}
		start := i
		var vesc bool
		switch doc[i] {
		case '"':
			i, vesc = scanString(doc, i)
		case '{', '[':
			i = skipNested(doc, i)
		default:
			i = skipScalar(doc, i)
		}
		if i < 0 {
			return nil, jsonUnsure
		}
		if match {
			if kind != jsonAbsent {
				return nil, jsonUnsure // a duplicate key
			}
			switch v := doc[start:i]; {
			case v[0] == '"' && !vesc:
				val, kind = v[1:len(v)-1], jsonString
			case v[0] == '"':
				var s string
				if json.Unmarshal(v, &s) != nil || !utf8.Valid(v) {
					return nil, jsonUnsure
				}
				val, kind = []byte(s), jsonString
			case string(v) == "null":
				kind = jsonNull
			case string(v) == "true" || string(v) == "false" || v[0] == '{' || v[0] == '[' || v[0] == '-' || (v[0] >= '0' && v[0] <= '9'):
				val, kind = v, jsonOther
			default:
				return nil, jsonUnsure
			}
		}
		i = skipWS(doc, i)
		if i >= len(doc) {
			return nil, jsonUnsure
		}
		switch doc[i] {
		case ',':
			i = skipWS(doc, i+1)
			continue
		case '}':
			if jsonAbsentAfter(doc, i+1) == jsonUnsure {
				return nil, jsonUnsure
			}
			return val, kind
		}
		return nil, jsonUnsure
	}
}

// jsonAbsentAfter is jsonAbsent when only white space follows the object
// at i, else jsonUnsure.
func jsonAbsentAfter(doc []byte, i int) jsonKind {
	if skipWS(doc, i) != len(doc) {
		return jsonUnsure
	}
	return jsonAbsent
}

func skipWS(doc []byte, i int) int {
	for i < len(doc) {
		switch doc[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// scanString returns the index after the string that starts at doc[i]
// (a '"'), or -1 when it does not end or holds a control character, and
// whether it has escapes.
func scanString(doc []byte, i int) (int, bool) {
	esc := false
	for j := i + 1; j < len(doc); j++ {
		switch c := doc[j]; {
		case c == '"':
			return j + 1, esc
		case c == '\\':
			esc = true
			j++
		case c < 0x20:
			return -1, esc
		}
	}
	return -1, esc
}

// skipNested returns the index after the object or array that starts at
// doc[i], or -1. It checks brackets and strings only: the value's bytes
// are not compared, so a malformed inner value does not matter.
func skipNested(doc []byte, i int) int {
	var stack []byte
	for i < len(doc) {
		switch c := doc[i]; c {
		case '"':
			end, _ := scanString(doc, i)
			if end < 0 {
				return -1
			}
			i = end
			continue
		case '{', '[':
			stack = append(stack, c)
		case '}', ']':
			if len(stack) == 0 || (c == '}') != (stack[len(stack)-1] == '{') {
				return -1
			}
			stack = stack[:len(stack)-1]
			if len(stack) == 0 {
				return i + 1
			}
		}
		i++
	}
	return -1
}

// skipScalar returns the index after a number or literal at doc[i].
func skipScalar(doc []byte, i int) int {
	j := i
	for j < len(doc) {
		switch doc[j] {
		case ',', '}', ']', ' ', '\t', '\n', '\r':
			if j == i {
				return -1
			}
			return j
		}
		j++
	}
	return -1
}
