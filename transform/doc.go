// Package transform runs image transforms on samples inside the loader's
// goroutines: decode (jpeg through libjpeg-turbo, png), resize, crops,
// flips, float conversion with normalisation, channel conversions and the
// HWC to CHW transpose.
//
// # Basics
//
// Images in loch are uint8 tensors in [height, width, channels] order
// (HWC) with 1, 3 or 4 channels, or png and jpeg files with a known
// decoded shape; an Image holds either. A Pipeline is a list of Steps,
// built once by Parse (or New) and then applied to many samples from many
// goroutines at once:
//
//	p, err := transform.Parse("decode,resize=256,center_crop=224,to_float,normalize=imagenet,chw")
//	shape, dtype, err := p.OutShape([]int{-1, -1, 3}) // [3 224 224] float32
//	out, err := p.Apply(img, rng, batch[i*size:(i+1)*size])
//
// Apply writes its result into the buffer it is given when that has room,
// so the loader's batch buffers are filled in place; intermediate images
// live in pooled scratch. Random steps draw from the rng that the caller
// passes with each sample, so a seeded rng per sample makes a run
// reproducible whatever the number of goroutines.
//
// # Spec grammar
//
// A spec is a comma-separated list of steps, applied left to right;
// spaces around names and arguments are ignored and an empty spec is the
// empty pipeline:
//
//	spec  = [ step { "," step } ]
//	step  = name [ "=" arg ]
//	size  = N | W "x" H          (positive integers, width first)
//
// The steps (W x H is width by height, as in "640x480"):
//
//	decode                 jpeg/png to uint8 HWC (already decoded pixels pass through);
//	                       before resize, shrinks JPEGs in the DCT domain
//	decode=full            decode without DCT-domain shrinking
//	resize=S               shorter side to S, aspect kept (longer side rounded down)
//	resize=WxH             to exactly W x H; bilinear, antialiased when shrinking
//	center_crop=size       the centred rectangle (N means N x N)
//	random_crop=size       a rectangle at a random offset
//	random_resized_crop=size[:scale=LO-HI][:ratio=LO-HI]
//	                       a random area fraction in scale (default 0.08-1) and aspect
//	                       ratio W/H in ratio (default 0.75-1.3333), resized to size
//	flip, flip=P           horizontal mirror with probability 0.5, or P
//	hflip                  horizontal mirror, always
//	to_float               uint8 to float32 in [0, 1] (v/255)
//	normalize=PRESET       (v - mean) / std per channel, PRESET imagenet or clip
//	normalize=M/S          M and S are one value, or one per channel joined by ':'
//	                       e.g. normalize=0.5/0.5, normalize=0.485:0.456:0.406/0.229:0.224:0.225
//	chw                    HWC to CHW
//	grayscale              to 1 channel (luma; alpha dropped)
//	rgb                    to 3 channels (gray repeated; alpha dropped)
//
// Video and audio samples (sample compression video and audio, kept as
// container bytes) have their own steps, decoded by FFmpeg (package media):
//
//	clip=N[:stride=S|:fps=F][:start=K|random][:size=WxH][:crop=C|:random_crop=C][:float]
//	                       N frames from start K (default: random, from the
//	                       sample's rng), every S-th frame (default 1) or the
//	                       frames nearest F per second; decoded from the
//	                       keyframe before the start, resized to W x H while
//	                       converting to RGB, then cropped to C (N or WxH, as
//	                       center_crop's size): crop centred as center_crop,
//	                       random_crop at an offset drawn after the start from
//	                       the same rng (top, then left); one crop for every
//	                       frame of the clip. uint8 [N, H, W, 3] (H, W: the
//	                       crop's, else the size's, else the video's), or with
//	                       float float32 [N, 3, H, W] in [0, 1]. A clip past
//	                       the end of the video is ErrDecode (the loader's skip
//	                       rule applies); a crop larger than the frames is
//	                       ErrInput
//	resample=R             decode audio at R samples per second (first step)
//	segment=N[:start=K|random]
//	                       N samples from K (default random, drawn from the
//	                       samples the stored shape counts, at the resampled
//	                       rate); shorter audio is padded with zeros at the
//	                       end. Only the segment is decoded (a seek to it);
//	                       its samples are those of the whole decode
//	mono                   the mean of the channels: [samples, 1]
//
// Audio comes out as float32 [samples, channels]; neighbouring audio steps
// run as one (resample, then segment, then mono). A video or audio
// sample's Image may carry a by-range Source instead of Data, given to a
// pipeline that DecodesPart (one that starts with a clip step, or whose
// first audio steps take a segment): clip then reads only the byte ranges
// it decodes (the container's index and the packets from the keyframe
// before the start), and segment those of the segment (a PCM wav: its
// header and the segment's bytes; other codecs: the packets from the
// segment less the codec's preroll, after the demuxer's search).
//
// The loader seeds each sample's rng from (seed, epoch, row id): a clip's
// start and random crop, like an image's random crop, are the same whatever
// the number of workers, and after a resume.
//
// Which inputs each step takes: resize, random_resized_crop, grayscale and
// rgb need HWC; resize and random_resized_crop need uint8; normalize needs
// float32; crops, flips, to_float and normalize take either layout. A step
// given an image it cannot take fails with a *StepError that names the
// step and the input's dtype, shape and layout and wraps ErrInput.
//
// # Errors
//
// Parse and New fail with errors that wrap ErrSpec. Apply fails with a
// *StepError naming the step and its input; it wraps ErrInput when the
// step cannot take that image (a pipeline that does not fit the column) and
// ErrDecode when the sample's bytes are corrupt, truncated or not the size
// declared, which is what a loader's skip_bad_samples skips.
//
// # JPEG decoding and the noturbojpeg build tag
//
// Pixel codecs live in package imaging, which every reader of loch decodes
// through. By default JPEG is decoded by libjpeg-turbo's TurboJPEG API through cgo,
// straight into the pipeline's buffer, with one decompressor per goroutine
// from a pool (destroyed when the pool drops it). It needs the library and
// its header at build time: `make sysdeps` installs Debian's
// libturbojpeg0-dev. Built with -tags noturbojpeg (or with CGO_ENABLED=0)
// the package decodes JPEG with the standard library's image/jpeg instead:
// the same API, 3 to 5 times slower (see BenchmarkDecodeJPEG), no
// DCT-domain shrinking, and pixels that differ slightly (by a level or two
// from the IDCT; in colour by more at sharp colour edges, because
// libjpeg-turbo upsamples chroma smoothly, as Pillow and torchvision do,
// where image/jpeg repeats it). TurboJPEG reports which one a binary has.
// PNG is always decoded by the standard library.
package transform
