package loader

import (
	"io"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/loader/order"
)

// TestOrderIndependentOfColumns: the order is a function of the snapshot
// and the order settings only: loading other columns delivers the same
// rows in the same batches, and Order (which loads nothing) plans them.
func TestOrderIndependentOfColumns(t *testing.T) {
	d := testDataset(t, 230)
	for _, mode := range []order.Mode{order.ModeNone, order.ModeBlock, order.ModeFull} {
		cfg := Config{BatchSize: 7, Shuffle: mode, Seed: 5, WorldSize: 2, Rank: 1}
		want := positions(t, d, cfg)
		for _, cols := range [][]string{{"x"}, {"label"}, {"img", "t"}, {"r"}} {
			c := cfg
			c.Columns = cols
			require.Equal(t, want, positions(t, d, c), "mode %s, columns %v", mode, cols)
		}
		p, err := Order(ctx, d.Scan(), cfg)
		require.NoError(t, err)
		var planned [][]int64
		for _, b := range p.All() {
			planned = append(planned, append([]int64(nil), b...))
		}
		require.Equal(t, want, planned, "mode %s: Order plans what the loader delivers", mode)
	}
}

// TestResumeRefusesAnotherSetup: a saved state records everything the
// order depends on, and a loader resumed with other order settings is
// refused with a message naming the difference (the cases: a block
// state resumed in full mode, a state resumed with another row subset).
func TestResumeRefusesAnotherSetup(t *testing.T) {
	d := testDataset(t, 300)
	ids := func(lo, hi int) []uint64 { return rowIDs(t, d, lo, hi) }
	base := Config{BatchSize: 10, Shuffle: order.ModeBlock, Seed: 2, Rows: ids(0, 200)}
	saved := stateAfter(t, d, base, 3)
	require.Equal(t, order.ModeBlock, saved.Mode)
	require.Contains(t, saved.Selection, "200 rows")

	tests := []struct {
		name string
		edit func(*Config)
		msg  string
	}{
		{"full shuffle", func(c *Config) { c.Shuffle = order.ModeFull }, "shuffle mode block, resumed with full"},
		{"no shuffle", func(c *Config) { c.Shuffle = order.ModeNone }, "shuffle mode block, resumed with none"},
		{"other rows", func(c *Config) { c.Rows = ids(100, 300) }, "row selection 200 rows"},
		{"every row", func(c *Config) { c.Rows = nil }, "resumed with (every row)"},
		{"window", func(c *Config) { c.WindowRows = 50 }, "window_rows 0, resumed with 50"},
		{"drop last", func(c *Config) { c.DropLast = true }, "drop_last false, resumed with true"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			requireRefused(t, d, resumeWith(base, saved, tt.edit), tt.msg)
		})
	}

	// The same settings in another world size resume: the rest of the
	// epoch, every row of the subset once but for padding.
	c := base
	st := saved
	c.Resume, c.WorldSize = &st, 2
	seen := map[int64]bool{}
	for r := range 2 {
		c.Rank = r
		l, err := New(ctx, d.Scan(), c)
		require.NoError(t, err)
		for _, b := range drain(t, l) {
			for _, p := range b.Positions {
				seen[p] = true
			}
		}
		l.Close()
	}
	require.Len(t, seen, 200-30)
}

