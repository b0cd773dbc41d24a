package ftsindex

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"slices"
	"strings"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/decodelimit"
	"github.com/lochdata/loch/internal/manifest"
)

// Segment object layout (docs/format.md §2.9).
const (
	Magic      = "LFTS"
	KindSeg    = 'S'
	header     = 8
	footerLen  = 64
	FooterLen  = footerLen
	BlockTerms = 128 // terms per dictionary block
	MaxTerm    = 255 // bytes in a term
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Footer is a segment's footer: its sections' offsets and counts.
type Footer struct {
	Size                int64 // the object's size (not stored)
	P, D, I, R          int64 // positions, dictionary, block index, docs
	Tokens              uint64
	Docs, Terms, Blocks uint32
}

// BlockRef is one dictionary block: its first term and its byte range.
type BlockRef struct {
	First    string
	Off, Len int64 // absolute
}

// Run is a run of consecutive row ids analysed into a segment.
type Run struct{ Start, Len uint64 }

// TermInfo is a term's dictionary entry; offsets are absolute.
type TermInfo struct {
	Term             string
	DF               int
	PostOff, PostLen int64
	PosOff, PosLen   int64
}

// Posting is one row holding a term.
type Posting struct {
	ID   uint64
	TF   uint32
	Norm uint8
}

// checkCRC checks that b ends with the CRC-32C of the rest and returns
// the rest.
func checkCRC(what string, b []byte) ([]byte, error) {
	if len(b) < 4 {
		return nil, corruptf("%s: %d bytes, shorter than its checksum", what, len(b))
	}
	body := b[:len(b)-4]
	if got, want := crc32.Checksum(body, castagnoli), binary.LittleEndian.Uint32(b[len(b)-4:]); got != want {
		return nil, corruptf("%s: checksum %08x, want %08x", what, got, want)
	}
	return body, nil
}

func appendCRC(out []byte, start int) []byte {
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(out[start:], castagnoli))
}

// reader reads varints, remembering the first error.
type reader struct {
	b   []byte
	err error
}

func (r *reader) uv(what string) uint64 {
	if r.err != nil {
		return 0
	}
	v, n := binary.Uvarint(r.b)
	if n <= 0 {
		r.err = corruptf("%s: bad varint", what)
		return 0
	}
	r.b = r.b[n:]
	return v
}

// small reads a varint that must be at most limit.
func (r *reader) small(what string, limit uint64) int {
	v := r.uv(what)
	if r.err == nil && v > limit {
		r.err = corruptf("%s is %d, at most %d", what, v, limit)
	}
	return int(v)
}

func (r *reader) bytes(what string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if n > len(r.b) {
		r.err = corruptf("%s: %d bytes, %d left", what, n, len(r.b))
		return nil
	}
	out := r.b[:n]
	r.b = r.b[n:]
	return out
}

func (r *reader) done(what string) error {
	if r.err == nil && len(r.b) != 0 {
		r.err = corruptf("%s: %d bytes left over", what, len(r.b))
	}
	return r.err
}

// ParseFooter parses the last FooterLen bytes of a segment of size bytes.
func ParseFooter(size int64, b []byte) (Footer, error) {
	var f Footer
	if len(b) != footerLen || size < header+footerLen {
		return f, corruptf("footer: %d bytes of a %d-byte segment", len(b), size)
	}
	body, err := checkCRC("footer", b)
	if err != nil {
		return f, err
	}
	if string(body[52:56]) != Magic || body[58] != KindSeg {
		return f, corruptf("footer magic %q kind %q, want %q %q", body[52:56], body[58], Magic, KindSeg)
	}
	if body[56] > manifest.Major || (body[56] == manifest.Major && body[57] > Minor) {
		return f, base.Markf(base.ErrNewerFormat, "segment format %d.%d is newer than this loch supports (%d.%d); upgrade loch", body[56], body[57], manifest.Major, Minor)
	}
	le := binary.LittleEndian
	f = Footer{Size: size, P: int64(le.Uint64(body[0:])), D: int64(le.Uint64(body[8:])), I: int64(le.Uint64(body[16:])),
		R: int64(le.Uint64(body[24:])), Tokens: le.Uint64(body[32:]), Docs: le.Uint32(body[40:]), Terms: le.Uint32(body[44:]), Blocks: le.Uint32(body[48:])}
	if !(header <= f.P && f.P <= f.D && f.D <= f.I && f.I <= f.R && f.R <= size-footerLen) {
		return f, corruptf("sections at %d, %d, %d, %d of a %d-byte segment", f.P, f.D, f.I, f.R, size)
	}
	if want := (f.Terms + BlockTerms - 1) / BlockTerms; f.Blocks != want {
		return f, corruptf("%d blocks for %d terms, want %d", f.Blocks, f.Terms, want)
	}
	return f, nil
}

