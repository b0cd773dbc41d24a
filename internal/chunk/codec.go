package chunk

import (
	"fmt"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/pierrec/lz4/v4"

	"github.com/lochdata/loch/internal/zstdcodec"
)

var lz4Pool = sync.Pool{New: func() any { return new(lz4.Compressor) }}

// boundedZstd is a zstd decoder that refuses to decode more than a block:
// for frames that do not declare their size.
var boundedZstd = sync.OnceValue(func() *zstd.Decoder {
	d, err := zstd.NewReader(nil, zstd.WithDecoderMaxMemory(BlockSize), zstd.WithDecoderConcurrency(1))
	if err != nil {
		panic(fmt.Sprintf("chunk: zstd decoder: %v", err)) // only for invalid options
	}
	return d
})

// compress appends the compressed form of raw to dst.
func compress(codec uint8, dst, raw []byte) ([]byte, error) {
	switch codec {
	case CodecNone:
		return append(dst, raw...), nil
	case CodecLZ4:
		start := len(dst)
		bound := lz4.CompressBlockBound(len(raw))
		dst = grow(dst, bound)
		c := lz4Pool.Get().(*lz4.Compressor)
		n, err := c.CompressBlock(raw, dst[start:start+bound])
		lz4Pool.Put(c)
		if err != nil {
			return nil, fmt.Errorf("lz4 compress: %w", err)
		}
		if n == 0 && len(raw) > 0 { // incompressible: lz4 block of literals
			return nil, fmt.Errorf("lz4 compress: block did not fit its bound")
		}
		return dst[:start+n], nil
	case CodecZstd:
		return zstdcodec.Encode(dst, raw), nil
	}
	return nil, fmt.Errorf("unknown codec %d", codec)
}

// decompress decodes stored data (a format 1.0 data section, or one block)
// into dst, which has exactly the raw length. Its errors say what failed;
// callers mark them corrupt.
func decompress(codec uint8, dst, data []byte) error {
	switch codec {
	case CodecNone:
		if len(dst) != len(data) {
			return fmt.Errorf("stored %d bytes, want %d", len(data), len(dst))
		}
		copy(dst, data)
		return nil
	case CodecLZ4:
		n, err := lz4.UncompressBlock(data, dst)
		if err != nil {
			return fmt.Errorf("lz4: %w", err)
		}
		if n != len(dst) {
			return fmt.Errorf("lz4 gave %d bytes, want %d", n, len(dst))
		}
		return nil
	case CodecZstd:
		// A frame that declares its size is held to it by the decoder. One
		// that does not (the encoder leaves it out below 256 bytes) could
		// decode a few bytes into gigabytes: it gets a decoder bounded to a
		// block.
		var fh zstd.Header
		if err := fh.Decode(data); err != nil {
			return fmt.Errorf("zstd: %w", err)
		}
		var out []byte
		var err error
		switch {
		case fh.HasFCS && fh.FrameContentSize != uint64(len(dst)):
			return fmt.Errorf("zstd frame declares %d bytes, want %d", fh.FrameContentSize, len(dst))
		case fh.HasFCS:
			out, err = zstdcodec.Decode(dst[:0], data, uint64(len(dst)))
		case len(dst) > BlockSize:
			return fmt.Errorf("zstd frame of %d bytes does not declare its size", len(dst))
		default:
			out, err = boundedZstd().DecodeAll(data, dst[:0])
		}
		if err != nil {
			return fmt.Errorf("zstd: %w", err)
		}
		if len(out) != len(dst) {
			return fmt.Errorf("zstd gave %d bytes, want %d", len(out), len(dst))
		}
		if len(dst) > 0 && &out[0] != &dst[0] {
			copy(dst, out)
		}
		return nil
	}
	return fmt.Errorf("unknown codec %d", codec)
}

func grow(b []byte, n int) []byte {
	if cap(b)-len(b) >= n {
		return b[:len(b)+n]
	}
	nb := make([]byte, len(b)+n, 2*len(b)+n)
	copy(nb, b)
	return nb
}
