package transform

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/media"
	"github.com/lochdata/loch/schema"
)

// Encodings of media samples (sample compression video and audio).
const (
	encVideo = "video"
	encAudio = "audio"
)

// ClipStep decodes a clip of frames from a video sample ("clip=..." in a
// spec): Frames frames from a start frame, every Stride-th frame (or, with
// FPS > 0, the frames nearest to FPS frames per second), resized to
// Width x Height while decoding (0: the video's size), then cropped to
// CropW x CropH (0: no crop), as uint8 [T, H, W, 3], or with Float float32
// [T, 3, H, W] in [0, 1].
//
// Start < 0 draws the start uniformly from the starts that fit, from the
// sample's rng (seeded per row and epoch by the loader); otherwise the
// clip starts at frame Start. The crop is centred (offsets rounded as
// center_crop's), or with RandomCrop at an offset drawn after the start
// from the same rng, top before left, as random_crop's; every frame of a
// clip has the same crop. A clip that needs frames past the end of the
// video is an ErrDecode error (the loader's skip rule applies).
type ClipStep struct {
	Frames, Stride int
	FPS            float64
	Start          int
	Width, Height  int
	CropW, CropH   int
	RandomCrop     bool
	Float          bool
}

func (s ClipStep) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "clip=%d", s.Frames)
	if s.FPS > 0 {
		fmt.Fprintf(&b, ":fps=%g", s.FPS)
	} else if s.Stride > 1 {
		fmt.Fprintf(&b, ":stride=%d", s.Stride)
	}
	if s.Start >= 0 {
		fmt.Fprintf(&b, ":start=%d", s.Start)
	}
	if s.Width > 0 {
		fmt.Fprintf(&b, ":size=%dx%d", s.Width, s.Height)
	}
	if s.CropW > 0 {
		fmt.Fprintf(&b, ":%s", s.crop())
	}
	if s.Float {
		b.WriteString(":float")
	}
	return b.String()
}

// Random reports whether the start or the crop is drawn.
func (s ClipStep) Random() bool { return s.Start < 0 || (s.CropW > 0 && s.RandomCrop) }

// crop is the clip's crop as a crop step ("crop=WxH" or "random_crop=WxH"
// in a clip spec).
func (s ClipStep) crop() clipCrop {
	return clipCrop{cropStep{w: s.CropW, h: s.CropH, random: s.RandomCrop}}
}

// clipCrop prints a crop as a clip option.
type clipCrop struct{ cropStep }

func (c clipCrop) String() string {
	if c.random {
		return fmt.Sprintf("random_crop=%dx%d", c.w, c.h)
	}
	return fmt.Sprintf("crop=%dx%d", c.w, c.h)
}

func (s ClipStep) validate() error {
	if s.Frames < 1 || s.Stride < 1 || s.FPS < 0 || (s.Width > 0) != (s.Height > 0) || (s.CropW > 0) != (s.CropH > 0) || s.CropW < 0 || s.CropH < 0 {
		return fmt.Errorf("clip needs frames >= 1, stride >= 1, fps >= 0 and both or neither of width and height (and of the crop's)")
	}
	if s.CropW > 0 && s.Width > 0 && (s.CropW > s.Width || s.CropH > s.Height) {
		return fmt.Errorf("clip crop %dx%d is larger than its size %dx%d", s.CropW, s.CropH, s.Width, s.Height)
	}
	return nil
}

