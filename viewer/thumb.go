package viewer

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"net/http"
	"strconv"

	"golang.org/x/image/font"
	"golang.org/x/image/font/basicfont"
	"golang.org/x/image/math/fixed"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/schema"
)

// Thumbnail sizes: the longest side, in pixels; 0 asks for full size.
const (
	defaultThumb = 192
	minThumb     = 16
	maxThumb     = 2048
)

// immutable is the Cache-Control of responses named by a version id.
const immutable = "public, max-age=31536000, immutable"

// palette colours classes (class id modulo its length): Tableau 10.
var palette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255}, {148, 103, 189, 255},
	{140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255}, {188, 189, 34, 255}, {23, 190, 207, 255},
}

func classColor(c int64) color.RGBA {
	if c < 0 {
		c = -c
	}
	return palette[c%int64(len(palette))]
}

// hasThumb reports whether a column's samples can be shown as an image.
func hasThumb(c *schema.Column) bool {
	switch {
	case c.Kind == schema.Image, c.Kind == schema.Mask:
		return true
	case c.SampleCompression == schema.PNG || c.SampleCompression == schema.JPEG:
		return true
	}
	return false
}

// etag names a response by what determines its bytes.
func etag(parts ...string) string {
	h := sha256.New()
	for _, p := range parts {
		h.Write([]byte(p))
		h.Write([]byte{0})
	}
	return `"` + hex.EncodeToString(h.Sum(nil)[:12]) + `"`
}

// cached sets the immutable cache headers and reports whether the client
// already holds tag (and was answered 304).
func cached(w http.ResponseWriter, r *http.Request, tag string) bool {
	w.Header().Set("Cache-Control", immutable)
	w.Header().Set("ETag", tag)
	if r.Header.Get("If-None-Match") == tag {
		w.WriteHeader(http.StatusNotModified)
		return true
	}
	return false
}

// handleThumb serves a PNG thumbnail of an image, mask or image link
// sample, with the row's boxes and masks drawn on unless overlay=0.
func (s *Server) handleThumb(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	q := r.URL.Query()
	ref, err := s.sampleRef(ctx, r)
	if err != nil {
		s.fail(w, r, err, false)
		return
	}
	size, err := intParam(q, "size", defaultThumb, 0, maxThumb)
	if err == nil && size != 0 && size < minThumb {
		err = badf("parameter size=%d: want 0 (full size) or %d to %d", size, minThumb, maxThumb)
	}
	if err != nil {
		s.fail(w, r, err, false)
		return
	}
	overlay := q.Get("overlay") != "0"
	if !hasThumb(ref.col) && ref.col.Kind != schema.Link {
		s.fail(w, r, badf("column %q is a %s column: it has no thumbnail", ref.col.Name, kindOf(ref.col)), false)
		return
	}
	tag := etag("thumb", ref.version, ref.table, ref.col.Name, strconv.FormatInt(ref.pos, 10), strconv.FormatInt(size, 10), strconv.FormatBool(overlay))
	if cached(w, r, tag) {
		return
	}
	s.thumbMu.Lock()
	data, ok := s.thumbs.Get(tag)
	s.thumbMu.Unlock()
	if !ok {
		img, err := s.thumbnail(ctx, ref, int(size), overlay)
		if err != nil {
			w.Header().Del("Cache-Control")
			w.Header().Del("ETag")
			s.fail(w, r, err, false)
			return
		}
		var b bytes.Buffer
		if err := png.Encode(&b, img); err != nil {
			s.fail(w, r, fmt.Errorf("encode thumbnail: %w", err), false)
			return
		}
		data = b.Bytes()
		s.thumbMu.Lock()
		s.thumbs.Add(tag, data, int64(len(data)))
		s.thumbMu.Unlock()
	}
	w.Header().Set("Content-Type", "image/png")
	w.Header().Set("Content-Length", strconv.Itoa(len(data)))
	w.Write(data)
}

