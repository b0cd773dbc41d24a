package sqlcat

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/query"
	"github.com/lochdata/loch/schema"
)

// keyCheckBatch is the key values one query looks up among a table's rows:
// few enough for the scan to take them as one pushed IN filter (query).
const keyCheckBatch = 4000

// keyRetries is how many times Run runs a write on a table with keys or
// serial columns again when another commit moved the branch after the
// write checked its keys (loch.HeadMovedError).
const keyRetries = 5

// beforeKeyedCommit, when set (by tests), runs before a write on a table
// with keys or serial columns commits: another writer's commit there makes
// the race of two writers deterministic.
var beforeKeyedCommit func()

// keyCheck enforces the keys of a table (schema.Column.Key) and fills its
// serial columns (schema.Column.Serial) for one write statement
// (docs/sql.md §2.1). The write hands it every row it stages (insert,
// update) and the rows it deletes; before committing, check looks the new
// key values up among the rows of the version the write read, through
// DuckDB (only the key column is scanned, with the values pushed down as
// an IN filter), and commit commits only onto that version
// (loch.Dataset.CommitUnmoved), so that a concurrent writer's rows cannot
// slip in between: Run then runs the statement again.
type keyCheck struct {
	s    *Session
	name string
	d    *loch.Dataset
	keys []*schema.Column
	// serial columns and the next value of each (by name), read when the
	// write starts
	serial []*schema.Column
	next   map[string]int64
	// seen maps each key column's new values (their bytes) to the row of
	// the statement that gave it; vals keeps them in order.
	seen map[string]map[string]int64
	vals map[string][]loch.Sample
	// changed are the rows the statement updates or deletes: their old key
	// values are gone.
	changed map[uint64]bool
	// filled counts the serial values the statement gave.
	filled int
}

// newKeyCheck returns the key check of a write on table name, open as d
// (its schema sch); nil when the table has no keys and no serial
// columns. inserts says the write may insert rows: the next value of
// each serial column is read now.
func (s *Session) newKeyCheck(ctx context.Context, name string, d *loch.Dataset, sch *schema.Schema, inserts bool) (*keyCheck, error) {
	k := &keyCheck{s: s, name: name, d: d, next: map[string]int64{}, seen: map[string]map[string]int64{},
		vals: map[string][]loch.Sample{}, changed: map[uint64]bool{}}
	for i := range sch.Columns {
		c := &sch.Columns[i]
		if c.Key != "" {
			k.keys = append(k.keys, c)
			k.seen[c.Name] = map[string]int64{}
		}
		if c.Serial {
			k.serial = append(k.serial, c)
		}
	}
	if len(k.keys) == 0 && len(k.serial) == 0 {
		return nil, nil
	}
	if !inserts {
		return k, nil
	}
	for _, c := range k.serial {
		n, err := k.maxOf(ctx, c)
		if err != nil {
			return nil, err
		}
		k.next[c.Name] = n + 1
	}
	return k, nil
}

// maxOf is the largest value of integer column c in the version the write
// read (0 for none).
func (k *keyCheck) maxOf(ctx context.Context, c *schema.Column) (int64, error) {
	q := fmt.Sprintf("SELECT CAST(max(%s) AS BIGINT) FROM %s", quoteIdent(c.Name), quoteIdent(k.name))
	var n int64
	err := k.s.each(ctx, k.name, k.d, q, 1, func(_ int64, vals []any) error {
		if v, ok := vals[0].(int64); ok {
			n = v
		}
		return nil
	})
	if err != nil {
		return 0, fmt.Errorf("%s: serial column %s: %w", k.name, c.Name, err)
	}
	return max(n, 0), nil
}

// insert fills row's serial columns where the statement gave no value (or
// NULL) and records its key values; src is the row's number in the
// statement's source.
func (k *keyCheck) insert(row loch.Row, src int64) error {
	for _, c := range k.serial {
		if smp, ok := row[c.Name]; ok && !smp.Null {
			continue
		}
		n := k.next[c.Name]
		lo, hi := intRange(c.DType)
		if n < lo || n > hi {
			return fmt.Errorf("row %d: serial column %s: next value %d is out of range for %s: %w", src, c.Name, n, c.DType, loch.ErrInvalidArgument)
		}
		k.next[c.Name] = n + 1
		k.filled++
		row[c.Name] = serialSample(c.DType, n)
	}
	return k.record(row, src, true)
}

// serialSample is the scalar n of integer dtype dt (n in its range): the
// low dt.Size() bytes of n, little-endian, as samples hold integers.
func serialSample(dt schema.DType, n int64) loch.Sample {
	data := binary.LittleEndian.AppendUint64(nil, uint64(n))
	return loch.Sample{Shape: []int{}, Data: data[:dt.Size()]}
}

// update records the key values that row (the new values of row id, the
// statement's row src) gives.
func (k *keyCheck) update(id uint64, row loch.Row, src int64) error {
	k.changed[id] = true
	return k.record(row, src, false)
}

