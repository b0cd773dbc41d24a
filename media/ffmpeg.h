#ifndef LOCH_MEDIA_FFMPEG_H
#define LOCH_MEDIA_FFMPEG_H

#include <stdint.h>
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libswresample/swresample.h>
#include <libswscale/swscale.h>

typedef struct {
	uintptr_t handle;
	int64_t size, pos;
	AVIOContext *avio;
	AVFormatContext *fmt;
	AVCodecContext *dec;
	int stream, eof;
	AVFrame *frame;
	AVPacket *pkt;
	struct SwsContext *sws;
	SwrContext *swr;
	// audio (lm_audio_begin, lm_audio_read)
	int channels, aflushed;
	int64_t in_first, in_pos, out_skip;
	float *abuf;
	int abuf_cap, abuf_n, abuf_off;
} lm_ctx;

#define LM_NOPOS INT64_MIN
#define LM_UNPLACED (-1000)
#define LM_TOO_LARGE (-1001)

typedef struct {
	char container[32], codec[32];
	int width, height, fps_num, fps_den, sample_rate, channels;
	int64_t frames, duration_us;
} lm_info;

int lm_open(lm_ctx **out, uintptr_t handle, int64_t size, int kind, int64_t max_pixels, char *err, int errlen);
void lm_close(lm_ctx *c);
void lm_get_info(lm_ctx *c, lm_info *in);
int64_t lm_count_packets(lm_ctx *c);
int lm_video(lm_ctx *c, int64_t start, int count, int stride, int out_w, int out_h, uint8_t *dst, char *err, int errlen);
int lm_audio_begin(lm_ctx *c, int rate, int64_t in_first, int64_t out_skip, int64_t preroll, char *err, int errlen);
int64_t lm_audio_read(lm_ctx *c, float *dst, int64_t cap, char *err, int errlen);
int lm_audio_preroll(lm_ctx *c);

#endif
