//go:build cgo && !noffmpeg

// The C half of media's FFmpeg decoder: a demuxer over Go's io.ReaderAt
// (through the exported lochMediaRead/lochMediaSeek callbacks, so that
// FFmpeg reads only the byte ranges it seeks to), probing, frame-range video
// decoding to RGB24 and audio decoding to interleaved float32.

#include "ffmpeg.h"
#include "_cgo_export.h"

#include <libavutil/opt.h>
#include <string.h>

#define LM_IOBUF 65536

static int lm_read(void *opaque, uint8_t *buf, int n) {
	lm_ctx *c = opaque;
	int got = lochMediaRead(c->handle, c->pos, buf, n);
	if (got < 0) return AVERROR(EIO);
	if (got == 0) return AVERROR_EOF;
	c->pos += got;
	return got;
}

static int64_t lm_seek(void *opaque, int64_t off, int whence) {
	lm_ctx *c = opaque;
	switch (whence & ~AVSEEK_FORCE) {
	case AVSEEK_SIZE: return c->size;
	case SEEK_SET: c->pos = off; break;
	case SEEK_CUR: c->pos += off; break;
	case SEEK_END: c->pos = c->size + off; break;
	default: return -1;
	}
	return c->pos;
}

static void lm_err(char *err, int errlen, const char *what, int code) {
	char buf[128] = {0};
	av_strerror(code, buf, sizeof buf);
	snprintf(err, errlen, "%s: %s", what, buf);
}

int lm_open(lm_ctx **out, uintptr_t handle, int64_t size, int kind, char *err, int errlen) {
	av_log_set_level(AV_LOG_QUIET);
	lm_ctx *c = av_mallocz(sizeof *c);
	if (!c) { snprintf(err, errlen, "out of memory"); return -1; }
	c->handle = handle; c->size = size; c->stream = -1;
	*out = c;
	uint8_t *buf = av_malloc(LM_IOBUF);
	c->avio = avio_alloc_context(buf, LM_IOBUF, 0, c, lm_read, NULL, lm_seek);
	c->fmt = avformat_alloc_context();
	if (!c->avio || !c->fmt) { snprintf(err, errlen, "out of memory"); return -1; }
	c->fmt->pb = c->avio;
	c->fmt->flags |= AVFMT_FLAG_CUSTOM_IO;
	int r = avformat_open_input(&c->fmt, NULL, NULL, NULL);
	if (r < 0) { c->fmt = NULL; lm_err(err, errlen, "open container", r); return -1; }
	r = avformat_find_stream_info(c->fmt, NULL);
	if (r < 0) { lm_err(err, errlen, "read stream info", r); return -1; }
	const AVCodec *codec = NULL;
	r = av_find_best_stream(c->fmt, kind == 0 ? AVMEDIA_TYPE_VIDEO : AVMEDIA_TYPE_AUDIO, -1, -1, &codec, 0);
	if (r < 0) {
		snprintf(err, errlen, r == AVERROR_DECODER_NOT_FOUND ? "no decoder for its %s stream" : "no %s stream", kind == 0 ? "video" : "audio");
		return -1;
	}
	c->stream = r;
	AVStream *st = c->fmt->streams[r];
	c->dec = avcodec_alloc_context3(codec);
	if (!c->dec) { snprintf(err, errlen, "out of memory"); return -1; }
	avcodec_parameters_to_context(c->dec, st->codecpar);
	c->dec->thread_count = 1;
	r = avcodec_open2(c->dec, codec, NULL);
	if (r < 0) { lm_err(err, errlen, "open decoder", r); return -1; }
	c->frame = av_frame_alloc();
	c->pkt = av_packet_alloc();
	if (!c->frame || !c->pkt) { snprintf(err, errlen, "out of memory"); return -1; }
	return 0;
}

