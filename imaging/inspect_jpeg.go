package imaging

import (
	"bytes"
)

// JPEG markers Inspect tells apart.
const (
	mSOI = 0xd8
	mEOI = 0xd9
	mSOS = 0xda
	mRST = 0xd0 // RST0; RST1..RST7 follow
	mTEM = 0x01
)

// jpegWalk is Inspect's walk through a JPEG file.
type jpegWalk struct {
	data  []byte
	pos   int    // the next byte to read
	sof   byte   // the frame header's marker; 0 before it
	frame []byte // the frame header's segment
	scans int
	// huff has bit 1<<(4*class+slot) set for each Huffman table defined.
	huff uint8
	// odd is set by what a decoder may refuse though the structure is
	// sound (Exact is then false): a scan using a Huffman table no DHT
	// defined (libjpeg-turbo takes the standard one, image/jpeg refuses
	// it), a subsampling image/jpeg does not decode.
	odd bool
}

func inspectJPEG(data []byte) (Header, error) {
	j := jpegWalk{data: data, pos: 2}
	for {
		at := j.pos
		m, err := j.marker()
		if err != nil {
			return Header{}, err
		}
		switch {
		case m == mEOI:
			return j.header(at)
		case m == mSOI || m == 0x00 || (m >= mRST && m <= mRST+7):
			return Header{}, inspectErr("jpeg", at, "unexpected marker %#02x", m)
		case m == mTEM:
			continue
		}
		seg, err := j.segment(m)
		if err != nil {
			return Header{}, err
		}
		switch {
		case isSOF(m):
			err = j.readFrame(m, seg, at)
		case m == mSOS:
			err = j.readScan(seg, at)
		case m == 0xc4:
			err = j.readDHT(seg, at)
		case m == 0xdb:
			err = readDQT(seg, at)
		case m == 0xdd && len(seg) != 2:
			err = inspectErr("jpeg", at, "DRI segment of %d bytes, want 2", len(seg))
		}
		if err != nil {
			return Header{}, err
		}
	}
}

// marker reads the marker at j.pos (after any fill bytes).
func (j *jpegWalk) marker() (byte, error) {
	d := j.data
	if j.pos >= len(d) {
		return 0, inspectErr("jpeg", j.pos, "truncated: the file ends before its EOI marker")
	}
	if d[j.pos] != 0xff {
		return 0, inspectErr("jpeg", j.pos, "%#02x where a marker should start", d[j.pos])
	}
	for j.pos < len(d) && d[j.pos] == 0xff {
		j.pos++
	}
	if j.pos >= len(d) {
		return 0, inspectErr("jpeg", j.pos, "truncated: the file ends before its EOI marker")
	}
	m := d[j.pos]
	j.pos++
	return m, nil
}

// segment returns the body of marker m's segment, which must be complete.
func (j *jpegWalk) segment(m byte) ([]byte, error) {
	d := j.data
	if j.pos+2 > len(d) {
		return nil, inspectErr("jpeg", j.pos, "truncated in the length of marker %#02x", m)
	}
	n := be16(d[j.pos:])
	if n < 2 {
		return nil, inspectErr("jpeg", j.pos, "marker %#02x declares a length of %d", m, n)
	}
	if j.pos+n > len(d) {
		return nil, inspectErr("jpeg", j.pos, "truncated: marker %#02x declares %d bytes, %d are left", m, n, len(d)-j.pos)
	}
	seg := d[j.pos+2 : j.pos+n]
	j.pos += n
	return seg, nil
}

// isSOF reports whether m starts a frame: SOF0..SOF15 but DHT (c4), JPG
// (c8) and DAC (cc).
func isSOF(m byte) bool {
	return m >= 0xc0 && m <= 0xcf && m != 0xc4 && m != 0xc8 && m != 0xcc
}

func (j *jpegWalk) readFrame(m byte, seg []byte, at int) error {
	if j.sof != 0 {
		return inspectErr("jpeg", at, "a second frame header (marker %#02x)", m)
	}
	if len(seg) < 6 || len(seg) != 6+3*int(seg[5]) || seg[5] == 0 {
		return inspectErr("jpeg", at, "frame header of %d bytes is malformed", len(seg))
	}
	if be16(seg[1:]) == 0 || be16(seg[3:]) == 0 {
		return inspectErr("jpeg", at, "frame of %dx%d pixels", be16(seg[3:]), be16(seg[1:]))
	}
	for c := seg[6:]; len(c) > 0; c = c[3:] {
		h, v := c[1]>>4, c[1]&15
		if h < 1 || h > 4 || v < 1 || v > 4 || c[2] > 3 {
			return inspectErr("jpeg", at, "component %d has sampling %dx%d, quantization table %d", c[0], h, v, c[2])
		}
	}
	j.sof, j.frame = m, seg
	j.odd = j.odd || !stdSampling(seg[6:])
	return nil
}

// stdSampling reports whether image/jpeg decodes a frame of these
// components (id, sampling, table triples): distinct ids, no factor of 3,
// and for 3 components a luma at most 4x2 that is a multiple of two equal
// chroma samplings, for 4 components 0x11 0x11 0x11 0x11 or 0x22 0x11
// 0x11 0x22 (image/jpeg's processSOF).
func stdSampling(c []byte) bool {
	n := len(c) / 3
	for i := range n {
		h, v := c[3*i+1]>>4, c[3*i+1]&15
		if h == 3 || v == 3 {
			return false
		}
		for k := range i {
			if c[3*k] == c[3*i] {
				return false
			}
		}
	}
	hv := func(i int) byte { return c[3*i+1] }
	switch n {
	case 3:
		y, cb := hv(0), hv(1)
		return y&15 != 4 && (y>>4)%(cb>>4) == 0 && (y&15)%(cb&15) == 0 && hv(2) == cb
	case 4:
		return (hv(0) == 0x11 || hv(0) == 0x22) && hv(1) == 0x11 && hv(2) == 0x11 && hv(3) == hv(0)
	}
	return true
}

