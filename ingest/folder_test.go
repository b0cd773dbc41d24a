package ingest

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
)

// folderImage is one generated image of a test image folder.
type folderImage struct {
	class string
	label int64
	path  string
	data  []byte // file bytes
	isPNG bool
}

// makeFolder writes 3 class folders with 51 small images: png (RGB, gray,
// RGBA) and jpeg (RGB, gray), plus files ingest must ignore. It returns the
// images in the order ingest must produce them.
func makeFolder(t *testing.T) (string, []folderImage) {
	t.Helper()
	root := t.TempDir()
	classes := []string{"cat", "dog", "zebra"}
	var out []folderImage
	for ci, class := range classes {
		for i := range 17 {
			seed := uint64(ci*100 + i)
			w, h := 8+i%5, 6+i%3
			var (
				name  string
				data  []byte
				isPNG = i%3 != 2
			)
			switch {
			case isPNG:
				name = fmt.Sprintf("img_%02d.png", i)
				data = encodePNG(t, testImage(seed, w, h, []int{3, 1, 4}[i%3]))
			default:
				name = fmt.Sprintf("img_%02d.jpg", i)
				data = encodeJPEG(t, testImage(seed, w, h, 1+2*(i%2)))
			}
			p := filepath.Join(root, class, name)
			writeFile(t, p, data)
			out = append(out, folderImage{class: class, label: int64(ci), path: p, data: data, isPNG: isPNG})
		}
	}
	writeFile(t, filepath.Join(root, "README.txt"), []byte("top-level files are not images of a class"))
	writeFile(t, filepath.Join(root, "cat", "notes.txt"), []byte("not an image"))
	writeFile(t, filepath.Join(root, "cat", "._img_00.png"), []byte("macOS metadata, not an image"))
	writeFile(t, filepath.Join(root, ".cache", "x.png"), []byte("hidden folder"))
	return root, out
}

func TestImageFolderPNG(t *testing.T) {
	ctx := context.Background()
	root, imgs := makeFolder(t)
	url := filepath.Join(t.TempDir(), "ds")
	var prog recorder
	res, err := ImageFolder(ctx, root, url, Options{Progress: &prog, Parallelism: 4})
	require.NoError(t, err)
	require.EqualValues(t, len(imgs), res.Rows)
	require.True(t, res.Created)
	require.NotEmpty(t, res.Version)
	require.Zero(t, res.Skipped)

	var total int64
	for _, im := range imgs {
		total += int64(len(im.data))
	}
	// One report a job: a job takes up to maxGroupFiles files.
	require.Equal(t, (len(imgs)+maxGroupFiles-1)/maxGroupFiles, prog.adds)
	prog.adds = 0
	require.Equal(t, recorder{totalRows: int64(len(imgs)), totalBytes: total, rows: int64(len(imgs)), bytes: total, totals: 1}, prog)
	require.Equal(t, total, res.Bytes)

	d := openDataset(t, url)
	require.Equal(t, res.Version, d.Version())
	s := d.Schema()
	label, ok := s.Column("label")
	require.True(t, ok)
	require.Equal(t, []string{"cat", "dog", "zebra"}, label.ClassNames)
	require.Equal(t, schema.ClassLabel, label.Kind)
	image, ok := s.Column("image")
	require.True(t, ok)
	require.Equal(t, schema.PNG, image.SampleCompression)
	require.Equal(t, schema.Image, image.Kind)

	enc := column(t, d, "image", true)
	pix := column(t, d, "image", false)
	labels := column(t, d, "label", false)
	for i, im := range imgs {
		wantPix, wantShape := decoded(t, im.data)
		require.Equal(t, schema.PNG, enc[i].Encoding, "row %d", i)
		if im.isPNG {
			require.Equal(t, im.data, enc[i].Data, "png input %s must be stored byte for byte", im.path)
		} else {
			require.NotEqual(t, im.data, enc[i].Data)
		}
		// png is lossless: what was decoded at ingest is what is read.
		require.Equal(t, wantShape, pix[i].Shape, "row %d (%s)", i, im.path)
		require.Equal(t, wantPix, pix[i].Data, "row %d (%s)", i, im.path)
		require.Equal(t, []int64{im.label}, int64s(t, labels[i]), "row %d", i)
	}
}

