package imaging

// inspectWebP walks a WebP file's RIFF chunks and reads the size from its
// VP8, VP8L or VP8X header. A WebP is never Exact: loch stores no WebP
// samples, it decodes them.
func inspectWebP(data []byte) (Header, error) {
	total := int64(le32(data[4:])) + 8
	if total > int64(len(data)) {
		return Header{}, inspectErr("webp", 4, "truncated: the RIFF header declares %d bytes, the file has %d", total, len(data))
	}
	if total%2 != 0 {
		return Header{}, inspectErr("webp", 4, "RIFF size %d is odd", total-8)
	}
	var h Header
	image := false // a VP8 or VP8L chunk (the image data) was seen
	for pos := 12; pos < int(total); {
		if pos+8 > int(total) {
			return Header{}, inspectErr("webp", pos, "truncated chunk header")
		}
		fourcc, n := string(data[pos:pos+4]), int64(le32(data[pos+4:]))
		if int64(pos)+8+n > total {
			return Header{}, inspectErr("webp", pos, "truncated: chunk %q declares %d bytes, %d are left", fourcc, n, total-int64(pos)-8)
		}
		body := data[pos+8 : pos+8+int(n)]
		if pos == 12 {
			var err error
			if h, err = webpFirst(fourcc, body, pos); err != nil {
				return Header{}, err
			}
		}
		image = image || fourcc == "VP8 " || fourcc == "VP8L" || fourcc == "ANMF"
		pos += 8 + int(n) + int(n&1)
	}
	if !image {
		return Header{}, inspectErr("webp", 12, "no image data (VP8 or VP8L chunk)")
	}
	return h, nil
}

// webpFirst reads the first chunk of a WebP file, found at byte at.
func webpFirst(fourcc string, b []byte, at int) (Header, error) {
	h := Header{Format: "webp", Channels: 3}
	switch fourcc {
	case "VP8 ":
		// A key frame's tag (bit 0 clear), its start code, 14-bit sizes.
		if len(b) < 10 || b[0]&1 != 0 || b[3] != 0x9d || b[4] != 0x01 || b[5] != 0x2a {
			return h, inspectErr("webp", at, "VP8 chunk does not start with a key frame header")
		}
		h.Width, h.Height = le16(b[6:])&0x3fff, le16(b[8:])&0x3fff
	case "VP8L":
		if len(b) < 5 || b[0] != 0x2f || le32(b[1:])>>29 != 0 {
			return h, inspectErr("webp", at, "VP8L chunk does not start with a lossless header")
		}
		bits := le32(b[1:])
		h.Width, h.Height, h.Channels = int(bits&0x3fff)+1, int(bits>>14&0x3fff)+1, 4
	case "VP8X":
		if len(b) < 10 {
			return h, inspectErr("webp", at, "VP8X chunk of %d bytes, want 10", len(b))
		}
		h.Width, h.Height = le24(b[4:])+1, le24(b[7:])+1
	default:
		return h, inspectErr("webp", at, "first chunk %q, want VP8, VP8L or VP8X", fourcc)
	}
	if h.Width == 0 || h.Height == 0 {
		return h, inspectErr("webp", at, "image of %dx%d pixels", h.Width, h.Height)
	}
	return h, nil
}
