package ingest

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/internal/base"
	"github.com/lochdata/loch/schema"
)

// COCO ingests a COCO object detection dataset: the instances annotation
// file (a local path or a URL) and the directory (or URL prefix) holding the
// images it names. Each entry of "images", in the file's order, becomes a
// row:
//
//	image      kind image, the file images/<file_name>, stored as Options says
//	boxes      kind bbox, float32 [n, 4], xywh in pixels as COCO gives them
//	labels     kind class_label, int64 [n]
//	iscrowd    bool [n], COCO's crowd flag of each box
//	image_id   int64 scalar, COCO's image id
//	file_name  text
//
// The n boxes of an image are its annotations, in the file's order; an
// image without annotations has boxes [0, 4]. Labels are contiguous: label
// k is the k-th entry of "categories" in the file's order, and the class
// names are the categories' names. Segmentations, keypoints and captions
// are not ingested. When appending, labels follow the existing column's
// class names, matched by category name.
//
// When every "images" entry names a video file (mp4, webm, ...) or every
// one an audio file, the first column is a video (or audio) column named
// "video" ("audio") that keeps the files as they are (issue 16).
func COCO(ctx context.Context, annotations, images, url string, o Options) (Result, error) {
	return run(ctx, url, "coco", annotations, o, func(ctx context.Context, o *Options, ex *existing) (*plan, error) {
		if err := checkLocal(images); err != nil {
			return nil, err
		}
		f, idx, err := readCOCO(ctx, annotations)
		if err != nil {
			return nil, err
		}
		p := &plan{rows: int64(len(f.Images)), bytes: -1, schema: schema.Schema{Columns: f.columns(o)}}
		kind := f.mediaKind()
		if kind != "" { // issue 16: COCO-style video or audio annotations
			p.schema.Columns[0] = MediaColumn(string(kind), kind)
		}
		p.produce = func(ctx context.Context, final *schema.Schema, emit func(job[batch]) error) error {
			imgCol, _ := final.Column("image")
			labelCol, _ := final.Column("labels")
			convert := func(name string, data []byte) (loch.Sample, error) { return mediaSample(name, kind, data) }
			if kind == "" {
				convert = newImageConverter(imgCol, o).convert
			}
			labels := f.labels(labelCol)
			for _, img := range f.Images {
				err := emit(func(ctx context.Context) (batch, error) {
					var b batch
					ref := resolve(images, img.FileName)
					data, err := readAll(ctx, ref)
					if err != nil {
						return b, err
					}
					b.bytes = int64(len(data))
					s, err := convert(ref, data)
					if err != nil {
						return b, b.add(nil, err, ref, o.SkipBad)
					}
					row := idx.row(img, s, labels)
					if kind != "" {
						row[string(kind)] = row["image"]
						delete(row, "image")
					}
					return b, b.add(row, nil, ref, o.SkipBad)
				})
				if err != nil {
					return err
				}
			}
			return nil
		}
		return p, nil
	})
}

// readCOCO reads and indexes the annotation file.
func readCOCO(ctx context.Context, annotations string) (*cocoFile, *cocoIndex, error) {
	data, err := readAll(ctx, annotations)
	if err != nil {
		return nil, nil, err
	}
	var f cocoFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, nil, fmt.Errorf("%s: %w: not a COCO annotation file: %v", annotations, ErrInvalidSource, err)
	}
	idx, err := f.index()
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", annotations, err)
	}
	return &f, idx, nil
}

// columns returns the columns of a COCO dataset, the class names being the
// file's category names.
func (f *cocoFile) columns(o *Options) []schema.Column {
	names := make([]string, len(f.Categories))
	for i, c := range f.Categories {
		names[i] = c.Name
	}
	return []schema.Column{
		o.imageColumn("image"),
		{Name: "boxes", Kind: schema.BBox, DType: schema.Float32, Shape: schema.Shape{-1, 4}, BBoxFormat: schema.BBoxXYWH},
		{Name: "labels", Kind: schema.ClassLabel, DType: schema.Int64, Shape: schema.Shape{-1}, ClassNames: names},
		{Name: "iscrowd", DType: schema.Bool, Shape: schema.Shape{-1}},
		{Name: "image_id", DType: schema.Int64, Shape: schema.Shape{}},
		{Name: "file_name", Kind: schema.TextKind, DType: schema.Text},
	}
}

// labels returns the dataset label of each category, by its position in
// the file: its position among the class names of the dataset's label
// column.
func (f *cocoFile) labels(labelCol *schema.Column) []int64 {
	classes := classIndex(labelCol)
	labels := make([]int64, len(f.Categories))
	for k, c := range f.Categories {
		labels[k] = classes[c.Name] // present: checked by compatible
	}
	return labels
}

