package viewer

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// sampleRef is one sample named by a request: table, version id, column
// and row position, all checked.
type sampleRef struct {
	table, version string
	d              *loch.Dataset
	col            *schema.Column
	pos            int64
}

// sampleRef reads and checks the table path value and the v, col and row
// parameters.
func (s *Server) sampleRef(ctx context.Context, r *http.Request) (sampleRef, error) {
	q := r.URL.Query()
	t, d, err := s.version(ctx, r)
	if err != nil {
		return sampleRef{}, err
	}
	sch := d.Schema()
	name := q.Get("col")
	c, ok := sch.Column(name)
	if !ok {
		return sampleRef{}, badf("unknown column %q (columns: %s)", trunc(name, 80), strings.Join(sch.Names(), ", "))
	}
	pos, err := rowParam(q.Get("row"), d.Len())
	if err != nil {
		return sampleRef{}, err
	}
	return sampleRef{table: t.name, version: d.Version(), d: d, col: c, pos: pos}, nil
}

func rowParam(v string, n int64) (int64, error) {
	pos, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, badf("row %q: want a row number", trunc(v, 40))
	}
	if pos < 0 || pos >= n {
		return 0, notFoundf("row %d out of range: the version has %d rows", pos, n)
	}
	return pos, nil
}

// version returns the table of the path and a handle at the version id
// parameter v (required: URLs that carry one are immutable).
func (s *Server) version(ctx context.Context, r *http.Request) (*table, *loch.Dataset, error) {
	t, err := s.src.table(ctx, r.PathValue("table"))
	if err != nil {
		return nil, nil, err
	}
	v := r.URL.Query().Get("v")
	if v == "" {
		return nil, nil, badf("parameter v (the version id) is missing")
	}
	d, err := s.src.at(ctx, t, v)
	if err != nil {
		return nil, nil, err
	}
	return t, d, nil
}

func kindOf(c *schema.Column) string {
	if c.Kind == "" {
		return string(schema.Generic)
	}
	return string(c.Kind)
}

// cell is one sample as a page shows it.
type cell struct {
	Col     string
	Kind    string
	Null    bool
	Text    string // labels, numbers, a summary
	Pre     string // text or JSON, shown preformatted
	Thumb   string // URL of a thumbnail
	Full    string // URL of the sample as stored
	Media   string // "audio" or "video"
	Link    string // a link's target
	Changed bool
	Eager   bool // load the thumbnail at once (pages that are not the grid)
	// W and H are the size the thumbnail is shown at, when its picture's
	// shape is known (0 otherwise); Tiny marks a small picture shown
	// enlarged, its pixels kept sharp (shownSize).
	W, H int
	Tiny bool
}

// rowView is one row of a grid or a diff.
type rowView struct {
	Pos     int64
	ID      uint64
	Href    string
	Cells   []cell
	Change  string
	Version string
}

// rowViews reads the rows at positions of d for the grid (thumb pixels
// size) or a full row page (size 0).
func (s *Server) rowViews(ctx context.Context, table string, d *loch.Dataset, positions []int64, size int, full bool) ([]rowView, error) {
	sch := d.Schema()
	sc, err := scan(ctx, d)
	if err != nil {
		return nil, err
	}
	out := make([]rowView, len(positions))
	locs := make([]loch.RowLoc, len(positions))
	for i, p := range positions {
		if locs[i], err = sc.Locate(p); err != nil {
			return nil, err
		}
		out[i] = rowView{Pos: p, ID: locs[i].ID, Version: d.Version(),
			Href: fmt.Sprintf("/t/%s/row/%d?v=%s", url.PathEscape(table), p, d.Version())}
	}
	for ci := range sch.Columns {
		c := &sch.Columns[ci]
		cr, err := d.Column(c.Name)
		if err != nil {
			return nil, err
		}
		var pre []loch.Sample // the samples of a run of rows, read at once
		if readsSample(c) && contiguous(positions) {
			if pre, err = cr.ReadRange(ctx, positions[0], positions[len(positions)-1]+1); err != nil {
				return nil, err
			}
		}
		for i, p := range positions {
			var smp *loch.Sample
			if pre != nil {
				smp = &pre[i]
			}
			cl, err := s.cellOf(ctx, table, d, cr, c, p, size, full, smp)
			if err != nil {
				return nil, err
			}
			if cl.Thumb != "" && c.Kind != schema.Link {
				// The picture's shape, from its chunk's header: the
				// size the thumbnail is shown at.
				shape, _, err := sc.SampleInfo(ctx, sc.Slot(locs[i], c.UID))
				if err != nil {
					return nil, err
				}
				if shape == nil {
					cl = cell{Col: cl.Col, Kind: cl.Kind, Null: true}
				} else if len(shape) >= 2 {
					cl.H, cl.W, cl.Tiny = shownSize(shape[0], shape[1], size)
				}
			}
			out[i].Cells = append(out[i].Cells, cl)
		}
	}
	return out, nil
}

// readsSample reports whether a cell of column c shows the sample itself
// (not a thumbnail or player that fetches it later).
func readsSample(c *schema.Column) bool {
	return !hasThumb(c) && !isMedia(c)
}

// isMedia reports whether a column's samples are played: video and audio
// files (kept as ingested, or bytes) and waveform tensors.
func isMedia(c *schema.Column) bool {
	return c.SampleCompression.Media() || c.DType == schema.Bytes && (c.Kind == schema.Audio || c.Kind == schema.Video) || c.Kind == schema.Audio && !c.DType.Variable()
}

// contiguous reports whether positions are a run p, p+1, ... (not empty).
func contiguous(positions []int64) bool {
	for i := 1; i < len(positions); i++ {
		if positions[i] != positions[i-1]+1 {
			return false
		}
	}
	return len(positions) > 0
}

