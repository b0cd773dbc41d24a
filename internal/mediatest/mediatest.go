// Package mediatest makes small video and audio files for tests with
// Debian's ffmpeg command (installed by `make sysdeps`), and reads the
// frames ffmpeg itself decodes from them as the reference that loch's
// decoder must match. A missing ffmpeg fails the test.
package mediatest

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// Run runs ffmpeg with args (after -y -loglevel error) and returns its
// standard output.
func Run(t testing.TB, args ...string) []byte {
	t.Helper()
	path, err := exec.LookPath("ffmpeg")
	if err != nil {
		t.Fatalf("ffmpeg is not installed (make sysdeps installs it): %v", err)
	}
	var out, errb bytes.Buffer
	cmd := exec.Command(path, append([]string{"-y", "-hide_banner", "-loglevel", "error"}, args...)...)
	cmd.Stdout, cmd.Stderr = &out, &errb
	if err := cmd.Run(); err != nil {
		t.Fatalf("ffmpeg %v: %v: %s", args, err, errb.String())
	}
	return out.Bytes()
}

// Video writes a synthetic clip (ffmpeg's testsrc2 pattern, which changes
// every frame) of the given length to dir/name, encoded by the codec that
// the name's extension implies (.mp4: H.264 with a keyframe every gop
// frames; .webm: VP9; .mkv: H.264; .avi: mpeg4), and returns its path.
func Video(t testing.TB, dir, name string, w, h, fps int, seconds float64, gop int) string {
	t.Helper()
	if seconds <= 0 || seconds > 60 {
		t.Fatalf("mediatest: %g seconds, want (0, 60] (0 makes ffmpeg write forever)", seconds)
	}
	path := filepath.Join(dir, name)
	args := []string{"-f", "lavfi", "-i", fmt.Sprintf("testsrc2=size=%dx%d:rate=%d:duration=%g", w, h, fps, seconds)}
	switch filepath.Ext(name) {
	case ".mp4", ".mkv":
		args = append(args, "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-g", fmt.Sprint(gop), "-bf", "0")
		if filepath.Ext(name) == ".mp4" {
			args = append(args, "-movflags", "+faststart")
		}
	case ".webm":
		args = append(args, "-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-g", fmt.Sprint(gop), "-pix_fmt", "yuv420p")
	case ".avi":
		args = append(args, "-c:v", "mpeg4", "-g", fmt.Sprint(gop))
	}
	Run(t, append(args, path)...)
	return path
}

// Audio writes a tone (a sine of freq Hz, or two for stereo) of the given
// length to dir/name, encoded by the extension's codec (.wav: pcm s16le;
// .flac; .mp3; .ogg: vorbis; .opus), and returns its path.
func Audio(t testing.TB, dir, name string, rate, channels int, seconds float64) string {
	t.Helper()
	if seconds <= 0 || seconds > 60 {
		t.Fatalf("mediatest: %g seconds, want (0, 60] (0 makes ffmpeg write forever)", seconds)
	}
	path := filepath.Join(dir, name)
	src := fmt.Sprintf("sine=frequency=440:sample_rate=%d:duration=%g", rate, seconds)
	args := []string{"-f", "lavfi", "-i", src}
	if channels == 2 {
		args = append(args, "-f", "lavfi", "-i", fmt.Sprintf("sine=frequency=660:sample_rate=%d:duration=%g", rate, seconds),
			"-filter_complex", "[0:a][1:a]join=inputs=2:channel_layout=stereo")
	}
	if filepath.Ext(name) == ".opus" {
		args = append(args, "-c:a", "libopus")
	}
	Run(t, append(args, path)...)
	return path
}

// Frame returns the RGB24 pixels of frame n of the video at path as
// ffmpeg decodes and converts them (bilinear, accurate rounding, full
// chroma interpolation: the conversion loch's decoder uses).
func Frame(t testing.TB, path string, n int) []byte {
	t.Helper()
	return Run(t, "-i", path,
		"-vf", fmt.Sprintf(`select=eq(n\,%d),scale=flags=bilinear+accurate_rnd+full_chroma_int,format=rgb24`, n), "-vsync", "0", "-frames:v", "1", "-f", "rawvideo", "-pix_fmt", "rgb24", "-")
}

// Samples returns the audio at path as ffmpeg decodes it: interleaved
// float32 little-endian, at rate (0 keeps the file's).
func Samples(t testing.TB, path string, rate int) []byte {
	t.Helper()
	args := []string{"-i", path, "-f", "f32le"}
	if rate > 0 {
		args = append(args, "-ar", fmt.Sprint(rate))
	}
	return Run(t, append(args, "-")...)
}

// Read reads a file or fails the test.
func Read(t testing.TB, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}