// Out is [Frames, H, W, 3] uint8 or [Frames, 3, H, W] float32. in is a
// video sample (Encoded "video") or, for sizing, its decoded shape
// [frames, height, width, channels].
func (s ClipStep) Out(in Image) (Image, error) {
	if (in.Encoded != "" && in.Encoded != encVideo) || len(in.Shape) != 4 && in.Shape != nil {
		return Image{}, inputErr("clip needs a video sample (sample compression video)")
	}
	h, w := -1, -1
	if len(in.Shape) == 4 {
		h, w = in.Shape[1], in.Shape[2]
	}
	if s.Width > 0 {
		h, w = s.Height, s.Width
	}
	if s.CropW > 0 {
		if (h >= 0 && h < s.CropH) || (w >= 0 && w < s.CropW) {
			return Image{}, inputErr("the video's frames (%dx%d) are smaller than the %dx%d crop", w, h, s.CropW, s.CropH)
		}
		h, w = s.CropH, s.CropW
	}
	if len(in.Shape) == 4 { // the frames decoded, before a crop
		dh, dw := in.Shape[1], in.Shape[2]
		if s.Width > 0 {
			dh, dw = s.Height, s.Width
		}
		if err := media.CheckFrames(s.Frames, dh, dw); err != nil {
			return Image{}, err
		}
	}
	if s.Float {
		return Image{Shape: []int{s.Frames, 3, h, w}, DType: schema.Float32, Layout: CHW}, nil
	}
	return Image{Shape: []int{s.Frames, h, w, 3}, DType: schema.Uint8}, nil
}

// Apply decodes the clip, seeking to the keyframe before its start, from
// in.Source when it is set (by range) or else from in.Data.
func (s ClipStep) Apply(in, out Image, rng *rand.Rand) error {
	if in.Encoded != encVideo || len(in.Shape) != 4 {
		return inputErr("clip needs a video sample (sample compression video)")
	}
	info := media.Info{Frames: in.Shape[0], Height: in.Shape[1], Width: in.Shape[2]}
	src, size := in.source()
	v, err := media.OpenVideo(src, size, info)
	if err != nil {
		return decodeErr("clip", err)
	}
	defer v.Close()
	stride := s.Stride
	if s.FPS > 0 {
		stride = max(1, int(math.Round(v.Info().FPS()/s.FPS)))
	}
	span := (s.Frames-1)*stride + 1
	start := s.Start
	if start < 0 {
		if span > info.Frames {
			start = 0 // Frames reports the clip as too long
		} else {
			start = rng.IntN(info.Frames - span + 1)
		}
	}
	h, w := info.Height, info.Width // decoded frame size
	if s.Width > 0 {
		h, w = s.Height, s.Width
	}
	ch, cw := h, w // output frame size
	top, left := 0, 0
	if s.CropW > 0 {
		if h < s.CropH || w < s.CropW {
			return inputErr("the video's frames (%dx%d) are smaller than the %dx%d crop", w, h, s.CropW, s.CropH)
		}
		ch, cw = s.CropH, s.CropW
		top, left = s.crop().offset(h, w, rng)
	}
	dst := out.Data
	if s.Float || s.CropW > 0 {
		if err := media.CheckFrames(s.Frames, h, w); err != nil {
			return err
		}
		dst = make([]byte, s.Frames*h*w*3)
	}
	if err := v.Frames(dst, start, s.Frames, stride, w, h); err != nil {
		return decodeErr("clip", err)
	}
	if s.CropW > 0 { // crop each frame, in place at the front of dst
		frame, cropped := h*w*3, ch*cw*3
		for t := 0; t < s.Frames; t++ {
			src := Image{Shape: []int{h, w, 3}, DType: schema.Uint8, Data: dst[t*frame : (t+1)*frame]}
			to := dst[t*cropped : (t+1)*cropped]
			if !s.Float {
				to = out.Data[t*cropped : (t+1)*cropped]
			}
			crop(to, src, top, left, ch, cw) // rows move forwards only: t*cropped <= t*frame
		}
	}
	if s.Float { // [T, H, W, 3] uint8 to [T, 3, H, W] float32 / 255
		plane := ch * cw
		for t := 0; t < s.Frames; t++ {
			src := dst[t*plane*3:]
			o := out.Data[t*plane*3*4:]
			for p := 0; p < plane; p++ {
				for c := 0; c < 3; c++ {
					binary.LittleEndian.PutUint32(o[4*(c*plane+p):], math.Float32bits(float32(src[3*p+c])/255))
				}
			}
		}
	}
	return nil
}