// thumbnail makes the picture of one sample at its thumbSize for size (0:
// as is), with overlays when asked.
func (s *Server) thumbnail(ctx context.Context, ref sampleRef, size int, overlay bool) (*image.RGBA, error) {
	cr, err := ref.d.Column(ref.col.Name)
	if err != nil {
		return nil, err
	}
	var pix []byte
	var shape []int
	switch {
	case ref.col.Kind == schema.Link:
		b, err := cr.Fetch(ctx, ref.pos)
		if err != nil {
			return nil, err
		}
		if pix, shape, err = imaging.DecodeAs(b, 3); errors.Is(err, imaging.ErrTooLarge) {
			return nil, fmt.Errorf("column %q row %d: the link's target: %w", ref.col.Name, ref.pos, err)
		} else if err != nil {
			return nil, badf("column %q row %d: the link's target is not a png or jpeg image: %v", ref.col.Name, ref.pos, err)
		}
	default:
		smp, err := cr.Read(ctx, ref.pos, nil)
		if err != nil {
			return nil, err
		}
		if smp.Null {
			return nil, notFoundf("column %q row %d is null", ref.col.Name, ref.pos)
		}
		if ref.col.Kind == schema.Mask {
			m := maskPicture(ref.col, smp)
			th, tw, _ := thumbSize(m.Bounds().Dy(), m.Bounds().Dx(), size)
			return scaleRGBA(m, th, tw), nil
		}
		if pix, shape, err = rgb(smp); err != nil {
			return nil, fmt.Errorf("column %q row %d: %w", ref.col.Name, ref.pos, err)
		}
	}
	h, w := shape[0], shape[1]
	th, tw, tiny := thumbSize(h, w, size)
	var img *image.RGBA
	switch {
	case tiny:
		img = scaleRGBA(toRGBA(pix, h, w), th, tw)
	case th != h || tw != w:
		dst := make([]byte, th*tw*3)
		if err := imaging.Resize(dst, pix, h, w, th, tw, 3, imaging.Bilinear); err != nil {
			return nil, err
		}
		img = toRGBA(dst, th, tw)
	default:
		img = toRGBA(pix, h, w)
	}
	if overlay && ref.col.Kind != schema.Link {
		if err := s.drawOverlays(ctx, ref, img, h, w); err != nil {
			return nil, err
		}
	}
	return img, nil
}

// rgb returns a decoded image sample as 3-channel pixels and its shape.
func rgb(smp loch.Sample) ([]byte, []int, error) {
	shape := smp.Shape
	c := 1
	switch len(shape) {
	case 2:
	case 3:
		c = shape[2]
	default:
		return nil, nil, badf("an image sample has shape %s: want [height, width] or [height, width, channels]", schema.FormatShape(shape))
	}
	if c != 1 && c != 3 && c != 4 {
		return nil, nil, badf("an image sample has %d channels: want 1, 3 or 4", c)
	}
	if c == 3 {
		return smp.Data, shape, nil
	}
	dst := make([]byte, shape[0]*shape[1]*3)
	if err := imaging.ConvertChannels(dst, smp.Data, c, 3); err != nil {
		return nil, nil, err
	}
	return dst, []int{shape[0], shape[1], 3}, nil
}

// fit returns the size of an h×w picture scaled so its longest side is
// size (never enlarged; size 0 keeps it).
func fit(h, w, size int) (int, int) {
	if size == 0 || (h <= size && w <= size) {
		return h, w
	}
	if h >= w {
		return size, max(1, w*size/h)
	}
	return max(1, h*size/w), size
}

// fullTiny is the box (longest side, pixels) that a tiny picture is shown
// in on a row page, which otherwise shows pictures at full size.
const fullTiny = 2 * defaultThumb

// enlarged returns the size of an h×w picture enlarged by the largest
// whole factor that keeps it in a box×box square, when that factor is at
// least 2: the picture is tiny.
func enlarged(h, w, box int) (int, int, bool) {
	if k := box / max(h, w, 1); k >= 2 {
		return h * k, w * k, true
	}
	return h, w, false
}

// thumbSize returns the size of the thumbnail (for size; 0: full size) of
// an h×w picture and whether the picture is tiny: a tiny one is enlarged
// by a whole factor into the size×size box (nearest neighbour, so that
// its pixels stay sharp squares and the overlays are drawn at the size
// shown), any other scaled to fit (never enlarged).
func thumbSize(h, w, size int) (th, tw int, tiny bool) {
	if size > 0 {
		if th, tw, tiny = enlarged(h, w, size); tiny {
			return th, tw, true
		}
	}
	th, tw = fit(h, w, size)
	return th, tw, false
}

// shownSize is the size at which a page shows the thumbnail (for size)
// of an h×w picture, and whether it is tiny: the thumbnail's size, but a
// tiny picture at full size (a row page) is enlarged by the browser into
// the fullTiny box, its pixels drawn as squares (CSS image-rendering:
// pixelated on .thumb.tiny).
func shownSize(h, w, size int) (int, int, bool) {
	if size == 0 {
		return enlarged(h, w, fullTiny)
	}
	return thumbSize(h, w, size)
}

