#ifndef LOCH_MEDIA_FFMPEG_LOAD_H
#define LOCH_MEDIA_FFMPEG_LOAD_H

// media does not link FFmpeg's libraries: they load (dlopen) at its first
// probe or decode (lm_resolve, called by load in ffmpeg_load.go), so that a
// loch command or program that decodes no media does not pay for mapping
// and relocating them and their hundred dependencies at start. Every FFmpeg
// function ffmpeg.c calls is a pointer resolved then; the #defines below
// make ffmpeg.c's calls go through them. A function ffmpeg.c starts to
// call must be added to LM_SYMS, or the link pulls the library in again
// (TestNotLinked fails).

#include "ffmpeg.h"
#include <libavcodec/version.h>
#include <libavformat/version.h>
#include <libavutil/version.h>
#include <libswresample/version.h>
#include <libswscale/version.h>

// The libraries, in the order of ffmpeg_load.go's libraries.
enum { LM_AVUTIL, LM_SWRESAMPLE, LM_SWSCALE, LM_AVCODEC, LM_AVFORMAT, LM_NLIBS };

#define LM_SYMS(X) \
	X(LM_AVUTIL, av_calloc) \
	X(LM_AVUTIL, av_dict_free) \
	X(LM_AVUTIL, av_dict_set_int) \
	X(LM_AVUTIL, av_frame_alloc) \
	X(LM_AVUTIL, av_frame_free) \
	X(LM_AVUTIL, av_frame_unref) \
	X(LM_AVUTIL, av_free) \
	X(LM_AVUTIL, av_freep) \
	X(LM_AVUTIL, av_get_bytes_per_sample) \
	X(LM_AVUTIL, av_log_set_level) \
	X(LM_AVUTIL, av_malloc) \
	X(LM_AVUTIL, av_mallocz) \
	X(LM_AVUTIL, av_rescale_q) \
	X(LM_AVUTIL, av_rescale_q_rnd) \
	X(LM_AVUTIL, av_sample_fmt_is_planar) \
	X(LM_AVUTIL, av_strerror) \
	X(LM_SWRESAMPLE, swr_alloc_set_opts2) \
	X(LM_SWRESAMPLE, swr_convert) \
	X(LM_SWRESAMPLE, swr_free) \
	X(LM_SWRESAMPLE, swr_get_out_samples) \
	X(LM_SWRESAMPLE, swr_init) \
	X(LM_SWSCALE, sws_freeContext) \
	X(LM_SWSCALE, sws_getCachedContext) \
	X(LM_SWSCALE, sws_scale) \
	X(LM_AVCODEC, av_packet_alloc) \
	X(LM_AVCODEC, av_packet_free) \
	X(LM_AVCODEC, av_packet_unref) \
	X(LM_AVCODEC, avcodec_alloc_context3) \
	X(LM_AVCODEC, avcodec_descriptor_get) \
	X(LM_AVCODEC, avcodec_flush_buffers) \
	X(LM_AVCODEC, avcodec_free_context) \
	X(LM_AVCODEC, avcodec_get_name) \
	X(LM_AVCODEC, avcodec_open2) \
	X(LM_AVCODEC, avcodec_parameters_to_context) \
	X(LM_AVCODEC, avcodec_receive_frame) \
	X(LM_AVCODEC, avcodec_send_packet) \
	X(LM_AVFORMAT, av_find_best_stream) \
	X(LM_AVFORMAT, av_read_frame) \
	X(LM_AVFORMAT, av_seek_frame) \
	X(LM_AVFORMAT, avformat_alloc_context) \
	X(LM_AVFORMAT, avformat_close_input) \
	X(LM_AVFORMAT, avformat_find_stream_info) \
	X(LM_AVFORMAT, avformat_open_input) \
	X(LM_AVFORMAT, avio_alloc_context) \
	X(LM_AVFORMAT, avio_context_free)

#define LM_DECLARE(lib, f) extern __typeof__(&f) lm_##f;
LM_SYMS(LM_DECLARE)
#undef LM_DECLARE

// lm_dlopen opens the library of the given file name (dlopen, resolving
// every symbol now), or returns NULL with dlerror's message in err.
void *lm_dlopen(const char *name, char *err, int errlen);

// lm_resolve looks up every function of LM_SYMS in the opened libraries
// (handles, indexed by the enum above). It returns 0, or -1 with err naming
// the first function missing.
int lm_resolve(void *handles[LM_NLIBS], char *err, int errlen);

// From here on a call of an FFmpeg function is a call through its pointer.
#define av_calloc lm_av_calloc
#define av_dict_free lm_av_dict_free
#define av_dict_set_int lm_av_dict_set_int
#define av_frame_alloc lm_av_frame_alloc
#define av_frame_free lm_av_frame_free
#define av_frame_unref lm_av_frame_unref
#define av_free lm_av_free
#define av_freep lm_av_freep
#define av_get_bytes_per_sample lm_av_get_bytes_per_sample
#define av_log_set_level lm_av_log_set_level
#define av_malloc lm_av_malloc
#define av_mallocz lm_av_mallocz
#define av_rescale_q lm_av_rescale_q
#define av_rescale_q_rnd lm_av_rescale_q_rnd
#define av_sample_fmt_is_planar lm_av_sample_fmt_is_planar
#define av_strerror lm_av_strerror
#define swr_alloc_set_opts2 lm_swr_alloc_set_opts2
#define swr_convert lm_swr_convert
#define swr_free lm_swr_free
#define swr_get_out_samples lm_swr_get_out_samples
#define swr_init lm_swr_init
#define sws_freeContext lm_sws_freeContext
#define sws_getCachedContext lm_sws_getCachedContext
#define sws_scale lm_sws_scale
#define av_packet_alloc lm_av_packet_alloc
#define av_packet_free lm_av_packet_free
#define av_packet_unref lm_av_packet_unref
#define avcodec_alloc_context3 lm_avcodec_alloc_context3
#define avcodec_descriptor_get lm_avcodec_descriptor_get
#define avcodec_flush_buffers lm_avcodec_flush_buffers
#define avcodec_free_context lm_avcodec_free_context
#define avcodec_get_name lm_avcodec_get_name
#define avcodec_open2 lm_avcodec_open2
#define avcodec_parameters_to_context lm_avcodec_parameters_to_context
#define avcodec_receive_frame lm_avcodec_receive_frame
#define avcodec_send_packet lm_avcodec_send_packet
#define av_find_best_stream lm_av_find_best_stream
#define av_read_frame lm_av_read_frame
#define av_seek_frame lm_av_seek_frame
#define avformat_alloc_context lm_avformat_alloc_context
#define avformat_close_input lm_avformat_close_input
#define avformat_find_stream_info lm_avformat_find_stream_info
#define avformat_open_input lm_avformat_open_input
#define avio_alloc_context lm_avio_alloc_context
#define avio_context_free lm_avio_context_free

#endif