// AudioStep decodes an audio sample (or takes decoded float32
// [samples, channels]) and applies, in this order: resampling to Rate
// (0: keep), a segment of Segment samples (0: all) from Start (< 0: drawn
// from the sample's rng; shorter audio is padded with zeros at the end),
// and with Mono a mixdown to one channel (the mean of the channels). Its
// spec forms are "resample=R", "segment=N[:start=S]" and "mono"; Parse
// makes one AudioStep of each, and a resample step must come first (it is
// where the sample is decoded).
type AudioStep struct {
	Rate    int
	Segment int
	Start   int
	Mono    bool
}

func (s AudioStep) String() string {
	if n := btoi(s.Rate > 0) + btoi(s.Segment > 0) + btoi(s.Mono); n > 1 { // fused
		var parts []string
		for _, t := range []AudioStep{{Rate: s.Rate}, {Segment: s.Segment, Start: s.Start}, {Mono: s.Mono}} {
			if t.Rate > 0 || t.Segment > 0 || t.Mono {
				parts = append(parts, t.String())
			}
		}
		return strings.Join(parts, ",")
	}
	switch {
	case s.Rate > 0:
		return fmt.Sprintf("resample=%d", s.Rate)
	case s.Segment > 0 && s.Start >= 0:
		return fmt.Sprintf("segment=%d:start=%d", s.Segment, s.Start)
	case s.Segment > 0:
		return fmt.Sprintf("segment=%d", s.Segment)
	}
	return "mono"
}

// Random reports whether the segment's start is drawn.
func (s AudioStep) Random() bool { return s.Segment > 0 && s.Start < 0 }

// Out is float32 [samples, channels]. Unknown sample counts are -1.
func (s AudioStep) Out(in Image) (Image, error) {
	if (in.Encoded != "" && in.Encoded != encAudio) || (in.Shape != nil && len(in.Shape) != 2) {
		return Image{}, inputErr("%s needs an audio sample [samples, channels]", s)
	}
	n, c := -1, -1
	if len(in.Shape) == 2 {
		n, c = in.Shape[0], in.Shape[1]
	}
	if s.Rate > 0 && s.Segment == 0 {
		n = -1 // known after decoding: decode to count when the bytes are here
		if in.Encoded == encAudio && len(in.Data) > 0 {
			pcm, ch, err := audioSamples(in, s.Rate)
			if err != nil {
				return Image{}, err
			}
			n = len(pcm) / ch
		}
	}
	if s.Segment > 0 {
		n = s.Segment
	}
	if s.Mono {
		c = 1
	}
	return Image{Shape: []int{n, c}, DType: schema.Float32}, nil
}

// Apply decodes (when in is encoded) and transforms the audio. A segment
// of an encoded sample whose shape is known decodes only the segment
// (media.Audio.Read: a seek to it, less the codec's preroll), from
// in.Source when it is set (by range: a PCM wav reads its header and the
// segment's bytes) or else from in.Data, and its samples equal those of
// the whole decode cut at the same start. Without a segment (or a known
// shape) the sample is decoded whole, from in.Data.
func (s AudioStep) Apply(in, out Image, rng *rand.Rand) error {
	var pcm []float32
	var ch int
	var err error
	if s.Segment > 0 && in.Encoded == encAudio && len(in.Shape) == 2 {
		pcm, ch, err = s.segment(in, rng)
		if err != nil {
			return err
		}
	} else {
		if pcm, ch, err = audioSamples(in, s.Rate); err != nil {
			return err
		}
		if s.Segment > 0 {
			n := len(pcm) / ch
			seg := make([]float32, s.Segment*ch)
			if start := s.start(n, rng); start < n {
				copy(seg, pcm[start*ch:])
			}
			pcm = seg
		}
	}
	n := len(pcm) / ch
	if s.Mono && ch > 1 {
		m := make([]float32, n)
		for i := range m {
			var sum float32
			for c := 0; c < ch; c++ {
				sum += pcm[i*ch+c]
			}
			m[i] = sum / float32(ch)
		}
		pcm, ch = m, 1
	}
	if len(out.Data) != 4*len(pcm) {
		return inputErr("%s: output of %d bytes for %d samples", s, len(out.Data), len(pcm))
	}
	for i, v := range pcm {
		binary.LittleEndian.PutUint32(out.Data[4*i:], math.Float32bits(v))
	}
	return nil
}

