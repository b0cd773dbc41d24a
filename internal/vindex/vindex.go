// Package vindex is the byte format of vector indexes (docs/format.md
// §2.8, format 1.5): the descriptor `indexes/<commit id>/<uid>.<metric>`
// (an envelope of kind 'V') and the binary `vectors/<hash>` objects that
// hold an index's centroids and lists. It only encodes and decodes; the
// index itself is in package vector, and garbage collection and
// verification (package loch) read descriptors through it.
package vindex

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"math"
	"slices"
	"time"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/manifest"
)

// Kind is the envelope kind of a descriptor.
const Kind = manifest.KindIndex

// Minor is the format minor version that defined vector indexes.
const Minor = 5

// Metrics an index may be built for.
var Metrics = []string{"cosine", "l2", "dot"}

// Covered is one fragment reference whose live rows an index holds.
type Covered struct {
	Key     string  `json:"key"`
	IDStart *uint64 `json:"id_start,omitempty"`
	// Extensions (format 1.9) are the reference's extensions: an update in
	// place changes them. Chunks (format 1.9) is a digest of the chunks the
	// reference names for the index's column (loch.Scan.ColumnChunks): a
	// reference of the same key and id_start with other extensions is
	// still covered when its digest is the same (its other columns were
	// updated, not this one).
	Extensions []string `json:"extensions,omitempty"`
	Chunks     string   `json:"chunks,omitempty"`
}

// List is one list's entry in a descriptor: its object (none when empty)
// and its row count.
type List struct {
	Key  string `json:"key,omitempty"`
	Rows int    `json:"rows"`
}

// Header is what every index descriptor, vector or full-text, begins
// with: the version, column uid and metric its key names (CheckKey), the
// column's name and the index type. Embedded first, its fields come first
// in the descriptor's JSON.
type Header struct {
	Version string `json:"version"`
	Column  string `json:"column"`
	UID     int    `json:"uid"`
	Metric  string `json:"metric"`
	Type    string `json:"type"`
}

// Descriptor is the body of an `indexes/...` object.
type Descriptor struct {
	Header
	Dim       int       `json:"dim"`
	DType     string    `json:"dtype"`
	Rows      int64     `json:"rows"`
	Covered   []Covered `json:"covered"`
	Centroids string    `json:"centroids"`
	Lists     []List    `json:"lists"`
	// Codebook and M (format 1.12, type "ivf-pq" only): the product
	// quantizer's codebook object and its number of subquantizers.
	Codebook string    `json:"codebook,omitempty"`
	M        int       `json:"m,omitempty"`
	Base     string    `json:"base,omitempty"`
	Time     time.Time `json:"time"`
}

// VectorsKey is the key of a vectors object with the given content.
func VectorsKey(obj []byte) string { return keys.Make(keys.Vectors, manifest.Hash(obj)) }

// isVectorsKey reports whether key names a vectors object.
func isVectorsKey(key string) bool {
	k, _, ok := keys.Parse(key)
	return ok && k == keys.Vectors
}

// KnownMetric reports whether m is one of Metrics.
func KnownMetric(m string) bool { return slices.Contains(Metrics, m) }

func corruptf(format string, a ...any) error {
	return base.Markf(base.ErrCorrupt, format, a...)
}

// EncodeDescriptor returns the descriptor's envelope.
func EncodeDescriptor(d *Descriptor) ([]byte, error) {
	return manifest.Encode(manifest.KindIndex, d)
}

// DecodeDescriptor decodes the descriptor stored at key and checks it
// against the key and itself. Errors match ErrCorrupt or ErrNewerFormat
// and name the key.
func DecodeDescriptor(key string, obj []byte) (*Descriptor, error) {
	return DecodeAt(key, obj, "index", "vector index", KnownMetric, (*Descriptor).check)
}

