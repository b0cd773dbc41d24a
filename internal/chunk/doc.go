// Package chunk encodes and decodes chunk objects: consecutive samples of one
// column in their final dtype and shape, with a header of shapes, offsets and
// checksums (docs/format.md, section 3).
//
// A Builder collects samples and encodes them into one chunk object (format
// 1.1: lz4 and zstd data in blocks of raw bytes compressed alone, of
// BlockSize, or for lz4 SampleBlockSize of the mean sample; section 3.1). ParseHeader parses a chunk's header from its first bytes;
// Decode verifies and decompresses a whole chunk, Check verifies one
// without decompressing it, and DecodeDamaged keeps the sound blocks of a
// chunk whose data is damaged. For a range-readable chunk (codec none, or
// blocked), SpanBlocks, BlockRange and DecodeBlocks read the blocks that
// hold a span of samples, with one range read, verified block by block.
// Format 1.0 chunks are read as before: a compressed one only whole.
//
// A text or json chunk of few distinct values is written with a
// dictionary (format 1.8, section 3.3, dict.go): its header holds each
// value once and its raw data one index per sample. Header.Value (and
// Chunk.Sample, which uses it) is the one place a reader turns raw data
// into a sample's bytes, for every kind of chunk; readers that can use
// the dictionary itself take Entry and AppendIndices.
//
// Decoding never panics on corrupt input: every inconsistency is an error
// matching loch's ErrCorrupt (internal/base), and a chunk of a newer format
// version that this package cannot read one matching ErrNewerFormat.
package chunk
