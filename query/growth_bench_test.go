package query

import (
	"bytes"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// growthSizes is LOCH_GROWTH_SIZES (comma-separated row counts, default
// 1000000; bench/RESULTS.md has 1M, 10M and 100M).
func growthSizes(b *testing.B) []int {
	v := os.Getenv("LOCH_GROWTH_SIZES")
	if v == "" {
		return []int{1_000_000}
	}
	var out []int
	for _, f := range strings.Split(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		require.NoError(b, err, "LOCH_GROWTH_SIZES")
		out = append(out, n)
	}
	return out
}

var growthSchema = schema.Schema{Columns: []schema.Column{
	{Name: "id", DType: schema.Int64},
	{Name: "score", DType: schema.Float32},
	{Name: "caption", DType: schema.Text, ChunkCompression: schema.LZ4},
	{Name: "meta", Kind: schema.JSONKind, ChunkCompression: schema.LZ4},
}}

// growthRows is rows [lo, hi) of the growth table.
func growthRows(lo, hi int) []loch.Row {
	rows := make([]loch.Row, 0, hi-lo)
	for i := lo; i < hi; i++ {
		js := fmt.Sprintf(`{"src":"%c","q":%d}`, "abc"[i%3], i%10)
		rows = append(rows, loch.Row{"id": loch.Scalar(int64(i)), "score": loch.Scalar(float32(i%1000) / 1000),
			"caption": loch.String("frame " + strconv.Itoa(i) + " of episode " + strconv.Itoa(i/500)),
			"meta":    loch.Sample{Shape: []int{len(js)}, Data: []byte(js)}})
	}
	return rows
}

// treeBytes is the bytes of the files under dir, and those under its
// manifests/ and commits/ (a version's metadata).
func treeBytes(b *testing.B, dir string) (all, meta int64) {
	require.NoError(b, filepath.WalkDir(dir, func(p string, e fs.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		all += info.Size()
		if strings.Contains(p, "/manifests/") || strings.Contains(p, "/commits/") {
			meta += info.Size()
		}
		return nil
	}))
	return all, meta
}

// BenchmarkGrowth grows a table of scalars, text and JSON on local disk to
// each of LOCH_GROWTH_SIZES rows (in commits of 1M rows) and measures, at
// each size: a 1,000-row append (time, bytes written, of which manifest
// and commit), a compaction pass after ten such appends, an UPDATE of 1%
// of the rows' score (time, bytes written), and a filtered count through
// SQL. Each size's figures come from the same table, grown further for the
// next size.
func BenchmarkGrowth(b *testing.B) {
	url := filepath.Join(b.TempDir(), "growth")
	d, err := loch.Create(ctx, url, growthSchema)
	require.NoError(b, err)
	defer d.Close()
	type line struct {
		rows                           int64
		grow                           time.Duration
		appendTime                     time.Duration
		appendBytes, appendMeta        int64
		compactTime                    time.Duration
		compactFrags                   string
		updateTime                     time.Duration
		updateBytes, updateMeta, total int64
		countTime                      time.Duration
		count                          string
	}
	var lines []line
	have := 0
	next := 1 << 62 // ids of appended rows, apart from the grown ones
	for _, size := range growthSizes(b) {
		var l line
		t0 := time.Now()
		for have < size {
			n := min(size-have, 1_000_000)
			for lo := have; lo < have+n; lo += 100_000 {
				require.NoError(b, d.Extend(ctx, growthRows(lo, min(lo+100_000, have+n))))
			}
			_, err := d.Commit(ctx, "grow")
			require.NoError(b, err)
			have += n
		}
		l.grow = time.Since(t0)
		// One 1,000-row append.
		before, beforeMeta := treeBytes(b, url)
		t0 = time.Now()
		require.NoError(b, d.Extend(ctx, growthRows(next, next+1000)))
		_, err = d.Commit(ctx, "append 1000")
		require.NoError(b, err)
		l.appendTime = time.Since(t0)
		after, afterMeta := treeBytes(b, url)
		l.appendBytes, l.appendMeta = after-before, afterMeta-beforeMeta
		next += 1000
		// Nine more, then a compaction pass.
		for range 9 {
			require.NoError(b, d.Extend(ctx, growthRows(next, next+1000)))
			_, err = d.Commit(ctx, "append 1000")
			require.NoError(b, err)
			next += 1000
		}
		t0 = time.Now()
		rep, err := d.Compact(ctx, loch.CompactOptions{})
		require.NoError(b, err)
		l.compactTime = time.Since(t0)
		l.compactFrags = fmt.Sprintf("%d -> %d", rep.FragmentsBefore, rep.FragmentsAfter)
		// UPDATE 1% of the rows (every 100th position).
		before, beforeMeta = treeBytes(b, url)
		r := rand.New(rand.NewPCG(uint64(size), 1))
		t0 = time.Now()
		for pos := int64(0); pos < d.Len(); pos += 100 {
			id, err := d.RowID(ctx, pos)
			require.NoError(b, err)
			require.NoError(b, d.Update(ctx, id, loch.Row{"score": loch.Scalar(r.Float32())}))
		}
		_, err = d.Commit(ctx, "update 1%")
		require.NoError(b, err)
		l.updateTime = time.Since(t0)
		after, afterMeta = treeBytes(b, url)
		l.updateBytes, l.updateMeta, l.total = after-before, afterMeta-beforeMeta, after
		// A filtered count through SQL.
		e, err := New(ctx, d, Options{})
		require.NoError(b, err)
		var out bytes.Buffer
		t0 = time.Now()
		_, err = e.Write(ctx, "SELECT count(*) FROM ds WHERE score > 0.5 AND (meta->>'src') = 'b'", FormatCSV, 0, &out)
		require.NoError(b, err)
		l.countTime = time.Since(t0)
		l.count = strings.TrimSpace(strings.Split(out.String(), "\n")[1])
		e.Close()
		l.rows = d.Len()
		lines = append(lines, l)
	}
	mib := func(n int64) string { return fmt.Sprintf("%.2f MiB", float64(n)/(1<<20)) }
	kib := func(n int64) string { return fmt.Sprintf("%.1f KiB", float64(n)/(1<<10)) }
	fmt.Printf("\n| rows | grow (commits of 1M) | 1,000-row append: time | bytes | of which manifest+commit | compaction pass (fragments) | 1%% UPDATE: time | bytes | of which manifest+commit | filtered count | total bytes |\n|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, l := range lines {
		fmt.Printf("| %d | %v | %v | %s | %s | %v (%s) | %v | %s | %s | %v (%s rows) | %s |\n", l.rows, l.grow.Round(time.Second), l.appendTime.Round(time.Millisecond),
			mib(l.appendBytes), kib(l.appendMeta), l.compactTime.Round(time.Millisecond), l.compactFrags, l.updateTime.Round(time.Millisecond),
			mib(l.updateBytes), kib(l.updateMeta), l.countTime.Round(time.Millisecond), l.count, mib(l.total))
	}
}
