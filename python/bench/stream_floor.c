/*
 * stream_floor: the floor under ds.pytorch()'s hand-off, for
 * bench_loaders.py. It reads a Go loader's batches over the stream of the C
 * ABI (loch_loader_stream's records, the loader opened and closed through
 * the loader service, loch_service) as ds.pytorch() does, but in C, doing
 * nothing with a batch but count its rows and give its buffers back: what
 * any consumer in a thread of its own costs, whatever its language.
 *
 *   stream_floor DATASET BATCH_SIZE EPOCHS [TRANSFORM]
 *
 * One warm-up epoch, then EPOCHS epochs (0, 1, ...; block shuffle, seed 0,
 * the columns "image" and "label", TRANSFORM applied to "image" when
 * given); prints one JSON object: {"samples", "seconds", "samples_per_s",
 * "consumer_us"} (the calling thread's CPU per batch).
 *
 * Built by bench_loaders.py: cc -O2 stream_floor.c -I capi -L DIR -lloch.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "loch.h"

extern int loch_dataset_open(char *url, char *options, uintptr_t *out, char **err);
extern int loch_service(int *request_fd, int *response_fd, char **err);

enum { DEPTH = 32, REPORT_EVERY = DEPTH / 2, READ_RECORDS = 64 };

static int request_fd = -1, response_fd = -1;

static void die(const char *what, const char *detail) {
	fprintf(stderr, "stream_floor: %s: %s\n", what, detail ? detail : "");
	exit(1);
}

static double seconds(clockid_t clock) {
	struct timespec t;
	clock_gettime(clock, &t);
	return t.tv_sec + t.tv_nsec * 1e-9;
}

static void write_all(int fd, const void *p, size_t n) {
	while (n > 0) {
		ssize_t w = write(fd, p, n);
		if (w < 0)
			die("write", "a pipe to Go failed");
		p = (const char *)p + w;
		n -= (size_t)w;
	}
}

/* request writes one request line to the service and reads its response
 * line into resp; it exits when the response's status is not 0. */
static void request(const char *req, char *resp, size_t cap) {
	write_all(request_fd, req, strlen(req));
	size_t k = 0;
	char c;
	while (read(response_fd, &c, 1) == 1 && c != '\n')
		if (k + 1 < cap)
			resp[k++] = c;
	resp[k] = 0;
	if (!strstr(resp, "\"status\":0"))
		die("loader service", resp);
}

/* field returns the integer after "name": in a response line. */
static long long field(const char *resp, const char *name) {
	char key[64];
	snprintf(key, sizeof key, "\"%s\":", name);
	const char *p = strstr(resp, key);
	if (!p)
		die("no such field in the response", resp);
	return atoll(p + strlen(key));
}

/* The reports not yet written: (kind, value) pairs. */
static uint64_t reports[2 * (DEPTH * 8 + 8)];
static int nreports;

static void flush_reports(int fd) {
	write_all(fd, reports, (size_t)nreports * sizeof reports[0]);
	nreports = 0;
}

/* epoch reads one epoch; returns its rows and adds its batches to *batches. */
static long long epoch(uintptr_t ds, int batch_size, int e, const char *transform, long long *batches) {
	char req[1024], resp[1024], tr[256] = "";
	if (transform)
		snprintf(tr, sizeof tr, ",\"transforms\":{\"image\":\"%s\"}", transform);
	snprintf(req, sizeof req,
	         "{\"id\":1,\"op\":\"loader_new\",\"dataset\":%llu,\"depth\":%d,\"config\":{\"columns\":[\"image\",\"label\"],"
	         "\"batch_size\":%d,\"shuffle\":\"block\",\"seed\":0,\"epoch\":%d%s}}\n",
	         (unsigned long long)ds, DEPTH, batch_size, e, tr);
	request(req, resp, sizeof resp);
	long long loader = field(resp, "loader");
	int batch_fd = (int)field(resp, "batch_fd"), report_fd = (int)field(resp, "report_fd");

	long long rows = 0;
	int unreported = 0, ended = 0;
	uint64_t recs[2 * READ_RECORDS];
	while (!ended) {
		ssize_t got = read(batch_fd, recs, sizeof recs);
		if (got <= 0)
			die("read", "the batch pipe ended without an end record");
		for (int i = 0; i < got / 16; i++) {
			int64_t kind = (int64_t)recs[2 * i];
			uint64_t value = recs[2 * i + 1];
			if (kind == LOCH_STREAM_BATCH) {
				loch_batch *b = (loch_batch *)(uintptr_t)value;
				rows += b->n;
				(*batches)++;
				if (unreported >= REPORT_EVERY || nreports + 2 * (b->ncols + 1) > (int)(sizeof reports / sizeof reports[0])) {
					flush_reports(report_fd);
					unreported = 0;
				}
				for (int c = 0; c < b->ncols; c++) {
					reports[nreports++] = LOCH_STREAM_FREED;
					reports[nreports++] = (uint64_t)(uintptr_t)b->cols[c].data;
				}
				reports[nreports++] = LOCH_STREAM_DONE;
				reports[nreports++] = value;
				unreported++;
			} else if (kind == LOCH_STREAM_WAITING) {
				flush_reports(report_fd);
				unreported = 0;
			} else if (kind == LOCH_STREAM_END) {
				if (value != LOCH_EOF)
					die("stream", "ended with an error");
				ended = 1;
			}
		}
	}
	flush_reports(report_fd);
	snprintf(req, sizeof req, "{\"id\":2,\"op\":\"loader_close\",\"loader\":%lld}\n", loader);
	request(req, resp, sizeof resp);
	close(batch_fd);
	close(report_fd);
	return rows;
}

int main(int argc, char **argv) {
	if (argc < 4)
		die("usage", "stream_floor DATASET BATCH_SIZE EPOCHS [TRANSFORM]");
	int batch_size = atoi(argv[2]), epochs = atoi(argv[3]);
	const char *transform = argc > 4 ? argv[4] : NULL;
	char *err = NULL;
	uintptr_t ds;
	if (loch_dataset_open(argv[1], "{}", &ds, &err) != LOCH_OK)
		die("open", err);
	if (loch_service(&request_fd, &response_fd, &err) != LOCH_OK)
		die("loch_service", err);
	long long batches = 0, rows = 0;
	epoch(ds, batch_size, 0, transform, &batches); /* warm-up */
	batches = 0;
	double t = seconds(CLOCK_MONOTONIC), cpu = seconds(CLOCK_THREAD_CPUTIME_ID);
	for (int e = 0; e < epochs; e++)
		rows += epoch(ds, batch_size, e, transform, &batches);
	t = seconds(CLOCK_MONOTONIC) - t;
	cpu = seconds(CLOCK_THREAD_CPUTIME_ID) - cpu;
	printf("{\"samples\": %lld, \"seconds\": %.6f, \"samples_per_s\": %.1f, \"consumer_us\": %.2f}\n", rows, t, rows / t,
	       batches ? 1e6 * cpu / batches : 0.0);
	return 0;
}
