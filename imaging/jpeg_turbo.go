//go:build cgo && !noturbojpeg

package imaging

/*
#cgo LDFLAGS: -lturbojpeg
#include <turbojpeg.h>
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/lochdata/loch/internal/base"
)

// TurboJPEG reports whether JPEG decoding uses libjpeg-turbo: true in the
// default build, which links -lturbojpeg (Debian: libturbojpeg0-dev, which
// `make sysdeps` installs). Build with -tags noturbojpeg where the library
// is missing.
const TurboJPEG = true

// decodeFlags: warnings (truncated or corrupt data) stop the decoder and
// count as errors, and progressive files with absurd numbers of scans are
// refused. The IDCT is the accurate one and chroma upsampling the smooth
// one (libjpeg-turbo's defaults, as Pillow and torchvision).
const decodeFlags = C.TJFLAG_STOPONWARNING | C.TJFLAG_LIMITSCANS

// fastUpsample replicates chroma samples, as Go's image/jpeg does; the
// tests use it to compare the two decoders' IDCTs alone.
const fastUpsample = C.TJFLAG_FASTUPSAMPLE

// A decompressor is a TurboJPEG handle. Each is used by one goroutine at a
// time, through the pool; the handle is destroyed by a cleanup when the
// pool drops the decompressor. A handle that has reported an error is
// destroyed at once instead of going back to the pool: libjpeg-turbo 2.1
// can leave it mid-header, and the next image would then fail.
type decompressor struct {
	h       C.tjhandle
	cleanup runtime.Cleanup
}

// liveHandles counts handles not yet destroyed (for the leak test).
var liveHandles atomic.Int64

var decompressors = sync.Pool{New: func() any {
	h := C.tjInitDecompress()
	if h == nil {
		return nil
	}
	d := &decompressor{h: h}
	liveHandles.Add(1)
	d.cleanup = runtime.AddCleanup(d, destroy, h)
	return d
}}

func destroy(h C.tjhandle) {
	C.tjDestroy(h)
	liveHandles.Add(-1)
}

// release returns d to the pool after a successful call, and destroys it
// after a failed one.
func (d *decompressor) release(failed bool) {
	if !failed {
		decompressors.Put(d)
		return
	}
	d.cleanup.Stop()
	destroy(d.h)
	d.h = nil
}

func getDecompressor() (*decompressor, error) {
	d, _ := decompressors.Get().(*decompressor)
	if d == nil {
		return nil, errors.New("jpeg: cannot create a TurboJPEG decompressor: " + C.GoString(C.tjGetErrorStr2(nil)))
	}
	return d, nil
}

// err turns the handle's last error into a Go error wrapping ErrDecode.
func (d *decompressor) err(op string) error {
	return base.Markf(ErrDecode, "decode image: jpeg %s: %s", op, C.GoString(C.tjGetErrorStr2(d.h)))
}

func cbytes(b []byte) *C.uchar { return (*C.uchar)(unsafe.Pointer(unsafe.SliceData(b))) }

// JPEGHeader reads a JPEG header: its size, its natural channels and
// whether it can be shrunk while decoding (DecodeJPEG).
func JPEGHeader(data []byte) (JPEGInfo, error) {
	if len(data) == 0 {
		return JPEGInfo{}, base.Markf(ErrDecode, "decode image: jpeg: no data")
	}
	d, err := getDecompressor()
	if err != nil {
		return JPEGInfo{}, err
	}
	var w, h, subsamp, cs C.int
	if C.tjDecompressHeader3(d.h, cbytes(data), C.ulong(len(data)), &w, &h, &subsamp, &cs) != 0 {
		err := d.err("header")
		d.release(true)
		return JPEGInfo{}, err
	}
	d.release(false)
	runtime.KeepAlive(data)
	info := JPEGInfo{Width: int(w), Height: int(h), Channels: 3, Scalable: true}
	switch cs {
	case C.TJCS_GRAY:
		info.Channels = 1
	case C.TJCS_CMYK, C.TJCS_YCCK:
		info.Scalable = false // decoded by the standard library, at full size
	}
	return info, nil
}

// DecodeJPEG decodes data into dst as w x h pixels of c channels (1, 3 or
// 4, alpha 255), shrinking it in the DCT domain by 1/2, 1/4 or 1/8 when
// w x h is the image's size at that scale (see Scaled).
func DecodeJPEG(dst, data []byte, w, h, c int) error {
	return turboDecode(dst, data, w, h, c, decodeFlags)
}

// turboDecode is decodeJPEG with the TurboJPEG flags given.
func turboDecode(dst, data []byte, w, h, c int, flags C.int) error {
	if len(dst) != w*h*c || len(data) == 0 {
		return fmt.Errorf("jpeg: %d-byte buffer for %dx%dx%d pixels", len(dst), w, h, c)
	}
	d, err := getDecompressor()
	if err != nil {
		return err
	}
	failed := true
	defer func() { d.release(failed) }()
	var hw, hh, subsamp, cs C.int
	if C.tjDecompressHeader3(d.h, cbytes(data), C.ulong(len(data)), &hw, &hh, &subsamp, &cs) != 0 {
		return d.err("header")
	}
	failed = false // the handle is sound again until tjDecompress2 fails
	// The decoder's own buffers (a progressive file's coefficients) are
	// as large as the full-size image, whatever the scale.
	if err := CheckSize("jpeg", int(hh), int(hw), c); err != nil {
		return err
	}
	// The buffer must hold what the decoder will write: it picks the
	// largest scale whose size fits within w x h, which is exactly w x h.
	denom := 0
	for _, k := range []int{1, 2, 4, 8} {
		if Scaled(int(hw), k) == w && Scaled(int(hh), k) == h {
			denom = k
			break
		}
	}
	if denom == 0 {
		return base.Markf(ErrDecode, "decode image: jpeg is %dx%d, not %dx%d at any scale", hw, hh, w, h)
	}
	if cs == C.TJCS_CMYK || cs == C.TJCS_YCCK {
		// libjpeg-turbo gives CMYK only as CMYK; the standard library
		// converts it (Adobe-inverted) to RGB.
		if denom != 1 {
			return base.Markf(ErrDecode, "decode image: a CMYK jpeg cannot be shrunk while decoding")
		}
		return decodeStd(dst, data, w, h, c)
	}
	var pf C.int
	switch c {
	case 1:
		pf = C.TJPF_GRAY
	case 3:
		pf = C.TJPF_RGB
	case 4:
		pf = C.TJPF_RGBX // the decoder fills X with 0xFF
	default:
		return fmt.Errorf("jpeg: %d channels, want 1, 3 or 4", c)
	}
	if C.tjDecompress2(d.h, cbytes(data), C.ulong(len(data)), cbytes(dst), C.int(w), C.int(w*c), C.int(h), pf, flags) != 0 {
		failed = true
		return d.err("decode")
	}
	runtime.KeepAlive(data)
	runtime.KeepAlive(dst)
	return nil
}
