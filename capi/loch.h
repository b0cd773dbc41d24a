/*
 * loch.h: the C types of loch's C ABI (package capi). The functions are
 * declared in the libloch.h that `go build -buildmode=c-shared` writes
 * beside libloch.so.
 *
 * Conventions: every function returns a status (LOCH_OK or an error code)
 * and, on error, stores a message in *err (when err is not NULL) that the
 * caller frees with loch_free_string. Go objects cross as opaque handles
 * (uintptr_t, runtime/cgo.Handle). Memory that a function hands over
 * (strings, tensors, batches, sample buffers) is freed by the caller with the
 * matching loch_*_free function.
 */
#ifndef LOCH_CAPI_H
#define LOCH_CAPI_H

#include <stdint.h>
#include <stdlib.h>

/*
 * The version of this ABI; loch_abi_version returns it. 2 added the version
 * control functions below and the "ref" and "as_of" options of
 * loch_dataset_open; 3 added loch_loader_new_mix and loch_batch.datasets;
 * 4 added the catalog functions (loch_catalog_*, see the end); 5 added
 * loch_interrupt and the "storage_options" of loch_dataset_open and
 * loch_dataset_create; 6 added the saved selections and
 * loch_dataset_positions; 7 added joined columns: "joined" in saved
 * selections and in loch_loader_new's configuration; 8 added vector search
 * (loch_vector_*, see the end); 9 added the staged writes
 * (loch_dataset_stage, loch_dataset_commit_staged) and
 * loch_dataset_fragment_rows; 10 added loch_dataset_read_frames; 11 added
 * loch_loader_next_batch (the next batch in the same call that frees the
 * previous one's description and gives back sample buffers) and
 * loch_buffers_free (several buffers in one call); 12 added
 * loch_dataset_read_audio; 13 added loch_loader_stream (a loader's batches
 * over a pipe, the records below), loch_loader_stream_end and
 * loch_loader_state_at; 14 added loch_service (a loader's life cycle as
 * requests over a pair of pipes, served by a goroutine, so that a stream's
 * consumer need not call into Go at all; capi/service.go has the protocol);
 * 15 added "depth" to the service's loader_new and loader_new_mix requests
 * (a loader opened and streamed in one request) and its loader_config and
 * dataset_version requests; 16 added compaction: loch_dataset_compact,
 * loch_dataset_last_auto_compaction, the "auto_compact" option of
 * loch_dataset_open and loch_dataset_create, and compaction in several
 * processes (loch_dataset_plan_compaction, loch_dataset_compact_group,
 * loch_dataset_commit_compaction); 17 added loch_dataset_upsert (rows
 * merged by key columns as one commit, capi/upsert.go); 18 added
 * loch_dataset_discard, loch_dataset_discard_conflicts and
 * loch_dataset_commit's conflicting row ids (see "Writers that recover"
 * below); 19 added the decode limit (loch_set_max_decode_bytes,
 * loch_max_decode_bytes); 20 added full-text search (loch_fts_*, see
 * the end); 21 added hybrid search (loch_hybrid_search, see the end);
 * 22 added SQL in the library (loch_sql_*, see the end); 23 added vector
 * indexes built by several processes (loch_vector_train,
 * loch_vector_encode_part, loch_vector_merge_lists, loch_vector_commit)
 * and loch_vector_build's "part_rows"; 26 added page-locked batch buffers
 * (loch_pinned_pool_*, see the end, and loch_loader_new's "pinned_pool");
 * 27 added the loader's "encoded" columns (png/jpeg samples delivered as
 * their stored bytes, for a decoder outside the library such as nvJPEG).
 */
#define LOCH_ABI_VERSION 27

/* Status codes. */
enum {
	LOCH_OK = 0,
	LOCH_ERR = 1,              /* an error of no more specific class */
	LOCH_NOT_FOUND = 2,
	LOCH_EXISTS = 3,
	LOCH_CORRUPT = 4,
	LOCH_CONFLICT = 5,
	LOCH_INVALID_ARGUMENT = 6,
	LOCH_NEWER_FORMAT = 7,
	LOCH_READ_ONLY = 8,
	LOCH_PERMISSION = 9,
	LOCH_EOF = 10,             /* loch_loader_next: the epoch is over */
	LOCH_TIMEOUT = 11,         /* loch_loader_next: no batch within the timeout */
	LOCH_CLOSED = 12,          /* the handle was closed */
	LOCH_NOT_IMPLEMENTED = 13,
	LOCH_INTERNAL = 14,        /* a recovered panic: a bug in loch */
	LOCH_CANCELED = 15
};

