// Package media probes and decodes the video and audio samples that loch
// keeps compressed (sample compression "video" and "audio",
// docs/format.md §3.2): container bytes as they were ingested (mp4/H.264,
// webm/VP9, mkv, avi; wav, flac, mp3, ogg/opus).
//
// # Decoder
//
// Both kinds are decoded by FFmpeg's libraries (libavformat, libavcodec,
// libswscale, libswresample; Debian's libav*-dev, installed by `make
// sysdeps`), called through this package's own small cgo layer
// (ffmpeg.c). The input is an io.ReaderAt: FFmpeg's demuxer reads through
// it and seeks, so a clip read from the middle of a long mp4 reads its
// index and the packets from the nearest keyframe on, not the whole file
// (a range-reading ReaderAt over object storage then fetches only those
// bytes: the loader's clip and audio segment steps decode through one over
// the stored sample, loch.MediaSample). bench/RESULTS.md has the measurements behind the choice of
// FFmpeg for audio too (the pure-Go wav/flac/mp3 decoders were slower or
// lost the channel count).
//
// A build without cgo or with the noffmpeg tag compiles and imports
// without FFmpeg; every probe and decode then returns ErrNoFFmpeg, whose
// message names the missing libraries.
//
// A build with FFmpeg compiles against its headers but does not link its
// libraries: the first probe or decode of a process opens them (dlopen, by
// the sonames of the headers' major versions) and resolves the functions
// ffmpeg.c calls (ffmpeg_load.h), so that a program that decodes no media
// does not load them and the hundred libraries they need at start. Where
// one does not load, that call and every later one return ErrNoFFmpeg
// naming it and the dynamic loader's reason.
//
// # Frames
//
// Frame i of a video is the frame whose presentation time is i/fps after
// the stream's start (fps is the stream's average frame rate). Video.Frames
// seeks to the keyframe at or before the first wanted frame, decodes
// forward and converts the wanted frames to RGB24 (swscale, bilinear) at
// the requested size.
//
// # Audio
//
// Audio decodes to interleaved float32 in [-1, 1], optionally resampled
// (swresample), straight into the caller's buffer (Audio.Read, Audio.All:
// one cgo call per buffer, not per FFmpeg frame). Sample i is the i-th
// sample of the decode of the whole stream, the samples the decoder drops
// at the start (mp3's encoder delay, opus's pre-skip) not counted: the
// samples ffmpeg's own decode writes.
//
// A PCM wav file (8, 16, 24 or 32-bit integers, 32-bit floats; plain or
// WAVE_FORMAT_EXTENSIBLE) that is not resampled is read without FFmpeg
// (wav.go): its header is parsed, a segment is one read of its bytes, and
// the conversion to float32 is FFmpeg's, bit for bit (TestWAVMatchesFFmpeg).
//
// Audio.Read decodes other segments by seeking: the demuxer seeks to the
// segment's start less the codec's preroll (0 for PCM and FLAC, whose
// frames stand alone; the codec's declared seek preroll plus 8192 samples
// for mp3, vorbis and opus: mp3's bit reservoir and transform overlap,
// vorbis's block overlap, opus's 80 ms; other codecs, aac among them,
// whose seeks were not found exact, decode from the start), the first frame after the seek is placed
// by its timestamp (an opus decoder that still owes its pre-skip drops it
// from that frame, which the packet's duration shows), and the samples
// before the segment are dropped. A resampled segment starts swresample
// afresh on an input sample that maps to a whole output sample, at least
// 256 input samples (times the downsampling ratio) before the segment.
// The result equals the whole decode cut at the segment's start: bit for
// bit for PCM, FLAC, mp3, vorbis and aac, resampled or not, and within 1e-4
// for opus (its decoder's state converges but is not reset exactly by a
// seek), tested against ffmpeg's own decode (TestAudioSegments). Where
// the demuxer cannot seek, or the frame after the seek has no timestamp,
// Read decodes from the start instead.
//
// # Concurrency
//
// A Video is used by one goroutine at a time; distinct Videos and the
// package functions are safe to call concurrently.
package media
