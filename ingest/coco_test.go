package ingest

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// cocoJSON is a small instances file: 3 images (one without annotations),
// categories with non-contiguous ids in a non-sorted order.
const cocoJSON = `{
  "info": {"description": "test"},
  "images": [
    {"id": 42, "file_name": "b.jpg", "width": 8, "height": 6},
    {"id": 7, "file_name": "a.png", "width": 9, "height": 5},
    {"id": 9, "file_name": "sub/c.png", "width": 4, "height": 4}
  ],
  "annotations": [
    {"id": 1, "image_id": 42, "category_id": 18, "bbox": [1, 2, 3.5, 4], "area": 14, "iscrowd": 0, "segmentation": [[1, 2, 3, 4]]},
    {"id": 2, "image_id": 7, "category_id": 1, "bbox": [0, 0, 9, 5], "iscrowd": 1, "segmentation": {"counts": [1], "size": [5, 9]}},
    {"id": 3, "image_id": 42, "category_id": 1, "bbox": [0.25, 0.5, 1, 1], "iscrowd": 0}
  ],
  "categories": [{"id": 18, "name": "dog", "supercategory": "animal"}, {"id": 1, "name": "person"}]
}`

func writeCOCO(t *testing.T) (ann, imgDir string, imgs map[string][]byte) {
	dir := t.TempDir()
	imgDir = filepath.Join(dir, "images")
	imgs = map[string][]byte{
		"b.jpg":     encodeJPEG(t, testImage(1, 8, 6, 3)),
		"a.png":     encodePNG(t, testImage(2, 9, 5, 3)),
		"sub/c.png": encodePNG(t, testImage(3, 4, 4, 1)),
	}
	for name, data := range imgs {
		writeFile(t, filepath.Join(imgDir, filepath.FromSlash(name)), data)
	}
	ann = filepath.Join(dir, "instances.json")
	writeFile(t, ann, []byte(cocoJSON))
	return ann, imgDir, imgs
}

func TestCOCO(t *testing.T) {
	ctx := context.Background()
	ann, imgDir, imgs := writeCOCO(t)
	url := memURL(t)
	res, err := COCO(ctx, ann, imgDir, url, Options{})
	require.NoError(t, err)
	require.EqualValues(t, 3, res.Rows)

	d := openDataset(t, url)
	s := d.Schema()
	require.Equal(t, []string{"image", "boxes", "labels", "iscrowd", "image_id", "file_name"}, s.Names())
	boxesCol, _ := s.Column("boxes")
	require.Equal(t, schema.BBox, boxesCol.Kind)
	require.Equal(t, schema.BBoxXYWH, boxesCol.BBoxFormat)
	require.False(t, boxesCol.BBoxNormalized)
	labelsCol, _ := s.Column("labels")
	require.Equal(t, []string{"dog", "person"}, labelsCol.ClassNames)

	ids := column(t, d, "image_id", false)
	names := column(t, d, "file_name", false)
	boxes := column(t, d, "boxes", false)
	labels := column(t, d, "labels", false)
	crowd := column(t, d, "iscrowd", false)
	image := column(t, d, "image", true)
	want := []struct {
		id     int64
		name   string
		boxes  []float32
		labels []int64
		crowd  []byte
	}{
		{42, "b.jpg", []float32{1, 2, 3.5, 4, 0.25, 0.5, 1, 1}, []int64{0, 1}, []byte{0, 0}},
		{7, "a.png", []float32{0, 0, 9, 5}, []int64{1}, []byte{1}},
		{9, "sub/c.png", []float32{}, []int64{}, []byte{}},
	}
	for r, w := range want {
		require.Equal(t, []int64{w.id}, int64s(t, ids[r]))
		require.Equal(t, w.name, string(names[r].Data))
		require.Equal(t, []int{len(w.labels), 4}, boxes[r].Shape)
		b, err := loch.As[float32](boxes[r].Data)
		require.NoError(t, err)
		require.Equal(t, w.boxes, b)
		require.Equal(t, []int{len(w.labels)}, labels[r].Shape)
		require.Equal(t, w.labels, int64s(t, labels[r]))
		require.Equal(t, w.crowd, append([]byte{}, crowd[r].Data...))
		_, shape := decoded(t, imgs[w.name])
		require.Equal(t, shape, image[r].Shape)
	}
	require.Equal(t, imgs["a.png"], image[1].Data)

	// Appending maps categories by name to the dataset's labels.
	var f map[string]any
	require.NoError(t, json.Unmarshal([]byte(cocoJSON), &f))
	f["categories"] = []map[string]any{{"id": 1, "name": "person"}, {"id": 18, "name": "dog"}}
	swapped, err := json.Marshal(f)
	require.NoError(t, err)
	writeFile(t, ann, swapped)
	_, err = COCO(ctx, ann, imgDir, url, Options{Append: true})
	require.NoError(t, err)
	d = openDataset(t, url)
	labels = column(t, d, "labels", false)
	require.Equal(t, []int64{0, 1}, int64s(t, labels[3]))
}

func TestCOCOErrors(t *testing.T) {
	ctx := context.Background()
	ann, imgDir, _ := writeCOCO(t)

	url := memURL(t)
	_, err := COCO(ctx, ann, filepath.Join(imgDir, "nope"), url, Options{SkipBad: true})
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, filepath.Join(imgDir, "nope"))
	_, err = loch.Open(ctx, url)
	require.ErrorIs(t, err, loch.ErrNotFound, "a missing images directory is found before the dataset is created")

	require.NoError(t, os.Remove(filepath.Join(imgDir, "sub", "c.png")))
	_, err = COCO(ctx, ann, imgDir, memURL(t), Options{SkipBad: true})
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, filepath.Join(imgDir, "sub", "c.png"))
	writeFile(t, filepath.Join(imgDir, "sub", "c.png"), encodePNG(t, testImage(3, 4, 4, 1)))

	writeFile(t, filepath.Join(imgDir, "a.png"), []byte("broken"))
	res, err := COCO(ctx, ann, imgDir, memURL(t), Options{SkipBad: true})
	require.NoError(t, err)
	require.EqualValues(t, 2, res.Rows)
	require.Equal(t, []string{filepath.Join(imgDir, "a.png")}, res.SkippedNames)

	for name, doc := range map[string]string{
		"not json":         `{"images": [`,
		"no images":        `{"images": []}`,
		"unknown image":    `{"images": [{"id": 1, "file_name": "a.png"}], "annotations": [{"image_id": 2, "category_id": 1, "bbox": [0,0,1,1]}], "categories": [{"id": 1, "name": "x"}]}`,
		"unknown category": `{"images": [{"id": 1, "file_name": "a.png"}], "annotations": [{"image_id": 1, "category_id": 5, "bbox": [0,0,1,1]}], "categories": [{"id": 1, "name": "x"}]}`,
		"short bbox":       `{"images": [{"id": 1, "file_name": "a.png"}], "annotations": [{"image_id": 1, "category_id": 1, "bbox": [0,0,1]}], "categories": [{"id": 1, "name": "x"}]}`,
		"duplicate image":  `{"images": [{"id": 1, "file_name": "a.png"}, {"id": 1, "file_name": "b.png"}]}`,
		"duplicate name":   `{"images": [{"id": 1, "file_name": "a.png"}], "categories": [{"id": 1, "name": "x"}, {"id": 2, "name": "x"}]}`,
	} {
		writeFile(t, ann, []byte(doc))
		_, err := COCO(ctx, ann, imgDir, memURL(t), Options{})
		require.ErrorIs(t, err, ErrInvalidSource, name)
		require.ErrorContains(t, err, ann, name)
	}
}
