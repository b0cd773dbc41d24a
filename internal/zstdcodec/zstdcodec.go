// Package zstdcodec holds loch's one zstd encoder and decoder, shared by
// chunks and metadata objects: klauspost/compress's EncodeAll and
// DecodeAll are safe for concurrent use, so one of each serves every
// caller.
package zstdcodec

import (
	"bytes"
	"fmt"
	"io"
	"sync"

	"github.com/klauspost/compress/zstd"
)

// maxMemory bounds what the decoder allocates for one frame whatever the
// caller's limit (16 GiB: chunks are sized in MiB).
const maxMemory = 1 << 34

var (
	once sync.Once
	enc  *zstd.Encoder
	dec  *zstd.Decoder
)

func codecs() (*zstd.Encoder, *zstd.Decoder) {
	once.Do(func() {
		var err error
		if enc, err = zstd.NewWriter(nil, zstd.WithEncoderLevel(zstd.SpeedDefault), zstd.WithEncoderConcurrency(1)); err != nil {
			panic(fmt.Sprintf("zstdcodec: encoder: %v", err)) // only for invalid options
		}
		if dec, err = zstd.NewReader(nil, zstd.WithDecoderConcurrency(0), zstd.WithDecoderMaxMemory(maxMemory)); err != nil {
			panic(fmt.Sprintf("zstdcodec: decoder: %v", err))
		}
	})
	return enc, dec
}

// Encode appends the zstd frame of src to dst.
func Encode(dst, src []byte) []byte {
	e, _ := codecs()
	return e.EncodeAll(src, dst)
}

// Decode appends the decompressed src to dst, refusing more than limit
// bytes. A frame that declares its size is refused before anything is
// allocated when that is more than limit. One that does not (the encoder
// leaves the size out of frames below 256 bytes; a hostile object may leave
// it out of any) is decoded as a stream that stops at the smaller of limit
// and MaxUndeclared: decoded whole, a few bytes of it could ask for
// gigabytes.
func Decode(dst, src []byte, limit uint64) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(src); err != nil {
		return nil, fmt.Errorf("zstd frame header: %w", err)
	}
	if !h.HasFCS {
		return decodeStream(dst, src, limit)
	}
	if h.FrameContentSize > limit {
		return nil, fmt.Errorf("zstd frame of %d bytes, more than the %d expected", h.FrameContentSize, limit)
	}
	_, d := codecs()
	out, err := d.DecodeAll(src, dst)
	if err == nil && uint64(len(out)-len(dst)) > limit {
		return nil, fmt.Errorf("zstd frames of %d bytes, more than the %d expected", len(out)-len(dst), limit)
	}
	return out, err
}

// decodeStream decodes src, whose first frame does not declare its size,
// as a stream, refusing more than limit bytes.
func decodeStream(dst, src []byte, limit uint64) ([]byte, error) {
	limit = min(limit, MaxUndeclared)
	window := min(limit, maxStreamWindow)
	zr, err := zstd.NewReader(bytes.NewReader(src), zstd.WithDecoderConcurrency(1),
		zstd.WithDecoderMaxWindow(max(window, zstd.MinWindowSize)), zstd.WithDecoderLowmem(true))
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	defer zr.Close()
	buf := bytes.NewBuffer(dst)
	n, err := buf.ReadFrom(io.LimitReader(zr, int64(limit)+1))
	if err != nil {
		return nil, fmt.Errorf("zstd: %w", err)
	}
	if uint64(n) > limit {
		return nil, fmt.Errorf("zstd frame that does not declare its size decodes to more than the %d bytes expected", limit)
	}
	return buf.Bytes(), nil
}

// MaxUndeclared bounds what a zstd frame that does not declare its size may
// decode to (docs/format.md §2).
const MaxUndeclared = 64 << 20

// maxStreamWindow bounds the window a frame without a declared size may
// ask for (the encoder's frames of that kind are under 256 bytes).
const maxStreamWindow = 8 << 20