// DecodeAt decodes the descriptor of type D stored at key, an index key
// (keys.ParseIndex) whose metric known accepts, and checks it with check
// against the version, column uid and metric the key names. what begins
// each error, which names the key; a key that is not one is "not a
// <kind> key" (ErrCorrupt). The vector and full-text descriptors share
// it.
func DecodeAt[D any](key string, obj []byte, what, kind string, known func(string) bool, check func(d *D, version string, uid int, metric string) error) (*D, error) {
	version, uid, metric, ok := keys.ParseIndex(key)
	if !ok || !known(metric) {
		return nil, fmt.Errorf("%s %s: %w", what, key, corruptf("not a %s key", kind))
	}
	d := new(D)
	if err := manifest.Decode(Kind, obj, d); err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, key, err)
	}
	if err := check(d, version, uid, metric); err != nil {
		return nil, fmt.Errorf("%s %s: %w", what, key, err)
	}
	return d, nil
}

// CheckKey checks that the descriptor's version, column uid and metric
// are the ones its key names (ErrCorrupt where they are not).
func (h *Header) CheckKey(version string, uid int, metric string) error {
	if h.Version != version || h.UID != uid || h.Metric != metric {
		return corruptf("descriptor names version %s, column uid %d, metric %q; its key names %s, %d, %q", h.Version, h.UID, h.Metric, version, uid, metric)
	}
	return nil
}

// maxDim bounds a vector's dimensions.
const maxDim = 1 << 16

func (d *Descriptor) check(version string, uid int, metric string) error {
	if err := d.CheckKey(version, uid, metric); err != nil {
		return err
	}
	switch {
	case d.Type != TypeFlat && d.Type != TypePQ:
		return corruptf("index type %q, want %q or %q", d.Type, TypeFlat, TypePQ)
	case d.Dim < 1 || d.Dim > maxDim:
		return corruptf("dim %d, want 1 to %d", d.Dim, maxDim)
	case d.Type == TypePQ && (d.M < 1 || d.M > d.Dim || d.Dim%d.M != 0):
		return corruptf("m %d: want a divisor of dim %d", d.M, d.Dim)
	case d.Type == TypePQ && !isVectorsKey(d.Codebook):
		return corruptf("codebook key %q is not a vectors object", d.Codebook)
	case d.Type == TypeFlat && (d.M != 0 || d.Codebook != ""):
		return corruptf("an ivf-flat index with m %d and codebook %q", d.M, d.Codebook)
	case !isVectorsKey(d.Centroids):
		return corruptf("centroids key %q is not a vectors object", d.Centroids)
	case len(d.Lists) == 0:
		return corruptf("no lists")
	}
	var sum int64
	for i, l := range d.Lists {
		if l.Rows < 0 || (l.Rows > 0) != (l.Key != "") || (l.Key != "" && !isVectorsKey(l.Key)) {
			return corruptf("list %d: key %q with %d rows", i, l.Key, l.Rows)
		}
		sum += int64(l.Rows)
	}
	if sum != d.Rows {
		return corruptf("lists hold %d rows, descriptor says %d", sum, d.Rows)
	}
	return nil
}

// Objects returns the keys of the vectors objects the descriptor names.
func (d *Descriptor) Objects() []string {
	out := []string{d.Centroids}
	if d.Codebook != "" {
		out = append(out, d.Codebook)
	}
	for _, l := range d.Lists {
		if l.Key != "" {
			out = append(out, l.Key)
		}
	}
	return out
}

// Index types.
const (
	TypeFlat = "ivf-flat"
	TypePQ   = "ivf-pq" // format 1.12
)

// Vectors object kinds.
const (
	KindCentroids byte = 'C'
	KindList      byte = 'L'
	KindCodebook  byte = 'B' // format 1.12: laid out as centroids
	KindPQList    byte = 'P' // format 1.12: see pq.go
)

// minorOf is the format minor version that defined a vectors kind.
func minorOf(kind byte) byte {
	if kind == KindCodebook || kind == KindPQList {
		return MinorPQ
	}
	return Minor
}

// Magic starts every vectors object.
const Magic = "LVEC"

const header = 16

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Vectors is the content of a vectors object: n vectors of Dim float32
// each, row-major, and for a list their row ids, ascending.
type Vectors struct {
	Dim  int
	IDs  []uint64 // lists only
	Data []float32
}

// Len is the number of vectors.
func (v *Vectors) Len() int {
	if v.Dim == 0 {
		return 0
	}
	return len(v.Data) / v.Dim
}

