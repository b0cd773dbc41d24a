package imaging

import (
	"bytes"

	"github.com/lochdata/loch/internal/base"
)

// Header is what an encoded image says about itself: its format, its size
// and the channels Decode gives, read from its header and checked against
// its structure (Inspect) without decoding a pixel.
type Header struct {
	Format        string // "jpeg", "png" or "webp"
	Height, Width int
	Channels      int // the channels Decode gives: 1, 3 or 4
	// Exact reports that the header alone settles the decoded shape and
	// that the file is of a kind every reader of loch decodes (baseline,
	// extended or progressive 8-bit JPEG of 1, 3 or 4 components; any PNG
	// whose decoded channels its colour type fixes). When it is false
	// (an arithmetic-coded or 12-bit JPEG; a PNG with a tRNS chunk, which
	// the decoder turns into an alpha channel; a WebP, which loch never
	// keeps) only a decode tells the shape, or whether the file is
	// readable at all.
	Exact bool
}

// Inspect reads an encoded JPEG, PNG or WebP image's header and walks its
// structure, at memory speed and without decoding pixels (it allocates
// nothing):
//
//   - JPEG: SOI, then every marker segment (each complete), exactly one
//     frame header (SOF) with a size and 1 to 4 components, scans whose
//     components are the frame's, the entropy-coded data of each scan
//     walked to the next marker (restart markers in sequence), and EOI.
//   - PNG: the signature, IHDR first with a valid size, bit depth and
//     colour type, every chunk complete with a matching CRC-32, PLTE where
//     the colour type needs one, consecutive IDAT chunks starting with a
//     zlib header, and IEND.
//   - WebP: the RIFF header and size, and the chunks a VP8, VP8L or VP8X
//     file starts with, with their sizes.
//
// A file truncated anywhere, or damaged in a way that breaks its
// structure, is an error wrapping ErrDecode that says what is wrong and
// where. What Inspect cannot see is damage inside a JPEG's entropy-coded
// data or a PNG's deflate stream that keeps the structure intact (a PNG's
// CRCs do catch changed bytes); only a decode finds that.
func Inspect(data []byte) (Header, error) {
	switch {
	case isJPEG(data):
		return inspectJPEG(data)
	case bytes.HasPrefix(data, pngSignature):
		return inspectPNG(data)
	case len(data) >= 12 && string(data[:4]) == "RIFF" && string(data[8:12]) == "WEBP":
		return inspectWebP(data)
	}
	return Header{}, base.Markf(ErrDecode, "decode image: not a jpeg, png or webp file (it starts % x)", data[:min(len(data), 8)])
}

// inspectErr is the error of Inspect: format, what is wrong, and the
// byte offset where it was found.
func inspectErr(format string, off int, msg string, a ...any) error {
	return base.Markf(ErrDecode, "decode image: "+format+" at byte %d: "+msg, append([]any{off}, a...)...)
}

func be16(b []byte) int { return int(b[0])<<8 | int(b[1]) }
func be32(b []byte) uint32 {
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}
func le16(b []byte) int { return int(b[0]) | int(b[1])<<8 }
func le24(b []byte) int { return int(b[0]) | int(b[1])<<8 | int(b[2])<<16 }
func le32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// Validate decodes an image Inspect read as h, to prove its compressed
// data readable, as cheaply as the decoder allows: a JPEG that
// libjpeg-turbo can shrink while decoding is decoded at 1/8 scale (its
// entropy decoder still reads every coefficient of every block, which is
// where damage shows; only the inverse DCT and colour conversion shrink),
// anything else whole (Decode). A decode that fails, or gives another
// size or channels than h, is ErrDecode.
func Validate(data []byte, h Header) error {
	if h.Format == "jpeg" {
		info, err := JPEGHeader(data)
		if err != nil {
			return err
		}
		if info.Width != h.Width || info.Height != h.Height || info.Channels != h.Channels {
			return base.Markf(ErrDecode, "decode image: jpeg header reads %dx%dx%d, the structure %dx%dx%d",
				info.Width, info.Height, info.Channels, h.Width, h.Height, h.Channels)
		}
		if info.Scalable {
			w, ht := Scaled(info.Width, 8), Scaled(info.Height, 8)
			return DecodeJPEG(make([]byte, w*ht*info.Channels), data, w, ht, info.Channels)
		}
	}
	_, shape, err := Decode(data)
	if err != nil {
		return err
	}
	if shape[0] != h.Height || shape[1] != h.Width || shape[2] != h.Channels {
		return base.Markf(ErrDecode, "decode image: %s decodes to %v, its header says %v", h.Format, shape, []int{h.Height, h.Width, h.Channels})
	}
	return nil
}