void lm_close(lm_ctx *c) {
	if (!c) return;
	if (c->sws) sws_freeContext(c->sws);
	if (c->swr) swr_free(&c->swr);
	av_frame_free(&c->frame);
	av_packet_free(&c->pkt);
	avcodec_free_context(&c->dec);
	if (c->fmt) avformat_close_input(&c->fmt);
	if (c->avio) { av_freep(&c->avio->buffer); avio_context_free(&c->avio); }
	av_free(c);
}

void lm_get_info(lm_ctx *c, lm_info *in) {
	AVStream *st = c->fmt->streams[c->stream];
	memset(in, 0, sizeof *in);
	snprintf(in->container, sizeof in->container, "%s", c->fmt->iformat->name);
	snprintf(in->codec, sizeof in->codec, "%s", avcodec_get_name(st->codecpar->codec_id));
	in->width = st->codecpar->width;
	in->height = st->codecpar->height;
	AVRational fr = st->avg_frame_rate.num > 0 ? st->avg_frame_rate : st->r_frame_rate;
	in->fps_num = fr.num; in->fps_den = fr.den;
	in->frames = st->nb_frames;
	in->sample_rate = st->codecpar->sample_rate;
	in->channels = st->codecpar->ch_layout.nb_channels;
	if (st->duration != AV_NOPTS_VALUE) in->duration_us = av_rescale_q(st->duration, st->time_base, AV_TIME_BASE_Q);
	else if (c->fmt->duration != AV_NOPTS_VALUE) in->duration_us = c->fmt->duration;
}

// lm_count_packets counts the stream's packets without decoding (for
// containers that do not declare a frame count); it leaves the demuxer at
// the end.
int64_t lm_count_packets(lm_ctx *c) {
	int64_t n = 0;
	while (av_read_frame(c->fmt, c->pkt) >= 0) {
		if (c->pkt->stream_index == c->stream) n++;
		av_packet_unref(c->pkt);
	}
	return n;
}

// lm_receive gets the next decoded frame of the stream, feeding packets as
// needed. It returns 0 with a frame, 1 at the end, <0 on error.
static int lm_receive(lm_ctx *c) {
	for (;;) {
		int r = avcodec_receive_frame(c->dec, c->frame);
		if (r == 0) return 0;
		if (r == AVERROR_EOF) return 1;
		if (r != AVERROR(EAGAIN)) return r;
		if (c->eof) return 1;
		r = av_read_frame(c->fmt, c->pkt);
		if (r == AVERROR_EOF) {
			c->eof = 1;
			avcodec_send_packet(c->dec, NULL);
			continue;
		}
		if (r < 0) return r;
		if (c->pkt->stream_index == c->stream) {
			r = avcodec_send_packet(c->dec, c->pkt);
			if (r < 0 && r != AVERROR(EAGAIN) && r != AVERROR_INVALIDDATA) { av_packet_unref(c->pkt); return r; }
		}
		av_packet_unref(c->pkt);
	}
}