// ParseBlockIndex parses the block index, the bytes [I, R).
func ParseBlockIndex(f Footer, b []byte) ([]BlockRef, error) {
	body, err := checkCRC("block index", b)
	if err != nil {
		return nil, err
	}
	r := &reader{b: body}
	n := r.small("blocks", uint64(len(body)/3))
	if r.err == nil && n != int(f.Blocks) {
		return nil, corruptf("block index holds %d blocks, footer says %d", n, f.Blocks)
	}
	if err := decodelimit.Check("full-text block index", int64(n)*40); err != nil {
		return nil, err
	}
	out := make([]BlockRef, 0, n)
	end := f.D
	for i := range n {
		first := string(r.bytes("first term", r.small("term length", MaxTerm)))
		off, ln := r.uv("block offset"), r.uv("block length")
		if r.err != nil {
			return nil, r.err
		}
		if int64(off) != end-f.D || ln < 5 || ln > uint64(f.I-end) {
			return nil, corruptf("block %d at %d, %d bytes; want at %d, within %d", i, off, ln, end-f.D, f.I-end)
		}
		if i > 0 && first <= out[i-1].First {
			return nil, corruptf("block %d's first term does not ascend", i)
		}
		out = append(out, BlockRef{First: first, Off: end, Len: int64(ln)})
		end += int64(ln)
	}
	if err := r.done("block index"); err != nil {
		return nil, err
	}
	if end != f.I {
		return nil, corruptf("blocks end at %d, the block index starts at %d", end, f.I)
	}
	return out, nil
}

// ParseDocs parses the docs section, the bytes [R, size-64).
func ParseDocs(f Footer, b []byte) ([]Run, error) {
	body, err := checkCRC("docs", b)
	if err != nil {
		return nil, err
	}
	r := &reader{b: body}
	n := r.small("runs", uint64(len(body)/2))
	if err := decodelimit.Check("full-text docs", int64(n)*16); err != nil {
		return nil, err
	}
	out := make([]Run, 0, n)
	var end, sum uint64
	for i := range n {
		gap, ln := r.uv("run start"), r.uv("run length")
		if r.err != nil {
			return nil, r.err
		}
		start := end + gap
		if ln == 0 || start < end || start+ln < start || (i > 0 && gap == 0) || sum+ln < sum {
			return nil, corruptf("run %d: start %d, length %d after %d", i, start, ln, end)
		}
		out = append(out, Run{Start: start, Len: ln})
		end, sum = start+ln, sum+ln
	}
	if err := r.done("docs"); err != nil {
		return nil, err
	}
	if sum != uint64(f.Docs) {
		return nil, corruptf("runs hold %d docs, footer says %d", sum, f.Docs)
	}
	return out, nil
}

