package query

import (
	"context"
	"database/sql/driver"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/duckdb/duckdb-go-bindings"
	"github.com/duckdb/duckdb-go/v2"
	"github.com/duckdb/duckdb-go/v2/mapping"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// ErrNotColumnar is Stream's error for a result column of a type it does
// not hand over by columns (only scalars that a dtype holds as they are:
// BOOLEAN, the integers, FLOAT, DOUBLE, VARCHAR, JSON and BLOB).
var ErrNotColumnar = errors.New("query: a result column is not of a type handed over by columns")

// StreamColumn is a column of a streamed result: its name and the dtype
// whose samples Batch.Column makes of its values.
type StreamColumn struct {
	Name  string
	DType schema.DType
}

// Stream runs q and hands its result to fn one DuckDB chunk (at most
// 2,048 rows) at a time, in order. The result is DuckDB's streaming one:
// DuckDB makes the next rows when fn has taken the last, so what is held
// is a few chunks whatever the result's size. check sees the result's
// columns before the first chunk, and its error ends Stream having read
// nothing; a column of a type that Batch.Column cannot hand over fails
// with ErrNotColumnar before check. fn's error ends Stream and is
// returned as it is; a failure of the query (DuckDB's, or ctx's) is
// returned as the engine reports query errors. A Batch is valid only
// until fn returns. Like Rows, Stream runs a statement other than a
// SELECT as given: the caller decides what it runs. It reads duckdb-go's
// connection handle, which duckdb-go does not export (connHandle).
func (e *Engine) Stream(ctx context.Context, q string, check func([]StreamColumn) error, fn func(*Batch) error) error {
	var own error // check's or fn's, or ErrNotColumnar: returned as it is
	err := e.Raw(ctx, q, func(c driver.Conn, sql string) error {
		conn, err := connHandle(c)
		if err != nil {
			return err
		}
		if own, err = stream(ctx, conn, sql, check, fn); own != nil {
			return nil
		}
		return err
	})
	if own != nil {
		return own
	}
	return err
}

// stream runs sql on conn as a streaming result and hands it to fn; own
// is check's or fn's error or ErrNotColumnar, err DuckDB's.
func stream(ctx context.Context, conn mapping.Connection, sql string, check func([]StreamColumn) error, fn func(*Batch) error) (own, err error) {
	var stmt mapping.PreparedStatement
	defer mapping.DestroyPrepare(&stmt)
	if mapping.Prepare(conn, sql, &stmt) == mapping.StateError {
		return nil, errors.New(mapping.PrepareError(stmt))
	}
	var pending mapping.PendingResult
	defer mapping.DestroyPending(&pending)
	if duckdb_go_bindings.PendingPreparedStreaming(stmt, &pending) == mapping.StateError {
		return nil, errors.New(mapping.PendingError(pending))
	}
	// ctx's end interrupts the query, but only while stream runs: stream
	// waits for the watcher before it returns, since the caller may close
	// conn (or run another statement on it) right after, and an interrupt
	// then would touch a freed connection or stop the next statement.
	done, watched := make(chan struct{}), make(chan struct{})
	defer func() { close(done); <-watched }()
	go func() {
		defer close(watched)
		select {
		case <-ctx.Done():
			mapping.Interrupt(conn)
		case <-done:
		}
	}()
	var res mapping.Result
	defer mapping.DestroyResult(&res)
	if mapping.ExecutePending(pending, &res) == mapping.StateError {
		return nil, errors.Join(ctx.Err(), errors.New(mapping.ResultError(&res)))
	}
	b := &Batch{}
	if b.cols, own = streamColumns(&res); own != nil {
		return own, nil
	}
	if err := check(b.cols); err != nil {
		return err, nil
	}
	for {
		b.chunk = mapping.FetchChunk(res)
		if b.chunk.Ptr == nil {
			if msg := mapping.ResultError(&res); msg != "" {
				return nil, errors.Join(ctx.Err(), errors.New(msg))
			}
			return nil, ctx.Err()
		}
		b.rows = int(mapping.DataChunkGetSize(b.chunk))
		err := fn(b)
		mapping.DestroyDataChunk(&b.chunk)
		if err != nil {
			return err, nil
		}
	}
}

// streamColumns are the result's columns, or ErrNotColumnar naming one
// Batch.Column cannot hand over.
func streamColumns(res *mapping.Result) ([]StreamColumn, error) {
	n := int(mapping.ColumnCount(res))
	cols := make([]StreamColumn, n)
	for i := range cols {
		cols[i].Name = mapping.ColumnName(res, mapping.IdxT(i))
		t := mapping.ColumnType(res, mapping.IdxT(i))
		lt := mapping.ColumnLogicalType(res, mapping.IdxT(i))
		alias := mapping.LogicalTypeGetAlias(lt)
		mapping.DestroyLogicalType(&lt)
		cols[i].DType = streamDType(t, alias)
		if cols[i].DType == schema.Invalid {
			return nil, fmt.Errorf("column %s of type %s: %w", cols[i].Name, typeNameOf(t, alias), ErrNotColumnar)
		}
	}
	return cols, nil
}

// streamDType is the dtype of a streamed column of DuckDB type t (alias:
// its logical type's), schema.Invalid for one Batch.Column cannot hand
// over.
func streamDType(t duckdb.Type, alias string) schema.DType {
	if alias != "" {
		if t == duckdb.TYPE_VARCHAR && strings.EqualFold(alias, "JSON") {
			return schema.JSON
		}
		return schema.Invalid
	}
	for _, r := range duckScalars {
		if r.duck == t {
			return r.dtype
		}
	}
	return schema.Invalid
}

func typeNameOf(t duckdb.Type, alias string) string {
	if alias != "" {
		return alias
	}
	for _, r := range duckScalars {
		if r.duck == t {
			return r.name
		}
	}
	return fmt.Sprintf("DuckDB type %d", t)
}

// Batch is one chunk of a streamed result (Stream), valid until the
// function it was handed to returns.
type Batch struct {
	chunk mapping.DataChunk
	rows  int
	cols  []StreamColumn
}

// Len is the number of rows.
func (b *Batch) Len() int { return b.rows }

// Column sets dst's Values, Offsets and Nulls (not its Name) to column i
// for loch.Dataset.ExtendColumns: the values of a fixed-size type are
// DuckDB's memory itself (valid with the batch), those of VARCHAR, JSON
// and BLOB are copied into dst's buffers, which Column reuses.
func (b *Batch) Column(i int, dst *loch.ColumnData) {
	vec := mapping.DataChunkGetVector(b.chunk, mapping.IdxT(i))
	data := mapping.VectorGetData(vec)
	dst.Nulls = nullsOf(mapping.VectorGetValidity(vec), b.rows, dst.Nulls)
	if size := b.cols[i].DType.Size(); !b.cols[i].DType.Variable() {
		dst.Values, dst.Offsets = unsafe.Slice((*byte)(data), b.rows*size), nil
		return
	}
	dst.Values, dst.Offsets = dst.Values[:0], append(dst.Offsets[:0], 0)
	strs := unsafe.Slice((*[16]byte)(data), b.rows)
	for r := range strs {
		if dst.Nulls == nil || !dst.Nulls[r] {
			dst.Values = append(dst.Values, stringAt(&strs[r])...)
		}
		dst.Offsets = append(dst.Offsets, len(dst.Values))
	}
}

// stringAt is the bytes of a duckdb_string_t (duckdb.h): its length, then
// the string itself when it has at most 12 bytes, else a 4-byte prefix
// and a pointer to it.
func stringAt(s *[16]byte) []byte {
	n := binary.LittleEndian.Uint32(s[:4])
	if n <= 12 {
		return s[4 : 4+n]
	}
	return unsafe.Slice(*(**byte)(unsafe.Pointer(&s[8])), n)
}

// nullsOf is the null flags of a vector's validity mask (a bit per row,
// set when valid; nil when all are), reusing buf; nil when none is null.
func nullsOf(mask unsafe.Pointer, rows int, buf []bool) []bool {
	if mask == nil {
		return nil
	}
	words := unsafe.Slice((*uint64)(mask), (rows+63)/64)
	any := false
	for _, w := range words[:rows/64] {
		any = any || w != ^uint64(0)
	}
	if rem := rows % 64; rem > 0 {
		any = any || words[rows/64]&(1<<rem-1) != 1<<rem-1
	}
	if !any {
		return nil
	}
	buf = buf[:0]
	for r := range rows {
		buf = append(buf, words[r/64]&(1<<(r%64)) == 0)
	}
	return buf
}
