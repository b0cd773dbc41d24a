package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// infoMediaRows is how many rows of a video or audio column info reads the
// chunk headers of (headers only: no sample bytes, no decoding).
const infoMediaRows = 1000

// infoMediaJSON summarizes a video or audio column's media entries
// (docs/format.md §3.2) over its first rows.
type infoMediaJSON struct {
	Rows      int64    `json:"rows"`         // rows read (at most infoMediaRows)
	Formats   []string `json:"formats"`      // "container/codec", sorted
	MinRate   float64  `json:"min_rate"`     // frames or samples per second
	MaxRate   float64  `json:"max_rate"`     //
	MinSecond float64  `json:"min_duration"` // seconds
	MaxSecond float64  `json:"max_duration"` //
}

// addMediaInfo fills the Media summary of the video and audio columns.
func addMediaInfo(ctx context.Context, d *loch.Dataset, cols []infoColumnJSON, s *schema.Schema) error {
	for i := range s.Columns {
		c := &s.Columns[i]
		if !c.SampleCompression.Media() {
			continue
		}
		col, err := d.Column(c.Name)
		if err != nil {
			return err
		}
		m := &infoMediaJSON{}
		for row := int64(0); row < min(d.Len(), infoMediaRows); row++ {
			ms, err := col.OpenMedia(ctx, row)
			if errors.Is(err, loch.ErrNotFound) {
				continue // null
			}
			if err != nil {
				return err
			}
			if f := ms.Container + "/" + ms.Codec; !slices.Contains(m.Formats, f) {
				m.Formats = append(m.Formats, f)
			}
			rate, sec := ms.Rate(), ms.Duration().Seconds()
			if m.Rows == 0 || rate < m.MinRate {
				m.MinRate = rate
			}
			if m.Rows == 0 || sec < m.MinSecond {
				m.MinSecond = sec
			}
			m.MaxRate, m.MaxSecond = max(m.MaxRate, rate), max(m.MaxSecond, sec)
			m.Rows++
		}
		slices.Sort(m.Formats)
		cols[i].Media = m
	}
	return nil
}

// printMediaInfo prints one line per video or audio column.
func printMediaInfo(w io.Writer, cols []infoColumnJSON) {
	for _, c := range cols {
		m := c.Media
		if m == nil || m.Rows == 0 {
			continue
		}
		unit := "fps"
		if c.Kind == schema.Audio {
			unit = "Hz"
		}
		fmt.Fprintf(w, "media of %s: %s; %s %s; %s s", c.Name, strings.Join(m.Formats, ", "),
			span(m.MinRate, m.MaxRate), unit, span(m.MinSecond, m.MaxSecond))
		if m.Rows == infoMediaRows {
			fmt.Fprintf(w, " (first %d rows)", infoMediaRows)
		}
		fmt.Fprintln(w)
	}
}

func span(lo, hi float64) string {
	if lo == hi {
		return fmt.Sprintf("%.4g", lo)
	}
	return fmt.Sprintf("%.4g..%.4g", lo, hi)
}
