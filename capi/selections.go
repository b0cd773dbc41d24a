package main

/*
#include "loch.h"
*/
import "C"

import (
	"context"
	"encoding/json"
	"unsafe"

	"github.com/lochdata/loch"
)

// The saved-selection exports (ABI 5): a query's result saved in the
// dataset (loch.Dataset.SaveSelection and friends), and row ids to
// positions. The queries themselves run through loch_sql_select (sql.go),
// or in the loch command where this library was built without DuckDB.

// selectionJSON is a selection as it crosses the ABI.
type selectionJSON struct {
	Name    string   `json:"name,omitempty"`
	Version string   `json:"version"`
	SQL     string   `json:"sql"`
	Seed    *uint64  `json:"seed,omitempty"`
	Columns []string `json:"columns"`
	RowIDs  []uint64 `json:"row_ids"`
	// Joined are the selection's joined columns (ABI 7).
	Joined []loch.JoinedColumn `json:"joined,omitempty"`
}

// loch_dataset_save_selection stores the selection sel (JSON {"version",
// "sql", "seed", "columns", "row_ids", "joined"}) under name.
//
//export loch_dataset_save_selection
func loch_dataset_save_selection(h C.uintptr_t, name, sel *C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		var s selectionJSON
		if err := json.Unmarshal([]byte(goString(sel)), &s); err != nil {
			return invalidf("selection JSON: %v", err)
		}
		return ds.d.SaveSelection(context.Background(), goString(name),
			&loch.Selection{Version: s.Version, SQL: s.SQL, Seed: s.Seed, Columns: s.Columns, RowIDs: s.RowIDs, Joined: s.Joined})
	})
}

// loch_dataset_selection stores the saved selection name as JSON, row ids
// included.
//
//export loch_dataset_selection
func loch_dataset_selection(h C.uintptr_t, name *C.char, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		s, err := ds.d.Selection(context.Background(), goString(name))
		if err != nil {
			return err
		}
		ids := s.RowIDs
		if ids == nil {
			ids = []uint64{}
		}
		return setJSON(out, selectionJSON{Name: s.Name, Version: s.Version, SQL: s.SQL, Seed: s.Seed, Columns: s.Columns, RowIDs: ids, Joined: s.Joined})
	})
}

// loch_dataset_selections stores the saved selections as a JSON list of
// {"name", "key", "version", "sql", "seed", "rows"}, sorted by name.
//
//export loch_dataset_selections
func loch_dataset_selections(h C.uintptr_t, out **C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		list, err := ds.d.Selections(context.Background())
		if err != nil {
			return err
		}
		return setJSON(out, list)
	})
}

// loch_dataset_delete_selection removes the name of a saved selection.
//
//export loch_dataset_delete_selection
func loch_dataset_delete_selection(h C.uintptr_t, name *C.char, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		return ds.d.DeleteSelection(context.Background(), goString(name))
	})
}

// loch_dataset_positions writes to out[0:n] the positions in the handle's
// version of the n row ids at ids.
//
//export loch_dataset_positions
func loch_dataset_positions(h C.uintptr_t, ids *C.uint64_t, n C.int64_t, out *C.int64_t, errOut **C.char) (st C.int) {
	return withDataset(h, errOut, func(ds *dataset) error {
		if n < 0 {
			return invalidf("%d row ids", n)
		}
		if n == 0 {
			return nil
		}
		in := unsafe.Slice((*uint64)(unsafe.Pointer(ids)), int(n))
		sc := ds.d.Scan()
		if err := sc.Load(context.Background(), 16); err != nil {
			return err
		}
		pos, err := sc.Positions(in)
		if err != nil {
			return err
		}
		copy(unsafe.Slice((*int64)(unsafe.Pointer(out)), int(n)), pos)
		return nil
	})
}
