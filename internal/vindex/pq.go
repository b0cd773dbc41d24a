package vindex

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/decodelimit"
	"github.com/lochdata/loch/internal/manifest"
)

// MinorPQ is the format minor version that defined ivf-pq indexes
// (docs/format.md §2.8.1).
const MinorPQ = 12

// pqPrefix is the size of a PQ list's header and m field.
const pqPrefix = header + 4

// PQList is the content of a list object of kind KindPQList: n rows, each
// with its id (ascending), its m-byte code and its full vector.
type PQList struct {
	Dim, M int
	IDs    []uint64
	Codes  []byte    // n x M
	Data   []float32 // n x Dim
}

// PQHeadSize is the size of the head of a PQ list of n rows: the header,
// m, the ids, the codes and the head's checksum.
func PQHeadSize(m, n int) int64 { return pqPrefix + int64(n)*int64(8+m) + 4 }

// PQRowSize is the size of one row's vector and checksum.
func PQRowSize(dim int) int64 { return int64(4*dim) + 4 }

// PQRowOffset is the offset of row i's vector in a PQ list of n rows.
func PQRowOffset(dim, m, n, i int) int64 { return PQHeadSize(m, n) + int64(i)*PQRowSize(dim) }

// PQListSize is the size of a whole PQ list object.
func PQListSize(dim, m, n int) int64 { return PQRowOffset(dim, m, n, n) }

// EncodePQList returns the object of a PQ list. It panics when the sizes
// disagree (a broken invariant).
func EncodePQList(l *PQList) []byte {
	n := len(l.IDs)
	if l.Dim <= 0 || l.M <= 0 || len(l.Codes) != n*l.M || len(l.Data) != n*l.Dim {
		panic(fmt.Sprintf("vindex: PQ list of %d ids, %d code bytes, %d floats, dim %d, m %d", n, len(l.Codes), len(l.Data), l.Dim, l.M))
	}
	out := make([]byte, pqPrefix, PQListSize(l.Dim, l.M, n))
	copy(out, Magic)
	out[4], out[5], out[6], out[7] = manifest.Major, MinorPQ, KindPQList, 0
	binary.LittleEndian.PutUint32(out[8:], uint32(l.Dim))
	binary.LittleEndian.PutUint32(out[12:], uint32(n))
	binary.LittleEndian.PutUint32(out[16:], uint32(l.M))
	for _, id := range l.IDs {
		out = binary.LittleEndian.AppendUint64(out, id)
	}
	out = append(out, l.Codes...)
	out = binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
	for i, id := range l.IDs {
		start := len(out)
		out = binary.LittleEndian.AppendUint64(out, id)
		for _, f := range l.Data[i*l.Dim : (i+1)*l.Dim] {
			out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
		}
		sum := crc32.Checksum(out[start:], castagnoli)
		// The id was only hashed: the row holds the vector and its sum.
		copy(out[start:], out[start+8:])
		out = binary.LittleEndian.AppendUint32(out[:len(out)-8], sum)
	}
	return out
}

// PQHead is a decoded head: ids and codes (aliasing the bytes read).
type PQHead struct {
	IDs   []uint64
	Codes []byte
}

// DecodePQHead decodes the head of the PQ list object at key (the first
// PQHeadSize(m, n) bytes, read by range), for the descriptor's dim, m and
// row count n: magic, version, kind, sizes, checksum and ascending ids.
// Errors match ErrCorrupt or ErrNewerFormat and name the key. Codes alias
// head.
func DecodePQHead(key string, dim, m, n int, head []byte) (*PQHead, error) {
	h, err := decodePQHead(dim, m, n, head)
	if err != nil {
		return nil, fmt.Errorf("vectors %s: %w", key, err)
	}
	return h, nil
}

