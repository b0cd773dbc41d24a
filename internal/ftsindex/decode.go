package ftsindex

import (
	"fmt"

	"github.com/lochdata/loch/internal/manifest"
)

// Decoded is a segment decoded whole.
type Decoded struct {
	Footer    Footer
	Runs      []Run
	Terms     []TermInfo
	Postings  [][]Posting
	Positions [][]uint32
}

// DecodeSegment decodes the segment stored at key whole and checks every
// section, and that obj is the object key names. Errors match ErrCorrupt
// or ErrNewerFormat and name the key.
func DecodeSegment(key string, obj []byte) (*Decoded, error) {
	d, err := decodeSegment(obj)
	if err == nil {
		err = manifest.CheckName(key, obj)
	}
	if err != nil {
		return nil, fmt.Errorf("full-text segment %s: %w", key, err)
	}
	return d, nil
}

func decodeSegment(obj []byte) (*Decoded, error) {
	size := int64(len(obj))
	if size < header+footerLen {
		return nil, corruptf("%d bytes, shorter than a header and footer", size)
	}
	if string(obj[:4]) != Magic || obj[6] != KindSeg {
		return nil, corruptf("magic %q kind %q, want %q %q", obj[:4], obj[6], Magic, KindSeg)
	}
	f, err := ParseFooter(size, obj[size-footerLen:])
	if err != nil {
		return nil, err
	}
	if string(obj[4:8]) != string(obj[size-8:size-4]) {
		return nil, corruptf("header version % x, footer says % x", obj[4:8], obj[size-8:size-4])
	}
	blocks, err := ParseBlockIndex(f, obj[f.I:f.R])
	if err != nil {
		return nil, err
	}
	d := &Decoded{Footer: f}
	if d.Runs, err = ParseDocs(f, obj[f.R:size-footerLen]); err != nil {
		return nil, err
	}
	var tokens uint64
	for _, bl := range blocks {
		ts, err := ParseBlock(f, bl, obj[bl.Off:bl.Off+bl.Len])
		if err != nil {
			return nil, err
		}
		if n := len(d.Terms); n > 0 && ts[0].Term <= d.Terms[n-1].Term {
			return nil, corruptf("block %q does not follow term %q", bl.First, d.Terms[n-1].Term)
		}
		for _, t := range ts {
			ps, err := ParsePostings(t, obj[t.PostOff:t.PostOff+t.PostLen])
			if err != nil {
				return nil, err
			}
			pos, err := ParsePositions(t, ps, obj[t.PosOff:t.PosOff+t.PosLen])
			if err != nil {
				return nil, err
			}
			for _, p := range ps {
				tokens += uint64(p.TF)
			}
			d.Terms = append(d.Terms, t)
			d.Postings = append(d.Postings, ps)
			d.Positions = append(d.Positions, pos)
		}
	}
	if len(d.Terms) != int(f.Terms) {
		return nil, corruptf("dictionary holds %d terms, footer says %d", len(d.Terms), f.Terms)
	}
	if tokens > f.Tokens {
		return nil, corruptf("postings hold %d tokens, footer says %d", tokens, f.Tokens)
	}
	return d, nil
}
