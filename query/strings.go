package query

/*
#include <stdint.h>
#include <string.h>

// From DuckDB's C API (duckdb.h), declared here rather than included:
// the static library that duckdb-go-bindings links defines it.
typedef struct _duckdb_vector { void *internal_ptr; } *duckdb_vector;
typedef uint64_t idx_t;
typedef struct {
	union {
		struct { uint32_t length; char prefix[4]; char *ptr; } pointer;
		struct { uint32_t length; char inlined[12]; } inlined;
	} value;
} duckdb_string_t;
void *duckdb_vector_get_data(duckdb_vector vector);
void duckdb_vector_assign_string_element_len(duckdb_vector vector, idx_t index, const char *str, idx_t str_len);
void duckdb_unsafe_vector_assign_string_element_len(duckdb_vector vector, idx_t index, const char *str, idx_t str_len);

// loch_assign_strings assigns n strings to rows of a VARCHAR (or JSON,
// or BLOB) vector in one call from Go: string k is data[starts[k]:ends[k]],
// for row rows[k]; total is the length of data (strings may share bytes).
//
// With valid set (the strings are known to be UTF-8), DuckDB copies all
// of data into the vector's string heap at once (as row rows[0]'s value,
// then rewritten), and each row's duckdb_string_t is written here, as
// duckdb.h lays it out: strings of at most 12 bytes inlined, zero-padded,
// longer ones pointing into that copy, which lives as long as the vector.
// That is one heap allocation per vector instead of one per string.
// Without valid, DuckDB checks and copies each string.
static void loch_assign_strings(void *vec, const char *data, int64_t total, const int64_t *starts, const int64_t *ends, const int32_t *rows, int64_t n, int valid) {
	if (!valid) {
		for (int64_t k = 0; k < n; k++) {
			duckdb_vector_assign_string_element_len((duckdb_vector)vec, (idx_t)rows[k], data + starts[k], (idx_t)(ends[k] - starts[k]));
		}
		return;
	}
	const char *heap = data;
	int big = 0;
	for (int64_t k = 0; k < n; k++) {
		if (ends[k] - starts[k] > 12) {
			big = 1;
			break;
		}
	}
	duckdb_string_t *strs = (duckdb_string_t *)duckdb_vector_get_data((duckdb_vector)vec);
	if (big) {
		// total > 12: DuckDB puts the copy in the heap, not inline.
		duckdb_unsafe_vector_assign_string_element_len((duckdb_vector)vec, (idx_t)rows[0], data, (idx_t)total);
		heap = strs[rows[0]].value.pointer.ptr;
	}
	for (int64_t k = 0; k < n; k++) {
		int64_t start = starts[k];
		uint32_t len = (uint32_t)(ends[k] - start);
		duckdb_string_t *d = &strs[rows[k]];
		if (len <= 12) {
			memset(d, 0, sizeof *d);
			d->value.inlined.length = len;
			memcpy(d->value.inlined.inlined, data + start, len);
		} else {
			d->value.pointer.length = len;
			memcpy(d->value.pointer.prefix, data + start, 4);
			d->value.pointer.ptr = (char *)heap + start;
		}
	}
}
*/
import "C"

import (
	"encoding/binary"
	"unicode/utf8"
	"unsafe"

	"github.com/duckdb/duckdb-go/v2/mapping"
)

// stringBatch gathers the strings of one column of a morsel, to assign
// them to their DuckDB vector with one C call (assign) instead of one per
// row, which cost more than all the rest of a scan of text and json.
type stringBatch struct {
	data         []byte
	starts, ends []int64
	rows         []int32
}

func (s *stringBatch) reset() {
	s.data, s.starts, s.ends, s.rows = s.data[:0], s.starts[:0], s.ends[:0], s.rows[:0]
}

// add gathers b as row's string and returns where the batch holds it.
func (s *stringBatch) add(row int, b []byte) (start, end int64) {
	start = int64(len(s.data))
	s.data = append(s.data, b...)
	s.addRef(row, start, int64(len(s.data)))
	return start, int64(len(s.data))
}

// addRef gathers as row's string the bytes [start, end) that the batch
// holds already (from add): rows of one value share one copy.
func (s *stringBatch) addRef(row int, start, end int64) {
	s.starts = append(s.starts, start)
	s.ends = append(s.ends, end)
	s.rows = append(s.rows, int32(row))
}

// valid reports whether every string is UTF-8: at once when all the bytes
// are ASCII, else string by string (a character may not straddle two).
func (s *stringBatch) valid() bool {
	if ascii(s.data) {
		return true
	}
	for k, e := range s.ends {
		if !utf8.Valid(s.data[s.starts[k]:e]) {
			return false
		}
	}
	return true
}

func ascii(b []byte) bool {
	i := 0
	for ; i+8 <= len(b); i += 8 {
		if binary.LittleEndian.Uint64(b[i:])&0x8080808080808080 != 0 {
			return false
		}
	}
	for ; i < len(b); i++ {
		if b[i] >= 0x80 {
			return false
		}
	}
	return true
}

// assign writes the gathered strings into vec. The Go memory it passes
// holds no pointers and is not kept by DuckDB.
func (s *stringBatch) assign(vec mapping.Vector) {
	if len(s.rows) == 0 {
		return
	}
	valid := 1
	if !s.valid() {
		valid = 0
	}
	var data *C.char
	if len(s.data) > 0 {
		data = (*C.char)(unsafe.Pointer(&s.data[0]))
	}
	C.loch_assign_strings(vec.Ptr, data, C.int64_t(len(s.data)), (*C.int64_t)(unsafe.Pointer(&s.starts[0])), (*C.int64_t)(unsafe.Pointer(&s.ends[0])),
		(*C.int32_t)(unsafe.Pointer(&s.rows[0])), C.int64_t(len(s.rows)), C.int(valid))
}
