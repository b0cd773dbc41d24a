package ingest

import (
	"strings"

	"github.com/lochdata/loch/internal/base"
)

// columnName turns a source field name into a valid column name: characters
// other than letters, digits, '_', '-' and '.' become '_', a name not
// starting with a letter or '_' gets a leading '_', and names are cut at
// 128 bytes. Valid names are returned unchanged.
func columnName(field string) string {
	var b strings.Builder
	for i, r := range field {
		head := r == '_' || (r >= 'a' && r <= 'z') || (r >= 'A' && r <= 'Z')
		tail := r == '-' || r == '.' || (r >= '0' && r <= '9')
		switch {
		case i == 0 && !head:
			b.WriteByte('_')
			if tail {
				b.WriteRune(r)
			}
		case head || tail:
			b.WriteRune(r)
		default:
			b.WriteByte('_')
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	s := b.String()
	if len(s) > 128 {
		s = s[:128]
	}
	return s
}

// fieldNames maps source field names to distinct column names.
type fieldNames struct {
	col   map[string]string // field -> column
	field map[string]string // column -> field
}

func newFieldNames() *fieldNames {
	return &fieldNames{col: map[string]string{}, field: map[string]string{}}
}

// add registers field and returns its column name; two fields that map to
// the same column name are an error.
func (f *fieldNames) add(field string) (string, error) {
	if c, ok := f.col[field]; ok {
		return c, nil
	}
	c := columnName(field)
	if other, ok := f.field[c]; ok {
		return "", base.Markf(ErrInvalidSource, "fields %q and %q both make column %q", other, field, c)
	}
	f.col[field], f.field[c] = c, field
	return c, nil
}
