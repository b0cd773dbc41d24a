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
// bytes). bench/RESULTS.md has the measurements behind the choice of
// FFmpeg for audio too (the pure-Go wav/flac/mp3 decoders were slower or
// lost the channel count).
//
// A build without cgo or with the noffmpeg tag compiles and imports
// without FFmpeg; every probe and decode then returns ErrNoFFmpeg, whose
// message names the missing libraries.
//
// # Frames
//
// Frame i of a video is the frame whose presentation time is i/fps after
// the stream's start (fps is the stream's average frame rate). Video.Frames
// seeks to the keyframe at or before the first wanted frame, decodes
// forward and converts the wanted frames to RGB24 (swscale, bilinear) at
// the requested size. Audio decodes to interleaved float32 in [-1, 1],
// optionally resampled (swresample).
//
// # Concurrency
//
// A Video is used by one goroutine at a time; distinct Videos and the
// package functions are safe to call concurrently.
package media
