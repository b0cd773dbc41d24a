package main

/*
#include "loch.h"
*/
import "C"

import (
	"context"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// loch_dataset_read_frames (ABI 10) decodes frames start, start+stride,
// ... before stop (stop < 0: the video's end) of row's sample of a video
// column as uint8 [frames, height, width, 3], resized to width x height
// (0, 0: the video's size), into a PACKED tensor of one sample, reading
// the stored file by range from the keyframe before start.
//
//export loch_dataset_read_frames
func loch_dataset_read_frames(h C.uintptr_t, column *C.char, row, start, stop, stride C.int64_t, width, height C.int, out **C.loch_tensor, errOut **C.char) (st C.int) {
	return withColumn(h, column, errOut, func(col *loch.ColumnReader) error {
		ctx := context.Background()
		m, err := col.OpenMedia(ctx, int64(row))
		if err != nil {
			return err
		}
		if len(m.Shape) != 4 {
			return invalidf("read frames: column %q holds audio, not video", col.Info().Name)
		}
		if stop < 0 || int(stop) > m.Shape[0] {
			stop = C.int64_t(m.Shape[0])
		}
		if stride < 1 || start < 0 || start >= stop {
			return invalidf("read frames: frames [%d:%d:%d] of a video of %d frames", start, stop, stride, m.Shape[0])
		}
		count := int((stop - start + stride - 1) / stride)
		s, err := col.ReadFrames(ctx, int64(row), int(start), count, int(stride), int(width), int(height))
		if err != nil {
			return err
		}
		t := newTensor()
		packTensor(t, col.Info().DType, []loch.Sample{s})
		*out = t
		return nil
	})
}

// loch_dataset_read_audio (ABI 12) decodes count samples from sample
// start (count < 0: to the end) of row's sample of an audio column,
// resampled to rate (0: the stored rate; start and count count samples at
// that rate), as float32 [samples, channels] into a PACKED tensor of one
// sample: count samples, or fewer where the audio ends. A segment reads
// the stored file by range (a PCM wav: its header and the segment's
// bytes); its samples are those of the whole decode.
//
//export loch_dataset_read_audio
func loch_dataset_read_audio(h C.uintptr_t, column *C.char, row, start, count C.int64_t, rate C.int, out **C.loch_tensor, errOut **C.char) (st C.int) {
	return withColumn(h, column, errOut, func(col *loch.ColumnReader) error {
		info := col.Info()
		if info.SampleCompression != schema.AudioCompression {
			return invalidf("read audio: column %q is %s, not an audio column", info.Name, info.SampleCompression)
		}
		if start < 0 || rate < 0 {
			return invalidf("read audio: a segment from sample %d at %d Hz: want start >= 0 and rate >= 0", start, rate)
		}
		ctx := context.Background()
		var s loch.Sample
		var err error
		if count >= 0 {
			s, err = col.ReadAudioSegment(ctx, int64(row), int(rate), int(start), int(count))
		} else if s, err = col.ReadAudio(ctx, int64(row), int(rate)); err == nil {
			n := min(int(start), s.Shape[0])
			s = loch.Sample{Shape: []int{s.Shape[0] - n, s.Shape[1]}, Data: s.Data[n*s.Shape[1]*4:]}
		}
		if err != nil {
			return err
		}
		t := newTensor()
		packTensor(t, info.DType, []loch.Sample{s})
		*out = t
		return nil
	})
}
