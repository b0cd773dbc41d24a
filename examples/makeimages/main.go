// Command makeimages writes a synthetic image-classification dataset in the
// ImageNet folder layout (DIR/<class>/<n>.png), for demos and benchmarks:
//
//	go run ./examples/makeimages -n 1000 -classes 10 -size 64 /tmp/images
//
// Each class draws its own pattern (stripes at a class-specific angle and
// colour) with noise, so a small model can learn it. -jpeg writes jpeg files
// instead of png.
package main

import (
	"flag"
	"fmt"
	"image"
	"image/color"
	"image/jpeg"
	"image/png"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"sync"
)

func main() {
	n := flag.Int("n", 1000, "number of images")
	classes := flag.Int("classes", 10, "number of classes")
	size := flag.Int("size", 64, "image width and height in pixels")
	useJPEG := flag.Bool("jpeg", false, "write jpeg instead of png")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Usage = func() {
		fmt.Fprintf(os.Stderr, "usage: makeimages [flags] DIR\n")
		flag.PrintDefaults()
	}
	flag.Parse()
	if flag.NArg() != 1 {
		flag.Usage()
		os.Exit(2)
	}
	if err := run(flag.Arg(0), *n, *classes, *size, *useJPEG, *seed); err != nil {
		fmt.Fprintln(os.Stderr, "makeimages:", err)
		os.Exit(1)
	}
}

func run(dir string, n, classes, size int, useJPEG bool, seed uint64) error {
	for c := 0; c < classes; c++ {
		if err := os.MkdirAll(filepath.Join(dir, fmt.Sprintf("class%02d", c)), 0o755); err != nil {
			return err
		}
	}
	var wg sync.WaitGroup
	errs := make(chan error, runtime.NumCPU())
	jobs := make(chan int)
	for w := 0; w < runtime.NumCPU(); w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range jobs {
				if err := write(dir, i, classes, size, useJPEG, seed); err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := 0; i < n; i++ {
		jobs <- i
	}
	close(jobs)
	wg.Wait()
	close(errs)
	return <-errs
}

func write(dir string, i, classes, size int, useJPEG bool, seed uint64) error {
	r := rand.New(rand.NewPCG(seed, uint64(i)))
	c := i % classes
	angle := math.Pi * float64(c) / float64(classes)
	base := color.NRGBA{uint8(50 + 200*c/classes), uint8(255 - 200*c/classes), uint8(100 + r.IntN(50)), 255}
	img := image.NewNRGBA(image.Rect(0, 0, size, size))
	for y := 0; y < size; y++ {
		for x := 0; x < size; x++ {
			v := math.Sin((float64(x)*math.Cos(angle) + float64(y)*math.Sin(angle)) / 3)
			k := 0.6 + 0.4*v
			noise := r.IntN(30)
			img.SetNRGBA(x, y, color.NRGBA{clamp(float64(base.R)*k + float64(noise)), clamp(float64(base.G)*k + float64(noise)), clamp(float64(base.B) * k), 255})
		}
	}
	ext := ".png"
	if useJPEG {
		ext = ".jpg"
	}
	path := filepath.Join(dir, fmt.Sprintf("class%02d", c), fmt.Sprintf("%06d%s", i, ext))
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if useJPEG {
		err = jpeg.Encode(f, img, &jpeg.Options{Quality: 90})
	} else {
		err = png.Encode(f, img)
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

func clamp(v float64) uint8 {
	return uint8(math.Max(0, math.Min(255, v)))
}
