package ingest

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/schema"
)

// The .npy format (numpy.lib.format): the magic "\x93NUMPY", a major and a
// minor version byte, the header length (uint16 little-endian in version 1,
// uint32 in versions 2 and 3), and the header: a Python dict literal
// {'descr': '<f4', 'fortran_order': False, 'shape': (3, 4), } padded with
// spaces and a newline. The array's bytes follow.
const npyMagic = "\x93NUMPY"

// maxNPYHeader bounds the header length we accept.
const maxNPYHeader = 1 << 20

// npyHeader is a parsed .npy header.
type npyHeader struct {
	descr    string
	dtype    schema.DType // bool, numbers; Text for 'U', Bytes for 'S'
	itemSize int          // bytes per element
	swap     bool         // big-endian data
	fortran  bool
	shape    []int
	headLen  int // bytes before the data
}

// rowBytes is the size of one row (one index of the first axis).
func (h *npyHeader) rowBytes() int {
	n := h.itemSize
	for _, d := range h.shape[1:] {
		n *= d
	}
	return n
}

// readNPYHeader reads and parses the header of a .npy stream. It rejects
// headers it cannot represent (structured, object, complex and datetime
// dtypes, strings of more than one dimension, arrays of more than 2^62
// bytes) with errors wrapping ErrInvalidSource.
func readNPYHeader(r io.Reader) (*npyHeader, error) {
	var pre [10]byte
	if _, err := io.ReadFull(r, pre[:8]); err != nil {
		return nil, base.Markf(ErrInvalidSource, "not a .npy file: %v", noEOF(err))
	}
	if string(pre[:6]) != npyMagic {
		return nil, base.Markf(ErrInvalidSource, "not a .npy file (bad magic)")
	}
	major := pre[6]
	var n, headLen int
	switch major {
	case 1:
		if _, err := io.ReadFull(r, pre[8:10]); err != nil {
			return nil, base.Markf(ErrInvalidSource, "truncated .npy header")
		}
		n, headLen = int(binary.LittleEndian.Uint16(pre[8:10])), 10
	case 2, 3:
		var l [4]byte
		if _, err := io.ReadFull(r, l[:]); err != nil {
			return nil, base.Markf(ErrInvalidSource, "truncated .npy header")
		}
		v := binary.LittleEndian.Uint32(l[:])
		if v > maxNPYHeader {
			return nil, base.Markf(ErrInvalidSource, ".npy header of %d bytes", v)
		}
		n, headLen = int(v), 12
	default:
		return nil, base.Markf(ErrInvalidSource, ".npy format version %d.%d (want 1, 2 or 3)", major, pre[7])
	}
	text := make([]byte, n)
	if _, err := io.ReadFull(r, text); err != nil {
		return nil, base.Markf(ErrInvalidSource, "truncated .npy header")
	}
	if major < 3 && !isLatin1ASCII(text) || !utf8.Valid(text) {
		return nil, base.Markf(ErrInvalidSource, ".npy header is not text")
	}
	h, err := parseNPYHeader(string(text))
	if err != nil {
		return nil, err
	}
	h.headLen = headLen + n
	return h, nil
}

func isLatin1ASCII(b []byte) bool {
	for _, c := range b {
		if c >= 0x80 {
			return false
		}
	}
	return true
}

func noEOF(err error) error {
	if errors.Is(err, io.EOF) {
		return io.ErrUnexpectedEOF
	}
	return err
}

// parseNPYHeader parses the dict literal of a .npy header.
func parseNPYHeader(text string) (*npyHeader, error) {
	p := &pyParser{s: text}
	d, err := p.dict()
	if err != nil {
		return nil, base.Markf(ErrInvalidSource, ".npy header %.80q: %v", text, err)
	}
	descr, ok1 := d["descr"].(string)
	fortran, ok2 := d["fortran_order"].(bool)
	tuple, ok3 := d["shape"].([]int)
	if !ok1 || !ok2 || !ok3 || len(d) != 3 {
		return nil, base.Markf(ErrInvalidSource, ".npy header %.80q: want exactly 'descr' (a string), 'fortran_order' (a bool) and 'shape' (a tuple)", text)
	}
	h := &npyHeader{descr: descr, fortran: fortran, shape: tuple}
	if err := h.parseDescr(); err != nil {
		return nil, err
	}
	total := uint64(h.itemSize)
	for _, dim := range h.shape {
		hi, lo := bits.Mul64(total, uint64(dim))
		if hi != 0 || lo > 1<<62 {
			return nil, base.Markf(ErrInvalidSource, ".npy array of shape %v is too large", h.shape)
		}
		total = lo
	}
	if (h.dtype == schema.Text || h.dtype == schema.Bytes) && len(h.shape) > 1 {
		return nil, base.Markf(ErrInvalidSource, ".npy string array of shape %v: only one dimension is supported", h.shape)
	}
	return h, nil
}