// ingestFolder makes a folder with makeFolder and ingests it with o into a
// new in-memory dataset at url.
func ingestFolder(t *testing.T, o Options) (root, url string, imgs []folderImage) {
	t.Helper()
	root, imgs = makeFolder(t)
	url = memURL(t)
	_, err := ImageFolder(context.Background(), root, url, o)
	require.NoError(t, err)
	return root, url, imgs
}

// imageColumn returns the schema column "image" of d.
func imageColumn(t *testing.T, d *loch.Dataset) *schema.Column {
	t.Helper()
	s := d.Schema()
	c, ok := s.Column("image")
	require.True(t, ok)
	return c
}

func TestImageFolderJPEGKeepsJPEGBytes(t *testing.T) {
	_, url, imgs := ingestFolder(t, Options{ImageCompression: CompressJPEG})
	d := openDataset(t, url)
	enc := column(t, d, "image", true)
	for i, im := range imgs {
		require.Equal(t, schema.JPEG, enc[i].Encoding)
		_, shape := decoded(t, im.data)
		if !im.isPNG {
			require.Equal(t, im.data, enc[i].Data, "jpeg input %s must be stored byte for byte", im.path)
			require.Equal(t, shape, enc[i].Shape)
		} else if shape[2] == 4 {
			require.Equal(t, []int{shape[0], shape[1], 3}, enc[i].Shape, "alpha is dropped for jpeg")
		}
	}
}

func TestImageFolderLZ4ExactPixels(t *testing.T) {
	_, url, imgs := ingestFolder(t, Options{ImageCompression: CompressLZ4})
	d := openDataset(t, url)
	c := imageColumn(t, d)
	require.Equal(t, schema.LZ4, c.ChunkCompression)
	require.Equal(t, schema.SampleNone, c.SampleCompression)
	enc := column(t, d, "image", true)
	for i, im := range imgs {
		pix, shape := decoded(t, im.data)
		require.Equal(t, shape, enc[i].Shape)
		require.Equal(t, pix, enc[i].Data, "row %d (%s)", i, im.path)
	}
}

func TestImageFolderResize(t *testing.T) {
	_, url, imgs := ingestFolder(t, Options{Resize: Size{Width: 5, Height: 4}, Channels: 3})
	d := openDataset(t, url)
	c := imageColumn(t, d)
	require.Equal(t, schema.Shape{4, 5, 3}, c.Shape)
	pix := column(t, d, "image", false)
	require.Len(t, pix, len(imgs))
	for i := range pix {
		require.Equal(t, []int{4, 5, 3}, pix[i].Shape)
		require.Len(t, pix[i].Data, 4*5*3)
	}
}