// row returns the row of an image whose image sample is s; labels are the
// categories' dataset labels (cocoFile.labels).
func (idx *cocoIndex) row(img cocoImage, s loch.Sample, labels []int64) loch.Row {
	anns := idx.byImage[img.ID]
	boxes := make([]float32, 0, 4*len(anns))
	lbls := make([]int64, 0, len(anns))
	crowd := make([]bool, 0, len(anns))
	for _, a := range anns {
		for _, v := range a.BBox {
			boxes = append(boxes, float32(v))
		}
		lbls = append(lbls, labels[idx.category[a.CategoryID]])
		crowd = append(crowd, a.IsCrowd != 0)
	}
	return loch.Row{
		"image":     s,
		"boxes":     loch.Tensor([]int{len(anns), 4}, boxes),
		"labels":    loch.Tensor([]int{len(anns)}, lbls),
		"iscrowd":   loch.Tensor([]int{len(anns)}, crowd),
		"image_id":  loch.Scalar(img.ID),
		"file_name": loch.String(img.FileName),
	}
}

// cocoFile is the part of a COCO instances file that ingest reads.
type cocoFile struct {
	Images      []cocoImage      `json:"images"`
	Annotations []cocoAnnotation `json:"annotations"`
	Categories  []struct {
		ID   int64  `json:"id"`
		Name string `json:"name"`
	} `json:"categories"`
}

type cocoImage struct {
	ID       int64  `json:"id"`
	FileName string `json:"file_name"`
}

type cocoAnnotation struct {
	ImageID    int64     `json:"image_id"`
	CategoryID int64     `json:"category_id"`
	BBox       []float64 `json:"bbox"`
	IsCrowd    int       `json:"iscrowd"`
}

// cocoIndex maps a COCO file's ids.
type cocoIndex struct {
	byImage  map[int64][]cocoAnnotation // annotations by image id, in file order
	category map[int64]int              // category id -> position in Categories
}

// index checks the file's references and indexes it.
func (f *cocoFile) index() (*cocoIndex, error) {
	idx := &cocoIndex{byImage: map[int64][]cocoAnnotation{}, category: map[int64]int{}}
	if len(f.Images) == 0 {
		return nil, base.Markf(ErrInvalidSource, "no images")
	}
	names := map[string]bool{}
	for k, c := range f.Categories {
		if _, dup := idx.category[c.ID]; dup {
			return nil, base.Markf(ErrInvalidSource, "category id %d appears twice", c.ID)
		}
		if names[c.Name] {
			return nil, base.Markf(ErrInvalidSource, "category name %q appears twice", c.Name)
		}
		idx.category[c.ID], names[c.Name] = k, true
	}
	seen := make(map[int64]bool, len(f.Images))
	for _, img := range f.Images {
		if seen[img.ID] {
			return nil, base.Markf(ErrInvalidSource, "image id %d appears twice", img.ID)
		}
		if img.FileName == "" {
			return nil, base.Markf(ErrInvalidSource, "image id %d has no file_name", img.ID)
		}
		seen[img.ID] = true
	}
	for i, a := range f.Annotations {
		if !seen[a.ImageID] {
			return nil, base.Markf(ErrInvalidSource, "annotation %d names image id %d, which is not in images", i, a.ImageID)
		}
		if _, ok := idx.category[a.CategoryID]; !ok {
			return nil, base.Markf(ErrInvalidSource, "annotation %d names category id %d, which is not in categories", i, a.CategoryID)
		}
		if len(a.BBox) != 4 {
			return nil, base.Markf(ErrInvalidSource, "annotation %d has bbox %v, want [x, y, width, height]", i, a.BBox)
		}
		for _, v := range a.BBox {
			if math.IsNaN(v) || math.IsInf(v, 0) {
				return nil, base.Markf(ErrInvalidSource, "annotation %d has bbox %v", i, a.BBox)
			}
		}
		idx.byImage[a.ImageID] = append(idx.byImage[a.ImageID], a)
	}
	return idx, nil
}

// mediaKind is the sample compression of the files that every "images"
// entry names when they are all video files or all audio files (a
// COCO-style annotation of clips), and "" otherwise: images.
func (f *cocoFile) mediaKind() schema.SampleCompression {
	var kind schema.SampleCompression
	for i, img := range f.Images {
		k := mediaKind(img.FileName)
		if k == "" || (i > 0 && k != kind) {
			return ""
		}
		kind = k
	}
	return kind
}