// parseDescr sets dtype, itemSize and swap from descr.
func (h *npyHeader) parseDescr() error {
	s := h.descr
	bad := func(why string) error {
		return base.Markf(ErrInvalidSource, ".npy dtype %q: %s", h.descr, why)
	}
	if len(s) < 2 {
		return bad("unknown")
	}
	order := s[0]
	switch order {
	case '<', '|', '=':
	case '>':
		h.swap = true
	default:
		order = 0
	}
	if order != 0 {
		s = s[1:]
	}
	kind, sizeText := s[0], s[1:]
	size, err := strconv.Atoi(sizeText)
	if err != nil || size <= 0 || size > 1<<20 {
		return bad("unknown")
	}
	h.itemSize = size
	switch kind {
	case 'b':
		if size == 1 {
			h.dtype = schema.Bool
		}
	case 'i':
		h.dtype = map[int]schema.DType{1: schema.Int8, 2: schema.Int16, 4: schema.Int32, 8: schema.Int64}[size]
	case 'u':
		h.dtype = map[int]schema.DType{1: schema.Uint8, 2: schema.Uint16, 4: schema.Uint32, 8: schema.Uint64}[size]
	case 'f':
		h.dtype = map[int]schema.DType{2: schema.Float16, 4: schema.Float32, 8: schema.Float64}[size]
	case 'U':
		h.dtype = schema.Text
		h.itemSize = 4 * size
		if h.itemSize > 1<<20 {
			return bad("strings too long")
		}
	case 'S':
		h.dtype = schema.Bytes
	case 'c':
		return bad("complex numbers are not supported")
	case 'M', 'm':
		return bad("datetimes are not supported; convert them to int64")
	case 'O':
		return bad("object arrays are not supported")
	}
	if h.dtype == schema.Invalid {
		return bad("not supported")
	}
	if h.itemSize == 1 || h.dtype == schema.Bytes {
		h.swap = false
	}
	return nil
}

// pyParser parses the small subset of Python literals .npy headers use:
// a dict of string keys to strings, True/False and tuples of integers.
type pyParser struct {
	s string
	i int
}

func (p *pyParser) space() {
	for p.i < len(p.s) && strings.IndexByte(" \t\r\n", p.s[p.i]) >= 0 {
		p.i++
	}
}

func (p *pyParser) eat(c byte) bool {
	p.space()
	if p.i < len(p.s) && p.s[p.i] == c {
		p.i++
		return true
	}
	return false
}

func (p *pyParser) dict() (map[string]any, error) {
	if !p.eat('{') {
		return nil, errors.New("want '{'")
	}
	d := map[string]any{}
	for !p.eat('}') {
		k, err := p.str()
		if err != nil {
			return nil, err
		}
		if !p.eat(':') {
			return nil, errors.New("want ':'")
		}
		v, err := p.value()
		if err != nil {
			return nil, err
		}
		if _, dup := d[k]; dup {
			return nil, fmt.Errorf("key %q twice", k)
		}
		d[k] = v
		if !p.eat(',') {
			if !p.eat('}') {
				return nil, errors.New("want ',' or '}'")
			}
			break
		}
	}
	p.space()
	if p.i != len(p.s) {
		return nil, errors.New("text after the dict")
	}
	return d, nil
}

func (p *pyParser) value() (any, error) {
	p.space()
	switch {
	case p.i >= len(p.s):
		return nil, errors.New("missing value")
	case p.s[p.i] == '\'' || p.s[p.i] == '"':
		return p.str()
	case p.s[p.i] == '(':
		return p.tuple()
	case strings.HasPrefix(p.s[p.i:], "True"):
		p.i += 4
		return true, nil
	case strings.HasPrefix(p.s[p.i:], "False"):
		p.i += 5
		return false, nil
	case p.s[p.i] == '[':
		return nil, errors.New("structured dtypes are not supported")
	}
	return nil, fmt.Errorf("unexpected %q", p.s[p.i])
}