func toRGBA(pix []byte, h, w int) *image.RGBA {
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for i := 0; i < h*w; i++ {
		copy(img.Pix[4*i:4*i+3], pix[3*i:3*i+3])
		img.Pix[4*i+3] = 255
	}
	return img
}

// scaleRGBA scales a picture to th×tw, nearest neighbour (masks, tiny
// pictures).
func scaleRGBA(src *image.RGBA, th, tw int) *image.RGBA {
	b := src.Bounds()
	if th == b.Dy() && tw == b.Dx() {
		return src
	}
	dst := image.NewRGBA(image.Rect(0, 0, tw, th))
	for y := 0; y < th; y++ {
		for x := 0; x < tw; x++ {
			dst.SetRGBA(x, y, src.RGBAAt(x*b.Dx()/tw, y*b.Dy()/th))
		}
	}
	return dst
}

// maskClass returns the class at (y, x) of a mask sample of shape [H, W]
// or [H, W, 1] (the value) or [H, W, K] (1 + the first instance set), 0
// for none.
func maskClass(c *schema.Column, smp loch.Sample, y, x int) int64 {
	w := smp.Shape[1]
	k := 1
	if len(smp.Shape) == 3 {
		k = smp.Shape[2]
	}
	base := (y*w + x) * k
	if k == 1 {
		return c.DType.Int(smp.Data, base)
	}
	for j := 0; j < k; j++ {
		if c.DType.Int(smp.Data, base+j) != 0 {
			return int64(j + 1)
		}
	}
	return 0
}

func maskOK(smp loch.Sample, c *schema.Column) bool {
	if len(smp.Shape) != 2 && len(smp.Shape) != 3 || c.DType.Variable() {
		return false
	}
	return schema.NumElements(smp.Shape)*c.DType.Size() <= len(smp.Data)
}

// maskPicture colours a mask sample alone, on black.
func maskPicture(c *schema.Column, smp loch.Sample) *image.RGBA {
	if !maskOK(smp, c) {
		return image.NewRGBA(image.Rect(0, 0, 1, 1))
	}
	h, w := smp.Shape[0], smp.Shape[1]
	img := image.NewRGBA(image.Rect(0, 0, w, h))
	for y := 0; y < h; y++ {
		for x := 0; x < w; x++ {
			col := color.RGBA{0, 0, 0, 255}
			if v := maskClass(c, smp, y, x); v != 0 {
				col = classColor(v)
			}
			img.SetRGBA(x, y, col)
		}
	}
	return img
}

// drawOverlays blends the row's masks onto img and draws its boxes, in
// the coordinates of the h×w original.
func (s *Server) drawOverlays(ctx context.Context, ref sampleRef, img *image.RGBA, h, w int) error {
	sch := ref.d.Schema()
	row := map[string]loch.Sample{}
	read := func(c *schema.Column) (loch.Sample, error) {
		if smp, ok := row[c.Name]; ok {
			return smp, nil
		}
		cr, err := ref.d.Column(c.Name)
		if err != nil {
			return loch.Sample{}, err
		}
		smp, err := cr.Read(ctx, ref.pos, nil)
		if err != nil {
			return loch.Sample{}, err
		}
		row[c.Name] = smp
		return smp, nil
	}
	b := img.Bounds()
	err := eachSample(sch, schema.Mask, read, func(c *schema.Column, smp loch.Sample) {
		if !maskOK(smp, c) {
			return
		}
		mh, mw := smp.Shape[0], smp.Shape[1]
		for y := 0; y < b.Dy(); y++ {
			for x := 0; x < b.Dx(); x++ {
				v := maskClass(c, smp, y*mh/b.Dy(), x*mw/b.Dx())
				if v == 0 {
					continue
				}
				blend(img, x, y, classColor(v))
			}
		}
	})
	if err != nil {
		return err
	}
	return eachSample(sch, schema.BBox, read, func(c *schema.Column, smp loch.Sample) {
		boxes := boxesOf(c, smp, h, w)
		cls, names := s.boxClasses(sch, len(boxes), read)
		sx, sy := float64(b.Dx())/float64(w), float64(b.Dy())/float64(h)
		for j, bx := range boxes {
			id, name := int64(j), ""
			if cls != nil {
				id, name = cls[j], names[j]
			}
			drawBox(img, int(bx[0]*sx), int(bx[1]*sy), int(bx[2]*sx), int(bx[3]*sy), classColor(id), name)
		}
	})
}

