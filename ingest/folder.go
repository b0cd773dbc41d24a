package ingest

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
	"iter"
	"maps"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/schema"
	"github.com/lochdata/loch/storage"
)

// ImageFolder ingests an image classification tree, the layout of ImageNet
// and of torchvision's ImageFolder: src/<class>/<file>, where src is a local
// directory or a store URL (s3://bucket/train, mem://name, ...). Each image
// file (png, jpg, jpeg, gif, bmp, webp, tif, tiff, at any depth below its
// class folder) becomes one row with two columns:
//
//	image  kind image, uint8 [height, width, channels], stored as Options says
//	label  kind class_label, int64 scalar: the index of the class folder
//
// The class names are the sorted names of the sub-folders of src. Rows come
// in class order, then sorted by folder and file name (the order of
// torchvision's ImageFolder). Names starting with '.' are skipped, as are
// files at the top level of src and files that are not images by their
// extension. Symbolic links to folders are followed; a link loop or a
// link to nothing is an error. When appending, labels follow the existing column's class
// names, which must include every class folder.
func ImageFolder(ctx context.Context, src, url string, o Options) (Result, error) {
	return classFolder(ctx, src, url, "imagefolder", imageFiles, o, o.imageColumn("image"),
		func(col schema.Column, o *Options) func(name string, data []byte) (loch.Sample, error) {
			return newImageConverter(&col, o).convert
		})
}