func TestImageFolderBadFileCommitsNothing(t *testing.T) {
	ctx := context.Background()
	root, url, imgs := ingestFolder(t, Options{})
	before := openDataset(t, url)

	bad := imgs[20].path
	writeFile(t, bad, []byte("\x89PNG\r\n\x1a\n but not really"))
	res, err := ImageFolder(ctx, root, url, Options{Append: true})
	require.ErrorIs(t, err, ErrBadImage)
	require.ErrorContains(t, err, bad)
	require.Empty(t, res.Version)
	after := openDataset(t, url)
	require.Equal(t, before.Version(), after.Version())
	require.Equal(t, int64(len(imgs)), after.Len())

	// A truncated file whose header is fine fails too.
	good, err := os.ReadFile(imgs[21].path)
	require.NoError(t, err)
	writeFile(t, bad, good[:len(good)-20])
	_, err = ImageFolder(ctx, root, url, Options{Append: true})
	require.ErrorIs(t, err, ErrBadImage)
	require.ErrorContains(t, err, bad)

	// With SkipBad the row is skipped and counted.
	res, err = ImageFolder(ctx, root, url, Options{Append: true, SkipBad: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Skipped)
	require.Equal(t, []string{bad}, res.SkippedNames)
	require.EqualValues(t, len(imgs)-1, res.Rows)
	require.EqualValues(t, 2*len(imgs)-1, openDataset(t, url).Len())
}

func TestImageFolderUnreadableFileNewDataset(t *testing.T) {
	if os.Getuid() == 0 {
		t.Skip("root reads files whatever their mode")
	}
	ctx := context.Background()
	root, imgs := makeFolder(t)
	require.NoError(t, os.Chmod(imgs[5].path, 0))
	url := memURL(t)
	res, err := ImageFolder(ctx, root, url, Options{SkipBad: true})
	require.ErrorIs(t, err, fs.ErrPermission)
	require.ErrorContains(t, err, imgs[5].path)
	require.True(t, res.Created)
	require.Zero(t, openDataset(t, url).Len())
}

func TestImageFolderFailureLeavesEmptyDatasetThatRerunFills(t *testing.T) {
	ctx := context.Background()
	root, imgs := makeFolder(t)
	url := filepath.Join(t.TempDir(), "ds")
	good := imgs[40].data
	writeFile(t, imgs[40].path, []byte("garbage"))
	res, err := ImageFolder(ctx, root, url, Options{})
	require.ErrorIs(t, err, ErrBadImage)
	require.ErrorContains(t, err, imgs[40].path)
	require.True(t, res.Created)
	d := openDataset(t, url)
	require.Zero(t, d.Len(), "a failed ingest commits no rows")

	// The same command again, once the file is fixed, needs no Append.
	writeFile(t, imgs[40].path, good)
	res, err = ImageFolder(ctx, root, url, Options{})
	require.NoError(t, err)
	require.False(t, res.Created)
	require.EqualValues(t, len(imgs), openDataset(t, url).Len())

	// A third time it refuses: the dataset has rows.
	_, err = ImageFolder(ctx, root, url, Options{})
	require.ErrorIs(t, err, loch.ErrExists)
}

func TestImageFolderAppendMapsClassesByName(t *testing.T) {
	ctx := context.Background()
	root, url, imgs := ingestFolder(t, Options{})

	// A folder with only some of the classes keeps the dataset's labels.
	part := t.TempDir()
	writeFile(t, filepath.Join(part, "zebra", "z.png"), imgs[50].data)
	res, err := ImageFolder(ctx, part, url, Options{Append: true})
	require.NoError(t, err)
	require.EqualValues(t, 1, res.Rows)
	d := openDataset(t, url)
	labels := column(t, d, "label", false)
	require.Equal(t, []int64{2}, int64s(t, labels[len(labels)-1]))

	// An unknown class, or another compression, is refused.
	writeFile(t, filepath.Join(part, "yak", "y.png"), imgs[0].data)
	_, err = ImageFolder(ctx, part, url, Options{Append: true})
	require.ErrorIs(t, err, ErrIncompatible)
	require.ErrorContains(t, err, `"yak"`)
	_, err = ImageFolder(ctx, root, url, Options{Append: true, ImageCompression: CompressJPEG})
	require.ErrorIs(t, err, ErrIncompatible)
}

func TestImageFolderFromStore(t *testing.T) {
	ctx := context.Background()
	root, imgs := makeFolder(t)
	local := memURL(t)
	_, err := ImageFolder(ctx, root, local, Options{})
	require.NoError(t, err)

	// The same tree in a memory bucket gives the same rows.
	src := memURL(t) + "-src"
	st := openStore(t, src)
	for _, im := range imgs {
		rel, err := filepath.Rel(root, im.path)
		require.NoError(t, err)
		require.NoError(t, st.Put(ctx, filepath.ToSlash(rel), im.data))
	}
	require.NoError(t, st.Put(ctx, "README.txt", []byte("x")))
	remote := memURL(t)
	_, err = ImageFolder(ctx, src, remote, Options{})
	require.NoError(t, err)
	require.Equal(t, contents(t, openDataset(t, local)), contents(t, openDataset(t, remote)))
}

func TestImageFolderErrors(t *testing.T) {
	ctx := context.Background()
	_, err := ImageFolder(ctx, filepath.Join(t.TempDir(), "missing"), memURL(t), Options{})
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, "missing")

	empty := t.TempDir()
	_, err = ImageFolder(ctx, empty, memURL(t), Options{})
	require.ErrorIs(t, err, ErrInvalidSource)

	writeFile(t, filepath.Join(empty, "cat", "a.txt"), []byte("x"))
	_, err = ImageFolder(ctx, empty, memURL(t), Options{})
	require.ErrorIs(t, err, ErrInvalidSource)
	require.ErrorContains(t, err, "no image files")

	_, err = ImageFolder(ctx, empty, memURL(t), Options{ImageCompression: "gif"})
	require.ErrorIs(t, err, loch.ErrInvalidArgument)
}

