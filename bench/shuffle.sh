#!/usr/bin/env bash
# bench/shuffle.sh: block against full shuffle, local disk and MinIO, with
# and without a disk cache, in one run (issue 39, target 3).
#
#   bench/shuffle.sh LOCH [BASELINE_LOCH] -- LOCAL_URL S3_URL [loch bench flags...]
#
# LOCH is the loch binary measured, BASELINE_LOCH (optional) another one
# run beside it on the same cells (e.g. main's). S3_URL names a dataset on
# a running S3 server (credentials in the environment, as loch reads
# them); it should hold the same rows as LOCAL_URL. Each cell is one
# `loch bench --no-raw --json` (one epoch unless the flags say more);
# the cached cells use a fresh cache directory for the first epoch
# (filling it) and the same directory again for the next (reading it).
# A first cell per binary reads the S3 dataset in order (--shuffle none,
# no cache): the sequential read that a cache fill is measured against.
# Prints one tab-separated line per cell: binary, storage, shuffle,
# cache, samples/s, fetched MB, chunks fetched, cache hits, peak RSS MB,
# CPU seconds (user+sys, from /usr/bin/time), first batch ms, fill ms (a
# full shuffle with a cache: until every chunk was in it; 0 elsewhere),
# seconds.
# Run it a few times for rounds; the cells of the binaries alternate
# within a run.
set -euo pipefail
bins=()
while [ "$1" != "--" ]; do bins+=("$1"); shift; done
shift
local_url=$1 s3_url=$2
shift 2
flags=("$@")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cell() { # bin storage shuffle cache url [extra flags]
	local bin=$1 storage=$2 shuffle=$3 cache=$4 url=$5
	shift 5
	local out cpu
	out=$(/usr/bin/time -f "%U %S" -o "$tmp/time" "$bin" bench "$url" --no-raw --json --quiet --shuffle "$shuffle" "${flags[@]}" "$@")
	cpu=$(awk 'END { print $1 + $2 }' "$tmp/time")
	python3 -c 'import json,sys; r=json.loads(sys.argv[1]); print("\t".join(str(x) for x in [sys.argv[2], sys.argv[3], r["shuffle"], sys.argv[4], round(r["samples_per_s"]), round(r["fetched_mb"],1), r["chunks_fetched"], r["cache_hits"], round(r["peak_rss_mb"]), sys.argv[5], round(r.get("first_batch_ms") or 0), round(r.get("fill_ms") or 0), round(r["seconds"], 2)]))' \
		"$out" "$(basename "$bin")" "$storage" "$cache" "$cpu"
}
for bin in "${bins[@]}"; do
	cell "$bin" minio none none "$s3_url"
done
for shuffle in block full; do
	for bin in "${bins[@]}"; do
		cell "$bin" local "$shuffle" none "$local_url"
		cell "$bin" minio "$shuffle" none "$s3_url"
		dir="$tmp/cache-$(basename "$bin")-$shuffle"
		cell "$bin" minio "$shuffle" "fill" "$s3_url" --cache "$dir"
		cell "$bin" minio "$shuffle" "warm" "$s3_url" --cache "$dir"
		rm -rf "$dir"
	done
done
