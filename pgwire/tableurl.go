package pgwire

import (
	"context"
	"errors"
	"fmt"
	"regexp"
	"strings"
	"sync"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/sqlcat"
)

// TableURLFunction is the function a client calls to read a table
// straight from storage (loch.connect("postgresql://...") in Python):
// SELECT * FROM loch_table_url('name' [, 'ref']) returns one row (table,
// url, ref, version): the table's storage URL and the version its ref
// (default main) is at, once the user's role may read the table there.
// The server vends no storage credentials: the client reads the URL with
// its own.
const TableURLFunction = "loch_table_url"

// tableURLRE matches SELECT [*  FROM] loch_table_url('name' [, 'ref']).
var tableURLRE = sync.OnceValue(func() *regexp.Regexp {
	return regexp.MustCompile(`(?is)^\s*select\s+(?:\*\s+from\s+)?loch_table_url\s*\(\s*'((?:[^']|'')*)'\s*(?:,\s*'((?:[^']|'')*)'\s*)?\)\s*;?\s*$`)
})

// tableURL answers loch_table_url; ok is false when q is no call of it.
func (c *conn) tableURL(ctx context.Context, q string) (*result, bool, error) {
	m := tableURLRE().FindStringSubmatch(q)
	if m == nil {
		return nil, false, nil
	}
	name, ref := strings.ReplaceAll(m[1], "''", "'"), strings.ReplaceAll(m[2], "''", "'")
	t, err := c.srv.cat.Table(ctx, name)
	if err != nil {
		return nil, true, err
	}
	if ref == "" {
		ref = "main"
	}
	d, err := c.srv.cat.OpenTable(ctx, t.Name, loch.WithRef(ref))
	if err != nil {
		if errors.Is(err, loch.ErrNotFound) {
			return nil, true, fmt.Errorf("table %s has no ref %q: %w", t.Name, ref, err)
		}
		return nil, true, err
	}
	defer d.Close()
	tag, err := sqlcat.IsTag(ctx, d, ref)
	if err != nil {
		return nil, true, err
	}
	a := access{right: RightRead, table: t.Name, ref: ref, tag: tag}
	if !c.role.allows(a) {
		return nil, true, refusal(c.user, c.roleName, a)
	}
	text := typeFor("VARCHAR")
	return &result{
		names:  []string{"table", "url", "ref", "version"},
		types:  []pgType{text, text, text, text},
		static: [][]any{{t.Name, t.URL, ref, d.Version()}},
	}, true, nil
}
