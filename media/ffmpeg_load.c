//go:build cgo && !noffmpeg

// The pointers to FFmpeg's functions (ffmpeg_load.h) and their lookup.

#include "ffmpeg_load.h"

#include <dlfcn.h>
#include <stdio.h>

// (ffmpeg_load.h's #defines make f name the pointer here, so the type is
// taken from the pointer's declaration there.)
#define LM_DEFINE(lib, f) __typeof__(lm_##f) lm_##f;
LM_SYMS(LM_DEFINE)
#undef LM_DEFINE

void *lm_dlopen(const char *name, char *err, int errlen) {
	void *h = dlopen(name, RTLD_NOW | RTLD_LOCAL);
	if (!h) snprintf(err, errlen, "%s", dlerror());
	return h;
}

int lm_resolve(void *handles[LM_NLIBS], char *err, int errlen) {
#define LM_LOOKUP(lib, f) \
	lm_##f = (__typeof__(lm_##f))dlsym(handles[lib], #f); \
	if (!lm_##f) { snprintf(err, errlen, "no function %s: %s", #f, dlerror()); return -1; }
	LM_SYMS(LM_LOOKUP)
#undef LM_LOOKUP
	return 0;
}