func (p *pyParser) str() (string, error) {
	p.space()
	if p.i >= len(p.s) || (p.s[p.i] != '\'' && p.s[p.i] != '"') {
		return "", errors.New("want a string")
	}
	q := p.s[p.i]
	end := strings.IndexByte(p.s[p.i+1:], q)
	if end < 0 {
		return "", errors.New("unterminated string")
	}
	v := p.s[p.i+1 : p.i+1+end]
	if strings.IndexByte(v, '\\') >= 0 {
		return "", errors.New("escapes in strings are not supported")
	}
	p.i += end + 2
	return v, nil
}

func (p *pyParser) tuple() ([]int, error) {
	if !p.eat('(') {
		return nil, errors.New("want '('")
	}
	out := []int{}
	for !p.eat(')') {
		p.space()
		start := p.i
		for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
			p.i++
		}
		if p.i < len(p.s) && p.s[p.i] == 'L' { // Python 2 long
			p.i++
		}
		v, err := strconv.ParseInt(strings.TrimSuffix(p.s[start:p.i], "L"), 10, 64)
		if err != nil || v > math.MaxInt32*int64(1<<20) {
			return nil, fmt.Errorf("bad dimension %q", p.s[start:p.i])
		}
		if len(out) == 32 {
			return nil, errors.New("more than 32 dimensions")
		}
		out = append(out, int(v))
		if !p.eat(',') {
			if !p.eat(')') {
				return nil, errors.New("want ',' or ')'")
			}
			break
		}
	}
	return out, nil
}

// npyArray reads the rows of a .npy array, in order.
type npyArray struct {
	hdr  *npyHeader
	r    io.Reader
	rows int
	next int
	data []byte // the whole array in C order, for Fortran-order arrays
}

// newNPYArray reads the header from r and prepares to read rows. A
// Fortran-order array of more than one dimension is read whole and
// transposed; other arrays are streamed. name is for errors.
func newNPYArray(r io.Reader) (*npyArray, error) {
	br := bufio.NewReaderSize(r, 1<<16)
	h, err := readNPYHeader(br)
	if err != nil {
		return nil, err
	}
	if len(h.shape) == 0 {
		return nil, base.Markf(ErrInvalidSource, ".npy array is a scalar, want a first axis of rows")
	}
	if h.rowBytes() > maxRowBytes {
		return nil, base.Markf(ErrInvalidSource, ".npy rows of %d bytes are too large (at most %d)", h.rowBytes(), maxRowBytes)
	}
	a := &npyArray{hdr: h, r: br, rows: h.shape[0]}
	if h.fortran && len(h.shape) > 1 {
		n := h.rowBytes() * h.shape[0]
		f, err := readN(br, n)
		if err != nil {
			return nil, base.Markf(ErrInvalidSource, ".npy data is truncated: %v", err)
		}
		a.data = fortranToC(f, h.shape, h.itemSize)
	}
	return a, nil
}

// column returns the loch column that holds the array's rows.
func (a *npyArray) column(name string) schema.Column {
	h := a.hdr
	switch h.dtype {
	case schema.Text:
		return schema.Column{Name: name, Kind: schema.TextKind, DType: schema.Text}
	case schema.Bytes:
		return schema.Column{Name: name, DType: schema.Bytes}
	}
	return schema.Column{Name: name, DType: h.dtype, Shape: schema.Shape(append([]int{}, h.shape[1:]...))}
}

// readRows reads the next n rows, converted to loch's layout
// (little-endian; strings as UTF-8 or bytes without trailing NULs), and
// returns one sample's bytes per row (aliasing one buffer).
func (a *npyArray) readRows(n int) ([][]byte, error) {
	rb := a.hdr.rowBytes()
	var buf []byte
	if a.data != nil {
		buf = a.data[a.next*rb : (a.next+n)*rb]
	} else {
		var err error
		if buf, err = readN(a.r, n*rb); err != nil {
			return nil, base.Markf(ErrInvalidSource, ".npy data is truncated at row %d of %d: %v", a.next, a.rows, err)
		}
	}
	a.next += n
	h := a.hdr
	out := make([][]byte, n)
	for i := range out {
		row := buf[i*rb : (i+1)*rb]
		switch {
		case h.dtype == schema.Text:
			if h.swap {
				swapBytes(row, 4)
			}
			s, err := utf32ToUTF8(row)
			if err != nil {
				return nil, base.Markf(ErrInvalidSource, "row %d: %v", a.next-n+i, err)
			}
			row = s
		case h.dtype == schema.Bytes:
			row = trimNULs(row)
		case h.swap:
			swapBytes(row, h.itemSize)
		}
		out[i] = row
	}
	return out, nil
}

