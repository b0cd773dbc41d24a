package imaging

import (
	"fmt"
	"image"
)

// A Kernel is the filter Resize interpolates with.
type Kernel uint8

const (
	// Bilinear is the triangle filter, widened by the downscaling factor so
	// that a downscale averages every input pixel (antialiasing), as Pillow
	// and torchvision's antialias=True do. It computes in fixed point with
	// an 8-bit intermediate image, and resamples each channel on its own
	// (alpha is not premultiplied). The transforms resize with it.
	Bilinear Kernel = iota
	// CatmullRom is the Catmull-Rom cubic, widened the same way when
	// shrinking. It gives, bit for bit, what golang.org/x/image/draw's
	// CatmullRom gives for the same image held as an image.Gray (1
	// channel) or image.NRGBA (3 channels with alpha 255, 4 channels),
	// scaled into an image.NRGBA: colour weighted by alpha, float64
	// arithmetic. Ingest resizes with it. It takes 1, 3 or 4 channels.
	CatmullRom
)

func (k Kernel) String() string {
	switch k {
	case Bilinear:
		return "bilinear"
	case CatmullRom:
		return "catmull-rom"
	}
	return fmt.Sprintf("Kernel(%d)", uint8(k))
}

// Resize scales src, HWC uint8 pixels of srcH x srcW with c channels (1 to
// 4), to dstH x dstW with kernel k, into dst, which holds exactly
// dstH*dstW*c bytes and does not overlap src. Pixels are sampled at their
// centres. It is safe for concurrent use; its scratch comes from a pool.
func Resize(dst, src []byte, srcH, srcW, dstH, dstW, c int, k Kernel) error {
	return ResizeRegion(dst, src, srcH, srcW, dstH, dstW, c, k, Region{})
}

// A Region restricts a resize to part of its source and of its result.
type Region struct {
	// Src is the rectangle of the source image that is scaled to the
	// destination size; the empty rectangle means the whole image.
	Src image.Rectangle
	// Dst is the window of the scaled image that is computed and written
	// to dst; the empty rectangle means all of it. Pixels outside it are
	// not computed, so a resize followed by a crop costs only what the
	// crop keeps, and gives the same values.
	Dst image.Rectangle
}

// ResizeRegion is Resize restricted to r: the rectangle r.Src of the
// srcH x srcW image src is scaled to dstH x dstW, and the window r.Dst of
// that is written into dst, which holds exactly r.Dst.Dx()*r.Dst.Dy()*c
// bytes.
func ResizeRegion(dst, src []byte, srcH, srcW, dstH, dstW, c int, k Kernel, r Region) error {
	if r.Src.Empty() {
		r.Src = image.Rect(0, 0, srcW, srcH)
	}
	if r.Dst.Empty() {
		r.Dst = image.Rect(0, 0, dstW, dstH)
	}
	switch {
	case c < 1 || c > 4 || (k == CatmullRom && c == 2):
		return fmt.Errorf("resize %s: %d channels", k, c)
	case k != Bilinear && k != CatmullRom:
		return fmt.Errorf("resize: unknown kernel %s", k)
	case srcH < 0 || srcW < 0 || len(src) != srcH*srcW*c:
		return fmt.Errorf("resize: %d bytes of source for %dx%dx%d pixels", len(src), srcH, srcW, c)
	case dstH <= 0 || dstW <= 0:
		return fmt.Errorf("resize to %dx%d", dstW, dstH)
	case !r.Src.In(image.Rect(0, 0, srcW, srcH)):
		return fmt.Errorf("resize: source region %v outside the %dx%d image", r.Src, srcW, srcH)
	case !r.Dst.In(image.Rect(0, 0, dstW, dstH)):
		return fmt.Errorf("resize: window %v outside the %dx%d result", r.Dst, dstW, dstH)
	case len(dst) != r.Dst.Dx()*r.Dst.Dy()*c:
		return fmt.Errorf("resize: %d-byte buffer for %dx%dx%d pixels", len(dst), r.Dst.Dy(), r.Dst.Dx(), c)
	}
	s := scaling{
		tw: dstW, th: dstH, ox: r.Dst.Min.X, oy: r.Dst.Min.Y, ow: r.Dst.Dx(), oh: r.Dst.Dy(),
		stride: srcW * c, x0: r.Src.Min.X, y0: r.Src.Min.Y, w: r.Src.Dx(), h: r.Src.Dy(), c: c,
	}
	if k == CatmullRom {
		catmullRom(dst, src, s)
	} else {
		bilinear(dst, src, s)
	}
	return nil
}

// A scaling is one call's geometry: the w x h region at (x0, y0) of an
// image with rows of stride bytes and c channels is scaled to tw x th, of
// which the ow x oh window at (ox, oy) is computed.
type scaling struct {
	tw, th, ox, oy, ow, oh int
	stride, x0, y0, w, h   int
	c                      int
}