/*
 * The kinds of loch_loader_stream's records: 16 bytes each, an int64 kind
 * and a uint64 value, in native byte order. From the loader: a batch (the
 * address of its loch_batch), then the end (the status that ended the
 * stream: LOCH_EOF, or an error that loch_loader_stream_end describes),
 * and a request for the caller's reports when Go waits for them to send
 * the next batch. From the caller: a batch's description read (Go frees it), a sample
 * buffer given back (as loch_buffer_free), a batch read and not used (Go
 * frees it and its buffers).
 */
enum {
	LOCH_STREAM_BATCH = 0,
	LOCH_STREAM_END = 1,
	LOCH_STREAM_DONE = 2,
	LOCH_STREAM_FREED = 3,
	LOCH_STREAM_RETURN = 4,
	LOCH_STREAM_WAITING = 5
};

/* Layouts of a column's samples in memory. */
enum {
	LOCH_DENSE = 0,  /* one C-contiguous array of n samples of one shape (padded when ragged) */
	LOCH_PACKED = 1, /* samples back to back in data; offsets[n+1] delimit them */
	LOCH_NULLS = 2   /* input only: n null samples, no data */
};

/* Sample encodings of packed input. */
enum {
	LOCH_ENCODING_NONE = 0,
	LOCH_ENCODING_PNG = 1,
	LOCH_ENCODING_JPEG = 2
};

/*
 * loch_column_in: the samples of one column for loch_dataset_extend,
 * loch_dataset_update and loch_dataset_upsert. The memory stays the
 * caller's: it is read (and copied) before the call returns.
 *   DENSE:  data holds n samples of shape[0..ndim), C-contiguous.
 *   PACKED: sample i is data[offsets[i]:offsets[i+1]] with shape
 *           shape[i*ndim .. (i+1)*ndim) (shape may be NULL for text, json,
 *           bytes and encoded images).
 *   nulls:  NULL, or n flags: a nonzero flag makes sample i null.
 * dtype is the code of the data's element type (see loch_dtypes); it must
 * be the column's, or 0 to skip the check.
 */
typedef struct {
	const char *name;
	int32_t dtype;
	int32_t layout;
	int32_t ndim;
	int32_t encoding;
	const int64_t *shape;
	const void *data;
	int64_t nbytes;
	const int64_t *offsets;
	const uint8_t *nulls;
} loch_column_in;

/*
 * loch_tensor: the samples of one column, handed to the caller.
 *   DENSE:  data holds shape[0..ndim) elements, shape[0] = n samples; when
 *           the samples' shapes differ, each is zero-padded to the largest
 *           and sample_shapes holds n*(ndim-1) sizes.
 *   PACKED: sample i is data[offsets[i]:offsets[i+1]] with sample_ndims[i]
 *           dimensions; sample_shapes holds their sizes back to back.
 *   nulls:  NULL, or n flags (1: the sample is null, zero-filled or empty).
 * data (nbytes bytes, 64-byte aligned) belongs to the caller, who frees it
 * with loch_buffer_free; the rest is freed with the tensor or batch.
 */
typedef struct {
	char *name;
	int32_t dtype;
	int32_t layout;
	int32_t ndim;
	int32_t reserved;
	int64_t n;
	int64_t *shape;
	void *data;
	int64_t nbytes;
	int64_t *sample_shapes;
	int32_t *sample_ndims;
	int64_t *offsets;
	uint8_t *nulls;
} loch_tensor;

/*
 * loch_batch: one batch of a loader; cols[i].name names its column. Row i
 * is at positions[i] of its dataset, with row id row_ids[i]; datasets[i]
 * is that dataset's index in loch_loader_new_mix's handles (NULL for a
 * loader of one dataset).
 */
typedef struct {
	int64_t epoch;
	int64_t index;
	int64_t n;
	int64_t *positions;
	uint64_t *row_ids;
	int32_t ncols;
	int32_t reserved;
	loch_tensor *cols;
	int64_t *datasets;
} loch_batch;

