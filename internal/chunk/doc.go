// Package chunk encodes and decodes chunk objects: consecutive samples of one
// column in their final dtype and shape, with a header of shapes, offsets and
// checksums (docs/format.md, section 3).
//
// A Builder collects samples and encodes them into one chunk object. Header
// parses a chunk's header from its first bytes; Decode verifies and
// decompresses a whole chunk. Decoding never panics on corrupt input: every
// inconsistency is an error matching loch's ErrCorrupt (internal/base), and
// a chunk of a newer major format version one matching ErrNewerFormat.
package chunk