// readDHT checks the Huffman tables of a DHT segment (libjpeg's rules: a
// class and slot in range, 1 to 256 codes that fit their lengths).
func (j *jpegWalk) readDHT(seg []byte, at int) error {
	for len(seg) > 0 {
		if len(seg) < 17 || seg[0]>>4 > 1 || seg[0]&15 > 3 {
			return inspectErr("jpeg", at, "DHT segment is malformed")
		}
		n, code := 0, 0
		for l, count := range seg[1:17] {
			n += int(count)
			code += int(count)
			if code >= 2<<l && count > 0 {
				return inspectErr("jpeg", at, "DHT table %#02x has more codes of %d bits than fit", seg[0], l+1)
			}
			code <<= 1
		}
		if n == 0 || n > 256 || len(seg) < 17+n {
			return inspectErr("jpeg", at, "DHT table %#02x of %d codes in %d bytes", seg[0], n, len(seg))
		}
		j.huff |= 1 << (4*(seg[0]>>4) + seg[0]&15)
		seg = seg[17+n:]
	}
	return nil
}

// readDQT checks the quantization tables of a DQT segment.
func readDQT(seg []byte, at int) error {
	for len(seg) > 0 {
		size := 1 + 64*(1+int(seg[0]>>4))
		if seg[0]>>4 > 1 || seg[0]&15 > 3 || len(seg) < size {
			return inspectErr("jpeg", at, "DQT segment is malformed")
		}
		seg = seg[size:]
	}
	return nil
}

// readScan checks a scan header and walks the scan's entropy-coded data to
// the marker after it.
func (j *jpegWalk) readScan(seg []byte, at int) error {
	if j.sof == 0 {
		return inspectErr("jpeg", at, "a scan before the frame header")
	}
	if len(seg) < 1 || seg[0] < 1 || seg[0] > 4 || len(seg) != 4+2*int(seg[0]) {
		return inspectErr("jpeg", at, "scan header of %d bytes is malformed", len(seg))
	}
	ss, se, ah := seg[len(seg)-3], seg[len(seg)-2], seg[len(seg)-1]>>4
	if (j.sof == 0xc0 || j.sof == 0xc1 || j.sof == 0xc9) && (ss != 0 || se != 63 || seg[len(seg)-1] != 0) {
		return inspectErr("jpeg", at, "sequential scan with spectral selection %d..%d, approximation %#02x", ss, se, seg[len(seg)-1])
	}
	for c := seg[1 : 1+2*int(seg[0])]; len(c) > 0; c = c[2:] {
		if !j.hasComponent(c[0]) {
			return inspectErr("jpeg", at, "scan of component %d, which the frame does not have", c[0])
		}
		// The tables the scan decodes with: DC unless it only refines DC,
		// AC unless it is a DC scan.
		dc, ac := ss == 0 && ah == 0, se > 0
		j.odd = j.odd || (dc && j.huff&(1<<(c[1]>>4)) == 0) || (ac && j.huff&(1<<(4+c[1]&15)) == 0)
	}
	j.scans++
	return j.entropyData()
}

func (j *jpegWalk) hasComponent(id byte) bool {
	for c := j.frame[6:]; len(c) > 0; c = c[3:] {
		if c[0] == id {
			return true
		}
	}
	return false
}

// entropyData skips a scan's entropy-coded data: stuffed 0xff 0x00 pairs
// and restart markers, which must come in sequence, up to the next other
// marker, where j.pos is left.
func (j *jpegWalk) entropyData() error {
	d, next := j.data, 0
	for {
		i := bytes.IndexByte(d[j.pos:], 0xff)
		if i < 0 {
			return inspectErr("jpeg", len(d), "truncated in the data of scan %d: the file ends before its EOI marker", j.scans)
		}
		p := j.pos + i
		q := p + 1
		for q < len(d) && d[q] == 0xff {
			q++
		}
		if q >= len(d) {
			return inspectErr("jpeg", len(d), "truncated in the data of scan %d: the file ends before its EOI marker", j.scans)
		}
		switch b := d[q]; {
		case b == 0x00:
		case b >= mRST && b <= mRST+7:
			if int(b-mRST) != next {
				return inspectErr("jpeg", p, "restart marker %d where %d was due, in scan %d", b-mRST, next, j.scans)
			}
			next = (next + 1) & 7
		default:
			j.pos = p
			return nil
		}
		j.pos = q + 1
	}
}

// header is the walk's result at EOI (found at byte at).
func (j *jpegWalk) header(at int) (Header, error) {
	if j.sof == 0 || j.scans == 0 {
		return Header{}, inspectErr("jpeg", at, "EOI before any frame header or scan")
	}
	f := j.frame
	h := Header{Format: "jpeg", Height: be16(f[1:]), Width: be16(f[3:]), Channels: 3}
	nc := int(f[5])
	if nc == 1 {
		h.Channels = 1
	}
	// Baseline, extended and progressive Huffman-coded 8-bit frames of
	// gray, YCbCr/RGB or CMYK/YCCK, with their tables and a subsampling
	// image/jpeg takes: what libjpeg-turbo and image/jpeg both decode
	// (CMYK through image/jpeg, to RGB).
	h.Exact = j.sof <= 0xc2 && f[0] == 8 && (nc == 1 || nc == 3 || nc == 4) && !j.odd
	return h, nil
}
