package manifest

import (
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
)

// Selection is a saved selection object `selections/<hash>` (kind 'S',
// docs/format.md §2.7): a query's result over one version.
type Selection struct {
	Version string   `json:"version"`
	SQL     string   `json:"sql"`
	Seed    *uint64  `json:"seed,omitempty"`
	Columns []string `json:"columns,omitempty"`
	Rows    int      `json:"rows"`
	RowIDs  string   `json:"row_ids"`
	// Joined (format 1.4) is the list of joined columns, which package
	// loch decodes and checks (loch.JoinedColumn).
	Joined json.RawMessage `json:"joined,omitempty"`
}

// formatMinor is the minor version of a selection object: 2, or 4 when
// it has joined columns, so that one without is written as before.
func (s Selection) formatMinor() byte {
	if len(s.Joined) > 0 {
		return 4
	}
	return 2
}

// EncodeRowIDs encodes row ids, in order, as §2.7 specifies: zigzag
// varints of the differences between consecutive ids, in base64.
func EncodeRowIDs(ids []uint64) string {
	buf := make([]byte, 0, len(ids)*2)
	prev := uint64(0)
	for _, id := range ids {
		d := int64(id - prev)
		buf = binary.AppendUvarint(buf, uint64(d<<1)^uint64(d>>63))
		prev = id
	}
	return base64.StdEncoding.EncodeToString(buf)
}

// DecodeRowIDs decodes n row ids written by EncodeRowIDs. Bad base64, a
// bad varint, another count than n and an id given twice are ErrCorrupt.
func DecodeRowIDs(s string, n int) ([]uint64, error) {
	buf, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return nil, corruptf("selection row ids: %v", err)
	}
	if n < 0 || n > len(buf) {
		return nil, corruptf("selection of %d rows with %d bytes of row ids", n, len(buf))
	}
	out := make([]uint64, 0, n)
	seen := make(map[uint64]struct{}, n)
	prev := uint64(0)
	for len(buf) > 0 {
		z, k := binary.Uvarint(buf)
		if k <= 0 {
			return nil, corruptf("selection row id %d: bad varint", len(out))
		}
		buf = buf[k:]
		d := int64(z>>1) ^ -int64(z&1)
		id := prev + uint64(d)
		if _, dup := seen[id]; dup {
			return nil, corruptf("selection row id %d appears twice", id)
		}
		seen[id] = struct{}{}
		out = append(out, id)
		prev = id
	}
	if len(out) != n {
		return nil, corruptf("selection says %d rows and holds %d row ids", n, len(out))
	}
	return out, nil
}
