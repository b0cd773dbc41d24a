package media

import (
	"bytes"
	"encoding/binary"
	"testing"
)

// FuzzWAV: no input crashes the wav reader, and what it reads stays inside
// the file's data.
func FuzzWAV(f *testing.F) {
	hdr := func(tag, channels, bits uint16, data int) []byte {
		var b bytes.Buffer
		b.WriteString("RIFF\x00\x00\x00\x00WAVEfmt ")
		for _, v := range []any{uint32(16), tag, channels, uint32(8000), uint32(8000 * int(channels) * int(bits) / 8), uint16(int(channels) * int(bits) / 8), bits} {
			_ = binary.Write(&b, binary.LittleEndian, v)
		}
		b.WriteString("data")
		_ = binary.Write(&b, binary.LittleEndian, uint32(data))
		b.Write(make([]byte, data))
		return b.Bytes()
	}
	f.Add(hdr(1, 1, 16, 100))
	f.Add(hdr(1, 2, 24, 60))
	f.Add(hdr(3, 1, 32, 40))
	f.Add(hdr(1, 1, 8, 0))
	f.Fuzz(func(t *testing.T, b []byte) {
		w, ok := parseWAV(bytes.NewReader(b), int64(len(b)))
		if !ok {
			return
		}
		if w.dataOff+w.frames*int64(w.frameSize) > int64(len(b)) {
			t.Fatalf("%d frames of %d bytes from %d: past the file's %d bytes", w.frames, w.frameSize, w.dataOff, len(b))
		}
		dst := make([]float32, 16*w.channels)
		for _, start := range []int64{0, w.frames / 2, w.frames} {
			if _, err := w.read(bytes.NewReader(b), dst, start); err != nil {
				t.Fatal(err)
			}
		}
	})
}
