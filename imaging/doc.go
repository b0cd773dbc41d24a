// Package imaging owns every pixel operation in loch: the png and jpeg
// codecs, channel conversion and resizing of image tensors, uint8 pixels
// in [height, width, channels] order (HWC). Every path that touches
// pixels (writes, Column.Read and the loader, transforms, ingest) goes
// through here, so they all give the same pixels.
//
// # Codecs
//
// Decode, DecodeAs and DecodeInto decode png with the standard library and
// jpeg with libjpeg-turbo (DecodeJPEG), or with image/jpeg in a build with
// the noturbojpeg tag or without cgo (TurboJPEG says which). DecodeInto
// and DecodeJPEG write into a caller's buffer, as the loader's batch
// buffers are; DecodeJPEG can also shrink by 1/2, 1/4 or 1/8 while
// decoding. Encode writes png or jpeg; Config and JPEGHeader read a
// header. Inspect reads a JPEG, PNG or WebP header and walks the file's
// structure (markers, chunks and their CRCs) without decoding, at memory
// speed, and Validate proves the compressed data readable as cheaply as
// the decoder allows (a JPEG at 1/8 scale): ingest keeps files on their
// word. Undecodable bytes are ErrDecode.
//
// # Channels
//
// ConvertChannels converts between 1 (gray), 3 (RGB) and 4 (RGBA)
// channels, uint8 or float32, with one set of rules: gray is repeated,
// colour becomes gray by the BT.601 luma, alpha is dropped or added
// opaque. Decoding to a requested channel count uses it (or, for jpeg,
// libjpeg-turbo's own conversion, which takes gray from the file's luma
// plane).
//
// # Resizing
//
// Resize and ResizeRegion scale into a caller's buffer with a named
// Kernel: Bilinear (antialiased, fixed point; the transforms' resize) or
// CatmullRom (golang.org/x/image/draw's, bit for bit; ingest's resize).
// ResizeRegion scales part of an image and computes only a window of the
// result, which is how resize then crop, and random resized crops, cost
// only what they keep.
//
// Every function is safe for concurrent use; scratch buffers come from
// pools.
package imaging