/*
 * Interrupts. The long calls (loch_dataset_open, loch_dataset_create,
 * loch_dataset_extend, loch_dataset_update, loch_dataset_commit,
 * loch_dataset_refresh, loch_dataset_revert, loch_dataset_merge,
 * loch_dataset_gc, loch_dataset_stage, loch_dataset_commit_staged,
 * loch_dataset_compact, loch_dataset_plan_compaction,
 * loch_dataset_compact_group, loch_dataset_commit_compaction,
 * loch_dataset_upsert) run under a context that loch_interrupt(tid) cancels,
 * where tid is the OS thread id (Linux gettid) of the thread making the
 * call: the call then returns LOCH_CANCELED soon, having changed nothing
 * that was committed (a commit is either whole or not made). A caller
 * that must stay responsive to a signal makes the call on another thread
 * and interrupts that thread when the signal arrives. loch_interrupt
 * returns 1 when a call was running on tid, else 0 (the call may not have
 * started yet, or be over: interrupt again until it returns).
 */
int loch_interrupt(int64_t tid);

/*
 * The decode limit (ABI 19): the most bytes that one decode of an image,
 * of video frames or of audio may produce (height x width x channels,
 * frames x height x width x 3, samples x channels x 4), for the whole
 * process: $LOCH_MAX_DECODE_BYTES when the library loads, else 512 MiB.
 * A sample or file declaring more is refused from its header, before it
 * is decoded, with LOCH_INVALID_ARGUMENT and a message naming it, its
 * size and the limit.
 *   loch_set_max_decode_bytes(n, int64_t *old, err): sets it to n bytes
 *       (0: no limit); *old = the limit it replaces. LOCH_INVALID_ARGUMENT
 *       for n < 0, or a $LOCH_MAX_DECODE_BYTES that does not parse.
 *   loch_max_decode_bytes(): the limit in force (0: none).
 */
int64_t loch_max_decode_bytes(void);