// ParseBlock parses a dictionary block whose block index entry is ref.
func ParseBlock(f Footer, ref BlockRef, b []byte) ([]TermInfo, error) {
	body, err := checkCRC("dictionary block", b)
	if err != nil {
		return nil, err
	}
	r := &reader{b: body}
	m := r.small("terms in block", BlockTerms)
	if r.err == nil && m == 0 {
		return nil, corruptf("empty dictionary block")
	}
	out := make([]TermInfo, 0, m)
	prev := ""
	for i := range m {
		shared := r.small("shared prefix", uint64(len(prev)))
		suffix := r.bytes("term", r.small("suffix length", MaxTerm))
		t := TermInfo{DF: r.small("df", uint64(f.P)),
			PostOff: header + int64(r.small("postings offset", uint64(f.P))), PostLen: int64(r.small("postings length", uint64(f.P))),
			PosOff: f.P + int64(r.small("positions offset", uint64(f.D))), PosLen: int64(r.small("positions length", uint64(f.D)))}
		if r.err != nil {
			return nil, r.err
		}
		t.Term = prev[:shared] + string(suffix)
		switch {
		case len(t.Term) > MaxTerm || len(t.Term) == 0:
			return nil, corruptf("term of %d bytes", len(t.Term))
		case i == 0 && t.Term != ref.First, i > 0 && t.Term <= prev:
			return nil, corruptf("term %d of block %q does not follow %q", i, ref.First, prev)
		case t.DF < 1 || int64(t.DF)*3+4 > t.PostLen || t.PostOff+t.PostLen > f.P:
			return nil, corruptf("term %q: df %d, postings [%d, +%d) beyond %d", t.Term, t.DF, t.PostOff, t.PostLen, f.P)
		case t.PosLen < 4 || t.PosOff+t.PosLen > f.D:
			return nil, corruptf("term %q: positions [%d, +%d) beyond %d", t.Term, t.PosOff, t.PosLen, f.D)
		}
		out = append(out, t)
		prev = t.Term
	}
	return out, r.done("dictionary block")
}

// FindInBlock looks term up in a dictionary block (as ParseBlock would
// parse it, with its checks) without making a string of every term.
func FindInBlock(f Footer, ref BlockRef, b []byte, term string) (TermInfo, bool, error) {
	body, err := checkCRC("dictionary block", b)
	if err != nil {
		return TermInfo{}, false, err
	}
	r := &reader{b: body}
	m := r.small("terms in block", BlockTerms)
	if r.err == nil && m == 0 {
		return TermInfo{}, false, corruptf("empty dictionary block")
	}
	var cur, prev []byte
	for i := range m {
		shared := r.small("shared prefix", uint64(len(cur)))
		suffix := r.bytes("term", r.small("suffix length", MaxTerm))
		prev, cur = cur, append(append(prev[:0], cur[:min(shared, len(cur))]...), suffix...)
		df := r.small("df", uint64(f.P))
		po, pl := r.small("postings offset", uint64(f.P)), r.small("postings length", uint64(f.P))
		qo, ql := r.small("positions offset", uint64(f.D)), r.small("positions length", uint64(f.D))
		if r.err != nil {
			return TermInfo{}, false, r.err
		}
		if len(cur) == 0 || len(cur) > MaxTerm || (i == 0 && string(cur) != ref.First) || (i > 0 && string(cur) <= string(prev)) {
			return TermInfo{}, false, corruptf("term %d of block %q does not follow %q", i, ref.First, prev)
		}
		if c := strings.Compare(string(cur), term); c >= 0 {
			if c > 0 {
				return TermInfo{}, false, nil
			}
			t := TermInfo{Term: term, DF: df, PostOff: header + int64(po), PostLen: int64(pl), PosOff: f.P + int64(qo), PosLen: int64(ql)}
			if t.DF < 1 || int64(t.DF)*3+4 > t.PostLen || t.PostOff+t.PostLen > f.P || t.PosLen < 4 || t.PosOff+t.PosLen > f.D {
				return TermInfo{}, false, corruptf("term %q: df %d, postings [%d, +%d), positions [%d, +%d)", t.Term, t.DF, t.PostOff, t.PostLen, t.PosOff, t.PosLen)
			}
			return t, true, nil
		}
	}
	return TermInfo{}, false, nil
}

// Find returns the index of the block that would hold term, -1 if none.
func Find(blocks []BlockRef, term string) int {
	i, found := slices.BinarySearchFunc(blocks, term, func(b BlockRef, t string) int { return strings.Compare(b.First, t) })
	if found {
		return i
	}
	return i - 1
}