// deleted records rows the statement deletes.
func (k *keyCheck) deleted(ids []uint64) {
	for _, id := range ids {
		k.changed[id] = true
	}
}

// record notes row's key values, refusing a null primary key and a value
// that an earlier row of the statement gave; a column missing from row is
// null in an inserted row (inserted) and unchanged in an updated one.
func (k *keyCheck) record(row loch.Row, src int64, inserted bool) error {
	for _, c := range k.keys {
		smp, ok := row[c.Name]
		if !ok && (!inserted || c.Key == schema.KeyUnique) {
			continue
		}
		if !ok || smp.Null {
			if c.Key == schema.KeyPrimary {
				return fmt.Errorf("row %d: column %s is the primary key of table %s and cannot be NULL: %w", src, c.Name, k.name, loch.ErrInvalidArgument)
			}
			continue
		}
		v := string(smp.Data)
		if first, dup := k.seen[c.Name][v]; dup {
			return fmt.Errorf("duplicate key: table %s column %s (%s key): rows %d and %d of the statement both have %s: %w",
				k.name, c.Name, c.Key, first, src, keyLiteral(c, smp), loch.ErrExists)
		}
		k.seen[c.Name][v] = src
		k.vals[c.Name] = append(k.vals[c.Name], smp)
	}
	return nil
}

// check looks the statement's new key values up among the rows of the
// version it read that it neither updates nor deletes.
func (k *keyCheck) check(ctx context.Context) error {
	for _, c := range k.keys {
		vals := k.vals[c.Name]
		for lo := 0; lo < len(vals); lo += keyCheckBatch {
			if err := k.checkBatch(ctx, c, vals[lo:min(lo+keyCheckBatch, len(vals))]); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkBatch looks up vals, values of key column c.
func (k *keyCheck) checkBatch(ctx context.Context, c *schema.Column, vals []loch.Sample) error {
	lits := make([]string, len(vals))
	for i, v := range vals {
		lits[i] = keyLiteral(c, v)
	}
	col := quoteIdent(c.Name)
	q := fmt.Sprintf("SELECT %s, CAST(%s AS VARCHAR) FROM %s WHERE %s IN (%s)", query.RowIDColumn, col, quoteIdent(k.name), col, strings.Join(lits, ", "))
	return k.s.each(ctx, k.name, k.d, q, 2, func(_ int64, row []any) error {
		id, _ := row[0].(uint64)
		if k.changed[id] {
			return nil
		}
		v, _ := row[1].(string)
		if c.DType == schema.Text {
			v = quoteLiteral(v)
		}
		return fmt.Errorf("duplicate key: table %s column %s (%s key): %s already exists (row _rowid %d): %w",
			k.name, c.Name, c.Key, v, id, loch.ErrExists)
	})
}

// keyLiteral is key value smp of column c as a SQL literal.
func keyLiteral(c *schema.Column, smp loch.Sample) string {
	if c.DType == schema.Text {
		return quoteLiteral(string(smp.Data))
	}
	switch v := c.DType.Value(smp.Data, 0).(type) {
	case uint64:
		return strconv.FormatUint(v, 10)
	default:
		return fmt.Sprint(v)
	}
}

func quoteLiteral(s string) string { return `'` + strings.ReplaceAll(s, `'`, `''`) + `'` }

// commit checks the keys and commits the write that staged res.Rows rows
// on d onto the version it read, when it gave a key or serial value
// (commitWrite otherwise).
func (k *keyCheck) commit(ctx context.Context, res Result, op, msg string) (Result, error) {
	if res.Rows == 0 || k.filled == 0 && len(k.vals) == 0 {
		// no key value and no serial value given: another writer's rows
		// cannot conflict, so the commit rebases as any other
		return commitWrite(ctx, k.d, res, op, msg)
	}
	if err := k.check(ctx); err != nil {
		return res, fmt.Errorf("%s %s (nothing written): %w", op, k.name, err)
	}
	if beforeKeyedCommit != nil {
		beforeKeyedCommit()
	}
	v, err := k.d.CommitUnmoved(ctx, msg)
	if err != nil {
		return res, commitErr(op, res.Table, err)
	}
	res.Version = v
	return res, nil
}

// commitKeyed ends a write as commitWrite does, through k when the table
// has keys or serial columns.
func commitKeyed(ctx context.Context, k *keyCheck, d *loch.Dataset, res Result, op, msg string) (Result, error) {
	if k == nil {
		return commitWrite(ctx, d, res, op, msg)
	}
	return k.commit(ctx, res, op, msg)
}

// retryMoved runs a write again, at most keyRetries times, while it fails
// because another commit moved its table's branch after it checked its
// keys.
func retryMoved(run func() (Result, error)) (Result, error) {
	for i := 0; ; i++ {
		res, err := run()
		var hm *loch.HeadMovedError
		if err == nil || !errors.As(err, &hm) || i+1 >= keyRetries {
			return res, err
		}
	}
}
