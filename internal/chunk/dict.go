package chunk

import (
	"encoding/binary"
	"unsafe"

	"github.com/lochdata/loch/schema"
)

// Dictionary chunks (format 1.8, docs/format.md §3.3): a text or json
// chunk of few distinct values holds them once, in a dictionary in its
// header, and one index of 1 or 2 bytes per sample as its raw data.

// DictMinor is the chunk minor version of dictionary chunks.
const DictMinor = 8

// MaxDictEntries is the most entries a dictionary holds.
const MaxDictEntries = 1 << 16

// dictProbe is how many values the writer looks at before it gives up on
// a dictionary for a chunk whose values are all distinct so far.
const dictProbe = 1024

// dictWidth is the bytes of one index into a dictionary of k entries.
func dictWidth(k int) int {
	if k <= 256 {
		return 1
	}
	return 2
}

// dictDType reports whether a dtype's chunks may have a dictionary.
func dictDType(d schema.DType) bool { return d == schema.Text || d == schema.JSON }

// Dict reports whether the chunk has a dictionary (flag bit 5).
func (h *Header) Dict() bool { return h.Flags&FlagDict != 0 }

// DictLen is the number of dictionary entries, 0 without a dictionary.
func (h *Header) DictLen() int {
	if !h.Dict() {
		return 0
	}
	return len(h.dictOff) - 1
}

// Entry returns dictionary entry k, 0 <= k < DictLen: a sub-slice of the
// header's memory, valid as long as the Header is, read-only.
func (h *Header) Entry(k int) []byte {
	s, e := h.dictOff[k], h.dictOff[k+1]
	return h.dict[s:e:e]
}

// Index returns the dictionary index of sample i of a dictionary chunk,
// from raw, the raw data from offset rawOff on that holds sample i's
// index (all of it for a whole chunk, rawOff 0). A null sample's is 0.
// The indices were checked when the data was decoded (Decode,
// DecodeBlocks); an index out of range, which those refuse, gives -1.
func (h *Header) Index(raw []byte, rawOff int64, i int) int {
	p := int64(i)*int64(h.dictW) - rawOff
	var k int
	if h.dictW == 1 {
		k = int(raw[p])
	} else {
		k = int(binary.LittleEndian.Uint16(raw[p:]))
	}
	if k >= h.DictLen() {
		return -1
	}
	return k
}

// AppendIndices appends the dictionary indices of samples [lo, hi) of a
// dictionary chunk to dst, -1 for a null sample, from raw, the raw data
// from offset rawOff on that holds them. ok is false when an index is out
// of range (which Decode and DecodeBlocks refuse).
func (h *Header) AppendIndices(raw []byte, rawOff int64, lo, hi int, dst []int32) (idx []int32, ok bool) {
	k := int32(h.DictLen())
	s := int64(lo)*int64(h.dictW) - rawOff
	start := len(dst)
	if h.dictW == 1 {
		for _, x := range raw[s : s+int64(hi-lo)] {
			dst = append(dst, int32(x))
		}
	} else {
		for j := range hi - lo {
			dst = append(dst, int32(binary.LittleEndian.Uint16(raw[s+2*int64(j):])))
		}
	}
	for _, x := range dst[start:] {
		if x >= k {
			return dst[:start], false
		}
	}
	if h.Flags&FlagNulls != 0 {
		for j := lo; j < hi; j++ {
			if h.Null(j) {
				dst[start+j-lo] = -1
			}
		}
	}
	return dst, true
}

// Value returns sample i's bytes from raw, the raw data from offset rawOff
// on that holds sample i (for a whole chunk, all of it and rawOff 0): a
// sub-slice of raw, or for a dictionary chunk its dictionary entry, a
// sub-slice of the header's memory. Either is read-only.
func (h *Header) Value(raw []byte, rawOff int64, i int) []byte {
	if h.Dict() {
		if h.Null(i) {
			return raw[:0:0]
		}
		k := h.Index(raw, rawOff, i)
		if k < 0 {
			return nil
		}
		return h.Entry(k)
	}
	s, e := h.Range(i)
	s, e = s-rawOff, e-rawOff
	return raw[s:e:e]
}

// parseDict parses the dictionary section of a header and checks it.
func (h *Header) parseDict(r *reader) error {
	k := int(r.u32())
	if r.err != nil {
		return nil // reported by the caller
	}
	if k < 1 || k > MaxDictEntries {
		return corruptf("dictionary of %d entries, want 1 to %d", k, MaxDictEntries)
	}
	h.dictOff = r.u32s(k + 1)
	if r.err != nil {
		return nil
	}
	if h.dictOff[0] != 0 {
		return corruptf("dictionary offsets start at %d, want 0", h.dictOff[0])
	}
	for j := 1; j <= k; j++ {
		if h.dictOff[j] < h.dictOff[j-1] {
			return corruptf("dictionary offsets decrease at entry %d", j)
		}
	}
	if int64(h.dictOff[k]) > int64(len(r.b)-r.off) {
		return corruptf("dictionary of %d bytes, header has %d left", h.dictOff[k], len(r.b)-r.off)
	}
	h.dict = r.bytes(int(h.dictOff[k]))
	h.dictW = dictWidth(k)
	return nil
}

