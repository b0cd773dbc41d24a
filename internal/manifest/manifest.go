// Package manifest encodes and decodes loch's metadata objects: the dataset
// marker, root log entries, commits, manifests (snapshots), fragments,
// extensions, deletion vectors and catalog entries, each in a checksummed
// envelope (docs/format.md, sections 2 and 6).
package manifest

import (
	"bytes"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"hash/crc32"
	"strings"
	"time"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/zstdcodec"
	"github.com/lochdata/loch/schema"
	"github.com/zeebo/xxh3"
)

// Format version written by this package: Minor in a dataset's objects,
// Newest the newest minor version of anything it writes: an object
// (minorOf), a staged write's description (6, docs/format.md §7), a
// media chunk (7, §3.2), a dictionary chunk (8, §3.3) or a compaction
// commit (9, §8: no new object, the newest behaviour a reader may meet)
// or a fragment's chunk header checksums (10, §2.5 `hcrc`), a full-text
// index (11, §2.9), a quantized vector index (12, §2.8.1), a column's key
// and serial declarations (13, §2.4) or an encoded chunk and chunk
// statistics (14, §3.4).
const (
	Major  = 1
	Minor  = 1
	Newest = 14
)

// Magic starts every metadata object.
const Magic = "LOCH"

// Object kinds.
const (
	KindDataset   byte = 'D'
	KindRoot      byte = 'R'
	KindCommit    byte = 'C'
	KindManifest  byte = 'M'
	KindFragment  byte = 'F'
	KindExtension byte = 'E'
	KindDeletion  byte = 'X'
	KindSelection byte = 'S' // a saved selection (format 1.2, docs/format.md §2.7)
	KindCatalog   byte = 'T' // a catalog entry (format 1.3, docs/format.md §6)
	KindIndex     byte = 'V' // a vector index descriptor (format 1.5, docs/format.md §2.8)
)

// minorOf is the minor version written in an envelope of the given kind:
// the format version that defined what it holds. Saved selections are new
// in 1.2, catalog entries in 1.3; the dataset's objects are written as
// before. An object may name its own (Selection.formatMinor: 4 with
// joined columns).
func minorOf(kind byte) byte {
	switch kind {
	case KindSelection:
		return 2
	case KindCatalog:
		return 3
	case KindIndex:
		return 5
	}
	return Minor
}

// corruptf is the error for an object whose bytes fail their checks:
// loch's ErrCorrupt (internal/base), saying what was found and what was
// expected.
func corruptf(format string, a ...any) error {
	return base.Markf(base.ErrCorrupt, "corrupt metadata: "+format, a...)
}

const envHeader = 12

// maxBody bounds a decompressed body (4 GiB).
const maxBody = 1 << 32

// compressAbove is the body size above which bodies are zstd-compressed.
const compressAbove = 4 << 10

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode wraps v's JSON in an envelope of the given kind.
func Encode(kind byte, v any) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encode %c object: %w", kind, err)
	}
	enc := byte(0)
	if len(body) > compressAbove {
		body = zstdcodec.Encode(nil, body)
		enc = 1
	}
	out := make([]byte, envHeader, envHeader+len(body)+4)
	copy(out, Magic)
	minor := minorOf(kind)
	if m, ok := v.(interface{ formatMinor() byte }); ok {
		minor = m.formatMinor()
	}
	out[4], out[5], out[6], out[7] = kind, Major, minor, enc
	binary.LittleEndian.PutUint32(out[8:], uint32(len(body)))
	out = append(out, body...)
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli)), nil
}

