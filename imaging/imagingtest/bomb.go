package imagingtest

import (
	"bytes"
	"encoding/binary"
	"hash/crc32"
	"image/jpeg"
	"testing"

	"github.com/stretchr/testify/require"
)

// PNGBomb makes a valid 8-bit grayscale png of width x height black
// pixels whose IDAT is a real zlib stream of all its rows (filter byte
// and pixels, all zeros), written directly as one fixed-Huffman deflate
// block of 258-byte back-references: 13 bits per 258 decoded bytes, so a
// 30000x30000 bomb (900 MB of pixels) is 5.7 MB and made in milliseconds,
// without ever holding the pixels.
func PNGBomb(width, height int) []byte {
	var b bytes.Buffer
	b.WriteString("\x89PNG\r\n\x1a\n")
	ihdr := make([]byte, 13)
	binary.BigEndian.PutUint32(ihdr[0:], uint32(width))
	binary.BigEndian.PutUint32(ihdr[4:], uint32(height))
	ihdr[8], ihdr[9] = 8, 0 // 8 bits, grayscale; deflate, filter 0, no interlace
	pngChunk(&b, "IHDR", ihdr)
	pngChunk(&b, "IDAT", zlibZeros(int64(height)*int64(width+1)))
	pngChunk(&b, "IEND", nil)
	return b.Bytes()
}

func pngChunk(b *bytes.Buffer, typ string, data []byte) {
	var n [4]byte
	binary.BigEndian.PutUint32(n[:], uint32(len(data)))
	b.Write(n[:])
	crc := crc32.NewIEEE()
	crc.Write([]byte(typ))
	crc.Write(data)
	b.WriteString(typ)
	b.Write(data)
	binary.BigEndian.PutUint32(n[:], crc.Sum32())
	b.Write(n[:])
}

// zlibZeros is a zlib stream of n > 0 zero bytes: one literal 0, then
// matches of length 258 at distance 1, the rest as literals.
func zlibZeros(n int64) []byte {
	w := &bitWriter{}
	w.out = append(w.out, 0x78, 0x01) // deflate, 32 KiB window, no dictionary
	w.bits(1, 1)                      // BFINAL
	w.bits(1, 2)                      // BTYPE 01: fixed Huffman codes
	w.code(0x30, 8)                   // literal 0
	matches := (n - 1) / 258
	for range matches {
		w.code(0xc5, 8) // length code 285 (258 bytes), 8 bits: 11000101
		w.code(0, 5)    // distance code 0 (distance 1)
	}
	for range (n - 1) % 258 {
		w.code(0x30, 8)
	}
	w.code(0, 7) // end of block (256)
	w.flush()
	// Adler-32 of n zeros: a stays 1, b adds 1 per byte.
	adler := uint32(n%65521)<<16 | 1
	return binary.BigEndian.AppendUint32(w.out, adler)
}

// bitWriter writes deflate's bit stream: values least significant bit
// first, Huffman codes most significant bit first.
type bitWriter struct {
	out  []byte
	acc  uint64
	nacc uint
}

func (w *bitWriter) bits(v uint64, n uint) {
	w.acc |= v << w.nacc
	w.nacc += n
	for w.nacc >= 8 {
		w.out = append(w.out, byte(w.acc))
		w.acc >>= 8
		w.nacc -= 8
	}
}

// code writes an n-bit Huffman code, most significant bit first.
func (w *bitWriter) code(c uint64, n uint) {
	var r uint64
	for i := uint(0); i < n; i++ {
		r = r<<1 | (c>>i)&1
	}
	w.bits(r, n)
}

func (w *bitWriter) flush() {
	if w.nacc > 0 {
		w.out = append(w.out, byte(w.acc))
		w.acc, w.nacc = 0, 0
	}
}

// JPEGBomb is a small real jpeg (16x16 gray) whose SOF0 header is
// rewritten to declare width x height: its header reads as that size, its
// data is too short for it.
func JPEGBomb(t testing.TB, width, height int) []byte {
	t.Helper()
	data := EncodeJPEG(t, Photo(16, 16, 1, 1), 16, 16, 1, 90)
	i := bytes.Index(data, []byte{0xff, 0xc0})
	require.GreaterOrEqual(t, i, 0, "no SOF0 marker")
	out := append([]byte(nil), data...)
	binary.BigEndian.PutUint16(out[i+5:], uint16(height))
	binary.BigEndian.PutUint16(out[i+7:], uint16(width))
	_, err := jpeg.DecodeConfig(bytes.NewReader(out))
	require.NoError(t, err)
	return out
}
