package ftsindex

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/internal/decodelimit"
	"github.com/lochdata/loch/internal/decodelimit/decodelimittest"
	"github.com/lochdata/loch/internal/keys"
	"github.com/lochdata/loch/internal/vindex"
)

func sampleSegment() []byte {
	b := NewBuilder()
	b.Add(7, []Token{{"red", 1}, {"car", 2}, {"red", 5}})
	b.Add(3, []Token{{"blue", 1}, {"car", 2}})
	b.Add(8, nil)
	for i := range 300 { // more than one block
		b.Add(uint64(100+i), []Token{{string(rune('a'+i%26)) + string(rune('a'+i/26)), 1}})
	}
	return b.Encode()
}

func TestSegmentRoundTrip(t *testing.T) {
	obj := sampleSegment()
	d, err := DecodeSegment(SegmentKey(obj), obj)
	require.NoError(t, err)
	require.Equal(t, uint32(303), d.Footer.Docs)
	require.Equal(t, []Run{{3, 1}, {7, 2}, {100, 300}}, d.Runs)
	require.Equal(t, uint64(305), d.Footer.Tokens)
	require.Equal(t, uint32(3), d.Footer.Blocks)
	i := Find(nil, "x")
	require.Equal(t, -1, i)
	for k, ti := range d.Terms {
		if ti.Term == "red" {
			require.Equal(t, []Posting{{ID: 7, TF: 2, Norm: 3}}, d.Postings[k])
			require.Equal(t, []uint32{1, 5}, d.Positions[k])
		}
		if ti.Term == "car" {
			require.Equal(t, []Posting{{ID: 3, TF: 1, Norm: 2}, {ID: 7, TF: 1, Norm: 3}}, d.Postings[k])
			require.Equal(t, []uint32{2, 2}, d.Positions[k])
		}
	}
	// Each term is found in its block, and terms between are not.
	requireFoundByRange(t, d, obj, func(ti TermInfo, bl BlockRef) {
		_, ok, err := FindInBlock(d.Footer, bl, obj[bl.Off:bl.Off+bl.Len], ti.Term+"\x00")
		require.NoError(t, err)
		require.False(t, ok)
	})
	// Every single flipped byte is refused (or, in a varint's spare
	// bits, still decodes to a sound segment), never a panic.
	for i := range obj {
		bad := append([]byte(nil), obj...)
		bad[i] ^= 0x10
		_, err := decodeSegment(bad)
		require.Error(t, err, "byte %d", i)
	}
	_, err = DecodeSegment(SegmentKey(obj), obj[:len(obj)-1])
	require.ErrorIs(t, err, base.ErrCorrupt)
}

func TestNorm(t *testing.T) {
	for n := range 24 {
		require.Equal(t, n, DecodeNorm(EncodeNorm(n)))
	}
	prev := 0
	for n := 0; n < 1<<20; n += 7 {
		d := DecodeNorm(EncodeNorm(n))
		require.LessOrEqual(t, d, n)
		require.GreaterOrEqual(t, d, prev)
		require.Greater(t, float64(d), 0.87*float64(n)-1, n)
		prev = d
	}
	require.Equal(t, uint8(255), EncodeNorm(1<<40))
}

func sampleDescriptor(obj []byte) *Descriptor {
	id := "0123456789abcdef0123456789abcdef"
	return &Descriptor{Header: vindex.Header{Version: id, Column: "caption", UID: 3, Metric: Metric, Type: Type}, Analyzer: Analyzer, DType: "text",
		Docs: 303, Tokens: 305, Segments: []Segment{{Key: SegmentKey(obj), Bytes: int64(len(obj)), Docs: 303, Tokens: 305}}, Time: time.Unix(0, 0).UTC()}
}

