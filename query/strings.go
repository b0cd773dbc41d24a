package query

/*
#include <stdint.h>

// From DuckDB's C API (duckdb.h), declared here rather than included:
// the static library that duckdb-go-bindings links defines it.
typedef struct _duckdb_vector { void *internal_ptr; } *duckdb_vector;
typedef uint64_t idx_t;
void duckdb_vector_assign_string_element_len(duckdb_vector vector, idx_t index, const char *str, idx_t str_len);
void duckdb_unsafe_vector_assign_string_element_len(duckdb_vector vector, idx_t index, const char *str, idx_t str_len);

// loch_assign_strings assigns n strings to rows of a VARCHAR (or JSON,
// or BLOB) vector in one call from Go: string k is data[ends[k-1]:ends[k]]
// (from 0 for k = 0), for row rows[k]. DuckDB copies each.
// With valid set, the strings are known to be UTF-8 and DuckDB does not
// check them again.
static void loch_assign_strings(void *vec, const char *data, const int64_t *ends, const int32_t *rows, int64_t n, int valid) {
	int64_t start = 0;
	for (int64_t k = 0; k < n; k++) {
		if (valid) {
			duckdb_unsafe_vector_assign_string_element_len((duckdb_vector)vec, (idx_t)rows[k], data + start, (idx_t)(ends[k] - start));
		} else {
			duckdb_vector_assign_string_element_len((duckdb_vector)vec, (idx_t)rows[k], data + start, (idx_t)(ends[k] - start));
		}
		start = ends[k];
	}
}
*/
import "C"

import (
	"unicode/utf8"
	"unsafe"

	"github.com/duckdb/duckdb-go/v2/mapping"
)

// stringBatch gathers the strings of one column of a morsel, to assign
// them to their DuckDB vector with one C call (assign) instead of one per
// row, which cost more than all the rest of a scan of text and json.
type stringBatch struct {
	data    []byte
	ends    []int64
	rows    []int32
	invalid bool // some string is not UTF-8: DuckDB checks them all
}

func (s *stringBatch) reset() {
	s.data, s.ends, s.rows, s.invalid = s.data[:0], s.ends[:0], s.rows[:0], false
}

func (s *stringBatch) add(row int, b []byte) {
	if !s.invalid && !utf8.Valid(b) {
		s.invalid = true
	}
	s.data = append(s.data, b...)
	s.ends = append(s.ends, int64(len(s.data)))
	s.rows = append(s.rows, int32(row))
}

// assign writes the gathered strings into vec. The Go memory it passes
// holds no pointers and is not kept by DuckDB.
func (s *stringBatch) assign(vec mapping.Vector) {
	if len(s.rows) == 0 {
		return
	}
	valid := 1
	if s.invalid {
		valid = 0
	}
	var data *C.char
	if len(s.data) > 0 {
		data = (*C.char)(unsafe.Pointer(&s.data[0]))
	}
	C.loch_assign_strings(vec.Ptr, data, (*C.int64_t)(unsafe.Pointer(&s.ends[0])), (*C.int32_t)(unsafe.Pointer(&s.rows[0])), C.int64_t(len(s.rows)), C.int(valid))
}
