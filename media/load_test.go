//go:build cgo && !noffmpeg && linux

package media_test

import (
	"bytes"
	"debug/elf"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/lochdata/loch/internal/mediatest"
	"github.com/lochdata/loch/media"
	"github.com/stretchr/testify/require"
)

// ffmpegLibraries are the names of FFmpeg's libraries that media loads.
var ffmpegLibraries = []string{"libavutil", "libswresample", "libswscale", "libavcodec", "libavformat"}

// isFFmpeg reports whether a shared library's file name is one of
// FFmpeg's libraries.
func isFFmpeg(file string) bool {
	for _, l := range ffmpegLibraries {
		if strings.HasPrefix(filepath.Base(file), l+".") {
			return true
		}
	}
	return false
}

// TestNotLinked: a program that links media (this test binary, as the loch
// command and libloch.so do) does not have FFmpeg's libraries among those
// the dynamic loader maps at start.
func TestNotLinked(t *testing.T) {
	exe, err := os.Executable()
	require.NoError(t, err)
	f, err := elf.Open(exe)
	require.NoError(t, err)
	defer f.Close()
	needed, err := f.ImportedLibraries()
	require.NoError(t, err)
	require.NotEmpty(t, needed, "a cgo binary needs libc at least")
	for _, l := range needed {
		require.False(t, isFFmpeg(l), "%s is linked: FFmpeg's libraries must load at the first decode", l)
	}
}

// mappedFFmpeg returns the FFmpeg libraries mapped into this process.
func mappedFFmpeg(t *testing.T) []string {
	maps, err := os.ReadFile("/proc/self/maps")
	require.NoError(t, err)
	var out []string
	for _, line := range strings.Split(string(maps), "\n") {
		fields := strings.Fields(line)
		if len(fields) == 6 && isFFmpeg(fields[5]) && !contains(out, fields[5]) {
			out = append(out, fields[5])
		}
	}
	return out
}

func contains(xs []string, x string) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// childVideo runs the calling test again in a process of its own (where
// no media call has loaded FFmpeg yet), given a test video: in that child
// it returns the video's path and true; in the parent, once the child has
// passed, "" and false.
func childVideo(t *testing.T) (string, bool) {
	if path := os.Getenv("LOCH_MEDIA_TEST_VIDEO"); path != "" {
		t.Log("child ran")
		return path, true
	}
	path := mediatest.Video(t, t.TempDir(), "a.mp4", 64, 48, 25, 1, 5)
	child(t, t.Name(), "LOCH_MEDIA_TEST_VIDEO="+path)
	return "", false
}

// child runs test name of this binary in a process of its own (where no
// media call has loaded FFmpeg yet) with env, and requires that it ran and
// passed.
func child(t *testing.T, name string, env ...string) {
	cmd := exec.Command(os.Args[0], "-test.run=^"+name+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	require.NoError(t, err, "%s", out)
	require.Contains(t, string(out), "child ran", "%s", out)
	require.Contains(t, string(out), "--- PASS: "+name, "%s", out)
}

// TestLoadedOnFirstUse: in a new process FFmpeg's libraries are not mapped
// until the first probe, which maps them and decodes.
func TestLoadedOnFirstUse(t *testing.T) {
	path, inChild := childVideo(t)
	if !inChild {
		return
	}
	require.Empty(t, mappedFFmpeg(t), "FFmpeg is mapped before any media call")
	in, err := media.ProbeVideoBytes(mediatest.Read(t, path))
	require.NoError(t, err)
	require.Equal(t, []int{25, 48, 64, 3}, in.Shape())
	mapped := mappedFFmpeg(t)
	for _, l := range ffmpegLibraries {
		require.True(t, isFFmpegNamed(mapped, l), "%s not mapped after a probe: %v", l, mapped)
	}
}

func isFFmpegNamed(files []string, name string) bool {
	for _, f := range files {
		if strings.HasPrefix(filepath.Base(f), name+".") {
			return true
		}
	}
	return false
}

// TestLibraryMissing: where one of FFmpeg's libraries cannot be loaded,
// every probe and decode fails with ErrNoFFmpeg naming it and the
// loader's reason; the process goes on.
func TestLibraryMissing(t *testing.T) {
	path, inChild := childVideo(t)
	if !inChild {
		return
	}
	media.SetLibraryFile("libavcodec", "libavcodec.so.0-not-there")
	b := mediatest.Read(t, path)
	for range 2 { // the same answer again, not a crash
		_, err := media.ProbeVideoBytes(b)
		require.ErrorIs(t, err, media.ErrNoFFmpeg)
		require.ErrorContains(t, err, "media: video and audio need FFmpeg's libavcodec (libavcodec.so.0-not-there), which does not load: libavcodec.so.0-not-there: cannot open shared object file")
		require.ErrorContains(t, err, "apt-get install libavcodec")
	}
	_, _, err := media.DecodeAudio(bytes.NewReader(b), int64(len(b)), 16000)
	require.ErrorIs(t, err, media.ErrNoFFmpeg)
}