// start is the segment's first sample in audio of n samples: Start, or
// drawn uniformly from the starts that fit (0 when none does).
func (s AudioStep) start(n int, rng *rand.Rand) int {
	if s.Start >= 0 {
		return s.Start
	}
	if n > s.Segment {
		return rng.IntN(n - s.Segment + 1)
	}
	return 0
}

// segment decodes just the segment of an encoded sample of in.Shape[0]
// samples (at its own rate; floor(samples * Rate / its rate) once
// resampled), zero-padded past the end.
func (s AudioStep) segment(in Image, rng *rand.Rand) ([]float32, int, error) {
	a, err := media.OpenAudio(in.source())
	if err != nil {
		return nil, 0, decodeErr("decode audio", err)
	}
	defer a.Close()
	info := a.Info()
	n := in.Shape[0]
	if s.Rate > 0 && s.Rate != info.SampleRate {
		n = int(int64(n) * int64(s.Rate) / int64(info.SampleRate))
	}
	ch := info.Channels
	if err := media.CheckAudio(s.Segment, ch); err != nil {
		return nil, 0, err
	}
	pcm := make([]float32, s.Segment*ch)
	if _, err := a.Read(pcm, s.Rate, s.start(n, rng)); err != nil {
		return nil, 0, decodeErr("decode audio", err)
	}
	return pcm, ch, nil
}

// DecodesPart reports the encoding ("video" or "audio", as the sample
// compression) of the samples of which p decodes only a part, given in
// Image.Source for reading by range: p starts with a clip step (video),
// or with audio steps whose fused run takes a segment (audio); "" for
// other pipelines, which need the whole sample.
func (p Pipeline) DecodesPart() string {
	if len(p.plan) == 0 {
		return ""
	}
	switch s := p.plan[0].(type) {
	case ClipStep:
		return encVideo
	case AudioStep:
		if s.Segment > 0 {
			return encAudio
		}
	}
	return ""
}

// source is an encoded media sample's container bytes and their size:
// Source (read by range) when it is set, else Data.
func (im Image) source() (io.ReaderAt, int64) {
	if im.Source != nil {
		return im.Source, im.Source.Size()
	}
	return bytes.NewReader(im.Data), int64(len(im.Data))
}

// fuseAudio merges a run of audio steps into one (resample, then segment,
// then mono, whatever their order in the run) and returns it with the
// number of steps it replaces.
func fuseAudio(steps []Step) (AudioStep, int) {
	f := AudioStep{Start: -1}
	n := 0
	for ; n < len(steps); n++ {
		a, ok := steps[n].(AudioStep)
		if !ok {
			break
		}
		if a.Rate > 0 {
			f.Rate = a.Rate
		}
		if a.Segment > 0 {
			f.Segment, f.Start = a.Segment, a.Start
		}
		f.Mono = f.Mono || a.Mono
	}
	return f, n
}

