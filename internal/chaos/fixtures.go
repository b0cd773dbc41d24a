package chaos

import (
	"bufio"
	"fmt"
	"image"
	"image/color"
	"image/png"
	"os"
	"path/filepath"
)

// writeJSONL writes rows from..to-1 of the campaign's JSON lines source:
// an int id, a float, a text and a label, all derived from the id.
func writeJSONL(path string, from, to int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	for i := from; i < to; i++ {
		fmt.Fprintf(w, "{\"id\": %d, \"x\": %g, \"name\": \"row %d\", \"label\": %q}\n", i, float64(i)*0.25, i, []string{"cat", "dog", "bird"}[i%3])
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// writeImages writes an image folder: perClass PNG files of size x size
// pixels in each of the classes c0, c1 and c2, each picture drawn from its
// number (first, first+1, ...) so that no two are alike.
func writeImages(dir string, first, perClass, size int) error {
	for c := range 3 {
		class := filepath.Join(dir, fmt.Sprintf("c%d", c))
		if err := os.MkdirAll(class, 0o755); err != nil {
			return err
		}
		for i := range perClass {
			n := first + c*perClass + i
			img := image.NewRGBA(image.Rect(0, 0, size, size))
			for y := range size {
				for x := range size {
					img.Set(x, y, color.RGBA{uint8(n*7 + x), uint8(n*13 + y), uint8(n*29 + x*y), 255})
				}
			}
			f, err := os.Create(filepath.Join(class, fmt.Sprintf("img%05d.png", n)))
			if err != nil {
				return err
			}
			err = png.Encode(f, img)
			if cerr := f.Close(); err == nil {
				err = cerr
			}
			if err != nil {
				return err
			}
		}
	}
	return nil
}
