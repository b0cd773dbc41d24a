package loch

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/testserver"
	"github.com/lochdata/loch/schema"
)

func upsertRow(id int64, name string) Row {
	return Row{"id": Scalar(id), "name": String(name)}
}

// readNames returns column name of every row in order.
func readNames(t *testing.T, d *Dataset) []string {
	t.Helper()
	return readColumn(t, d, "name", func(s Sample) string {
		if s.Null {
			return "<null>"
		}
		return string(s.Data)
	})
}

func TestUpsert(t *testing.T) {
	for _, where := range testserver.Stores {
		t.Run(where, func(t *testing.T) {
			d, err := Create(ctx, testserver.StoreURL(t, where), schema.Schema{Columns: []schema.Column{
				{Name: "id", DType: schema.Int64}, {Name: "name", DType: schema.Text}, {Name: "n", DType: schema.Int32},
			}})
			require.NoError(t, err)
			defer d.Close()
			for i := int64(0); i < 5; i++ {
				require.NoError(t, d.Append(ctx, Row{"id": Scalar(i), "name": String(fmt.Sprint("row ", i)), "n": Scalar(int32(i))}))
			}
			_, err = d.Commit(ctx, "five")
			require.NoError(t, err)
			before := d.Version()

			rep, err := d.Upsert(ctx, []Row{upsertRow(3, "three"), upsertRow(9, "nine"), upsertRow(1, "one"), upsertRow(7, "seven")}, UpsertOptions{On: []string{"id"}})
			require.NoError(t, err)
			require.EqualValues(t, 2, rep.Updated)
			require.EqualValues(t, 2, rep.Inserted)
			require.Equal(t, d.Version(), rep.Version)
			require.Equal(t, []string{"row 0", "one", "row 2", "three", "row 4", "nine", "seven"}, readNames(t, d),
				"updated rows keep their place, new ones are appended in input order")
			log, err := d.Log(ctx)
			require.NoError(t, err)
			require.Equal(t, before, log[1].ID, "one commit")
			id := mustRowID(t, d, 3)
			require.EqualValues(t, 3, id, "row ids kept")
			n := mustColumn(t, d, "n")
			s, err := n.Read(ctx, 3, nil)
			require.NoError(t, err)
			require.Equal(t, Scalar(int32(3)).Data, s.Data, "columns the input lacks are kept")
			s, err = n.Read(ctx, 5, nil)
			require.NoError(t, err)
			require.True(t, s.Null, "an inserted row's missing columns are null")

			// Keys given twice are refused, naming them; nothing is staged.
			_, err = d.Upsert(ctx, []Row{upsertRow(2, "a"), upsertRow(2, "b")}, UpsertOptions{On: []string{"id"}})
			require.ErrorIs(t, err, ErrInvalidArgument)
			require.ErrorContains(t, err, "input rows 0 and 1 have the same key (id=2)")
			_, err = d.Upsert(ctx, []Row{upsertRow(2, "a")}, UpsertOptions{On: []string{"nope"}})
			require.ErrorIs(t, err, ErrInvalidArgument)
			_, err = d.Upsert(ctx, []Row{{"name": String("no key")}}, UpsertOptions{On: []string{"id"}})
			require.ErrorIs(t, err, ErrInvalidArgument)
			require.ErrorContains(t, err, `no value for key column "id"`)

			// Do nothing when matched: only inserts.
			rep, err = d.Upsert(ctx, []Row{upsertRow(0, "zero"), upsertRow(10, "ten")}, UpsertOptions{On: []string{"id"}, WhenMatched: UpsertNothing})
			require.NoError(t, err)
			require.EqualValues(t, 0, rep.Updated)
			require.EqualValues(t, 1, rep.Inserted)
			require.Equal(t, "row 0", readNames(t, d)[0])
			// Do nothing when not matched: only updates.
			rep, err = d.Upsert(ctx, []Row{upsertRow(0, "zero"), upsertRow(11, "eleven")}, UpsertOptions{On: []string{"id"}, WhenNotMatched: UpsertNothing})
			require.NoError(t, err)
			require.EqualValues(t, 1, rep.Updated)
			require.EqualValues(t, 0, rep.Inserted)
			require.Equal(t, []string{"zero", "one", "row 2", "three", "row 4", "nine", "seven", "ten"}, readNames(t, d))
			_, problems, err := d.Verify(ctx)
			require.NoError(t, err)
			require.Empty(t, problems)
		})
	}
}

// TestUpsertCompositeKey matches on two columns; a null key matches
// nothing; a key held by two rows updates both.
func TestUpsertCompositeKey(t *testing.T) {
	d, _ := mustCreate(t, schema.Schema{Columns: []schema.Column{
		{Name: "a", DType: schema.Int64}, {Name: "b", DType: schema.Text}, {Name: "name", DType: schema.Text},
	}})
	rows := []Row{
		{"a": Scalar(int64(1)), "b": String("x"), "name": String("1x")},
		{"a": Scalar(int64(1)), "b": String("y"), "name": String("1y")},
		{"a": Scalar(int64(2)), "b": String("x"), "name": String("2x")},
		{"a": Scalar(int64(1)), "b": String("y"), "name": String("1y again")},
	}
	require.NoError(t, d.Extend(ctx, rows))
	_, err := d.Commit(ctx, "rows")
	require.NoError(t, err)
	rep, err := d.Upsert(ctx, []Row{
		{"a": Scalar(int64(1)), "b": String("y"), "name": String("new 1y")},
		{"a": Scalar(int64(2)), "b": Null(), "name": String("null key")},
		{"a": Scalar(int64(12)), "b": String("x"), "name": String("12x")},
	}, UpsertOptions{On: []string{"a", "b"}})
	require.NoError(t, err)
	require.EqualValues(t, 2, rep.Updated, "both rows with key (1, y)")
	require.EqualValues(t, 2, rep.Inserted)
	require.Equal(t, []string{"1x", "new 1y", "2x", "new 1y", "null key", "12x"}, readNames(t, d))
}