// EncodeVectors returns the object of kind KindCentroids or KindList.
// It panics when the sizes disagree (a broken invariant).
func EncodeVectors(kind byte, v *Vectors) []byte {
	n := v.Len()
	if v.Dim <= 0 || n*v.Dim != len(v.Data) || (kind == KindList && len(v.IDs) != n) {
		panic(fmt.Sprintf("vindex: %d ids, %d floats of dim %d", len(v.IDs), len(v.Data), v.Dim))
	}
	size := header + 4*n*v.Dim + 4
	if kind == KindList {
		size += 8 * n
	}
	out := make([]byte, header, size)
	copy(out, Magic)
	out[4], out[5], out[6], out[7] = manifest.Major, minorOf(kind), kind, 0
	binary.LittleEndian.PutUint32(out[8:], uint32(v.Dim))
	binary.LittleEndian.PutUint32(out[12:], uint32(n))
	if kind == KindList {
		for _, id := range v.IDs {
			out = binary.LittleEndian.AppendUint64(out, id)
		}
	}
	for _, f := range v.Data {
		out = binary.LittleEndian.AppendUint32(out, math.Float32bits(f))
	}
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out, castagnoli))
}

// DecodeVectors decodes the vectors object stored at key, of the given
// kind and dimension; want is the number of vectors the descriptor says it
// holds (-1: any). It allocates only after the object's size agrees with
// its header, and checks that obj is the object key names (its content
// hash). Errors match ErrCorrupt or ErrNewerFormat and name the key.
func DecodeVectors(key string, kind byte, dim, want int, obj []byte) (*Vectors, error) {
	v, err := decodeVectors(kind, dim, want, obj)
	if err == nil {
		err = manifest.CheckName(key, obj)
	}
	if err != nil {
		return nil, fmt.Errorf("vectors %s: %w", key, err)
	}
	return v, nil
}

func decodeVectors(kind byte, dim, want int, obj []byte) (*Vectors, error) {
	if len(obj) < header+4 {
		return nil, corruptf("%d bytes, shorter than a header", len(obj))
	}
	if string(obj[:4]) != Magic {
		return nil, corruptf("magic %q, want %q", obj[:4], Magic)
	}
	if obj[4] > manifest.Major {
		return nil, base.Markf(base.ErrNewerFormat, "vectors format %d.%d is newer than this loch supports (%d.%d); upgrade loch", obj[4], obj[5], manifest.Major, Minor)
	}
	if obj[6] != kind {
		return nil, corruptf("kind %q, want %q", obj[6], kind)
	}
	d := int(binary.LittleEndian.Uint32(obj[8:]))
	n := int64(binary.LittleEndian.Uint32(obj[12:]))
	if d < 1 || d > maxDim {
		return nil, corruptf("%d dimensions, want 1 to %d", d, maxDim)
	}
	if d != dim {
		return nil, corruptf("%d dimensions, want %d", d, dim)
	}
	if want >= 0 && n != int64(want) {
		return nil, corruptf("%d vectors, descriptor says %d", n, want)
	}
	per := int64(4 * d)
	if kind == KindList {
		per += 8
	}
	if size := header + n*per + 4; int64(len(obj)) != size {
		return nil, corruptf("object is %d bytes, header says %d (truncated?)", len(obj), size)
	}
	if got, want := crc32.Checksum(obj[:len(obj)-4], castagnoli), binary.LittleEndian.Uint32(obj[len(obj)-4:]); got != want {
		return nil, corruptf("checksum %08x, want %08x", got, want)
	}
	v := &Vectors{Dim: d}
	p := obj[header:]
	if kind == KindList {
		v.IDs = make([]uint64, n)
		for i := range v.IDs {
			v.IDs[i] = binary.LittleEndian.Uint64(p[8*i:])
			if i > 0 && v.IDs[i] <= v.IDs[i-1] {
				return nil, corruptf("row ids do not ascend at %d", i)
			}
		}
		p = p[8*n:]
	}
	v.Data = make([]float32, n*int64(d))
	for i := range v.Data {
		f := math.Float32frombits(binary.LittleEndian.Uint32(p[4*i:]))
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, corruptf("vector %d holds %v", i/d, f)
		}
		v.Data[i] = f
	}
	return v, nil
}
