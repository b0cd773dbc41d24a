package schema

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/lochdata/loch/internal/base"
	yaml "go.yaml.in/yaml/v3"
)

// Parse reads a schema written as JSON or YAML. Two forms are accepted: an
// object with a "columns" list, or a bare list of columns. The result is
// normalized (see Schema.Normalize).
//
//	columns:
//	  - {name: image, kind: image, sample_compression: png}
//	  - {name: label, kind: class_label, class_names: [cat, dog]}
//	  - {name: angles, dtype: float32, shape: [7]}
func Parse(data []byte) (Schema, error) {
	var generic any
	if err := yaml.Unmarshal(data, &generic); err != nil {
		return Schema{}, base.Markf(ErrInvalid, "schema is neither JSON nor YAML: %v", err)
	}
	js, err := json.Marshal(jsonable(generic))
	if err != nil {
		return Schema{}, base.Markf(ErrInvalid, "schema: %v", err)
	}
	trimmed := bytes.TrimSpace(js)
	if len(trimmed) > 0 && trimmed[0] == '[' {
		js = append(append([]byte(`{"columns":`), js...), '}')
	}
	var raw struct {
		Columns []json.RawMessage `json:"columns"`
	}
	dec := json.NewDecoder(bytes.NewReader(js))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&raw); err != nil {
		return Schema{}, base.Markf(ErrInvalid, "schema: want an object with a \"columns\" list or a list of columns: %s", jsonProblem(err))
	}
	var entries []Entry
	for i, rc := range raw.Columns {
		var c Entry // statistics are known fields, refused below
		dec := json.NewDecoder(bytes.NewReader(rc))
		dec.DisallowUnknownFields()
		if err := dec.Decode(&c); err != nil {
			var name struct{ Name string }
			_ = json.Unmarshal(rc, &name)
			msg := strings.TrimPrefix(jsonProblem(err), ErrInvalid.Error()+": ")
			return Schema{}, base.Markf(ErrInvalid, "schema column %d (%q): %s", i+1, name.Name, msg)
		}
		entries = append(entries, c)
	}
	if len(entries) == 0 {
		return Schema{}, base.Markf(ErrInvalid, "schema has no columns")
	}
	var s Schema
	for _, c := range entries {
		if c.UID != 0 || c.Samples != 0 || c.StoredBytes != 0 {
			return Schema{}, base.Markf(ErrInvalid, "schema column %q sets a statistic (uid, samples, stored_bytes) that loch keeps itself", c.Name)
		}
		s.Columns = append(s.Columns, c.Column)
	}
	if err := s.Normalize(); err != nil {
		return Schema{}, err
	}
	return s, nil
}

// jsonProblem describes a JSON decoding error in the schema's terms: a
// value of the wrong type is named by its field and the kinds found and
// wanted ("field \"shape\" is a string, want a list"), not by Go types.
func jsonProblem(err error) string {
	var te *json.UnmarshalTypeError
	if !errors.As(err, &te) {
		return strings.TrimPrefix(err.Error(), "json: ")
	}
	where := "the document"
	if te.Field != "" {
		// A column is read as an Entry: name its field, not the embedding.
		field := strings.TrimPrefix(strings.TrimPrefix(te.Field, "Column."), "Stats.")
		where = fmt.Sprintf("field %q", field)
	}
	var want string
	switch te.Type.Kind() {
	case reflect.Slice, reflect.Array:
		want = "a list"
	case reflect.Struct, reflect.Map:
		want = "an object"
	case reflect.String:
		want = "a string"
	case reflect.Bool:
		want = "true or false"
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64,
		reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		want = "a whole number"
	case reflect.Float32, reflect.Float64:
		want = "a number"
	default:
		want = "another kind of value"
	}
	return fmt.Sprintf("%s is a %s, want %s", where, te.Value, want)
}

// jsonable turns YAML's map[string]any / map[any]any trees into JSON-encodable values.
func jsonable(v any) any {
	switch t := v.(type) {
	case map[string]any:
		for k, x := range t {
			t[k] = jsonable(x)
		}
		return t
	case map[any]any:
		m := make(map[string]any, len(t))
		for k, x := range t {
			m[fmt.Sprint(k)] = jsonable(x)
		}
		return m
	case []any:
		for i := range t {
			t[i] = jsonable(t[i])
		}
		return t
	}
	return v
}
