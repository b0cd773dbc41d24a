// Package zstdcodec holds loch's one zstd encoder and decoder, shared by
// chunks and metadata objects: klauspost/compress's EncodeAll and
// DecodeAll are safe for concurrent use, so one of each serves every
// caller.
package zstdcodec

import (
	"fmt"
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

// Decode appends the decompressed src to dst. A frame that declares more
// than limit bytes is refused before anything is allocated.
func Decode(dst, src []byte, limit uint64) ([]byte, error) {
	var h zstd.Header
	if err := h.Decode(src); err == nil && h.HasFCS && h.FrameContentSize > limit {
		return nil, fmt.Errorf("zstd frame of %d bytes, more than the %d expected", h.FrameContentSize, limit)
	}
	_, d := codecs()
	return d.DecodeAll(src, dst)
}