func TestImageFolderCancelled(t *testing.T) {
	root, _ := makeFolder(t)
	ctx, cancel := context.WithCancel(context.Background())
	url := memURL(t)
	cancel()
	_, err := ImageFolder(ctx, root, url, Options{})
	require.True(t, errors.Is(err, context.Canceled), "got %v", err)
}

func TestImageFolderDanglingFile(t *testing.T) {
	ctx := context.Background()
	root, _ := makeFolder(t)
	link := filepath.Join(root, "dog", "img_99.png")
	require.NoError(t, os.Symlink(filepath.Join(root, "gone.png"), link))
	url := memURL(t)
	_, err := ImageFolder(ctx, root, url, Options{SkipBad: true})
	require.ErrorIs(t, err, fs.ErrNotExist)
	require.ErrorContains(t, err, link)
	_, err = loch.Open(ctx, url)
	require.ErrorIs(t, err, loch.ErrNotFound, "a missing file is found while listing, before the dataset is created")
}

// TestImageFolderFollowsSymlinks: a class folder that is a symbolic link,
// and a linked folder inside a class, hold their target's images, from a
// path and from a file:// URL (issue 35: class "linked" came out empty).
func TestImageFolderFollowsSymlinks(t *testing.T) {
	ctx := context.Background()
	root := t.TempDir()
	png := encodePNG(t, testImage(1, 4, 4, 3))
	for i := range 3 {
		writeFile(t, filepath.Join(root, "real", fmt.Sprintf("%d.png", i)), png)
		writeFile(t, filepath.Join(root, "more", "sub", fmt.Sprintf("%d.png", i)), png)
	}
	require.NoError(t, os.Symlink("real", filepath.Join(root, "linked")))
	require.NoError(t, os.MkdirAll(filepath.Join(root, "nested"), 0o755))
	require.NoError(t, os.Symlink(filepath.Join(root, "more"), filepath.Join(root, "nested", "in")))
	for _, src := range []string{root, "file://" + root} {
		url := memURL(t)
		res, err := ImageFolder(ctx, src, url, Options{})
		require.NoError(t, err, src)
		require.EqualValues(t, 12, res.Rows, src)
		d := openDataset(t, url)
		s := d.Schema()
		label, _ := s.Column("label")
		require.Equal(t, []string{"linked", "more", "nested", "real"}, label.ClassNames)
		var got []int64
		for _, s := range column(t, d, "label", false) {
			got = append(got, int64s(t, s)...)
		}
		require.Equal(t, []int64{0, 0, 0, 1, 1, 1, 2, 2, 2, 3, 3, 3}, got, src)
	}
}