// checkDict verifies the parts of a dictionary chunk's header that do not
// depend on its data.
func (h *Header) checkDict() error {
	if !dictDType(h.DType) || h.SampleCompression != SampleNone || h.Flags&(FlagPartial|FlagFixedShape|FlagImplicitOffsets) != 0 || h.NDim != 1 {
		return corruptf("dictionary chunk of dtype %d, sample compression %d, %d dimensions and flags %#x; want text or json, none, 1 and no fixed shape, implicit offsets or partial sample",
			h.DType, h.SampleCompression, h.NDim, h.Flags)
	}
	if h.BlockSize%h.dictW != 0 {
		return corruptf("dictionary chunk of %d-byte indices with block size %d", h.dictW, h.BlockSize)
	}
	if want := int64(h.N) * int64(h.dictW); h.RawLen != want {
		return corruptf("%d samples of %d-byte indices but raw length %d", h.N, h.dictW, h.RawLen)
	}
	return nil
}

// checkIndices verifies the indices in raw, those of samples first on,
// whose bytes raw holds whole: each below the entry count. (With 1-byte
// indices it looks for the largest, a loop without branches, and names
// the offending sample only then.)
func (h *Header) checkIndices(raw []byte, first int) error {
	k := h.DictLen()
	if h.dictW == 1 {
		if k == 256 {
			return nil // every byte is an index
		}
		var m byte
		for _, x := range raw {
			m = max(m, x)
		}
		if int(m) < k {
			return nil
		}
	}
	w := h.dictW
	for j := range len(raw) / w {
		x := int(raw[j])
		if w == 2 {
			x = int(binary.LittleEndian.Uint16(raw[2*j:]))
		}
		if x >= k {
			return corruptf("sample %d has dictionary index %d, dictionary has %d entries", first+j, x, k)
		}
	}
	return nil
}

// dictionary returns the chunk's dictionary and indices when the writer's
// rule calls for one (docs/format.md §3.3): a text or json chunk of whole
// samples with no sample compression, at most MaxDictEntries distinct
// non-null values, and the dictionary section and indices at most half
// the bytes of the values. So that values of high cardinality cost the
// writer little, it gives up early: when the first dictProbe non-null
// values are all distinct, and at each checkpoint (4 * dictProbe values,
// then 4 times as many each time) when the dictionary, grown as the rate
// of new values since the checkpoint before foretells, would not fit.
// (BenchmarkDictWorstCase, against the same values as bytes: encoding
// 200,000 distinct values costs about 1.1 times as much, 80% distinct
// about the same, 30 values twice as much: hashing every value costs
// more than lz4 on such repetitive data, and the chunk is then a
// fraction of the size.)
func (b *Builder) dictionary(s *encScratch) (offs []uint32, entries, indices []byte, ok bool) {
	n := b.Len()
	if !dictDType(b.dtype) || b.sample != SampleNone || b.partial != nil || b.ndim != 1 || n == 0 || len(b.raw) == 0 {
		return nil, nil, nil, false
	}
	nonNull := n
	for _, null := range b.nulls {
		if null {
			nonNull--
		}
	}
	budget := len(b.raw) / 2
	// ids' keys alias b.raw (encScratch.put empties it); idx: 2-byte indices (packIndices).
	ids, idx, entries, offs := s.ids, s.idx[:0], s.entries[:0], append(s.offs[:0], 0)
	defer func() { s.idx = idx[:0] }()
	values := 0 // non-null values looked at
	checkpoint, prevValues, prevK := 4*dictProbe, dictProbe, 0
	next := 0 // sample i's offset, where lenOffsets leaves them to sum
	for i := range n {
		lo := next
		if b.lenOffsets {
			next += int(b.shapes[i])
		} else {
			lo, next = int(b.offsets[i]), int(b.offsets[i+1])
		}
		if b.isNull(i) {
			idx = append(idx, 0, 0)
			continue
		}
		v := b.raw[lo:next]
		key := unsafe.String(unsafe.SliceData(v), len(v))
		x, seen := ids[key]
		if !seen {
			x = uint32(len(offs) - 1)
			if int(x) == MaxDictEntries {
				return nil, nil, nil, false
			}
			ids[key] = x
			entries = append(entries, v...)
			offs = append(offs, uint32(len(entries)))
			if 4+4*len(offs)+len(entries) > budget {
				return nil, nil, nil, false
			}
		}
		idx = binary.LittleEndian.AppendUint16(idx, uint16(x))
		values++
		switch {
		case values == dictProbe:
			if len(ids) == dictProbe {
				return nil, nil, nil, false
			}
			prevK = len(ids)
		case values == checkpoint:
			k := len(ids)
			// Entries still to come: at the rate new values came, but no
			// more than k*rate/(1-rate), as many as a uniform draw from
			// k/(1-rate) values would still find.
			rate := float64(k-prevK) / float64(values-prevValues)
			more := rate * float64(nonNull-values)
			if rate < 1 {
				more = min(more, float64(k)*rate/(1-rate))
			}
			avg := float64(len(entries)) / float64(k)
			if float64(4+4*(k+1)+len(entries))+more*(avg+4)+float64(n*dictWidth(k+int(more))) > float64(budget) {
				return nil, nil, nil, false
			}
			checkpoint, prevValues, prevK = 4*checkpoint, values, k
		}
	}
	k := len(offs) - 1
	if k == 0 {
		return nil, nil, nil, false
	}
	w := dictWidth(k)
	if 4+4*len(offs)+len(entries)+n*w > budget {
		return nil, nil, nil, false
	}
	s.offs, s.entries = offs, entries
	return offs, entries, packIndices(idx, w), true
}

// packIndices packs dictionary indices, little-endian uint16s, w bytes
// wide (1 or 2) in place.
func packIndices(idx []byte, w int) []byte {
	if w == 2 {
		return idx
	}
	n := len(idx) / 2
	for i := range n { // i <= 2i: each index is read before it is overwritten
		idx[i] = idx[2*i]
	}
	return idx[:n]
}