func decodePQHead(dim, m, n int, head []byte) (*PQHead, error) {
	if err := decodelimit.Check("PQ list", decodelimit.Size(8+m, n)); err != nil {
		return nil, err
	}
	if int64(len(head)) != PQHeadSize(m, n) || len(head) < pqPrefix+4 {
		return nil, corruptf("head of %d bytes, want %d for %d rows of m %d", len(head), PQHeadSize(m, n), n, m)
	}
	if string(head[:4]) != Magic {
		return nil, corruptf("magic %q, want %q", head[:4], Magic)
	}
	if head[4] > manifest.Major {
		return nil, base.Markf(base.ErrNewerFormat, "vectors format %d.%d is newer than this loch supports (%d.%d); upgrade loch", head[4], head[5], manifest.Major, MinorPQ)
	}
	gd, gn, gm := binary.LittleEndian.Uint32(head[8:]), binary.LittleEndian.Uint32(head[12:]), binary.LittleEndian.Uint32(head[16:])
	switch {
	case head[6] != KindPQList:
		return nil, corruptf("kind %q, want %q", head[6], KindPQList)
	case int64(gd) != int64(dim) || int64(gn) != int64(n) || int64(gm) != int64(m):
		return nil, corruptf("dim %d, %d rows, m %d; the descriptor says %d, %d, %d", gd, gn, gm, dim, n, m)
	}
	end := len(head) - 4
	if got, want := crc32.Checksum(head[:end], castagnoli), binary.LittleEndian.Uint32(head[end:]); got != want {
		return nil, corruptf("head checksum %08x, want %08x", got, want)
	}
	h := &PQHead{IDs: make([]uint64, n), Codes: head[pqPrefix+8*n : end]}
	for i := range h.IDs {
		h.IDs[i] = binary.LittleEndian.Uint64(head[pqPrefix+8*i:])
		if i > 0 && h.IDs[i] <= h.IDs[i-1] {
			return nil, corruptf("row ids do not ascend at %d", i)
		}
	}
	return h, nil
}

// DecodePQRow decodes one row's vector (PQRowSize(dim) bytes read by
// range) into dst (len dim), checking its checksum against the row's id
// and that no float is NaN or infinite. Errors match ErrCorrupt and name
// the key.
func DecodePQRow(key string, id uint64, row []byte, dst []float32) error {
	if err := decodePQRow(id, row, dst); err != nil {
		return fmt.Errorf("vectors %s, row %d: %w", key, id, err)
	}
	return nil
}

func decodePQRow(id uint64, row []byte, dst []float32) error {
	if int64(len(row)) != PQRowSize(len(dst)) {
		return corruptf("%d bytes, want %d", len(row), PQRowSize(len(dst)))
	}
	var idb [8]byte
	binary.LittleEndian.PutUint64(idb[:], id)
	end := len(row) - 4
	sum := crc32.Update(crc32.Checksum(idb[:], castagnoli), castagnoli, row[:end])
	if want := binary.LittleEndian.Uint32(row[end:]); sum != want {
		return corruptf("checksum %08x, want %08x", sum, want)
	}
	for i := range dst {
		f := math.Float32frombits(binary.LittleEndian.Uint32(row[4*i:]))
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return corruptf("holds %v", f)
		}
		dst[i] = f
	}
	return nil
}

// DecodePQList decodes a whole PQ list object (as verify and an update
// read it) and checks that obj is the object key names. Errors match
// ErrCorrupt or ErrNewerFormat and name the key.
func DecodePQList(key string, dim, m, n int, obj []byte) (*PQList, error) {
	l, err := decodePQList(dim, m, n, obj)
	if err == nil {
		err = manifest.CheckName(key, obj)
	}
	if err != nil {
		return nil, fmt.Errorf("vectors %s: %w", key, err)
	}
	return l, nil
}

func decodePQList(dim, m, n int, obj []byte) (*PQList, error) {
	if dim < 1 || dim > maxDim || m < 1 || m > dim || n < 0 {
		return nil, corruptf("dim %d, m %d, %d rows", dim, m, n)
	}
	if err := decodelimit.Check("PQ list", decodelimit.Size(8+m+4*dim, n)); err != nil {
		return nil, err
	}
	if int64(len(obj)) != PQListSize(dim, m, n) {
		return nil, corruptf("object is %d bytes, want %d for %d rows (truncated?)", len(obj), PQListSize(dim, m, n), n)
	}
	hs := PQHeadSize(m, n)
	h, err := decodePQHead(dim, m, n, obj[:hs])
	if err != nil {
		return nil, err
	}
	l := &PQList{Dim: dim, M: m, IDs: h.IDs, Codes: append([]byte(nil), h.Codes...), Data: make([]float32, n*dim)}
	rs := PQRowSize(dim)
	for i, id := range h.IDs {
		off := hs + int64(i)*rs
		if err := decodePQRow(id, obj[off:off+rs], l.Data[i*dim:(i+1)*dim]); err != nil {
			return nil, fmt.Errorf("row %d: %w", id, err)
		}
	}
	return l, nil
}