// TestImageFolderSymlinkErrors: a link loop and a link to nothing are
// errors naming the link, before any dataset is made.
func TestImageFolderSymlinkErrors(t *testing.T) {
	ctx := context.Background()
	png := encodePNG(t, testImage(1, 4, 4, 3))
	for _, tc := range []struct {
		name, link, target, want string
	}{
		{"loop to the class", "cat/again", "..", "symbolic link loop"},
		{"loop to the root", "cat/deep/root", "../../..", "symbolic link loop"},
		{"class to nothing", "dog", "gone", "symbolic link to gone"},
		{"folder to nothing", "cat/sub", "gone", "symbolic link to gone"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := t.TempDir()
			writeFile(t, filepath.Join(root, "cat", "a.png"), png)
			link := filepath.Join(root, tc.link)
			require.NoError(t, os.MkdirAll(filepath.Dir(link), 0o755))
			require.NoError(t, os.Symlink(tc.target, link))
			url := memURL(t)
			_, err := ImageFolder(ctx, root, url, Options{})
			require.ErrorIs(t, err, ErrInvalidSource)
			require.ErrorContains(t, err, link)
			require.ErrorContains(t, err, tc.want)
			_, err = loch.Open(ctx, url)
			require.ErrorIs(t, err, loch.ErrNotFound)
		})
	}
}

// cancelAfter cancels an ingest once it has processed some rows.
type cancelAfter struct {
	recorder
	after  int64
	cancel context.CancelFunc
}

func (c *cancelAfter) Add(rows, bytes int64) {
	c.recorder.Add(rows, bytes)
	if c.rows >= c.after {
		c.cancel()
	}
}

func TestImageFolderInterruptedCommitsNothing(t *testing.T) {
	root, imgs := makeFolder(t)
	url := memURL(t)
	_, err := ImageFolder(context.Background(), root, url, Options{})
	require.NoError(t, err)
	before := openDataset(t, url)

	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	prog := &cancelAfter{after: 10, cancel: cancel}
	_, err = ImageFolder(ctx, root, url, Options{Append: true, Progress: prog, Parallelism: 2})
	require.ErrorIs(t, err, context.Canceled)
	require.GreaterOrEqual(t, prog.rows, int64(10))
	after := openDataset(t, url)
	require.Equal(t, before.Version(), after.Version())
	require.EqualValues(t, len(imgs), after.Len())
}

func TestImageFolderAppendChecksShape(t *testing.T) {
	ctx := context.Background()
	root, imgs := makeFolder(t)
	url := memURL(t)
	_, err := ImageFolder(ctx, root, url, Options{Resize: Size{Width: 5, Height: 4}})
	require.NoError(t, err)
	_, err = ImageFolder(ctx, root, url, Options{Append: true})
	require.ErrorIs(t, err, ErrInvalidSource)
	require.ErrorContains(t, err, imgs[0].path)
	require.ErrorContains(t, err, "shape")
	res, err := ImageFolder(ctx, root, url, Options{Append: true, Resize: Size{Width: 5, Height: 4}})
	require.NoError(t, err)
	require.EqualValues(t, len(imgs), res.Rows)
}

// TestImageFolderReusedReadBuffers ingests enough files for the buffers
// that jobs read files into to be reused many times over (several jobs a
// stage, several stages), and checks every stored JPEG byte for byte: a
// buffer reused before its rows were staged would corrupt earlier rows.
func TestImageFolderReusedReadBuffers(t *testing.T) {
	root := t.TempDir()
	var want [][]byte
	for c := range 4 {
		for i := range 200 {
			data := encodeJPEG(t, testImage(uint64(c*1000+i), 8+i%7, 8+i%5, 3))
			writeFile(t, filepath.Join(root, fmt.Sprintf("c%d", c), fmt.Sprintf("%03d.jpg", i)), data)
			want = append(want, data)
		}
	}
	url := memURL(t)
	res, err := ImageFolder(context.Background(), root, url, Options{ImageCompression: CompressJPEG, Parallelism: 2})
	require.NoError(t, err)
	require.EqualValues(t, len(want), res.Rows)
	got := column(t, openDataset(t, url), "image", true)
	for i := range want {
		require.Equal(t, want[i], got[i].Data, "row %d", i)
	}
}
