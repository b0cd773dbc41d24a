package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// TestMergeConflicts changes the same rows on main and on a branch with the
// library (the CLI cannot update rows), then merges with the CLI. With the
// default strategy fail it lists the first 20 conflicts, exits 1 with one
// line saying nothing was changed, and main has not moved; --json lists
// them all; --strategy theirs takes the branch's rows.
func TestMergeConflicts(t *testing.T) {
	ctx := context.Background()
	const rows = 25
	url, d, dev := branched(t, rows, "x", "y")
	// Every row changes on both sides: x here; x and y there. The last row
	// is deleted here instead.
	for id := range uint64(rows) {
		if id == rows-1 {
			require.NoError(t, d.Delete(ctx, id))
		} else {
			require.NoError(t, d.Update(ctx, id, loch.Row{"x": loch.Scalar(int64(100 + id))}))
		}
		require.NoError(t, dev.Update(ctx, id, loch.Row{"x": loch.Scalar(int64(300 + id)), "y": loch.Scalar(int64(300 + id))}))
	}
	head, err := d.Commit(ctx, "change x")
	require.NoError(t, err)
	_, err = dev.Commit(ctx, "change x and y")
	require.NoError(t, err)

	code, stdout, stderr := cli("merge", url, "dev")
	require.Equal(t, exitError, code, stderr)
	require.Equal(t, "loch: merge dev into main: 25 rows changed on both sides; nothing was changed (use --strategy ours or theirs to resolve)\n", stderr)
	lines := strings.Split(strings.TrimSuffix(stdout, "\n"), "\n")
	require.Len(t, lines, 1+maxConflictsShown+1, stdout)
	require.Regexp(t, `^ROW +OURS \(main\) +THEIRS \(dev\)$`, lines[0])
	require.Regexp(t, `^0 +modified x +modified x,y$`, lines[1])
	require.Equal(t, "... and 5 more", lines[len(lines)-1])
	now, err := d.Resolve(ctx, "main")
	require.NoError(t, err)
	require.Equal(t, head, now, "a failed merge moves nothing")

	code, stdout, stderr = cli("merge", url, "dev", "--json")
	require.Equal(t, exitError, code, stderr)
	var res loch.MergeResult
	require.NoError(t, json.Unmarshal([]byte(stdout), &res))
	require.Len(t, res.Conflicts, rows)
	require.Empty(t, res.Commit)
	require.Regexp(t, `^[0-9a-f]{32}$`, res.Base, "the common ancestor, known also when the merge stops")
	require.Contains(t, stdout, `"columns_added": []`)
	last := res.Conflicts[rows-1]
	require.Equal(t, loch.Conflict{ID: rows - 1, Ours: loch.ChangeDeleted, Theirs: loch.ChangeModified, TheirsColumns: []string{"x", "y"}}, last)

	code, stdout, stderr = cli("merge", url, "dev", "--strategy", "theirs")
	require.Equal(t, exitOK, code, stderr)
	require.Regexp(t, `^merged dev into main, version [0-9a-f]{32} \(base [0-9a-f]{32}\): `, stdout)
	require.Contains(t, stdout, "25 rows changed on both sides, resolved with --strategy theirs\n")
	require.NoError(t, d.Refresh(ctx))
	require.Equal(t, int64(rows), d.Len(), "theirs brings the row deleted here back")
	col, err := d.Column("x")
	require.NoError(t, err)
	samples, err := col.ReadRange(ctx, 0, rows)
	require.NoError(t, err)
	var got []int64
	for _, s := range samples {
		got = append(got, schema.Int64.Int(s.Data, 0))
	}
	slices.Sort(got)
	want := make([]int64, rows)
	for i := range want {
		want[i] = int64(300 + i)
	}
	require.Equal(t, want, got)
}

// TestDiffModifiedAndSchema updates a row and adds a column on a branch with
// the library (the CLI does neither), then diffs and merges with the CLI:
// diff lists the modified row with its column and the new column; the
// merge brings the column in.
func TestDiffModifiedAndSchema(t *testing.T) {
	ctx := context.Background()
	url, d, dev := branched(t, 3, "x")
	require.NoError(t, dev.AddColumn(ctx, schema.Column{Name: "caption", Kind: schema.TextKind}))
	require.NoError(t, dev.Update(ctx, 1, loch.Row{"x": loch.Scalar(int64(10))}))
	_, err := dev.Commit(ctx, "caption; row 1 changed")
	require.NoError(t, err)
	require.NoError(t, d.Append(ctx, loch.Row{"x": loch.Scalar(int64(3))}))
	_, err = d.Commit(ctx, "row 3")
	require.NoError(t, err)

	var stdout, stderr bytes.Buffer
	code := run(ctx, []string{"diff", url, "main", "dev"}, nil, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	out := stdout.String()
	require.Regexp(t, `(?m)^rows +0 added, 1 deleted, 1 modified$`, out)
	require.Regexp(t, `(?m)^modified +x 1$`, out)
	require.Regexp(t, `(?m)^schema +\+ caption \(text text .*\)$`, out)
	require.Regexp(t, `(?m)^1 +modified +x$`, out)
	require.Regexp(t, `(?m)^3 +deleted$`, out)

	stdout.Reset()
	code = run(ctx, []string{"merge", url, "dev"}, nil, &stdout, &stderr)
	require.Equal(t, exitOK, code, stderr.String())
	require.Regexp(t, `^merged dev into main, version [0-9a-f]{32} \(base [0-9a-f]{32}\): 0 rows added, 0 deleted, 1 modified\ncolumns added: caption\n$`, stdout.String())
	require.NoError(t, d.Refresh(ctx))
	_, err = d.Column("caption")
	require.NoError(t, err)
	require.Equal(t, int64(4), d.Len())
}

// branched creates a dataset of rows rows with int64 columns cols (row i
// holds i in each), commits it and makes branch dev there. It returns the
// dataset's URL and handles on main (d) and on dev, closed when the test ends.
func branched(t *testing.T, rows int, cols ...string) (url string, d, dev *loch.Dataset) {
	t.Helper()
	ctx := context.Background()
	url = filepath.Join(t.TempDir(), "ds")
	var s schema.Schema
	for _, c := range cols {
		s.Columns = append(s.Columns, schema.Column{Name: c, DType: schema.Int64, Shape: schema.Shape{}})
	}
	d, err := loch.Create(ctx, url, s)
	require.NoError(t, err)
	t.Cleanup(func() { d.Close() })
	for i := range int64(rows) {
		row := loch.Row{}
		for _, c := range cols {
			row[c] = loch.Scalar(i)
		}
		require.NoError(t, d.Append(ctx, row))
	}
	_, err = d.Commit(ctx, fmt.Sprintf("%d rows", rows))
	require.NoError(t, err)
	_, err = d.CreateBranch(ctx, "dev", "")
	require.NoError(t, err)
	dev, err = loch.Open(ctx, url, loch.WithRef("dev"))
	require.NoError(t, err)
	t.Cleanup(func() { dev.Close() })
	return url, d, dev
}