// lm_video decodes frames start, start+stride, ... (count of them) as
// RGB24 of out_w x out_h into dst (count*out_h*out_w*3 bytes), seeking to
// the keyframe at or before start. It returns the number of frames written
// (fewer than count when the video ends first) or -1 with err set.
int lm_video(lm_ctx *c, int64_t start, int count, int stride, int out_w, int out_h, uint8_t *dst, char *err, int errlen) {
	AVStream *st = c->fmt->streams[c->stream];
	AVRational fr = st->avg_frame_rate.num > 0 ? st->avg_frame_rate : st->r_frame_rate;
	if (fr.num <= 0 || fr.den <= 0) { snprintf(err, errlen, "stream has no frame rate"); return -1; }
	AVRational frame_tb = av_inv_q(fr);
	int64_t t0 = st->start_time == AV_NOPTS_VALUE ? 0 : st->start_time;
	int64_t ts = t0 + av_rescale_q(start, frame_tb, st->time_base);
	int r = av_seek_frame(c->fmt, c->stream, ts, AVSEEK_FLAG_BACKWARD);
	if (r < 0) {
		r = av_seek_frame(c->fmt, c->stream, t0, AVSEEK_FLAG_BACKWARD);
		if (r < 0) { lm_err(err, errlen, "seek", r); return -1; }
	}
	avcodec_flush_buffers(c->dec);
	c->eof = 0;
	int got = 0;
	int64_t want = start;
	size_t fsize = (size_t)out_w * out_h * 3;
	while (got < count) {
		r = lm_receive(c);
		if (r == 1) break;
		if (r < 0) { lm_err(err, errlen, "decode", r); return -1; }
		int64_t pts = c->frame->best_effort_timestamp;
		if (pts == AV_NOPTS_VALUE) pts = c->frame->pts;
		int64_t idx = pts == AV_NOPTS_VALUE ? want : av_rescale_q_rnd(pts - t0, st->time_base, frame_tb, AV_ROUND_NEAR_INF);
		if (idx < want) { av_frame_unref(c->frame); continue; }
		c->sws = sws_getCachedContext(c->sws, c->frame->width, c->frame->height, c->frame->format,
			out_w, out_h, AV_PIX_FMT_RGB24, SWS_BILINEAR | SWS_ACCURATE_RND | SWS_FULL_CHR_H_INT, NULL, NULL, NULL);
		if (!c->sws) { snprintf(err, errlen, "no pixel conversion from format %d", c->frame->format); return -1; }
		// A frame past the wanted index (a gap in the timestamps) stands in
		// for the frames it skipped, so that a clip is always complete.
		while (got < count && idx >= want) {
			uint8_t *planes[4] = {dst + got * fsize, NULL, NULL, NULL};
			int strides[4] = {out_w * 3, 0, 0, 0};
			sws_scale(c->sws, (const uint8_t *const *)c->frame->data, c->frame->linesize, 0, c->frame->height, planes, strides);
			got++;
			want += stride;
		}
		av_frame_unref(c->frame);
	}
	return got;
}

// lm_audio decodes the whole stream to interleaved float32 at rate (0: the
// stream's) with its channel count, appending through lochMediaAudio. It
// returns the number of sample frames or -1 with err set.
int64_t lm_audio(lm_ctx *c, int rate, char *err, int errlen) {
	AVCodecContext *d = c->dec;
	if (rate <= 0) rate = d->sample_rate;
	int r = swr_alloc_set_opts2(&c->swr, &d->ch_layout, AV_SAMPLE_FMT_FLT, rate,
		&d->ch_layout, d->sample_fmt, d->sample_rate, 0, NULL);
	if (r < 0 || swr_init(c->swr) < 0) { snprintf(err, errlen, "no sample conversion from format %d", d->sample_fmt); return -1; }
	int ch = d->ch_layout.nb_channels;
	int64_t total = 0;
	float *buf = NULL;
	int cap = 0;
	for (;;) {
		r = lm_receive(c);
		const uint8_t **in = NULL;
		int in_n = 0;
		if (r < 0) { av_free(buf); lm_err(err, errlen, "decode", r); return -1; }
		if (r == 0) { in = (const uint8_t **)c->frame->extended_data; in_n = c->frame->nb_samples; }
		int need = swr_get_out_samples(c->swr, in_n);
		if (need > cap) { av_free(buf); cap = need; buf = av_malloc((size_t)cap * ch * sizeof(float)); }
		uint8_t *outp[1] = {(uint8_t *)buf};
		int n = swr_convert(c->swr, outp, cap, in, in_n);
		if (n < 0) { av_free(buf); lm_err(err, errlen, "convert samples", n); return -1; }
		if (n > 0) { lochMediaAudio(c->handle, buf, n * ch); total += n; }
		if (r == 0) av_frame_unref(c->frame);
		if (r == 1 && n == 0) break;
	}
	av_free(buf);
	return total;
}