/*
 * Version control. Signatures as in libloch.h; h is a dataset handle. Every
 * char ** output (out) is set only on LOCH_OK, except where noted, to a
 * string the caller frees with loch_free_string; structured results are
 * JSON. Input strings stay the caller's. A ref is a branch name, a tag name,
 * "heads/<branch>", "tags/<tag>", a version id or a unique prefix of one
 * (6 or more hex digits).
 *
 *   loch_dataset_open(url, options, out, err): options JSON may hold
 *       "ref" (a branch: writable; anything else: read-only), "version"
 *       (a version id, read-only; not with "ref") and "as_of" (RFC 3339,
 *       'YYYY-MM-DD HH:MM:SS' in UTC or YYYY-MM-DD, 00:00 UTC: the version
 *       "ref", default main, named then; read-only).
 *       It and loch_dataset_create's options may hold "storage_options":
 *       {"endpoint", "region", "access_key_id", "secret_access_key",
 *       "session_token"} (strings; also the "aws_"-prefixed names), the
 *       store's connection settings over the environment's (s3:// only);
 *       errors name an option, never its value.
 *   loch_dataset_create_branch(h, name, from, char **out, err): makes branch
 *       name at from (NULL or "": the handle's version); out = its version
 *       id. LOCH_EXISTS when a branch or tag of that name exists.
 *   loch_dataset_create_tag(h, name, ref, char **out, err): likewise, a tag.
 *   loch_dataset_delete_branch(h, name, err), loch_dataset_delete_tag(h,
 *       name, err): LOCH_NOT_FOUND when there is none; main cannot be
 *       deleted (LOCH_INVALID_ARGUMENT).
 *   loch_dataset_refs(h, char **out, err): out = [{"name", "kind" ("branch"
 *       or "tag"), "commit"}], branches then tags, each sorted by name.
 *   loch_dataset_resolve(h, ref, char **out, err): out = the version id.
 *   loch_dataset_current_branch(h, char **out, err): out = the branch the
 *       handle writes to, "" when it is read-only.
 *   loch_dataset_read_only(h, int32_t *out, err): *out = 1 when the handle
 *       refuses writes (LOCH_READ_ONLY), else 0.
 *   loch_dataset_checkout(h, ref, err): moves the handle to ref (a branch:
 *       writable; else read-only). LOCH_INVALID_ARGUMENT while writes are
 *       staged.
 *   loch_dataset_revert(h, ref, message, char **out, err): a new commit on
 *       the handle's branch with ref's contents; out = its version id.
 *   loch_dataset_diff(h, from, to, options, char **out, err): from and to
 *       are refs (NULL or "": the handle's version); options JSON {"start":
 *       smallest row id listed, "limit": most rows listed (0: 1000,
 *       negative: none)} or NULL. out = {"from", "to", "schema": [{"name",
 *       "change", "from", "to"}], "added", "deleted", "modified",
 *       "modified_by_column": {column: n}, "rows": [{"id", "change",
 *       "columns"}], "next" (absent on the last page)}.
 *   loch_dataset_merge(h, src, options, char **out, err): options JSON
 *       {"strategy": "fail" | "ours" | "theirs", "message"} or NULL. On
 *       LOCH_OK out = {"commit", "base", "fast_forward", "up_to_date",
 *       "added", "deleted", "modified", "columns_added", "conflicts"}. On
 *       LOCH_CONFLICT (strategy "fail", rows changed on both sides; nothing
 *       changed) out is ALSO set, to {"src", "dst", "conflicts": [{"id",
 *       "ours", "theirs", "ours_columns", "theirs_columns"}]}: the caller
 *       frees out whenever it is not NULL, whatever the status.
 *   loch_dataset_gc(h, options, char **out, err): options JSON
 *       {"grace_seconds": s (default 86400), "dry_run": bool, "keep_last": n,
 *       "older_than_seconds": s} (the last two: version retention,
 *       docs/format.md §5.2) or NULL. out = {"dry_run", "reachable",
 *       "young", "leased", "deleted" (each {"objects", "bytes"}),
 *       "by_kind": {prefix: {"objects", "bytes"}}, "expired" (commits),
 *       "dead_leases"}.
 *
 * Compaction (ABI 16, docs/format.md §8; capi/compact.go has the details):
 *   loch_dataset_compact(h, options, char **out, err): rewrites the small
 *       fragments, and those with many deleted rows, of the handle's
 *       branch as one commit and moves the handle there. options JSON
 *       {"target_rows", "target_bytes", "max_deleted" (a fraction in
 *       (0, 1); negative: never), "fanout" (0, or 2 or more), "dry_run",
 *       "message"}, each optional, or NULL. out = {"dry_run", "version",
 *       "fragments_before", "fragments_after", "groups", "rewritten",
 *       "rows", "dropped", "bytes_before", "bytes_after", "yielded"}.
 *       LOCH_INVALID_ARGUMENT while writes are staged.
 *   loch_dataset_open's and loch_dataset_create's options may hold
 *       "auto_compact": true (the defaults), false, or an object of the
 *       options above without "dry_run": every commit of the handle then
 *       ends with a tiered compaction (fanout default 8).
 *   loch_dataset_last_auto_compaction(h, char **out, err): out = the report
 *       of the last automatic compaction, or "null" when none ran; when it
 *       failed (the commit before it stands), its error as the status.
 *   In several processes (one plans and commits, others rewrite groups;
 *   docs/format.md §8):
 *   loch_dataset_plan_compaction(h, options, char **out, err): options as
 *       above; out = the plan {"format", "dataset", "branch", "base",
 *       "groups", "message", "report"}. Writes nothing.
 *   loch_dataset_compact_group(h, plan, int64_t index, char **out, err):
 *       rewrites group index of the plan (any handle of the dataset); out =
 *       its description {"format", "dataset", "base", "group", "key",
 *       "rows", "dropped_samples", "dropped_raw"}.
 *   loch_dataset_commit_compaction(h, plan, groups, char **out, err):
 *       groups is a JSON list of descriptions; one commit on the handle's
 *       branch; out = the report. LOCH_INVALID_ARGUMENT for a description
 *       of another plan, LOCH_CORRUPT for a fragment without its group's
 *       rows.
 *
 * Saved selections (docs/query.md; queries run in the loch command, not
 * here):
 *   loch_dataset_save_selection(h, name, sel, err): sel JSON {"version",
 *       "sql", "seed", "columns", "row_ids", "joined"}; LOCH_EXISTS when
 *       name is taken. "joined" (optional) is the list of joined columns
 *       in the form of docs/format.md §2.7.
 *   loch_dataset_selection(h, name, char **out, err): out = {"name",
 *       "version", "sql", "seed", "columns", "row_ids", "joined"};
 *       LOCH_NOT_FOUND.
 *   loch_dataset_selections(h, char **out, err): out = [{"name", "key",
 *       "version", "sql", "seed", "rows"}], sorted by name.
 *   loch_dataset_delete_selection(h, name, err).
 *   loch_dataset_positions(h, const uint64_t *ids, int64_t n, int64_t *out,
 *       err): out[i] = the position of row id ids[i] in the handle's
 *       version; LOCH_NOT_FOUND when one is not a live row of it.
 *
 * Media (ABI 10, 12; capi/media.go has the details):
 *   loch_dataset_read_frames(h, column, row, start, stop, stride, width,
 *       height, loch_tensor **out, err): frames [start:stop:stride] of a
 *       video sample, uint8 [frames, height, width, 3], read by range.
 *   loch_dataset_read_audio(h, column, row, start, count, rate,
 *       loch_tensor **out, err): count samples (< 0: to the end) from
 *       sample start of an audio sample at rate (0: its own), float32
 *       [samples, channels], fewer where the audio ends; a segment is read
 *       by range. LOCH_INVALID_ARGUMENT for a column that is not audio.
 *
 * A write through a read-only handle (extend, update, delete, add_column,
 * commit, revert, merge, refresh, compact) returns LOCH_READ_ONLY.
 */