// eachSample calls fn with each column of sch of the given kind and its
// sample, read by read, that is not null; it stops at the first read that
// fails and returns its error.
func eachSample(sch schema.Schema, kind schema.Kind, read func(*schema.Column) (loch.Sample, error), fn func(*schema.Column, loch.Sample)) error {
	for i := range sch.Columns {
		c := &sch.Columns[i]
		if c.Kind != kind {
			continue
		}
		smp, err := read(c)
		if err != nil {
			return err
		}
		if !smp.Null {
			fn(c, smp)
		}
	}
	return nil
}

// boxClasses finds the class of each of n boxes: the first class-label
// column whose sample in the row has n labels.
func (s *Server) boxClasses(sch schema.Schema, n int, read func(*schema.Column) (loch.Sample, error)) ([]int64, []string) {
	for i := range sch.Columns {
		c := &sch.Columns[i]
		if c.Kind != schema.ClassLabel {
			continue
		}
		smp, err := read(c)
		if err != nil || smp.Null {
			continue
		}
		ids := labels(c, smp)
		if len(ids) != n || n == 0 {
			continue
		}
		names := make([]string, n)
		for j, v := range ids {
			names[j] = className(c, v)
		}
		return ids, names
	}
	return nil, nil
}

// boxesOf returns a bbox sample's boxes as pixel x0, y0, x1, y1 in an
// h×w image, whatever the column's format.
func boxesOf(c *schema.Column, smp loch.Sample, h, w int) [][4]float64 {
	v := numbers(c.DType, smp)
	out := make([][4]float64, 0, len(v)/4)
	for i := 0; i+4 <= len(v); i += 4 {
		a, b, cc, d := v[i], v[i+1], v[i+2], v[i+3]
		var bx [4]float64
		switch c.BBoxFormat {
		case schema.BBoxXYWH:
			bx = [4]float64{a, b, a + cc, b + d}
		case schema.BBoxCXCYWH:
			bx = [4]float64{a - cc/2, b - d/2, a + cc/2, b + d/2}
		default:
			bx = [4]float64{a, b, cc, d}
		}
		if c.BBoxNormalized {
			bx[0], bx[2] = bx[0]*float64(w), bx[2]*float64(w)
			bx[1], bx[3] = bx[1]*float64(h), bx[3]*float64(h)
		}
		out = append(out, bx)
	}
	return out
}

func blend(img *image.RGBA, x, y int, c color.RGBA) {
	p := img.PixOffset(x, y)
	const a = 115 // of 255: about 45 %
	for k, v := range [3]uint8{c.R, c.G, c.B} {
		img.Pix[p+k] = uint8((int(img.Pix[p+k])*(255-a) + int(v)*a) / 255)
	}
}

// drawBox draws a 2-pixel rectangle and, when name is set, the name on a
// filled tag above (or inside) its top-left corner.
func drawBox(img *image.RGBA, x0, y0, x1, y1 int, c color.RGBA, name string) {
	b := img.Bounds()
	clampX := func(x int) int { return max(b.Min.X, min(b.Max.X-1, x)) }
	clampY := func(y int) int { return max(b.Min.Y, min(b.Max.Y-1, y)) }
	x0, x1, y0, y1 = clampX(x0), clampX(x1), clampY(y0), clampY(y1)
	for t := 0; t < 2; t++ {
		for x := x0; x <= x1; x++ {
			img.SetRGBA(x, clampY(y0+t), c)
			img.SetRGBA(x, clampY(y1-t), c)
		}
		for y := y0; y <= y1; y++ {
			img.SetRGBA(clampX(x0+t), y, c)
			img.SetRGBA(clampX(x1-t), y, c)
		}
	}
	if name == "" {
		return
	}
	face := basicfont.Face7x13
	tw := font.MeasureString(face, name).Ceil() + 4
	ty := y0 - 13
	if ty < 0 {
		ty = y0
	}
	for y := ty; y < ty+13 && y < b.Max.Y; y++ {
		for x := x0; x < x0+tw && x < b.Max.X; x++ {
			img.SetRGBA(x, y, c)
		}
	}
	d := font.Drawer{Dst: img, Src: image.White, Face: face, Dot: fixed.P(x0+2, ty+10)}
	d.DrawString(name)
}
