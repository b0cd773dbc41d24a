package ingest

import (
	"fmt"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch/internal/mediatest"
	"github.com/lochdata/loch/schema"
)

// TestMediaFolder: video files kept byte for byte with their probed
// shapes, labels by class folder; a corrupt file fails naming it, or is
// skipped with SkipBad.
func TestMediaFolder(t *testing.T) {
	src := t.TempDir()
	a := mediatest.Video(t, src, "a.mp4", 32, 24, 25, 1, 10)
	b := mediatest.Video(t, src, "b.webm", 32, 24, 10, 1, 10)
	writeFile(t, filepath.Join(src, "walk", "a.mp4"), mediatest.Read(t, a))
	writeFile(t, filepath.Join(src, "run", "x", "b.webm"), mediatest.Read(t, b))
	writeFile(t, filepath.Join(src, "run", "notes.txt"), []byte("not media"))
	url := memURL(t)
	res, err := MediaFolder(t.Context(), src, url, schema.VideoCompression, Options{})
	require.NoError(t, err)
	require.EqualValues(t, 2, res.Rows)
	d := openDataset(t, url)
	vids := column(t, d, "video", true)
	require.Equal(t, mediatest.Read(t, b), vids[0].Data) // run < walk
	require.Equal(t, []int{10, 24, 32, 3}, vids[0].Shape)
	require.Equal(t, []int{25, 24, 32, 3}, vids[1].Shape)
	require.Equal(t, schema.VideoCompression, vids[1].Encoding)
	labels := column(t, d, "label", false)
	require.Equal(t, []int64{0}, int64s(t, labels[0]))

	writeFile(t, filepath.Join(src, "run", "bad.mp4"), mediatest.Read(t, a)[:300])
	_, err = MediaFolder(t.Context(), src, memURL(t), schema.VideoCompression, Options{})
	require.ErrorIs(t, err, ErrBadMedia)
	require.ErrorContains(t, err, filepath.Join(src, "run", "bad.mp4"))
	res, err = MediaFolder(t.Context(), src, memURL(t), schema.VideoCompression, Options{SkipBad: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Skipped)
}

// TestWebDatasetMedia: .mp4 and .flac members become video and audio
// columns that keep the member's bytes.
func TestWebDatasetMedia(t *testing.T) {
	dir := t.TempDir()
	var files []tarFile
	for i := 0; i < 3; i++ {
		v := mediatest.Read(t, mediatest.Video(t, dir, fmt.Sprintf("v%d.mp4", i), 16, 16, 5, 1, 5))
		a := mediatest.Read(t, mediatest.Audio(t, dir, fmt.Sprintf("a%d.flac", i), 8000, 1, 0.5))
		files = append(files, tarFile{fmt.Sprintf("s%d.mp4", i), v}, tarFile{fmt.Sprintf("s%d.flac", i), a}, tarFile{fmt.Sprintf("s%d.cls", i), []byte(fmt.Sprint(i))})
	}
	shard := filepath.Join(dir, "shard.tar")
	writeFile(t, shard, makeTar(t, files, false))
	url := memURL(t)
	_, err := WebDataset(t.Context(), []string{shard}, url, Options{})
	require.NoError(t, err)
	d := openDataset(t, url)
	s := d.Schema()
	mp4, _ := s.Column("mp4")
	flac, _ := s.Column("flac")
	require.Equal(t, schema.VideoCompression, mp4.SampleCompression)
	require.Equal(t, schema.AudioCompression, flac.SampleCompression)
	got := column(t, d, "flac", true)
	require.Equal(t, files[4].data, got[1].Data)
	require.Equal(t, []int{4000, 1}, got[1].Shape)
}

// TestCOCOMedia: a COCO-style file whose "images" are all video files makes
// a video column that keeps them, with the boxes and labels as for images.
func TestCOCOMedia(t *testing.T) {
	dir := t.TempDir()
	mediatest.Video(t, dir, "a.mp4", 32, 24, 10, 1, 5)
	mediatest.Video(t, dir, "b.webm", 32, 24, 10, 0.5, 5)
	ann := filepath.Join(dir, "ann.json")
	writeFile(t, ann, []byte(`{"images": [{"id": 1, "file_name": "a.mp4"}, {"id": 2, "file_name": "b.webm"}],
		"categories": [{"id": 7, "name": "car"}],
		"annotations": [{"id": 1, "image_id": 2, "category_id": 7, "bbox": [1, 2, 3, 4], "iscrowd": 0}]}`))
	url := memURL(t)
	res, err := COCO(t.Context(), ann, dir, url, Options{})
	require.NoError(t, err)
	require.EqualValues(t, 2, res.Rows)
	d := openDataset(t, url)
	s := d.Schema()
	require.Equal(t, []string{"video", "boxes", "labels", "iscrowd", "image_id", "file_name"}, s.Names())
	vids := column(t, d, "video", true)
	require.Equal(t, []int{5, 24, 32, 3}, vids[1].Shape)
	require.Equal(t, mediatest.Read(t, filepath.Join(dir, "a.mp4")), vids[0].Data)
}