// TestResumeChecksEveryOrderInput enumerates what a loader's order depends
// on (loader.spec and order.Spec: the snapshot, the seed, the shuffle
// mode, the window, drop_last, the rows and the query that chose them; a
// mixture's weights, epoch length and datasets) and changes each in turn:
// every change is refused naming the setting with its saved and its new
// value (issue 35 item 8: a state saved with seed 3 resumed silently with
// seed 4's loader). What may change is enumerated too: world size, rank
// and batch size (the rest of the epoch is spread over the new ranks),
// the columns loaded, and the epoch, which is the state's own position.
func TestResumeChecksEveryOrderInput(t *testing.T) {
	d := testDataset(t, 120)
	twin := testDataset(t, 120) // the same rows, another version
	ids := rowIDs(t, d, 0, 80)
	base := Config{BatchSize: 4, Shuffle: order.ModeBlock, Seed: 3, WindowRows: 8, Rows: ids, Query: "SELECT * FROM ds WHERE x < 80"}
	saved := stateAfter(t, d, base, 2)

	refused := []struct {
		name string
		edit func(*Config)
		on   *loch.Dataset
		msg  string
	}{
		{"seed", func(c *Config) { c.Seed = 4 }, d, "saved with seed 3, resumed with seed 4"},
		{"shuffle", func(c *Config) { c.Shuffle = order.ModeFull }, d, "shuffle mode block, resumed with full"},
		{"window", func(c *Config) { c.WindowRows = 12 }, d, "window_rows 8, resumed with 12"},
		{"drop last", func(c *Config) { c.DropLast = true }, d, "drop_last false, resumed with true"},
		{"rows", func(c *Config) { c.Rows = ids[:40] }, d, "row selection 80 rows"},
		{"query", func(c *Config) { c.Query = "SELECT * FROM ds WHERE x < 81" }, d, "x < 81"},
		{"version", func(*Config) {}, twin, "the saved state is for version " + d.Version()},
	}
	for _, tt := range refused {
		t.Run(tt.name, func(t *testing.T) {
			requireRefused(t, tt.on, resumeWith(base, saved, tt.edit), tt.msg)
		})
	}

	allowed := []struct {
		name string
		edit func(*Config)
	}{
		{"world size and rank", func(c *Config) { c.WorldSize, c.Rank = 2, 1 }},
		{"batch size", func(c *Config) { c.BatchSize = 5 }},
		{"columns", func(c *Config) { c.Columns = []string{"label"} }},
		{"epoch", func(c *Config) { c.Epoch = 7 }},
	}
	for _, tt := range allowed {
		t.Run(tt.name, func(t *testing.T) {
			c := resumeWith(base, saved, tt.edit)
			l, err := New(ctx, d.Scan(), c)
			require.NoError(t, err)
			require.Equal(t, saved.Epoch, l.State().Epoch, "the state's epoch goes on")
			l.Close()
		})
	}

	// A mixture: its weights, epoch length, datasets and seed.
	views := []*loch.Scan{d.Scan(), twin.Scan()}
	mix := Config{BatchSize: 4, Shuffle: order.ModeBlock, Seed: 3}
	m, err := NewMix(ctx, views, []float64{0.75, 0.25}, 40, mix)
	require.NoError(t, err)
	_, err = m.Next(ctx)
	require.NoError(t, err)
	mixSaved := m.State()
	m.Close()
	for _, tt := range []struct {
		name      string
		views     []*loch.Scan
		weights   []float64
		epochRows int64
		seed      uint64
		msg       string
	}{
		{"mixture seed", views, []float64{0.75, 0.25}, 40, 4, "saved with seed 3, resumed with seed 4"},
		{"mixture weights", views, []float64{0.5, 0.5}, 40, 3, "mixture weights [0.75 0.25], resumed with [0.5 0.5]"},
		{"mixture epoch rows", views, []float64{0.75, 0.25}, 48, 3, "epoch_rows 40, resumed with 48"},
		{"mixture datasets", []*loch.Scan{twin.Scan(), d.Scan()}, []float64{0.75, 0.25}, 40, 3, "the saved state is for versions"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := mix
			st := mixSaved
			c.Seed, c.Resume = tt.seed, &st
			_, err := NewMix(ctx, tt.views, tt.weights, tt.epochRows, c)
			require.ErrorIs(t, err, loch.ErrInvalidArgument)
			require.ErrorContains(t, err, tt.msg)
		})
	}
}

