package ingest

import (
	"context"
	"os"
	"path/filepath"
	"runtime"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/lochdata/loch"
	"github.com/lochdata/loch/imaging/imagingtest"
	"github.com/lochdata/loch/internal/decodelimit/decodelimittest"
)

// A png declaring 30000x30000 among the images of a folder: the default
// decode limit refuses it from its header (the ingest allocates far less
// than its 900 MB of pixels), naming the file and both sizes, and nothing
// is committed, as for any undecodable image; with SkipBad it is skipped
// and counted; with the limit raised past it, it is stored.
func TestImageFolderRefusesDecompressionBomb(t *testing.T) {
	ctx := context.Background()
	decodelimittest.Set(t, 512<<20) // the default
	root, imgs := makeFolder(t)
	bomb := filepath.Join(root, "dog", "bomb.png")
	writeFile(t, bomb, imagingtest.PNGBomb(30000, 30000))
	url := filepath.Join(t.TempDir(), "ds")

	var a, b runtime.MemStats
	runtime.ReadMemStats(&a)
	res, err := ImageFolder(ctx, root, url, Options{})
	runtime.ReadMemStats(&b)
	require.ErrorIs(t, err, ErrBadImage)
	require.ErrorIs(t, err, loch.ErrTooLarge)
	require.ErrorContains(t, err, bomb+": png image of 30000x30000 pixels, 1 channel: 900000000 bytes, more than the decode limit of 536870912 bytes")
	require.Less(t, b.TotalAlloc-a.TotalAlloc, uint64(256<<20), "bytes allocated by the ingest")
	require.Empty(t, res.Version)
	require.Zero(t, openDataset(t, url).Len(), "nothing committed")

	res, err = ImageFolder(ctx, root, url, Options{SkipBad: true})
	require.NoError(t, err)
	require.Equal(t, []string{bomb}, res.SkippedNames)
	require.EqualValues(t, len(imgs), openDataset(t, url).Len())

	// Lowered to 100 bytes, the limit refuses the small images too (12x8
	// pixels of 4 channels are 384 bytes): the setting is the one every
	// decoder reads.
	require.NoError(t, os.Remove(bomb))
	_, err = loch.SetMaxDecodeBytes(100)
	require.NoError(t, err)
	_, err = ImageFolder(ctx, root, filepath.Join(t.TempDir(), "ds2"), Options{})
	require.ErrorIs(t, err, loch.ErrTooLarge)
	require.ErrorContains(t, err, "more than the decode limit of 100 bytes")
}
