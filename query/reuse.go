package query

import (
	"context"
	"database/sql/driver"
	"fmt"
	"strings"

	"github.com/lochdata/loch"
)

// A long-lived engine (Python's in-process SQL, capi/sql.go) runs many
// statements on one DuckDB connection: SetDataset moves it to another
// version of its dataset and SetSeed changes the seed of random() between
// statements, without starting DuckDB again, and Raw hands a statement's
// rewritten SQL and DuckDB's connection to a caller that reads the result
// itself (as Arrow).

// SetDataset points the engine's own tables (ds, the view named for the
// URL, loch_scan of the URL without ref or as_of) at d, a handle of the
// same dataset, for the statements that follow; the scans, full-text and
// vector indexes the engine kept of the handle it had are dropped, so
// that they are read again at d's version. The engine does not close
// either handle.
func (e *Engine) SetDataset(d *loch.Dataset) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.d == nil || d == nil || d.URL() != e.d.URL() {
		return fmt.Errorf("query: an engine's dataset can only move to another version of itself: %w", loch.ErrInvalidArgument)
	}
	old := e.d
	for k := range e.opened {
		url, rest, _ := strings.Cut(k, "\x00")
		if (url == handleURL || url == old.URL()) && rest == "\x00" {
			delete(e.opened, k)
		}
	}
	delete(e.searchers, old)
	e.fts.mu.Lock()
	e.fts.searcher, e.fts.answers = nil, nil
	e.fts.mu.Unlock()
	e.d = d
	return nil
}

// Dataset returns the engine's own handle (nil when it has none).
func (e *Engine) Dataset() *loch.Dataset {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.d
}

// SetSeed makes random() of the statements that follow hash the row id
// with seed (nil: seed 0, as Options.Seed).
func (e *Engine) SetSeed(ctx context.Context, seed *uint64) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if seedOf(seed) == seedOf(e.opts.Seed) && (seed == nil) == (e.opts.Seed == nil) {
		return nil
	}
	if err := e.defineRandom(ctx, "CREATE OR REPLACE MACRO", seed); err != nil {
		return err
	}
	e.opts.Seed = seed
	return nil
}

func seedOf(p *uint64) uint64 {
	if p == nil {
		return 0
	}
	return *p
}

// defineRandom defines loch_random(rowid), random()'s replacement,
// uniform in [0, 1), with create ("CREATE MACRO" or "CREATE OR REPLACE
// MACRO").
func (e *Engine) defineRandom(ctx context.Context, create string, seed *uint64) error {
	macro := fmt.Sprintf("%s %s(r) AS (hash(r, %d::UBIGINT) >> 11)::DOUBLE / 9007199254740992.0", create, randomMacro, seedOf(seed))
	if _, err := e.conn.ExecContext(ctx, macro); err != nil {
		return fmt.Errorf("query: define %s: %w", randomMacro, err)
	}
	return nil
}

// Raw runs the read q as Write does, but hands its rewritten SQL and
// DuckDB's driver connection to fn, which runs it and reads the result
// (duckdb.NewArrowFromConn(conn).QueryContext(ctx, sql)) before it
// returns; the engine runs nothing else meanwhile. An error of fn is
// returned as a query's error (one line naming q, a scan's own error
// with its class).
func (e *Engine) Raw(ctx context.Context, q string, fn func(conn driver.Conn, sql string) error) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	rw, err := e.begin(ctx, q, false)
	if err != nil {
		return err
	}
	err = e.conn.Raw(func(c any) error {
		dc, ok := c.(driver.Conn)
		if !ok {
			return fmt.Errorf("query: DuckDB's connection is a %T", c)
		}
		return fn(dc, rw.sql)
	})
	if err != nil {
		return e.queryError(q, err)
	}
	return nil
}
