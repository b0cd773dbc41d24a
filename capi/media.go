package main

/*
#include "loch.h"
*/
import "C"

import (
	"context"

	"github.com/lochdata/loch"
)

// loch_dataset_read_frames (ABI 10) decodes frames start, start+stride,
// ... before stop (stop < 0: the video's end) of row's sample of a video
// column as uint8 [frames, height, width, 3], resized to width x height
// (0, 0: the video's size), into a PACKED tensor of one sample, reading
// the stored file by range from the keyframe before start.
//
//export loch_dataset_read_frames
func loch_dataset_read_frames(h C.uintptr_t, column *C.char, row, start, stop, stride C.int64_t, width, height C.int, out **C.loch_tensor, errOut **C.char) (st C.int) {
	defer guard(&st, errOut)
	col, err := columnOf(h, column)
	if err != nil {
		return fail(errOut, err)
	}
	ctx := context.Background()
	m, err := col.OpenMedia(ctx, int64(row))
	if err != nil {
		return fail(errOut, err)
	}
	if len(m.Shape) != 4 {
		return fail(errOut, invalidf("read frames: column %q holds audio, not video", col.Info().Name))
	}
	if stop < 0 || int(stop) > m.Shape[0] {
		stop = C.int64_t(m.Shape[0])
	}
	if stride < 1 || start < 0 || start >= stop {
		return fail(errOut, invalidf("read frames: frames [%d:%d:%d] of a video of %d frames", start, stop, stride, m.Shape[0]))
	}
	count := int((stop - start + stride - 1) / stride)
	s, err := col.ReadFrames(ctx, int64(row), int(start), count, int(stride), int(width), int(height))
	if err != nil {
		return fail(errOut, err)
	}
	t := newTensor()
	packTensor(t, col.Info().DType, []loch.Sample{s})
	*out = t
	return C.LOCH_OK
}