// Decode checks an envelope of the given kind and unmarshals its body into v.
// Errors match loch's ErrCorrupt or ErrNewerFormat (internal/base); callers
// add the object's key.
func Decode(kind byte, obj []byte, v any) error {
	if len(obj) < envHeader+4 {
		return corruptf("%d bytes, shorter than an envelope", len(obj))
	}
	if string(obj[:4]) != Magic {
		return corruptf("magic %q, want %q", obj[:4], Magic)
	}
	if obj[5] > Major {
		return base.Markf(base.ErrNewerFormat, "metadata format %d.%d is newer than this loch supports (%d.%d); upgrade loch", obj[5], obj[6], Major, Minor)
	}
	n := binary.LittleEndian.Uint32(obj[8:])
	if uint64(len(obj)) != envHeader+uint64(n)+4 {
		return corruptf("object is %d bytes, envelope says %d (truncated?)", len(obj), envHeader+uint64(n)+4)
	}
	if got, want := crc32.Checksum(obj[:len(obj)-4], castagnoli), binary.LittleEndian.Uint32(obj[len(obj)-4:]); got != want {
		return corruptf("checksum %08x, want %08x", got, want)
	}
	if obj[4] != kind {
		return corruptf("object kind %q, want %q", obj[4], kind)
	}
	body := obj[envHeader : len(obj)-4]
	switch obj[7] {
	case 0:
	case 1:
		var err error
		if body, err = zstdcodec.Decode(nil, body, maxBody); err != nil {
			return corruptf("body: %v", err)
		}
	default:
		return corruptf("unknown body encoding %d", obj[7])
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(v); err != nil {
		return corruptf("body: %v", err)
	}
	return nil
}

// Hash returns the content address of an object: its 128-bit XXH3 hash as
// 32 hex digits (high 64 bits first).
func Hash(obj []byte) string {
	h := xxh3.Hash128(obj).Bytes()
	return hex.EncodeToString(h[:])
}

// CheckName verifies that obj, read from key, is the object key names:
// that the key's last element is obj's content hash. Readers of
// content-addressed objects call it, so that a sound object stored under
// another object's name (copied or renamed over it) is refused as corrupt
// instead of read as the object named.
func CheckName(key string, obj []byte) error {
	h := Hash(obj)
	if i := strings.LastIndexByte(key, '/'); key[i+1:] != h {
		return fmt.Errorf("content hash %s does not match the object's name: %w", h, base.ErrCorrupt)
	}
	return nil
}

// Dataset is the body of the dataset marker `_loch/dataset`.
type Dataset struct {
	Format  string    `json:"format"`
	ID      string    `json:"id"`
	Created time.Time `json:"created"`
}

// Root is the body of a log entry `log/<seq>`.
type Root struct {
	Seq       uint64            `json:"seq"`
	Time      time.Time         `json:"time"`
	Prev      uint64            `json:"prev,omitempty"`
	Refs      map[string]string `json:"refs"`
	NextRowID uint64            `json:"next_row_id"`
	// NextColumnUID is the dataset-wide column-uid counter (format 1.1):
	// uids are unique across branches, so merges never meet two columns
	// with one uid. Zero in entries written before 1.1.
	NextColumnUID int    `json:"next_column_uid,omitempty"`
	Op            string `json:"op,omitempty"`
	// PrevHash (format 1.10) is the content hash of the entry this one
	// follows (entry Seq-1), empty in the first entry and in entries
	// written before 1.10: verify checks the chain (docs/format.md §2.2).
	PrevHash string `json:"prev_hash,omitempty"`
}

// Commit is the body of `commits/<id>`.
type Commit struct {
	Parents  []string  `json:"parents"`
	Manifest string    `json:"manifest"`
	Message  string    `json:"message"`
	Author   string    `json:"author,omitempty"`
	Time     time.Time `json:"time"`
	Rows     int64     `json:"rows"`
	Branch   string    `json:"branch,omitempty"`
	// Staged lists the ids of the staged-write descriptions this commit
	// published (format 1.6, docs/format.md §7); informative.
	Staged []string `json:"staged,omitempty"`
	// Compaction is set on a commit written by compaction (format 1.9,
	// docs/format.md §8); informative.
	Compaction *Compaction `json:"compaction,omitempty"`
}

// Manifest is the body of `manifests/<hash>`: a complete snapshot.
//
// The schema holds the columns' definitions; Stats, beside it, their
// statistics in this snapshot, by column uid (absent: none yet). In JSON
// each column is one object, the definition's fields then the statistics'
// (manifestJSON).
type Manifest struct {
	Schema        schema.Schema
	Stats         map[int]*schema.Stats
	Rows          int64
	NextColumnUID int
	Fragments     []FragmentRef
}

// manifestJSON is the JSON form of a Manifest.
type manifestJSON struct {
	Schema        schema.Snapshot `json:"schema"`
	Rows          int64           `json:"rows"`
	NextColumnUID int             `json:"next_column_uid"`
	Fragments     []FragmentRef   `json:"fragments"`
}

// MarshalJSON writes each column's statistics into its object.
func (m Manifest) MarshalJSON() ([]byte, error) {
	return json.Marshal(manifestJSON{Schema: schema.Snapshot{Columns: m.Entries()}, Rows: m.Rows, NextColumnUID: m.NextColumnUID, Fragments: m.Fragments})
}

// UnmarshalJSON reads the statistics in each column's object into Stats.
func (m *Manifest) UnmarshalJSON(b []byte) error {
	var w manifestJSON
	if err := json.Unmarshal(b, &w); err != nil {
		return err
	}
	*m = Manifest{Rows: w.Rows, NextColumnUID: w.NextColumnUID, Fragments: w.Fragments}
	if w.Schema.Columns != nil {
		m.Schema.Columns = make([]schema.Column, len(w.Schema.Columns))
		m.Stats = make(map[int]*schema.Stats, len(w.Schema.Columns))
	}
	for i, e := range w.Schema.Columns {
		m.Schema.Columns[i] = e.Column
		m.Stats[e.UID] = &e.Stats
	}
	return nil
}

// Entries returns the columns with their statistics (copies), nil when the
// schema's columns are.
func (m *Manifest) Entries() []schema.Entry {
	if m.Schema.Columns == nil {
		return nil
	}
	out := make([]schema.Entry, len(m.Schema.Columns))
	for i, c := range m.Schema.Clone().Columns {
		out[i] = schema.Entry{Column: c, Stats: m.ColumnStats(c.UID)}
	}
	return out
}

// ColumnStats returns a copy of the statistics of the column of uid (zero
// when there are none).
func (m *Manifest) ColumnStats(uid int) schema.Stats {
	if s := m.Stats[uid]; s != nil {
		return s.Clone()
	}
	return schema.Stats{}
}

// StatsOf returns the statistics of the column of uid to change in place,
// adding zero ones when there are none.
func (m *Manifest) StatsOf(uid int) *schema.Stats {
	if s := m.Stats[uid]; s != nil {
		return s
	}
	if m.Stats == nil {
		m.Stats = map[int]*schema.Stats{}
	}
	s := &schema.Stats{}
	m.Stats[uid] = s
	return s
}

// CloneStats returns a deep copy of m's statistics, for a manifest built
// from m to change.
func (m *Manifest) CloneStats() map[int]*schema.Stats {
	out := make(map[int]*schema.Stats, len(m.Stats))
	for uid, s := range m.Stats {
		c := s.Clone()
		out[uid] = &c
	}
	return out
}

// FragmentRef is a manifest's entry for one fragment.
type FragmentRef struct {
	Key        string   `json:"key"`
	Rows       int64    `json:"rows"`
	IDStart    *uint64  `json:"id_start,omitempty"`
	Extensions []string `json:"extensions,omitempty"`
	Deletions  string   `json:"deletions,omitempty"`
	Deleted    int64    `json:"deleted,omitempty"`
}

// Live is the number of rows of the fragment that are not deleted.
func (f *FragmentRef) Live() int64 { return f.Rows - f.Deleted }

// Fragment is the body of `fragments/<hash>` and, with Rows and IDs unused,
// of `extensions/<hash>`.
type Fragment struct {
	Rows int64       `json:"rows,omitempty"`
	IDs  [][2]uint64 `json:"ids,omitempty"`
	// Nonce (format 1.1) makes every update fragment a distinct object:
	// the same rows rewritten with the same values in two commits must
	// not share a key, which names their location.
	Nonce   string                `json:"nonce,omitempty"`
	Columns map[string][]ChunkRef `json:"columns"`
}

// ChunkRef names one chunk of a column in a fragment.
type ChunkRef struct {
	Key    string `json:"key"`
	First  int64  `json:"first"`
	Rows   int64  `json:"rows"`
	Header int    `json:"header"`
	Size   int64  `json:"size"`
	Raw    int64  `json:"raw"`
	// HCRC (format 1.10) is the chunk header's own CRC-32C, which readers
	// compare with the header they read (docs/format.md §2.5); 0 in
	// fragments written before 1.10, which are not checked.
	HCRC  uint32 `json:"hcrc,omitempty"`
	Part  int    `json:"part,omitempty"`
	Parts int    `json:"parts,omitempty"`
	// Min and Max (format 1.14) bound the chunk's non-null values, for a
	// chunk of a scalar integer or float column (docs/format.md §3.4,
	// chunk statistics): nil when unknown (older writers, other dtypes, no
	// non-null value, a NaN or an infinity).
	Min *float64 `json:"min,omitempty"`
	Max *float64 `json:"max,omitempty"`
}

// Deletion is the body of `deletions/<hash>`.
type Deletion struct {
	Offsets []int64 `json:"offsets"`
}

// Catalog is the body of a catalog entry `_catalog/log/<seq>` (format 1.3):
// the whole map from table name to table.
type Catalog struct {
	Seq    uint64                  `json:"seq"`
	Time   time.Time               `json:"time"`
	Prev   uint64                  `json:"prev,omitempty"`
	Tables map[string]CatalogTable `json:"tables"`
	Op     string                  `json:"op,omitempty"`
	// PrevHash (format 1.10) is the content hash of the entry this one
	// follows, as Root's.
	PrevHash string `json:"prev_hash,omitempty"`
}

// CatalogTable is a catalog entry's record of one table.
type CatalogTable struct {
	// Dir is the table's directory below tables/: its dataset's root.
	Dir     string    `json:"dir"`
	Created time.Time `json:"created"`
}

// Compaction is what a compaction commit replaced (docs/format.md §8):
// Fragments fragments rewritten into Into fragments.
type Compaction struct {
	Fragments int `json:"fragments"`
	Into      int `json:"into"`
}
