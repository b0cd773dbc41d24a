package query

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// TestStreamColumns: Stream hands each scalar type over as the samples of
// its dtype, in order, in chunks of at most 2,048 rows: fixed-size values
// little-endian, text (inlined in DuckDB's string or not), json and blobs
// by offsets, nulls flagged with empty ranges.
func TestStreamColumns(t *testing.T) {
	e, err := New(ctx, nil, Options{Threads: 2})
	require.NoError(t, err)
	defer e.Close()
	q := `SELECT i % 2 = 0 AS b, (i % 100)::TINYINT AS i8, i::SMALLINT AS i16, i::INTEGER AS i32, -i AS i64,
		(i % 200)::UTINYINT AS u8, i::USMALLINT AS u16, i::UINTEGER AS u32, i::UBIGINT AS u64,
		i / 4 AS f64, (i / 4)::FLOAT AS f32,
		CASE WHEN i % 7 = 0 THEN NULL WHEN i % 2 = 0 THEN 'short' || i ELSE 'a longer string, row ' || i END AS t,
		json_object('i', i) AS j, ('x' || i)::BLOB AS bl
		FROM range(5000) t(i)`
	want := []schema.DType{schema.Bool, schema.Int8, schema.Int16, schema.Int32, schema.Int64, schema.Uint8, schema.Uint16,
		schema.Uint32, schema.Uint64, schema.Float64, schema.Float32, schema.Text, schema.JSON, schema.Bytes}
	var rows int
	var cols [14]loch.ColumnData
	err = e.Stream(ctx, q, func(sc []StreamColumn) error {
		require.Len(t, sc, len(want))
		for k, c := range sc {
			require.Equal(t, want[k], c.DType, c.Name)
		}
		return nil
	}, func(b *Batch) error {
		require.LessOrEqual(t, b.Len(), 2048)
		for k := range cols {
			b.Column(k, &cols[k])
		}
		for r := range b.Len() {
			i := int64(rows + r)
			require.Equal(t, byte(1-i%2), cols[0].Values[r])
			require.Equal(t, byte(i%100), cols[1].Values[r])
			require.Equal(t, uint64(-i), leUint(cols[4].Values[8*r:8*r+8]))
			require.Equal(t, uint64(i), leUint(cols[8].Values[8*r:8*r+8]))
			text := string(cols[11].Values[cols[11].Offsets[r]:cols[11].Offsets[r+1]])
			switch {
			case i%7 == 0:
				require.True(t, cols[11].Nulls[r])
				require.Empty(t, text)
			case i%2 == 0:
				require.Equal(t, fmt.Sprintf("short%d", i), text)
			default:
				require.Equal(t, fmt.Sprintf("a longer string, row %d", i), text)
			}
			require.Nil(t, cols[12].Nulls)
			require.JSONEq(t, fmt.Sprintf(`{"i": %d}`, i), string(cols[12].Values[cols[12].Offsets[r]:cols[12].Offsets[r+1]]))
			require.Equal(t, fmt.Sprintf("x%d", i), string(cols[13].Values[cols[13].Offsets[r]:cols[13].Offsets[r+1]]))
		}
		rows += b.Len()
		return nil
	})
	require.NoError(t, err)
	require.Equal(t, 5000, rows)
}

func leUint(b []byte) uint64 {
	var v uint64
	for k := len(b) - 1; k >= 0; k-- {
		v = v<<8 | uint64(b[k])
	}
	return v
}

// TestStreamIsStreaming: the result is not materialized before the first
// chunk. Rows past the fifth million raise an error; a consumer that stops
// after its first chunk never sees it, which a materialized result (the
// whole query run first) would report instead.
func TestStreamIsStreaming(t *testing.T) {
	e, err := New(ctx, nil, Options{Threads: 2})
	require.NoError(t, err)
	defer e.Close()
	q := `SELECT CASE WHEN i < 5000000 THEN i ELSE error('materialized')::BIGINT END AS i FROM range(10000000) t(i)`
	errStop := errors.New("enough")
	batches := 0
	err = e.Stream(ctx, q, func([]StreamColumn) error { return nil }, func(b *Batch) error {
		batches++
		return errStop
	})
	require.ErrorIs(t, err, errStop)
	require.Equal(t, 1, batches)

	// Read to the end, the same query fails naming DuckDB's error.
	err = e.Stream(ctx, q, func([]StreamColumn) error { return nil }, func(b *Batch) error { return nil })
	require.ErrorContains(t, err, "materialized")
}

// TestStreamRefuses: a column of a type no dtype holds as it is fails with
// ErrNotColumnar naming it, before check; check's error ends Stream
// before any chunk; a query DuckDB cannot run fails as queries do.
func TestStreamRefuses(t *testing.T) {
	e, err := New(ctx, nil, Options{})
	require.NoError(t, err)
	defer e.Close()
	none := func(*Batch) error { t.Fatal("a chunk was handed over"); return nil }
	for q, name := range map[string]string{
		"SELECT 1.5::DECIMAL(4,1) AS d":  "column d of type",
		"SELECT [1, 2] AS l":             "column l of type",
		"SELECT DATE '2024-01-02' AS dt": "column dt of type",
	} {
		err := e.Stream(ctx, q, func([]StreamColumn) error { t.Fatal("check called"); return nil }, none)
		require.ErrorIs(t, err, ErrNotColumnar, q)
		require.ErrorContains(t, err, name, q)
	}
	errNo := errors.New("not these")
	err = e.Stream(ctx, "SELECT 1 AS x", func([]StreamColumn) error { return errNo }, none)
	require.ErrorIs(t, err, errNo)
	err = e.Stream(ctx, "SELECT * FROM no_such_table", func([]StreamColumn) error { return nil }, none)
	require.ErrorContains(t, err, "no_such_table")
}

// TestStreamCancelledAtItsEnd: a context that ends as a stream ends (fn
// cancels it and stops) interrupts nothing after Stream has returned: the
// next statement on the engine runs, and closing the engine right after
// is safe (the watcher of the context is gone by then).
func TestStreamCancelledAtItsEnd(t *testing.T) {
	errStop := errors.New("stop")
	for i := range 50 {
		e, err := New(ctx, nil, Options{})
		require.NoError(t, err)
		for j := range 4 {
			c, cancel := context.WithCancel(ctx)
			err = e.Stream(c, "SELECT i FROM range(100000) t(i)", func([]StreamColumn) error { return nil }, func(*Batch) error {
				cancel()
				return errStop
			})
			require.ErrorIs(t, err, errStop, "round %d.%d", i, j)
			rows := 0
			err = e.Stream(ctx, "SELECT i FROM range(10) t(i)", func([]StreamColumn) error { return nil }, func(b *Batch) error {
				rows += b.Len()
				return nil
			})
			require.NoError(t, err, "round %d.%d: the next statement", i, j)
			require.Equal(t, 10, rows)
		}
		require.NoError(t, e.Close())
	}
}