// audioSamples decodes an encoded audio sample at rate (0: its own) or
// reads decoded float32 [samples, channels].
func audioSamples(in Image, rate int) ([]float32, int, error) {
	if in.Encoded == encAudio {
		src, size := in.source()
		pcm, info, err := media.DecodeAudio(src, size, rate)
		if err != nil {
			return nil, 0, decodeErr("decode audio", err)
		}
		return pcm, info.Channels, nil
	}
	if rate > 0 {
		return nil, 0, inputErr("resample needs the encoded audio sample: put it first")
	}
	if len(in.Shape) != 2 || in.DType != schema.Float32 || in.Shape[1] < 1 {
		return nil, 0, inputErr("audio steps need float32 [samples, channels]")
	}
	pcm := make([]float32, len(in.Data)/4)
	for i := range pcm {
		pcm[i] = math.Float32frombits(binary.LittleEndian.Uint32(in.Data[4*i:]))
	}
	return pcm, in.Shape[1], nil
}

// parseMediaStep parses the clip, resample, segment and mono steps.
func parseMediaStep(name, arg string, hasArg bool) (Step, bool, error) {
	switch name {
	case "clip":
		if !hasArg {
			return nil, true, fmt.Errorf("clip needs an argument: clip=N[:stride=S|:fps=F][:start=K][:size=WxH][:crop=C|:random_crop=C][:float]")
		}
		parts := strings.Split(arg, ":")
		s := ClipStep{Stride: 1, Start: -1}
		var err error
		if s.Frames, err = strconv.Atoi(parts[0]); err != nil || s.Frames < 1 {
			return nil, true, fmt.Errorf("clip frames %q: want a positive integer", parts[0])
		}
		for _, p := range parts[1:] {
			k, v, _ := strings.Cut(p, "=")
			switch k {
			case "stride":
				s.Stride, err = strconv.Atoi(v)
			case "fps":
				s.FPS, err = strconv.ParseFloat(v, 64)
			case "start":
				if v != "random" {
					s.Start, err = strconv.Atoi(v)
				}
			case "size":
				var z size
				if z, err = parseSize(v, false); err == nil {
					s.Width, s.Height = z.w, z.h
				}
			case "crop", "random_crop":
				var z size
				if z, err = parseSize(v, false); err == nil {
					s.CropW, s.CropH, s.RandomCrop = z.w, z.h, k == "random_crop"
				}
			case "float":
				s.Float = true
			default:
				err = fmt.Errorf("unknown option %q (want stride, fps, start, size, crop, random_crop or float)", k)
			}
			if err != nil {
				return nil, true, fmt.Errorf("clip %s: %v", p, err)
			}
		}
		return s, true, s.validate()
	case "resample":
		r, err := strconv.Atoi(arg)
		if err != nil || r < 1 {
			return nil, true, fmt.Errorf("resample=R needs a positive sample rate, got %q", arg)
		}
		return AudioStep{Rate: r, Start: -1}, true, nil
	case "segment":
		n, opt, _ := strings.Cut(arg, ":")
		s := AudioStep{Start: -1}
		var err error
		if s.Segment, err = strconv.Atoi(n); err != nil || s.Segment < 1 {
			return nil, true, fmt.Errorf("segment=N needs a positive number of samples, got %q", n)
		}
		if opt != "" {
			k, v, _ := strings.Cut(opt, "=")
			if k != "start" {
				return nil, true, fmt.Errorf("segment option %q (want start)", k)
			}
			if v != "random" {
				if s.Start, err = strconv.Atoi(v); err != nil || s.Start < 0 {
					return nil, true, fmt.Errorf("segment start %q: want a sample index or random", v)
				}
			}
		}
		return s, true, nil
	case "mono":
		if hasArg {
			return nil, true, fmt.Errorf("mono takes no argument")
		}
		return AudioStep{Mono: true, Start: -1}, true, nil
	}
	return nil, false, nil
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

// decodeErr marks a media decoder's error as ErrDecode, except one of the
// decode limit (ErrTooLarge), which is no sign of damage.
func decodeErr(op string, err error) error {
	if errors.Is(err, ErrTooLarge) {
		return fmt.Errorf("%s: %w", op, err)
	}
	return base.Mark(ErrDecode, op, err)
}