// maxRowBytes bounds the size of one row of an array.
const maxRowBytes = 1 << 30

// readN reads exactly n bytes. Memory grows with the bytes actually read,
// so a header that claims more data than the file holds cannot make it
// allocate the claimed size.
func readN(r io.Reader, n int) ([]byte, error) {
	if n <= 1<<20 {
		b := make([]byte, n)
		if _, err := io.ReadFull(r, b); err != nil {
			return nil, noEOF(err)
		}
		return b, nil
	}
	b, err := io.ReadAll(io.LimitReader(r, int64(n)))
	if err != nil {
		return nil, err
	}
	if len(b) < n {
		return nil, io.ErrUnexpectedEOF
	}
	return b, nil
}

// fortranToC reorders an array from Fortran (column-major) to C
// (row-major) order.
func fortranToC(src []byte, shape []int, size int) []byte {
	dst := make([]byte, len(src))
	nd := len(shape)
	idx := make([]int, nd)
	// fstride[k] is the Fortran-order stride of axis k, in elements.
	fstride := make([]int, nd)
	s := 1
	for k := range nd {
		fstride[k] = s
		s *= shape[k]
	}
	total := s
	for c := 0; c < total; c++ {
		off := 0
		for k := range nd {
			off += idx[k] * fstride[k]
		}
		copy(dst[c*size:(c+1)*size], src[off*size:(off+1)*size])
		for k := nd - 1; k >= 0; k-- { // next C-order index
			idx[k]++
			if idx[k] < shape[k] {
				break
			}
			idx[k] = 0
		}
	}
	return dst
}

func swapBytes(b []byte, size int) {
	for i := 0; i+size <= len(b); i += size {
		e := b[i : i+size]
		for l, r := 0, size-1; l < r; l, r = l+1, r-1 {
			e[l], e[r] = e[r], e[l]
		}
	}
}

// utf32ToUTF8 converts numpy's 'U' strings (UTF-32, little-endian, padded
// with NULs) to UTF-8.
func utf32ToUTF8(b []byte) ([]byte, error) {
	out := make([]byte, 0, len(b)/4)
	end := len(b)
	for end >= 4 && binary.LittleEndian.Uint32(b[end-4:end]) == 0 {
		end -= 4
	}
	for i := 0; i+4 <= end; i += 4 {
		r := rune(binary.LittleEndian.Uint32(b[i:]))
		if !utf8.ValidRune(r) {
			return nil, fmt.Errorf("invalid code point %#x", uint32(r))
		}
		out = utf8.AppendRune(out, r)
	}
	return out, nil
}

func trimNULs(b []byte) []byte {
	end := len(b)
	for end > 0 && b[end-1] == 0 {
		end--
	}
	return b[:end]
}

// decodeNPY decodes a whole in-memory .npy file of a number or bool dtype
// into C-order little-endian data of shape h.shape.
func decodeNPY(file []byte) (*npyHeader, []byte, error) {
	h, err := readNPYHeader(bytes.NewReader(file))
	if err != nil {
		return nil, nil, err
	}
	if h.dtype.Variable() {
		return nil, nil, base.Markf(ErrInvalidSource, ".npy string arrays are not supported here")
	}
	n := h.itemSize
	for _, d := range h.shape {
		n *= d
	}
	if len(file)-h.headLen < n {
		return nil, nil, base.Markf(ErrInvalidSource, ".npy data is truncated: %d bytes, want %d", len(file)-h.headLen, n)
	}
	data := append([]byte(nil), file[h.headLen:h.headLen+n]...)
	if h.fortran && len(h.shape) > 1 {
		data = fortranToC(data, h.shape, h.itemSize)
	}
	if h.swap {
		swapBytes(data, h.itemSize)
	}
	return h, data, nil
}

// DecodeNPY decodes a whole in-memory .npy file of a number or bool dtype
// (not strings): its dtype, shape and C-order little-endian data. Errors
// wrap ErrInvalidSource.
func DecodeNPY(file []byte) (schema.DType, []int, []byte, error) {
	h, data, err := decodeNPY(file)
	if err != nil {
		return 0, nil, nil, err
	}
	return h.dtype, h.shape, data, nil
}
