//go:build cgo && !noffmpeg

package media

/*
#cgo linux LDFLAGS: -ldl
#include <stdlib.h>
#include "ffmpeg_load.h"
*/
import "C"

import (
	"fmt"
	"runtime"
	"sync"
	"unsafe"

	"github.com/lochdata/loch/internal/base"
)

// library is one of FFmpeg's shared libraries that media loads.
type library struct {
	name string // e.g. "libavcodec"
	// major is the major version of the headers media was built with,
	// whose ABI the function pointers assume
	major int
	file  string // the file name the dynamic loader looks up (its soname)
}

// libraries are FFmpeg's libraries in the order of ffmpeg_load.h's enum,
// each after those it depends on.
var libraries = [C.LM_NLIBS]library{
	newLibrary("libavutil", int(C.LIBAVUTIL_VERSION_MAJOR)),
	newLibrary("libswresample", int(C.LIBSWRESAMPLE_VERSION_MAJOR)),
	newLibrary("libswscale", int(C.LIBSWSCALE_VERSION_MAJOR)),
	newLibrary("libavcodec", int(C.LIBAVCODEC_VERSION_MAJOR)),
	newLibrary("libavformat", int(C.LIBAVFORMAT_VERSION_MAJOR)),
}

func newLibrary(name string, major int) library {
	file := fmt.Sprintf("%s.so.%d", name, major)
	if runtime.GOOS == "darwin" {
		file = fmt.Sprintf("%s.%d.dylib", name, major)
	}
	return library{name: name, major: major, file: file}
}

var loaded struct {
	once sync.Once
	err  error
}

// load opens FFmpeg's libraries and resolves the functions that ffmpeg.c
// calls, once per process: the first probe or decode pays for it (tens of
// milliseconds), a process that decodes no media never does. A library
// that cannot be loaded is an ErrNoFFmpeg error naming it and the loader's
// reason, returned by this and every later call.
func load() error {
	loaded.once.Do(func() { loaded.err = loadLibraries() })
	return loaded.err
}

func loadLibraries() error {
	var handles [C.LM_NLIBS]unsafe.Pointer
	var msg [errLen]C.char
	for i, l := range libraries {
		name := C.CString(l.file)
		handles[i] = C.lm_dlopen(name, &msg[0], errLen)
		C.free(unsafe.Pointer(name))
		if handles[i] == nil {
			return base.Mark(ErrNoFFmpeg, fmt.Sprintf(
				"media: video and audio need FFmpeg's %s (%s), which does not load: %s: install it (Debian: apt-get install %s%d)",
				l.name, l.file, C.GoString(&msg[0]), l.name, l.major), nil)
		}
	}
	if C.lm_resolve(&handles[0], &msg[0], errLen) != 0 {
		return base.Mark(ErrNoFFmpeg, fmt.Sprintf(
			"media: FFmpeg's libraries loaded are not the version loch was built with: %s", C.GoString(&msg[0])), nil)
	}
	return nil
}
