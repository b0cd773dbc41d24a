//go:build cgo && !noffmpeg

// The C half of media's FFmpeg decoder: a demuxer over Go's io.ReaderAt
// (through the exported lochMediaRead/lochMediaSeek callbacks, so that
// FFmpeg reads only the byte ranges it seeks to), probing, frame-range video
// decoding to RGB24 and audio decoding to interleaved float32.

#include "ffmpeg.h"
#include "_cgo_export.h"

#include <libavutil/opt.h>

#include "ffmpeg_load.h" // after every FFmpeg header: calls go through pointers
#include <string.h>

#define LM_IOBUF 65536
#define LM_MAX_PLANES 64

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

// lm_open opens the container and the decoder of its best stream of the
// kind (0 video, 1 audio). max_pixels > 0 bounds the frames that any
// decoder it opens allocates (AVCodecContext.max_pixels), those that
// reading the stream info decodes included: a video stream of larger
// frames is LM_TOO_LARGE, with the stream chosen (lm_get_info) and no
// decoder opened.
int lm_open(lm_ctx **out, uintptr_t handle, int64_t size, int kind, int64_t max_pixels, char *err, int errlen) {
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
	// An audio stream's headers say what its decoder needs. Analysing
	// 5 MB / 5 s of packets (the defaults) cost 5 ms per wav open: the
	// codec probe (is this pcm really mp3 or dts?) scanned the samples
	// with every demuxer's probe. 8 KiB and 0.1 s are enough (0.25 ms).
	if (kind == 1) {
		c->fmt->probesize = 8192;
		c->fmt->max_analyze_duration = AV_TIME_BASE / 10;
	}
	AVDictionary **opts = NULL;
	unsigned nopts = c->fmt->nb_streams;
	if (max_pixels > 0 && nopts > 0) {
		opts = av_calloc(nopts, sizeof *opts);
		if (!opts) { snprintf(err, errlen, "out of memory"); return -1; }
		for (unsigned i = 0; i < nopts; i++) av_dict_set_int(&opts[i], "max_pixels", max_pixels, 0);
	}
	r = avformat_find_stream_info(c->fmt, opts);
	for (unsigned i = 0; opts && i < nopts; i++) av_dict_free(&opts[i]);
	av_free(opts);
	if (r < 0) { lm_err(err, errlen, "read stream info", r); return -1; }
	const AVCodec *codec = NULL;
	r = av_find_best_stream(c->fmt, kind == 0 ? AVMEDIA_TYPE_VIDEO : AVMEDIA_TYPE_AUDIO, -1, -1, &codec, 0);
	if (r < 0) {
		snprintf(err, errlen, r == AVERROR_DECODER_NOT_FOUND ? "no decoder for its %s stream" : "no %s stream", kind == 0 ? "video" : "audio");
		return -1;
	}
	c->stream = r;
	AVStream *st = c->fmt->streams[r];
	if (kind == 0 && max_pixels > 0 && (int64_t)st->codecpar->width * st->codecpar->height > max_pixels) return LM_TOO_LARGE;
	c->dec = avcodec_alloc_context3(codec);
	if (!c->dec) { snprintf(err, errlen, "out of memory"); return -1; }
	avcodec_parameters_to_context(c->dec, st->codecpar);
	c->dec->thread_count = 1;
	if (max_pixels > 0) c->dec->max_pixels = max_pixels;
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
	av_free(c->abuf);
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

// Audio decoding is a stream of sample frames pulled by lm_audio_read into
// the caller's buffer: each decoded FFmpeg frame is converted (swresample:
// float32 interleaved, at the requested rate) into c->abuf, and copied out
// from there, so that one call fills a whole Go buffer (no callback per
// frame). lm_audio_begin positions the stream at an output sample:
//
//   - the input is decoded from in_first (an input sample index), found by
//     seeking the demuxer to in_first - preroll and dropping the decoded
//     samples before in_first. The first frame after a seek is placed by
//     its timestamp; later frames follow it without gaps, as a decode of
//     the whole file concatenates them.
//   - out_skip converted sample frames are then dropped (a resampled
//     segment starts swresample a little before the segment, on an input
//     sample that maps to a whole output sample, so that the segment's
//     samples equal those of the whole file's resampled decode).

// lm_pos is the input sample index of the frame in c->frame, from its
// timestamp, or LM_NOPOS when it has none.
static int64_t lm_pos(lm_ctx *c) {
	AVStream *st = c->fmt->streams[c->stream];
	int64_t pts = c->frame->best_effort_timestamp;
	if (pts == AV_NOPTS_VALUE) pts = c->frame->pts;
	if (pts == AV_NOPTS_VALUE) return LM_NOPOS;
	int64_t t0 = st->start_time == AV_NOPTS_VALUE ? 0 : st->start_time;
	return av_rescale_q_rnd(pts - t0, st->time_base, (AVRational){1, c->dec->sample_rate}, AV_ROUND_NEAR_INF);
}

// lm_audio_begin sets up the conversion to float32 at rate and positions
// the decoder (see above). It must be called once, on a freshly opened
// lm_ctx: decoders are not reliably reset by a seek after the end of the
// stream (vorbis), nor is a stream's start (opus's pre-skip), so the Go
// side reopens to decode again. It returns 0, LM_UNPLACED when the
// demuxer cannot seek, or -1 with err set.
int lm_audio_begin(lm_ctx *c, int rate, int64_t in_first, int64_t out_skip, int64_t preroll, char *err, int errlen) {
	AVCodecContext *d = c->dec;
	if (rate <= 0) rate = d->sample_rate;
	if (c->swr) swr_free(&c->swr);
	int r = swr_alloc_set_opts2(&c->swr, &d->ch_layout, AV_SAMPLE_FMT_FLT, rate,
		&d->ch_layout, d->sample_fmt, d->sample_rate, 0, NULL);
	if (r < 0 || swr_init(c->swr) < 0) { snprintf(err, errlen, "no sample conversion from format %d", d->sample_fmt); return -1; }
	c->channels = d->ch_layout.nb_channels;
	c->in_first = in_first; c->out_skip = out_skip;
	c->in_pos = 0;
	c->abuf_n = c->abuf_off = 0; c->aflushed = 0;
	int64_t at = in_first - preroll;
	if (at > 0) {
		AVStream *st = c->fmt->streams[c->stream];
		int64_t t0 = st->start_time == AV_NOPTS_VALUE ? 0 : st->start_time;
		int64_t ts = t0 + av_rescale_q(at, (AVRational){1, d->sample_rate}, st->time_base);
		r = av_seek_frame(c->fmt, c->stream, ts, AVSEEK_FLAG_BACKWARD);
		if (r < 0) return LM_UNPLACED;
		avcodec_flush_buffers(d);
		c->eof = 0;
		c->in_pos = LM_NOPOS;
	}
	return 0;
}

// lm_refill converts the next decoded frame (or, at the end, what
// swresample holds) into c->abuf. It returns 0 when it did, 1 at the end,
// LM_UNPLACED when the first frame after a seek has no timestamp or starts
// past the wanted sample (the caller decodes from the start instead), <0
// on error (err set).
static int lm_refill(lm_ctx *c, char *err, int errlen) {
	for (;;) {
		if (c->aflushed) return 1;
		int r = lm_receive(c);
		if (r < 0) { lm_err(err, errlen, "decode", r); return r; }
		const uint8_t **in = NULL;
		int in_n = 0;
		const uint8_t *planes[LM_MAX_PLANES];
		if (r == 0) {
			int n = c->frame->nb_samples;
			if (c->in_pos == LM_NOPOS) {
				// The first frame after a seek: place it by its timestamp
				// (which may be negative: the samples an opus decoder
				// skips at the start of the stream).
				c->in_pos = lm_pos(c);
				// A decoder that still owes the stream's initial skip
				// (opus's pre-skip, pending since it was opened) drops it
				// from this frame: its kept samples start that much after
				// its timestamp.
				AVStream *st = c->fmt->streams[c->stream];
				int64_t dur = c->frame->pkt_duration > 0 ? av_rescale_q(c->frame->pkt_duration, st->time_base, (AVRational){1, c->dec->sample_rate}) : 0;
				if (c->in_pos != LM_NOPOS && dur > n) c->in_pos += dur - n;
				if (c->in_pos == LM_NOPOS || c->in_pos > c->in_first) {
					av_frame_unref(c->frame);
					return LM_UNPLACED;
				}
			}
			int64_t pos = c->in_pos;
			c->in_pos += n;
			if (pos + n <= c->in_first) { av_frame_unref(c->frame); continue; }
			int off = pos < c->in_first ? (int)(c->in_first - pos) : 0;
			int bps = av_get_bytes_per_sample(c->frame->format);
			int planar = av_sample_fmt_is_planar(c->frame->format);
			int np = planar ? c->channels : 1;
			if (np > LM_MAX_PLANES) {
				av_frame_unref(c->frame);
				snprintf(err, errlen, "%d channels: at most %d are decoded", c->channels, LM_MAX_PLANES);
				return -1;
			}
			for (int k = 0; k < np; k++)
				planes[k] = c->frame->extended_data[k] + (size_t)off * bps * (planar ? 1 : c->channels);
			in = planes;
			in_n = n - off;
		} else {
			c->aflushed = 1;
		}
		int need = swr_get_out_samples(c->swr, in_n);
		if (need > c->abuf_cap) {
			av_free(c->abuf);
			c->abuf_cap = need;
			c->abuf = av_malloc((size_t)need * c->channels * sizeof(float));
			if (!c->abuf) { c->abuf_cap = 0; snprintf(err, errlen, "out of memory"); return -1; }
		}
		uint8_t *outp[1] = {(uint8_t *)c->abuf};
		int n = swr_convert(c->swr, outp, c->abuf_cap, in, in_n);
		if (r == 0) av_frame_unref(c->frame);
		if (n < 0) { lm_err(err, errlen, "convert samples", n); return n; }
		c->abuf_n = n; c->abuf_off = 0;
		if (c->out_skip > 0) {
			int drop = c->out_skip < n ? (int)c->out_skip : n;
			c->abuf_off = drop;
			c->out_skip -= drop;
		}
		if (c->abuf_off < c->abuf_n) return 0;
	}
}

// lm_audio_read writes up to cap sample frames (cap*channels floats) into
// dst and returns how many it wrote (fewer only at the end of the stream),
// LM_UNPLACED (see lm_refill), or -1 with err set.
int64_t lm_audio_read(lm_ctx *c, float *dst, int64_t cap, char *err, int errlen) {
	int64_t got = 0;
	while (got < cap) {
		if (c->abuf_off == c->abuf_n) {
			int r = lm_refill(c, err, errlen);
			if (r == 1) break;
			if (r == LM_UNPLACED) return LM_UNPLACED;
			if (r < 0) return -1;
		}
		int64_t n = c->abuf_n - c->abuf_off;
		if (n > cap - got) n = cap - got;
		memcpy(dst + got * c->channels, c->abuf + (size_t)c->abuf_off * c->channels, (size_t)n * c->channels * sizeof(float));
		c->abuf_off += n;
		got += n;
	}
	return got;
}

// lm_audio_preroll is how many input samples before a seek target decoding
// starts, so that the output from the target on equals that of a decode
// from the start: 0 for codecs whose frames stand alone (PCM, FLAC: intra
// only and lossless), the codec's declared seek preroll (opus: 80 ms) plus
// 8192 samples for mp3, vorbis and opus (several mp3 frames, for its bit
// reservoir and the overlap of its transform; two long vorbis blocks), and
// -1 (decode from the start, do not seek) for the others, whose seeks were
// not found exact (aac in mp4: the edit list's priming).
int lm_audio_preroll(lm_ctx *c) {
	AVCodecParameters *p = c->fmt->streams[c->stream]->codecpar;
	const AVCodecDescriptor *desc = avcodec_descriptor_get(p->codec_id);
	if (desc && (desc->props & AV_CODEC_PROP_LOSSLESS) && (desc->props & AV_CODEC_PROP_INTRA_ONLY)) return 0;
	switch (p->codec_id) {
	case AV_CODEC_ID_MP3: case AV_CODEC_ID_VORBIS: case AV_CODEC_ID_OPUS:
		return p->seek_preroll + 8192;
	default:
		return -1;
	}
}