/*
 * Writers that recover (ABI 18). loch_dataset_commit rebases the staged
 * writes onto a branch head that other commits moved: appends always,
 * deleted and updated rows by row id when the other commits left them
 * alone. When they deleted or changed one of those rows, it returns
 * LOCH_CONFLICT with a message naming the row ids (the first ten and the
 * count) and sets *out to {"row_ids": [...]} (all of them, ascending; the
 * caller frees *out whenever it is not NULL), commits nothing and keeps
 * everything staged. Then
 * loch_dataset_refresh moves the handle and the staged writes that do not
 * conflict onto the head; the conflicting ones stay staged (commit keeps
 * refusing them) until one of:
 *
 *   loch_dataset_discard(h, err): drops every staged write.
 *   loch_dataset_discard_conflicts(h, char **out, err): drops the
 *       conflicting ones only; out = the JSON list of their row ids,
 *       ascending ([] when none).
 */

/*
 * Catalogs (ABI 4): named tables under one root, each a dataset. A catalog
 * crosses as a handle (c below); a table opens as an ordinary dataset
 * handle. Names compare case-insensitively.
 *
 *   loch_catalog_open(root, options, uintptr_t *out, err): options JSON
 *       {"create": true: make an empty catalog where there is none} or
 *       NULL; without it a root with no catalog is LOCH_NOT_FOUND.
 *   loch_catalog_close(c, err): the catalog's store is released when the
 *       handle and every table handle opened from it are closed.
 *   loch_catalog_url(c, char **out, err).
 *   loch_catalog_tables(c, char **out, err): out = [{"name", "dir", "url",
 *       "created"}], sorted by name; reads the catalog's log only.
 *   loch_catalog_open_table(c, name, options, uintptr_t *out, err): options
 *       as loch_dataset_open's; LOCH_NOT_FOUND when there is no such table.
 *   loch_catalog_create_table(c, name, schema, options, uintptr_t *out,
 *       err): schema and options as loch_dataset_create's; LOCH_EXISTS when
 *       the name is taken; LOCH_INVALID_ARGUMENT for a bad name.
 *   loch_catalog_drop_table(c, name, err), loch_catalog_rename_table(c,
 *       from, to, err).
 *   loch_catalog_gc(c, options, char **out, err): options as
 *       loch_dataset_gc's; out = {"dry_run", "deleted", "young" (lists of
 *       {"dir", "objects", "bytes"}), "tables": {name: gc report},
 *       "log_entries"}.
 */

