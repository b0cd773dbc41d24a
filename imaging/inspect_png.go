package imaging

import (
	"hash/crc32"
)

var pngSignature = []byte("\x89PNG\r\n\x1a\n")

// pngWalk is Inspect's walk through a PNG file.
type pngWalk struct {
	h       Header
	ct      byte // colour type
	plte    bool // a PLTE chunk was seen
	idat    int  // IDAT chunks seen
	idatEnd bool // a chunk other than IDAT followed the IDAT chunks
}

func inspectPNG(data []byte) (Header, error) {
	p := pngWalk{h: Header{Format: "png"}}
	for pos, i := len(pngSignature), 0; ; i++ {
		if pos+8 > len(data) {
			return Header{}, inspectErr("png", pos, "truncated: the file ends before its IEND chunk")
		}
		n := int64(be32(data[pos:]))
		typ := string(data[pos+4 : pos+8])
		if n > 1<<31-1 || int64(pos)+12+n > int64(len(data)) {
			return Header{}, inspectErr("png", pos, "truncated: chunk %q declares %d bytes, %d are left", typ, n, len(data)-pos-8)
		}
		end := pos + 8 + int(n)
		if crc32.ChecksumIEEE(data[pos+4:end]) != be32(data[end:]) {
			return Header{}, inspectErr("png", pos, "chunk %q fails its CRC-32 check", typ)
		}
		if (i == 0) != (typ == "IHDR") {
			return Header{}, inspectErr("png", pos, "chunk %q where IHDR should be first", typ)
		}
		if typ == "IEND" {
			return p.end(pos)
		}
		if err := p.chunk(typ, data[pos+8:end], pos); err != nil {
			return Header{}, err
		}
		pos = end + 4
	}
}

// chunk checks one chunk (not IEND) found at byte at.
func (p *pngWalk) chunk(typ string, body []byte, at int) error {
	if typ != "IDAT" && p.idat > 0 {
		p.idatEnd = true
	}
	switch typ {
	case "IHDR":
		return p.readIHDR(body, at)
	case "PLTE":
		if p.idat > 0 || len(body) == 0 || len(body)%3 != 0 || len(body) > 3*256 {
			return inspectErr("png", at, "PLTE chunk of %d bytes (after %d IDAT chunks)", len(body), p.idat)
		}
		p.plte = true
	case "tRNS":
		// Gray and truecolour images with a transparent colour decode
		// with an alpha channel their colour type does not announce.
		p.h.Exact = p.h.Exact && p.ct == 3
	case "IDAT":
		switch {
		case p.idatEnd:
			return inspectErr("png", at, "IDAT chunk after other chunks followed the image data")
		case p.ct == 3 && !p.plte:
			return inspectErr("png", at, "IDAT chunk of a palette image before its PLTE chunk")
		case p.idat == 0 && len(body) >= 2 && (body[0]&15 != 8 || (int(body[0])<<8|int(body[1]))%31 != 0):
			return inspectErr("png", at, "image data does not start with a zlib header (% x)", body[:2])
		}
		p.idat++
	}
	return nil
}

// pngChannels maps a colour type to the channels Decode gives and its
// valid bit depths (as a set of bits).
var pngChannels = map[byte]struct {
	channels int
	depths   uint32
}{
	0: {1, 1<<1 | 1<<2 | 1<<4 | 1<<8 | 1<<16}, // gray
	2: {3, 1<<8 | 1<<16},                      // truecolour
	3: {3, 1<<1 | 1<<2 | 1<<4 | 1<<8},         // palette, decoded to RGB
	4: {4, 1<<8 | 1<<16},                      // gray and alpha
	6: {4, 1<<8 | 1<<16},                      // truecolour and alpha
}

func (p *pngWalk) readIHDR(b []byte, at int) error {
	if len(b) != 13 {
		return inspectErr("png", at, "IHDR chunk of %d bytes, want 13", len(b))
	}
	w, h := be32(b[0:]), be32(b[4:])
	if w == 0 || h == 0 || w > 1<<31-1 || h > 1<<31-1 {
		return inspectErr("png", at, "image of %dx%d pixels", w, h)
	}
	depth, ct := b[8], b[9]
	c, ok := pngChannels[ct]
	if !ok || depth > 16 || c.depths&(1<<depth) == 0 {
		return inspectErr("png", at, "colour type %d with bit depth %d", ct, depth)
	}
	if b[10] != 0 || b[11] != 0 || b[12] > 1 {
		return inspectErr("png", at, "compression %d, filter %d, interlace %d", b[10], b[11], b[12])
	}
	p.ct = ct
	p.h.Width, p.h.Height, p.h.Channels, p.h.Exact = int(w), int(h), c.channels, true
	return nil
}

// end checks what IEND (at byte at) closes.
func (p *pngWalk) end(at int) (Header, error) {
	if p.idat == 0 {
		return Header{}, inspectErr("png", at, "IEND before any IDAT chunk")
	}
	return p.h, nil
}