// cellOf renders one sample; pre, when not nil, is the sample already read.
func (s *Server) cellOf(ctx context.Context, table string, d *loch.Dataset, cr *loch.ColumnReader, c *schema.Column, pos int64, size int, full bool, pre *loch.Sample) (cell, error) {
	cl := cell{Col: c.Name, Kind: kindOf(c)}
	base := fmt.Sprintf("/t/%s/", url.PathEscape(table))
	params := url.Values{"v": {d.Version()}, "col": {c.Name}, "row": {strconv.FormatInt(pos, 10)}}
	sampleURL := base + "sample?" + params.Encode()
	if hasThumb(c) {
		// The thumbnail reads the sample; the grid does not.
		p := url.Values{"v": {d.Version()}, "col": {c.Name}, "row": {strconv.FormatInt(pos, 10)}, "size": {strconv.Itoa(size)}}
		cl.Thumb = base + "thumb?" + p.Encode()
		cl.Full = sampleURL
		return cl, nil
	}
	if isMedia(c) {
		cl.Media = string(c.Kind)
		cl.Full = sampleURL
		return cl, nil
	}
	var smp loch.Sample
	var err error
	if pre != nil {
		smp = *pre
	} else if smp, err = cr.Read(ctx, pos, nil); err != nil {
		return cell{}, err
	}
	if smp.Null {
		cl.Null = true
		return cl, nil
	}
	limit := func(t string) string {
		if full {
			return t
		}
		return trunc(t, maxText)
	}
	switch {
	case c.Kind == schema.ClassLabel:
		cl.Text = limit(labelText(c, smp))
	case c.Kind == schema.Link:
		cl.Link = string(smp.Data)
		cl.Full = sampleURL
		if looksLikeImage(cl.Link) {
			p := url.Values{"v": {d.Version()}, "col": {c.Name}, "row": {strconv.FormatInt(pos, 10)}, "size": {strconv.Itoa(size)}}
			cl.Thumb = base + "thumb?" + p.Encode()
		}
	case c.DType == schema.Text:
		cl.Pre = limit(string(smp.Data))
	case c.DType == schema.JSON:
		cl.Pre = limit(jsonText(smp.Data))
	case c.DType == schema.Bytes:
		cl.Text = fmt.Sprintf("%d bytes", len(smp.Data))
		cl.Full = sampleURL
	case c.Kind == schema.BBox:
		n := len(numbers(c.DType, smp)) / 4
		cl.Text = fmt.Sprintf("%d boxes (%s)", n, c.BBoxFormat)
		if full {
			cl.Text += ": " + tensorSummary(c, smp)
		}
	default:
		cl.Text = tensorSummary(c, smp)
	}
	return cl, nil
}

func looksLikeImage(link string) bool {
	l := strings.ToLower(link)
	if i := strings.IndexAny(l, "?#"); i >= 0 {
		l = l[:i]
	}
	return strings.HasSuffix(l, ".png") || strings.HasSuffix(l, ".jpg") || strings.HasSuffix(l, ".jpeg")
}

// handleSample serves one sample's bytes as stored (images), fetched
// (links), as ingested (video and audio, serveMedia) or raw, with its
// sniffed type, sandboxed.
func (s *Server) handleSample(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	ref, err := s.sampleRef(ctx, r)
	if err != nil {
		s.fail(w, r, err, false)
		return
	}
	if cached(w, r, etag("sample", ref.version, ref.table, ref.col.Name, strconv.FormatInt(ref.pos, 10))) {
		return
	}
	fail := func(err error) {
		w.Header().Del("Cache-Control")
		w.Header().Del("ETag")
		s.fail(w, r, err, false)
	}
	if ref.col.SampleCompression.Media() {
		if err := s.serveMedia(w, r, ref); err != nil {
			fail(err)
		}
		return
	}
	cr, err := ref.d.Column(ref.col.Name)
	var data []byte
	if err == nil {
		switch {
		case ref.col.Kind == schema.Link:
			data, err = cr.Fetch(ctx, ref.pos)
		default:
			var smp loch.Sample
			smp, err = cr.ReadEncoded(ctx, ref.pos)
			if err == nil && smp.Null {
				err = notFoundf("column %q row %d is null", ref.col.Name, ref.pos)
			}
			data = smp.Data
			if err == nil && ref.col.Kind == schema.Audio && !ref.col.DType.Variable() {
				if smp, err = cr.Read(ctx, ref.pos, nil); err == nil {
					data, err = wav(ref.col, smp, plainAudioRate)
				}
			} else if err == nil && smp.Encoding != schema.PNG && smp.Encoding != schema.JPEG && !ref.col.DType.Variable() {
				err = badf("column %q holds %s tensors: they have no file form (see the row page)", ref.col.Name, ref.col.DType)
			}
		}
	}
	if err != nil {
		fail(err)
		return
	}
	ct := http.DetectContentType(data)
	if ref.col.DType == schema.Text || ref.col.DType == schema.JSON || strings.HasPrefix(ct, "text/html") || strings.Contains(ct, "xml") {
		ct = "text/plain; charset=utf-8"
	}
	sendSample(w, r, ct, data)
}

// sampleCSP is the Content-Security-Policy of a sample served alone.
const sampleCSP = "sandbox; default-src 'none'; img-src 'self'; media-src 'self'"

// sendSample answers with a sample's bytes of type ct, sandboxed, with
// Range support (a player seeks).
func sendSample(w http.ResponseWriter, r *http.Request, ct string, data []byte) {
	w.Header().Set("Content-Type", ct)
	w.Header().Set("Content-Security-Policy", sampleCSP)
	http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(data))
}