// classFolder ingests src/<class>/<file> trees of files of kind k: each
// file becomes a row of col (its sample made by the converter that conv
// returns for the final column) and label, the index of its class folder.
func classFolder(ctx context.Context, src, url, format string, k fileKind, o Options, col schema.Column,
	conv func(final schema.Column, o *Options) func(name string, data []byte) (loch.Sample, error)) (Result, error) {
	return run(ctx, url, format, src, o, func(ctx context.Context, o *Options, ex *existing) (*plan, error) {
		tree, err := listFolder(ctx, src, k)
		if err != nil {
			return nil, err
		}
		label := schema.Column{Name: "label", Kind: schema.ClassLabel, DType: schema.Int64, Shape: schema.Shape{}, ClassNames: tree.classes}
		p := &plan{
			schema: schema.Schema{Columns: []schema.Column{col, label}},
			rows:   int64(len(tree.files)),
			bytes:  tree.bytes,
		}
		p.produce = func(ctx context.Context, final *schema.Schema, emit func(job[batch]) error) error {
			defer tree.close()
			finalCol, _ := final.Column(col.Name)
			labelCol, _ := final.Column("label")
			convert := conv(*finalCol, o)
			labels := classIndex(labelCol)
			// Room for the jobs in flight (ordered's 2n+2) and those whose
			// rows wait in the stager (flushRows/maxGroupFiles), and more.
			slabs := make(slabPool, 4*o.Parallelism+16)
			for files := range groupFiles(tree.files) {
				err := emit(func(ctx context.Context) (batch, error) {
					var b batch
					slab := slabs.get(groupBytes(files))
					b.release = func() { slabs.put(slab) }
					var dir openDir
					defer dir.close()
					for _, f := range files {
						name := tree.name(f)
						data, err := tree.read(ctx, f, name, &slab, &dir)
						if err != nil {
							return b, err
						}
						b.bytes += int64(len(data))
						s, err := convert(name, data)
						row := loch.Row{col.Name: s, "label": loch.Scalar(labels[f.class])}
						if err := b.add(row, err, name, o.SkipBad); err != nil {
							return b, err
						}
					}
					return b, nil
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

// Jobs of an image folder's pipeline take consecutive files up to
// maxGroupFiles and maxGroupBytes (one file at least): a job per small file
// costs more in handing work between goroutines than in reading it.
const (
	maxGroupFiles = 32
	maxGroupBytes = 1 << 20
)

// groupFiles yields files in consecutive groups for one job each.
func groupFiles(files []folderFile) iter.Seq[[]folderFile] {
	return func(yield func([]folderFile) bool) {
		for len(files) > 0 {
			n, size := 1, files[0].size
			for n < len(files) && n < maxGroupFiles && size+files[n].size <= maxGroupBytes {
				size += files[n].size
				n++
			}
			if !yield(files[:n]) {
				return
			}
			files = files[n:]
		}
	}
}

// groupBytes is the room a job needs to read files into one buffer: their
// sizes, plus one byte for the read that finds the end of the last.
func groupBytes(files []folderFile) int {
	n := 1
	for _, f := range files {
		n += int(f.size)
	}
	return n
}

// slabBytes is the capacity of the buffers a slabPool keeps: a group's
// largest (maxGroupBytes), and the byte its last read needs.
const slabBytes = maxGroupBytes + 1

// slabPool recycles the buffers that an image folder's jobs read their
// files into, one a job, once the rows that hold the files' bytes are
// staged (Dataset.Extend copies them): a buffer per file, new pages to
// fault in and to collect, was a tenth of the ingest's CPU. It keeps up
// to cap buffers of slabBytes; get and put never block and are safe for
// concurrent use.
type slabPool chan []byte

// get returns an empty buffer with room for n bytes: a spare one when n
// fits slabBytes and there is one.
func (p slabPool) get(n int) []byte {
	if n <= slabBytes {
		select {
		case b := <-p:
			return b[:0]
		default:
		}
		return make([]byte, 0, slabBytes)
	}
	return make([]byte, 0, n)
}

// put keeps b for a later get, unless it is not of the pool's size (a
// larger group's) or the pool is full. Nothing may use b's bytes after.
func (p slabPool) put(b []byte) {
	if cap(b) != slabBytes {
		return
	}
	select {
	case p <- b:
	default:
	}
}

// folderFile is one image of an image folder. The listing holds one per
// file, so it holds no more than it must: the strings of the files of one
// folder share their class and dir, and the path is made when the file is
// read (folderTree.name).
type folderFile struct {
	class string
	dir   string // folder, relative to the root, '/'-separated
	base  string // file name
	size  int64
}

// folderTree is a listed image folder.
type folderTree struct {
	classes []string
	files   []folderFile
	bytes   int64
	root    string        // the local directory; "" for a URL
	store   storage.Store // for a URL; nil for a local directory
}

// name is f's local path, or its URL, for reading and for messages.
func (t *folderTree) name(f folderFile) string {
	if t.store == nil {
		return filepath.Join(t.root, filepath.FromSlash(f.dir), f.base)
	}
	return strings.TrimSuffix(t.store.URL(), "/") + "/" + f.dir + "/" + f.base
}

// read reads f, whose name (t.name) is name, and returns its bytes: a
// local file's appended to *slab (which grows, and whose bytes before stay
// where they are), opened relative to dir, an object's in a buffer of
// their own.
func (t *folderTree) read(ctx context.Context, f folderFile, name string, slab *[]byte, dir *openDir) ([]byte, error) {
	if t.store == nil {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		start := len(*slab)
		b, err := dir.appendFile(*slab, filepath.Join(t.root, filepath.FromSlash(f.dir)), f.base, name, f.size)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", name, plainPathError(err))
		}
		*slab = b
		return b[start:len(b):len(b)], nil
	}
	b, err := t.store.Get(ctx, f.dir+"/"+f.base)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", name, err)
	}
	return b, nil
}

func (t *folderTree) close() {
	if t.store != nil {
		t.store.Close()
	}
}

// listFolder lists the classes and image files below src, sorted.
func listFolder(ctx context.Context, src string, k fileKind) (*folderTree, error) {
	var (
		t   *folderTree
		err error
	)
	switch dir, ok := storage.LocalPath(src); {
	case !isURL(src):
		t, err = listLocalFolder(src, k)
	case ok:
		t, err = listLocalFolder(dir, k) // a file:// URL: the store's listing skips links
	default:
		t, err = listStoreFolder(ctx, src, k)
	}
	if err != nil {
		return nil, err
	}
	slices.Sort(t.classes)
	if len(t.classes) == 0 {
		t.close()
		return nil, fmt.Errorf("%s folder %s: %w: no class folders in it", k.word, src, ErrInvalidSource)
	}
	if len(t.files) == 0 {
		t.close()
		return nil, fmt.Errorf("%s folder %s: %w: no %s files (%s) in its class folders", k.word, src, ErrInvalidSource, k.word, k.list())
	}
	slices.SortFunc(t.files, func(a, b folderFile) int {
		return cmp.Or(cmp.Compare(a.class, b.class), cmp.Compare(a.dir, b.dir), cmp.Compare(a.base, b.base))
	})
	for _, f := range t.files {
		t.bytes += f.size
	}
	return t, nil
}

// listStoreFolder lists an image folder in a store, unsorted: the classes
// are the first parts of the keys, the files those with an image
// extension.
func listStoreFolder(ctx context.Context, src string, k fileKind) (*folderTree, error) {
	st, err := storage.Open(ctx, src)
	if err != nil {
		return nil, fmt.Errorf("image folder %s: %w", src, err)
	}
	t := &folderTree{store: st}
	classes := map[string]bool{}
	err = st.List(ctx, "", func(a storage.Attrs) error {
		parts := strings.Split(a.Key, "/")
		if len(parts) < 2 || slices.ContainsFunc(parts, hidden) {
			return nil
		}
		classes[parts[0]] = true
		if k.has(a.Key) {
			t.files = append(t.files, folderFile{class: parts[0], dir: path.Dir(a.Key), base: path.Base(a.Key), size: a.Size})
		}
		return nil
	})
	if err != nil {
		st.Close()
		return nil, fmt.Errorf("list image folder %s: %w", src, err)
	}
	t.classes = slices.Collect(maps.Keys(classes))
	return t, nil
}

// listLocalFolder lists an image folder on the local file system,
// unsorted: the classes are its sub-directories, the files those with an
// image extension anywhere below them. Symbolic links to folders are
// followed, as torchvision's ImageFolder follows them (class "linked" ->
// "real" holds real's images); a link that leads back into a folder it
// is inside (a loop) is an error naming it, and so is a link whose target
// is missing (it may have been a folder): a class is never silently empty.
func listLocalFolder(src string, k fileKind) (*folderTree, error) {
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil, fmt.Errorf("image folder %s: %w", src, plainPathError(err))
	}
	top, err := os.Stat(src)
	if err != nil {
		return nil, fmt.Errorf("image folder %s: %w", src, plainPathError(err))
	}
	t := &folderTree{root: src}
	for _, e := range entries {
		if hidden(e.Name()) {
			continue
		}
		dir, err := isDir(src, e)
		if err != nil {
			return nil, fmt.Errorf("image folder %s: %s: %w", src, filepath.Join(src, e.Name()), err)
		}
		if !dir {
			continue
		}
		t.classes = append(t.classes, e.Name())
		w := localWalk{src: src, class: e.Name(), k: k}
		if err := w.dir(filepath.Join(src, e.Name()), []os.FileInfo{top}); err != nil {
			return nil, err
		}
		t.files = append(t.files, w.files...)
	}
	return t, nil
}

// localWalk lists the files of kind k below one class folder src/class,
// skipping hidden files and folders and following symbolic links.
type localWalk struct {
	src, class string
	k          fileKind
	files      []folderFile
}

// dir lists the folder p, whose ancestors (src first) are given: a folder
// that is the same as one of them (by device and inode, os.SameFile) was
// reached through a symbolic link loop, and is an error.
func (w *localWalk) dir(p string, ancestors []os.FileInfo) error {
	fi, err := os.Stat(p)
	if err != nil {
		return fmt.Errorf("list image folder %s: %w", p, plainPathError(err))
	}
	for _, a := range ancestors {
		if os.SameFile(a, fi) {
			return fmt.Errorf("list image folder %s: %w: a symbolic link loop: the folder is inside itself", p, ErrInvalidSource)
		}
	}
	entries, err := os.ReadDir(p)
	if err != nil {
		return fmt.Errorf("list image folder %s: %w", p, plainPathError(err))
	}
	ancestors = append(ancestors, fi)
	rel, _ := filepath.Rel(w.src, p)
	folder := filepath.ToSlash(rel) // shared by the folder's files
	for _, e := range entries {
		if hidden(e.Name()) {
			continue
		}
		q := filepath.Join(p, e.Name())
		dir, err := isDir(p, e)
		if err != nil {
			return fmt.Errorf("list image folder %s: %w", q, err)
		}
		if dir {
			if err := w.dir(q, ancestors); err != nil {
				return err
			}
			continue
		}
		if !w.k.has(e.Name()) {
			continue
		}
		st, err := os.Stat(q)
		if err != nil {
			return fmt.Errorf("list image folder %s: %w", q, plainPathError(err))
		}
		w.files = append(w.files, folderFile{class: w.class, dir: folder, base: e.Name(), size: st.Size()})
	}
	return nil
}

// hidden reports whether a file or folder name is hidden (starts with '.').
func hidden(name string) bool { return strings.HasPrefix(name, ".") }

// isDir reports whether the entry of dir is a directory, following
// symbolic links; an error for a link whose target is missing or
// unreadable.
func isDir(dir string, e fs.DirEntry) (bool, error) {
	if e.IsDir() {
		return true, nil
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return false, nil
	}
	p := filepath.Join(dir, e.Name())
	st, err := os.Stat(p)
	if err != nil {
		target, _ := os.Readlink(p)
		return false, fmt.Errorf("%w: symbolic link to %s: %w", ErrInvalidSource, target, plainPathError(err))
	}
	return st.IsDir(), nil
}

// fileKind is the kind of file a class-folder tree holds: a word for
// messages and the extensions (lower case, with the dot) that count.
type fileKind struct {
	word string
	exts map[string]bool
}

var imageFiles = fileKind{"image", imageExts}

func (k fileKind) has(name string) bool { return k.exts[strings.ToLower(path.Ext(name))] }

func (k fileKind) list() string {
	var exts []string
	for e := range k.exts {
		exts = append(exts, strings.TrimPrefix(e, "."))
	}
	slices.Sort(exts)
	return strings.Join(exts, ", ")
}