// ParsePostings parses a term's postings.
func ParsePostings(t TermInfo, b []byte) ([]Posting, error) {
	it, err := NewPostingIter(t, b)
	if err != nil {
		return nil, err
	}
	// it is a value: its loop keeps it off the heap.
	if err := decodelimit.Check("full-text postings", int64(t.DF)*16); err != nil {
		return nil, err
	}
	out := make([]Posting, 0, t.DF)
	for it.Next() {
		out = append(out, it.Posting)
	}
	return out, it.Err()
}

// PostingIter reads a term's postings one at a time, without allocating.
type PostingIter struct {
	Posting
	term string
	b    []byte
	left int
	i    int
	err  error
}

// NewPostingIter checks a term's postings (their checksum, and that the
// df declared fits) and returns an iterator over them.
func NewPostingIter(t TermInfo, b []byte) (PostingIter, error) {
	body, err := checkCRC("postings of "+t.Term, b)
	if err != nil {
		return PostingIter{}, err
	}
	if int64(t.DF)*3 > int64(len(body)) {
		return PostingIter{}, corruptf("postings of %q: df %d in %d bytes", t.Term, t.DF, len(body))
	}
	return PostingIter{term: t.Term, b: body, left: t.DF}, nil
}

// Next reads the next posting into it.Posting; false at the end or on an
// error (Err).
func (it *PostingIter) Next() bool {
	if it.left == 0 {
		if it.err == nil && len(it.b) != 0 {
			it.err = corruptf("postings of %q: %d bytes left over", it.term, len(it.b))
		}
		return false
	}
	b := it.b
	// Row-id gaps and tfs are mostly one byte: read those inline.
	if len(b) >= 3 && b[0] < 0x80 && b[1] < 0x80 && b[1] > 0 && (b[0] > 0 || it.i == 0) {
		it.ID += uint64(b[0])
		it.TF, it.Norm = uint32(b[1]), b[2]
		it.b = b[3:]
		it.left--
		it.i++
		return true
	}
	d, n := binary.Uvarint(b)
	if n <= 0 {
		it.err = corruptf("postings of %q: posting %d: bad row id", it.term, it.i)
		return false
	}
	tf, m := binary.Uvarint(b[n:])
	if m <= 0 || n+m >= len(b) || tf == 0 || tf > 1<<32-1 || (it.i > 0 && d == 0) || it.ID+d < it.ID {
		it.err = corruptf("postings of %q: posting %d: row id +%d, tf %d", it.term, it.i, d, tf)
		return false
	}
	it.ID += d
	it.TF, it.Norm = uint32(tf), b[n+m]
	it.b = b[n+m+1:]
	it.left--
	it.i++
	return true
}

// Err is the error that stopped Next, if any.
func (it *PostingIter) Err() error { return it.err }

// ParsePositions parses a term's positions: for posting i, its TF
// positions, concatenated.
func ParsePositions(t TermInfo, ps []Posting, b []byte) ([]uint32, error) {
	body, err := checkCRC("positions of "+t.Term, b)
	if err != nil {
		return nil, err
	}
	var total int64
	for _, p := range ps {
		total += int64(p.TF)
	}
	if total > int64(len(body)) {
		return nil, corruptf("positions of %q: %d positions in %d bytes", t.Term, total, len(body))
	}
	if err := decodelimit.Check("full-text positions", total*4); err != nil {
		return nil, err
	}
	r := &reader{b: body}
	out := make([]uint32, 0, total)
	for i, p := range ps {
		var pos uint64
		for j := range p.TF {
			d := r.uv("position")
			if r.err != nil {
				return nil, fmt.Errorf("positions of %q: %w", t.Term, r.err)
			}
			if (j > 0 && d == 0) || pos+d > 1<<32-1 {
				return nil, corruptf("positions of %q: posting %d: position +%d after %d", t.Term, i, d, pos)
			}
			pos += d
			out = append(out, uint32(pos))
		}
	}
	return out, r.done("positions of " + t.Term)
}