/*
 * Full-text search (ABI 20): the BM25 index of a text or json column
 * (docs/format.md §2.9, docs/search.md).
 *
 *   loch_fts_build(h, column, char **out, err): out = {"key", "version",
 *       "column", "docs", "tokens", "segments", "bytes"}.
 *   loch_fts_update(h, column, char **out, err): the index of the
 *       handle's version from its newest indexed ancestor's; out as
 *       loch_fts_build's; LOCH_NOT_FOUND when no index serves it.
 *   loch_fts_open(h, column, char **info, err): opens and keeps the
 *       index that serves the handle's version (analysing the rows it
 *       does not cover); info = {"index", "warnings"}. Made before
 *       searches so that they are short.
 *   loch_fts_search(h, column, query, k, const uint64_t *allowed,
 *       nallowed, uint64_t *ids, double *scores, int64_t *count,
 *       char **info, err): the *count <= k best rows for query, best
 *       first; allowed as loch_vector_search's; info = {"index": key or
 *       "", "warnings": [...]}.
 */

/*
 * Hybrid search (ABI 21): a query vector and a full-text query, each
 * among the rows a filter allows, fused by reciprocal rank or weighted
 * scores (docs/search.md).
 *
 *   loch_hybrid_search(h, options, const float *q, d, text, k,
 *       const uint64_t *allowed, nallowed, uint64_t *ids, double *scores,
 *       int64_t *vranks, float *dists, int64_t *tranks, double *tscores,
 *       int64_t *count, char **info, err): options JSON {"column",
 *       "text_column", "metric", "fusion": "rrf"|"weighted", "weight",
 *       "rrf_k", "rank_window", "nprobe", "rerank", "exact", "where" (the
 *       filter's SQL, for info's "sql")} or NULL; q NULL or text NULL/""
 *       leaves that side out; allowed as loch_vector_search's; the
 *       *count <= k best rows, best first: fused score, each side's rank
 *       from 1 (0: not ranked by it), distance and BM25 score; info =
 *       {"version", "vector_column", "text_column", "vector_index",
 *       "text_index", "warnings", "sql" (the same search as an SQL
 *       hybrid_search query: a selection's text)}.
 */

/*
 * Vector search (ABI 8): nearest rows to query vectors in an embedding
 * column (a fixed [d] column of float32, float16 or bfloat16), exactly or
 * with the column's stored IVF-flat index (docs/format.md §2.8).
 *
 *   loch_vector_build(h, column, options, char **out, err): options JSON
 *       {"metric": "cosine"|"l2"|"dot", "nlist", "sample", "iterations",
 *       "seed", "kind", "m", "part_rows"}, all optional, or NULL; out =
 *       {"key", "version", "column", "metric", "dim", "rows", "nlist",
 *       "type", "m", "bytes"}. It reads and stores part_rows rows at a
 *       time (0: about 512 MiB of vectors).
 *   Built by several processes (ABI 23; capi/vector_parts.go has the
 *   details): every handle at the trained version, nothing visible until
 *   the commit, a step run again writes the same objects:
 *   loch_vector_train(h, column, options, char **out, err): options as
 *       loch_vector_build's; stores the centroids (and codebook); out = the
 *       trained index, with "parts": [[start, stop], ...] planned.
 *   loch_vector_encode_part(h, trained, int64_t start, int64_t stop,
 *       char **out, err): the rows at positions [start, stop); out = the
 *       part {"version", "start", "stop", "lists": [{"list", "key",
 *       "rows"}]}.
 *   loch_vector_merge_lists(h, trained, parts, int64_t lo, int64_t hi,
 *       char **out, err): parts a JSON list of parts; out = the lists
 *       [lo, hi), one object each: [{"list", "key", "rows"}].
 *   loch_vector_commit(h, trained, parts, lists, char **out, err): every
 *       part and every merged list; out as loch_vector_build's;
 *       LOCH_INVALID_ARGUMENT when the parts do not tile the version's
 *       rows or disagree with the lists.
 *   loch_vector_update(h, column, metric, char **out, err): the index of
 *       the handle's version from its newest indexed ancestor's; out as
 *       loch_vector_build's; LOCH_NOT_FOUND when no index serves it.
 *   loch_vector_search(h, column, options, const float *queries, n, d, k,
 *       const uint64_t *allowed, nallowed, uint64_t *ids, float *dists,
 *       int64_t *counts, char **info, err): options JSON {"metric",
 *       "nprobe", "rerank", "exact", "held"} or NULL; queries holds n x d
 *       floats; allowed the nallowed row ids a filter lets through
 *       (nallowed < 0: no filter); for query i, counts[i] <= k hits go to
 *       ids[i*k:] and dists[i*k:] (nearest first); info = {"index": key
 *       or "", "warnings": [...]} (an unreadable index is searched
 *       exactly, with a warning). "held": true searches only with an
 *       index the handle already holds open (a short call, made without
 *       the interruptible thread); when it holds none that serves the
 *       version it writes no hits and info has "retry": true, for the
 *       caller to call again without "held".
 */

