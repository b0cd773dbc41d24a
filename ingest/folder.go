package ingest

import (
	"cmp"
	"context"
	"fmt"
	"io/fs"
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
// extension. When appending, labels follow the existing column's class
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
			for _, f := range tree.files {
				label := labels[f.class]
				err := emit(func(ctx context.Context) (batch, error) {
					var b batch
					data, err := tree.read(ctx, f)
					if err != nil {
						return b, err
					}
					b.bytes = int64(len(data))
					s, err := convert(f.name, data)
					row := loch.Row{col.Name: s, "label": loch.Scalar(label)}
					return b, b.add(row, err, f.name, o.SkipBad)
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

// folderFile is one image of an image folder.
type folderFile struct {
	class string
	dir   string // folder, relative to the root, '/'-separated
	base  string // file name
	name  string // local path or URL, for reading and for messages
	key   string // key in the store, for a URL
	size  int64
}

// folderTree is a listed image folder.
type folderTree struct {
	classes []string
	files   []folderFile
	bytes   int64
	store   storage.Store // for a URL; nil for a local directory
}

func (t *folderTree) read(ctx context.Context, f folderFile) ([]byte, error) {
	if t.store == nil {
		return readAll(ctx, f.name)
	}
	b, err := t.store.Get(ctx, f.key)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", f.name, err)
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
	if isURL(src) {
		t, err = listStoreFolder(ctx, src, k)
	} else {
		t, err = listLocalFolder(src, k)
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
			t.files = append(t.files, folderFile{class: parts[0], dir: path.Dir(a.Key), base: path.Base(a.Key),
				name: strings.TrimSuffix(st.URL(), "/") + "/" + a.Key, key: a.Key, size: a.Size})
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
// unsorted: the classes are its sub-directories (symbolic links followed),
// the files those with an image extension anywhere below them.
func listLocalFolder(src string, k fileKind) (*folderTree, error) {
	entries, err := os.ReadDir(src)
	if err != nil {
		return nil, fmt.Errorf("image folder %s: %w", src, plainPathError(err))
	}
	t := &folderTree{}
	for _, e := range entries {
		if hidden(e.Name()) || !isDir(src, e) {
			continue
		}
		t.classes = append(t.classes, e.Name())
		files, err := listLocalClass(src, e.Name(), k)
		if err != nil {
			return nil, err
		}
		t.files = append(t.files, files...)
	}
	return t, nil
}

// listLocalClass lists the image files below the class directory
// src/class, skipping hidden files and directories.
func listLocalClass(src, class string, k fileKind) ([]folderFile, error) {
	root := filepath.Join(src, class)
	var files []folderFile
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return fmt.Errorf("list image folder %s: %w", p, plainPathError(err))
		}
		if hidden(d.Name()) && p != root {
			if d.IsDir() {
				return filepath.SkipDir
			}
			return nil
		}
		if d.IsDir() || !k.has(d.Name()) {
			return nil
		}
		st, err := os.Stat(p)
		if err != nil {
			return fmt.Errorf("list image folder %s: %w", p, plainPathError(err))
		}
		rel, _ := filepath.Rel(src, filepath.Dir(p))
		files = append(files, folderFile{class: class, dir: filepath.ToSlash(rel), base: d.Name(), name: p, size: st.Size()})
		return nil
	})
	return files, err
}

// hidden reports whether a file or folder name is hidden (starts with '.').
func hidden(name string) bool { return strings.HasPrefix(name, ".") }

// isDir reports whether the entry of dir is a directory, following symlinks.
func isDir(dir string, e fs.DirEntry) bool {
	if e.IsDir() {
		return true
	}
	if e.Type()&fs.ModeSymlink == 0 {
		return false
	}
	st, err := os.Stat(filepath.Join(dir, e.Name()))
	return err == nil && st.IsDir()
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
