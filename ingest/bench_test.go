package ingest

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
)

// BenchmarkImageFolder ingests 200 small png and jpeg images into a memory
// dataset, with png sample compression (jpeg inputs are re-encoded).
func BenchmarkImageFolder(b *testing.B) {
	root := b.TempDir()
	var total int64
	for i := range 200 {
		img := testImage(uint64(i), 64, 48, 3)
		data, name := encodePNG(b, img), fmt.Sprintf("%03d.png", i)
		if i%2 == 1 {
			data, name = encodeJPEG(b, img), fmt.Sprintf("%03d.jpg", i)
		}
		writeFile(b, filepath.Join(root, []string{"a", "b"}[i%2], name), data)
		total += int64(len(data))
	}
	for _, comp := range []string{CompressPNG, CompressLZ4} {
		b.Run(comp, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(total)
			for b.Loop() {
				if _, err := ImageFolder(context.Background(), root, memURL(b), Options{ImageCompression: comp}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
