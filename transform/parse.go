package transform

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/lochdata/loch/internal/base"
)

// Parse reads a pipeline from its textual spec, the form that
// `loch bench --transform` and the Python SDK take. The grammar is in the
// package documentation; for example
//
//	decode,resize=256,center_crop=224,flip,to_float,normalize=imagenet,chw
//
// Errors wrap ErrSpec and name the step.
func Parse(spec string) (Pipeline, error) {
	if strings.TrimSpace(spec) == "" {
		return Pipeline{}, nil
	}
	var steps []Step
	for i, text := range strings.Split(spec, ",") {
		text = strings.TrimSpace(text)
		s, err := parseStep(text)
		if err != nil {
			return Pipeline{}, base.Markf(ErrSpec, "step %d %q: %v", i+1, text, err)
		}
		steps = append(steps, s)
	}
	return New(steps...)
}

func parseStep(text string) (Step, error) {
	name, arg, hasArg := strings.Cut(text, "=")
	name, arg = strings.TrimSpace(name), strings.TrimSpace(arg)
	noArg := func(s Step) (Step, error) {
		if hasArg {
			return nil, fmt.Errorf("%s takes no argument", name)
		}
		return s, nil
	}
	needArg := func(form string) error {
		if !hasArg || arg == "" {
			return fmt.Errorf("%s needs an argument: %s=%s", name, name, form)
		}
		return nil
	}
	if s, ok, err := parseMediaStep(name, arg, hasArg); ok {
		return s, err
	}
	switch name {
	case "":
		return nil, fmt.Errorf("empty step")
	case "decode":
		if !hasArg {
			return Decode(), nil
		}
		if arg != "full" {
			return nil, fmt.Errorf("decode takes no argument or \"full\"")
		}
		return FullDecode(), nil
	case "resize":
		if err := needArg("S or WxH"); err != nil {
			return nil, err
		}
		z, err := parseSize(arg, true)
		if err != nil {
			return nil, err
		}
		return resizeStep{z}, nil
	case "center_crop", "random_crop":
		if err := needArg("S or WxH"); err != nil {
			return nil, err
		}
		z, err := parseSize(arg, false)
		if err != nil {
			return nil, err
		}
		return cropStep{w: z.w, h: z.h, random: name == "random_crop"}, nil
	case "random_resized_crop":
		if err := needArg("S or WxH[:scale=LO-HI][:ratio=LO-HI]"); err != nil {
			return nil, err
		}
		return parseRRC(arg)
	case "flip":
		if !hasArg {
			return Flip(0.5), nil
		}
		p, err := strconv.ParseFloat(arg, 64)
		if err != nil || !(p >= 0 && p <= 1) {
			return nil, fmt.Errorf("flip probability %q, want a number in [0, 1]", arg)
		}
		return Flip(p), nil
	case "hflip":
		return noArg(HFlip())
	case "to_float":
		return noArg(ToFloat())
	case "normalize":
		if err := needArg("imagenet, clip or MEAN/STD (values per channel joined by ':')"); err != nil {
			return nil, err
		}
		return parseNormalize(arg)
	case "chw":
		return noArg(ToCHW())
	case "grayscale":
		return noArg(Grayscale())
	case "rgb":
		return noArg(RGB())
	}
	return nil, fmt.Errorf("unknown step %q (want one of %s)", name, strings.Join(stepNames, ", "))
}

var stepNames = []string{"decode", "resize", "center_crop", "random_crop", "random_resized_crop", "flip", "hflip", "to_float", "normalize", "chw", "grayscale", "rgb", "clip", "resample", "segment", "mono"}

// parseSize reads "S" or "WxH". For resize a single number is the shorter
// side; for crops it is a square.
func parseSize(arg string, shorter bool) (size, error) {
	ws, hs, pair := strings.Cut(arg, "x")
	bad := fmt.Errorf("size %q, want N or WxH with positive integers", arg)
	w, err := strconv.Atoi(strings.TrimSpace(ws))
	if err != nil {
		return size{}, bad
	}
	z := size{w: w, h: w}
	if pair {
		if z.h, err = strconv.Atoi(strings.TrimSpace(hs)); err != nil {
			return size{}, bad
		}
	} else if shorter {
		z = size{s: w}
	}
	if !z.valid() {
		return size{}, fmt.Errorf("size %q out of range 1 to 65536", arg)
	}
	return z, nil
}