func TestDescriptor(t *testing.T) {
	obj := sampleSegment()
	d := sampleDescriptor(obj)
	key := keys.MakeIndex(d.Version, 3, Metric)
	enc, err := EncodeDescriptor(d)
	require.NoError(t, err)
	got, err := DecodeDescriptor(key, enc)
	require.NoError(t, err)
	require.Equal(t, d, got)
	require.True(t, IsKey(key))
	require.False(t, IsKey(keys.MakeIndex(d.Version, 3, "cosine")))

	d.Type = "bm25f"
	enc, err = EncodeDescriptor(d)
	require.NoError(t, err)
	_, err = DecodeDescriptor(key, enc)
	require.ErrorIs(t, err, base.ErrNewerFormat)
	require.ErrorContains(t, err, key)

	d.Type, d.Docs = Type, 1
	enc, _ = EncodeDescriptor(d)
	_, err = DecodeDescriptor(key, enc)
	require.ErrorIs(t, err, base.ErrCorrupt)
	_, err = DecodeDescriptor(keys.MakeIndex(d.Version, 4, Metric), enc)
	require.True(t, errors.Is(err, base.ErrCorrupt))
}

// requireFoundByRange checks that each term of d (decoded from obj) is
// found in its block, as a search finds it by range, and calls more (if
// not nil) with the term and its block.
func requireFoundByRange(t *testing.T, d *Decoded, obj []byte, more func(TermInfo, BlockRef)) {
	t.Helper()
	f := d.Footer
	blocks, err := ParseBlockIndex(f, obj[f.I:f.R])
	require.NoError(t, err)
	for _, ti := range d.Terms {
		bl := blocks[Find(blocks, ti.Term)]
		got, ok, err := FindInBlock(f, bl, obj[bl.Off:bl.Off+bl.Len], ti.Term)
		require.NoError(t, err)
		require.True(t, ok, ti.Term)
		require.Equal(t, ti, got)
		if more != nil {
			more(ti, bl)
		}
	}
}

func TestNewerSegmentRefused(t *testing.T) {
	obj := sampleSegment()
	f := obj[len(obj)-footerLen:]
	f[57] = Minor + 1
	f = appendCRC(f[:60:60], 0)
	copy(obj[len(obj)-footerLen:], f)
	_, err := decodeSegment(obj)
	require.ErrorIs(t, err, base.ErrNewerFormat)
}

func FuzzDecodeSegment(f *testing.F) {
	f.Add(sampleSegment())
	f.Add(NewBuilder().Encode())
	f.Fuzz(func(t *testing.T, obj []byte) {
		d, err := decodeSegment(obj)
		if err != nil {
			return
		}
		// Its terms are found by range, as a search finds them.
		requireFoundByRange(t, d, obj, nil)
		// A segment that decodes re-encodes to one that decodes.
		b := NewBuilder()
		for i, ti := range d.Terms {
			b.AddPostings(ti.Term, d.Postings[i], d.Positions[i])
		}
		var ids []uint64
		for _, r := range d.Runs {
			for k := range r.Len {
				ids = append(ids, r.Start+k)
				if len(ids) > 1<<16 {
					return
				}
			}
		}
		b.AddDocs(ids, d.Footer.Tokens)
		_, err = decodeSegment(b.Encode())
		require.NoError(t, err)
	})
}

func FuzzDecodeDescriptor(f *testing.F) {
	obj := sampleSegment()
	d := sampleDescriptor(obj)
	enc, _ := EncodeDescriptor(d)
	key := keys.MakeIndex(d.Version, 3, Metric)
	f.Add(enc)
	f.Fuzz(func(t *testing.T, b []byte) {
		if got, err := DecodeDescriptor(key, b); err == nil {
			require.Equal(t, d.Version, got.Version)
		}
	})
}

// TestDecodeLimit: the sizes a segment declares are checked against the
// decode limit before anything is allocated for them.
func TestDecodeLimit(t *testing.T) {
	b := NewBuilder()
	for i := range 2000 {
		b.Add(uint64(i), []Token{{"common", 1}, {"common", 2}})
	}
	obj := b.Encode()
	d, err := decodeSegment(obj)
	require.NoError(t, err)
	decodelimittest.Set(t, 1024)
	_, err = decodeSegment(obj)
	require.ErrorIs(t, err, decodelimit.ErrTooLarge)
	ti := d.Terms[0]
	_, err = ParsePostings(ti, obj[ti.PostOff:ti.PostOff+ti.PostLen])
	require.ErrorIs(t, err, decodelimit.ErrTooLarge)
}