// TestStateBeforeFirstBatch: a state taken before any batch pins the
// version and the setup, and resumes to the whole epoch.
func TestStateBeforeFirstBatch(t *testing.T) {
	d := testDataset(t, 50)
	cfg := Config{BatchSize: 8, Shuffle: order.ModeFull, Seed: 3}
	want := positions(t, d, cfg)
	l, err := New(ctx, d.Scan(), cfg)
	require.NoError(t, err)
	st := l.State()
	l.Close()
	require.Equal(t, d.Scan().Version(), st.Version)
	require.Equal(t, order.ModeFull, st.Mode)
	c := cfg
	c.Resume = &st
	require.Equal(t, want, positions(t, d, c))
}

// TestResumeRefusesAnotherQuery: the query that chose a run's rows is in
// its saved state; a resume under another query is refused, quoting both,
// unless a change is allowed, which resumes over the new query's rows.
func TestResumeRefusesAnotherQuery(t *testing.T) {
	d := testDataset(t, 300)
	ids := func(lo, hi int) []uint64 { return rowIDs(t, d, lo, hi) }
	base := Config{BatchSize: 10, Seed: 2, Rows: ids(0, 150), Query: "SELECT * FROM ds WHERE x < 150"}
	saved := stateAfter(t, d, base, 1)
	require.Contains(t, saved.Selection, `query "SELECT * FROM ds WHERE x < 150"`)

	c := base
	c.Rows, c.Query = ids(0, 100), "SELECT * FROM ds WHERE x < 100"
	st := saved
	c.Resume = &st
	_, err := New(ctx, d.Scan(), c)
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
	require.ErrorContains(t, err, `x < 150`)
	require.ErrorContains(t, err, `x < 100`)

	c.AllowVersionChange = true
	l, err := New(ctx, d.Scan(), c)
	require.NoError(t, err)
	n := 0
	for _, b := range drain(t, l) {
		n += len(b.Positions)
	}
	l.Close()
	require.Equal(t, 90, n, "the rest of the epoch over the new query's rows")
}

// TestStateAt: StateAt(k) is the state State gave after k batches, for
// every k up to the batches delivered, at the end of the epoch too; a k
// past them is refused.
func TestStateAt(t *testing.T) {
	d := testDataset(t, 95)
	l, err := New(ctx, d.Scan(), Config{BatchSize: 10, Shuffle: order.ModeFull, Seed: 3})
	require.NoError(t, err)
	defer l.Close()
	states := []State{l.State()}
	for {
		_, err := l.Next(ctx)
		if err != nil {
			require.ErrorIs(t, err, io.EOF)
			break
		}
		states = append(states, l.State())
	}
	require.Len(t, states, 11)
	for k, want := range states {
		got, err := l.StateAt(k)
		require.NoError(t, err)
		require.Equal(t, want, got, "after %d batches", k)
	}
	_, err = l.StateAt(len(states))
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
	require.ErrorContains(t, err, "11 batches: 10 delivered")
	_, err = l.StateAt(-1)
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
}

// rowIDs returns the ids of d's rows at positions lo to hi (exclusive).
func rowIDs(t *testing.T, d *loch.Dataset, lo, hi int) []uint64 {
	t.Helper()
	var out []uint64
	for p := lo; p < hi; p++ {
		id, err := d.RowID(ctx, int64(p))
		require.NoError(t, err)
		out = append(out, id)
	}
	return out
}

// stateAfter returns the state of a loader over d with cfg after k batches.
func stateAfter(t *testing.T, d *loch.Dataset, cfg Config, k int) State {
	t.Helper()
	l, err := New(ctx, d.Scan(), cfg)
	require.NoError(t, err)
	defer l.Close()
	for range k {
		_, err := l.Next(ctx)
		require.NoError(t, err)
	}
	return l.State()
}

// resumeWith returns base changed by edit, resuming from a copy of saved.
func resumeWith(base Config, saved State, edit func(*Config)) Config {
	c := base
	edit(&c)
	st := saved
	c.Resume = &st
	return c
}

// requireRefused checks that a loader over d with cfg is refused as an
// invalid argument whose message contains msg.
func requireRefused(t *testing.T, d *loch.Dataset, cfg Config, msg string) {
	t.Helper()
	_, err := New(ctx, d.Scan(), cfg)
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
	require.ErrorContains(t, err, msg)
}