func parseRRC(arg string) (Step, error) {
	parts := strings.Split(arg, ":")
	z, err := parseSize(parts[0], false)
	if err != nil {
		return nil, err
	}
	s := rrcStep{w: z.w, h: z.h, scale: defaultScale, ratio: defaultRatio}
	seen := map[string]bool{}
	for _, opt := range parts[1:] {
		key, val, _ := strings.Cut(opt, "=")
		key = strings.TrimSpace(key)
		if seen[key] {
			return nil, fmt.Errorf("%s given twice", key)
		}
		seen[key] = true
		lo, hi, ok := strings.Cut(val, "-")
		r := [2]float64{}
		var e1, e2 error
		r[0], e1 = strconv.ParseFloat(strings.TrimSpace(lo), 64)
		r[1], e2 = strconv.ParseFloat(strings.TrimSpace(hi), 64)
		if !ok || e1 != nil || e2 != nil {
			return nil, fmt.Errorf("%s %q, want LO-HI", key, val)
		}
		switch key {
		case "scale":
			s.scale = r
		case "ratio":
			s.ratio = r
		default:
			return nil, fmt.Errorf("unknown option %q (want scale=LO-HI or ratio=LO-HI)", key)
		}
	}
	return s, s.validate()
}

func parseNormalize(arg string) (Step, error) {
	if _, ok := presets[arg]; ok {
		return NormalizePreset(arg)
	}
	ms, ss, ok := strings.Cut(arg, "/")
	if !ok {
		return nil, fmt.Errorf("normalize %q, want imagenet, clip or MEAN/STD such as 0.5/0.5 or 0.485:0.456:0.406/0.229:0.224:0.225", arg)
	}
	mean, err := parseFloats(ms)
	if err != nil {
		return nil, fmt.Errorf("mean: %v", err)
	}
	std, err := parseFloats(ss)
	if err != nil {
		return nil, fmt.Errorf("std: %v", err)
	}
	s := normalizeStep{mean: mean, std: std}
	return s, s.validate()
}

func parseFloats(s string) ([]float32, error) {
	var out []float32
	for _, f := range strings.Split(s, ":") {
		v, err := strconv.ParseFloat(strings.TrimSpace(f), 32)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", f)
		}
		out = append(out, float32(v))
	}
	return out, nil
}

// validate checks the arguments of the built-in steps; New calls it.
func (r resizeStep) validate() error {
	if !r.to.valid() {
		return fmt.Errorf("resize to %s: sizes must be 1 to 65536", r.to)
	}
	return nil
}

func (s cropStep) validate() error {
	if !(size{w: s.w, h: s.h}).valid() {
		return fmt.Errorf("crop %dx%d: sizes must be 1 to 65536", s.w, s.h)
	}
	return nil
}

func (s rrcStep) validate() error {
	if !(size{w: s.w, h: s.h}).valid() {
		return fmt.Errorf("random_resized_crop to %dx%d: sizes must be 1 to 65536", s.w, s.h)
	}
	if !(s.scale[0] > 0 && s.scale[0] <= s.scale[1] && s.scale[1] <= 1) {
		return fmt.Errorf("scale %v, want 0 < LO <= HI <= 1", s.scale)
	}
	if !(s.ratio[0] > 0 && s.ratio[0] <= s.ratio[1] && s.ratio[1] < 1e6) {
		return fmt.Errorf("ratio %v, want 0 < LO <= HI", s.ratio)
	}
	return nil
}

func (s flipStep) validate() error {
	if !(s.p >= 0 && s.p <= 1) {
		return fmt.Errorf("flip probability %v, want 0 to 1", s.p)
	}
	return nil
}

func (s normalizeStep) validate() error {
	if len(s.mean) == 0 || len(s.mean) != len(s.std) || len(s.mean) > 4 {
		return fmt.Errorf("%d mean and %d std values, want as many of each: 1 or one per channel", len(s.mean), len(s.std))
	}
	for _, v := range s.std {
		if !(v > 0 || v < 0) {
			return fmt.Errorf("std %v, want no zero", s.std)
		}
	}
	return nil
}