/*
 * SQL in the library (ABI 22, capi/sql.go): DuckDB in this process, on one
 * connection kept for the SQL handle's life, with results as Arrow (the
 * Arrow C data interface). A library built without DuckDB (without the
 * build tags duckdb_arrow,duckdb_use_lib; python/setup.py sets them) has
 * these functions, each LOCH_NOT_IMPLEMENTED.
 *   loch_sql_open(target, options, uintptr_t *out, err): target a dataset
 *       handle (SQL over its version, as loch query URL: the table ds; the
 *       engine follows the handle to the versions its commits and
 *       checkouts move it to) or a catalog handle (its tables by name, as
 *       loch sql ROOT; each statement reads the tables' heads and a write
 *       is one commit); options JSON {"threads": N} or NULL. Close it
 *       before its target.
 *   loch_sql_close(s, err).
 *   loch_sql_run(s, sql, options, struct ArrowArrayStream *stream,
 *       char **out, err): one statement; options JSON {"seed": N,
 *       "branch": "b", "message": "m", "pins": {"table": "version"}} or
 *       NULL (branch, message and pins for a catalog, for this statement
 *       only). A read fills *stream (the caller imports or releases it)
 *       and out = {"statement": "QUERY", "rows": N}; a write leaves
 *       *stream alone and out = what it did (loch sql --json).
 *   loch_sql_select(s, sql, options, char **out, err): a SELECT as a
 *       selection: out = {"version", "sql", "seed", "columns", "rows",
 *       "row_ids", "joined"} (loch query --format selection), over a
 *       catalog with "table" and "url"; options as loch_sql_run's, and
 *       "table": the table a join selects.
 */

/*
 * Page-locked batch buffers (ABI 26, capi/pinned.go): a pool of host memory
 * from an allocator the caller hands over (CUDA's cudaHostAlloc and
 * cudaFreeHost), from which a loader given the pool's handle in its
 * configuration ("pinned_pool") allocates its batches' buffers, so that
 * its workers fill memory a device copies from directly. Such a buffer is
 * freed like any other (loch_buffer_free): it goes back to the pool, never
 * to the allocator while the pool is open. The pool holds at most `limit`
 * bytes (its buffers in use and those kept for reuse, by size class); a
 * buffer that does not fit, or that the allocator refuses, comes from
 * ordinary memory instead (counted as a fallback). loch_buffer_stats'
 * "live" counts the pool's buffers in use too.
 *   loch_host_alloc_fn: int alloc(void **ptr, size_t nbytes, unsigned
 *       flags): 0 and *ptr set (64-byte aligned at least), or nonzero.
 *   loch_host_free_fn: int free(void *ptr).
 *   loch_host_select_fn: int select(int device), called before each alloc
 *       and free with the pool's device (cudaSetDevice: so that the
 *       allocator's thread uses that device's context); may be NULL.
 *   loch_pinned_pool_new(alloc, free, select, int device, unsigned flags,
 *       int64_t limit, uintptr_t *out, err): the pool's handle.
 *   loch_pinned_pool_set_limit(p, int64_t limit, err): a new limit; kept
 *       buffers beyond it are freed now, those in use when they come back.
 *   loch_pinned_pool_stats(p, int64_t out[6], err): bytes in use, bytes
 *       kept, limit, the most bytes held at once, allocations that fell
 *       back to ordinary memory, allocator failures.
 *   loch_pinned_pool_close(p, err): frees the kept buffers and releases
 *       the handle; buffers in use are freed to the allocator as they come
 *       back. Loaders that have the pool keep using it until they close.
 */
typedef int (*loch_host_alloc_fn)(void **ptr, size_t nbytes, unsigned int flags);
typedef int (*loch_host_free_fn)(void *ptr);
typedef int (*loch_host_select_fn)(int device);

#endif
