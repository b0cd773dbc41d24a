package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/imaging"
	"github.com/lochdata/loch/schema"
)

// contactFrames is the number of frames on a video's contact sheet, and
// contactWidth the width of each (height keeps the aspect ratio).
const (
	contactFrames = 8
	contactCols   = 4
	contactWidth  = 160
)

// showMedia describes a video or audio sample from its chunk header alone
// (no decoding); with outDir it writes the stored file as
// DIR/<column>.<container> and, for video, a contact sheet of evenly
// spaced frames as DIR/<column>.png.
func showMedia(ctx context.Context, col *loch.ColumnReader, c *schema.Column, row int64, outDir string, out showColumnJSON) (showColumnJSON, error) {
	m, err := col.OpenMedia(ctx, row)
	if err != nil {
		if errors.Is(err, loch.ErrNotFound) {
			out.Null, out.text = true, "null"
			return out, nil
		}
		return out, err
	}
	out.Shape = append([]int{}, m.Shape...)
	rate := fmt.Sprintf("%g fps", m.Rate())
	if c.SampleCompression == schema.AudioCompression {
		rate = fmt.Sprintf("%d Hz", m.RateNum)
	}
	out.text = fmt.Sprintf("%s %s %s/%s, %s, %.3g s, %d bytes", c.SampleCompression, schema.FormatShape(m.Shape), m.Container, m.Codec, rate, m.Duration().Seconds(), m.Bytes)
	out.Value = map[string]any{"container": m.Container, "codec": m.Codec, "rate": m.Rate(), "duration": m.Duration().Seconds(), "bytes": m.Bytes}
	if outDir == "" {
		return out, nil
	}
	enc, err := col.ReadEncoded(ctx, row)
	if err != nil {
		return out, err
	}
	out.File = filepath.Join(outDir, c.Name+"."+m.Container)
	if err := os.WriteFile(out.File, enc.Data, 0o644); err != nil {
		return out, fmt.Errorf("write %s: %w", out.File, err)
	}
	if c.SampleCompression == schema.VideoCompression {
		sheet, err := contactSheet(ctx, col, row, m)
		if err != nil {
			return out, fmt.Errorf("column %s row %d: contact sheet: %w", c.Name, row, err)
		}
		path := filepath.Join(outDir, c.Name+".png")
		if err := os.WriteFile(path, sheet, 0o644); err != nil {
			return out, fmt.Errorf("write %s: %w", path, err)
		}
	}
	return out, nil
}

// contactSheet decodes up to contactFrames evenly spaced frames, each
// contactWidth wide, and tiles them contactCols to a row as a png.
func contactSheet(ctx context.Context, col *loch.ColumnReader, row int64, m *loch.MediaSample) ([]byte, error) {
	frames, h, w := m.Shape[0], m.Shape[1], m.Shape[2]
	n := min(contactFrames, frames)
	tw := min(contactWidth, w)
	th := max(1, h*tw/w)
	stride := max(1, frames/n)
	clip, err := col.ReadFrames(ctx, row, 0, n, stride, tw, th)
	if err != nil {
		// The frame count does not divide evenly: take consecutive frames.
		if clip, err = col.ReadFrames(ctx, row, 0, n, 1, tw, th); err != nil {
			return nil, err
		}
	}
	cols := min(n, contactCols)
	rows := (n + cols - 1) / cols
	sw := cols * tw
	sheet := make([]byte, rows*th*sw*3)
	for k := 0; k < n; k++ {
		fr := clip.Data[k*th*tw*3 : (k+1)*th*tw*3]
		x0, y0 := (k%cols)*tw, (k/cols)*th
		for y := 0; y < th; y++ {
			copy(sheet[((y0+y)*sw+x0)*3:], fr[y*tw*3:(y+1)*tw*3])
		}
	}
	return imaging.Encode("png", sheet, []int{rows * th, sw, 3}, 0)
}
