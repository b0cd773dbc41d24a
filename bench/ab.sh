#!/usr/bin/env bash
# ab.sh compares the benchmarks of two revisions on this machine, runs of
# the two interleaved so that drift in the machine's load hits both alike.
#
#   bench/ab.sh OLD [NEW] [ROUNDS]     (NEW defaults to HEAD, ROUNDS to 2)
#
# It builds loch at both revisions in temporary worktrees, makes two
# datasets of 40,000 uint8 [64, 64, 3] images (codec none and lz4) with
# examples/makedataset, and for each round runs, old then new:
#   - loch bench --json (batch 256, shuffle none and block) on both datasets:
#     loader MB/s, the raw baseline of the same run, their ratio, first batch;
#   - go test -bench 'Write|Scan|RandomRead' of the root package (local disk).
# Each loch bench runs EPOCHS epochs (default 6: one epoch of the page-cached
# data takes a tenth of a second, too short to measure). GOBENCH=0 skips the
# go test benchmarks. Results go to $OUT (default /tmp/loch-ab): bench-*.json
# and gobench-*.txt, and a summary table on stdout. Run it on an idle
# machine.
set -euo pipefail

OLD=${1:?usage: bench/ab.sh OLD [NEW] [ROUNDS]}
NEW=${2:-HEAD}
ROUNDS=${3:-2}
OUT=${OUT:-/tmp/loch-ab}
EPOCHS=${EPOCHS:-6}
GOBENCH=${GOBENCH:-1}
ROOT=$(git rev-parse --show-toplevel)
mkdir -p "$OUT"
WT=$(mktemp -d)
trap 'git -C "$ROOT" worktree remove --force "$WT/old" 2>/dev/null; git -C "$ROOT" worktree remove --force "$WT/new" 2>/dev/null; rm -rf "$WT"' EXIT

for side in old new; do
	rev=$OLD; [ "$side" = new ] && rev=$NEW
	git -C "$ROOT" worktree add -q --detach "$WT/$side" "$rev"
	(cd "$WT/$side" && go build -o "$OUT/loch-$side" ./cmd/loch)
	echo "$side: $(git -C "$ROOT" rev-parse --short "$rev")"
done

for codec in none lz4; do
	if [ ! -d "$OUT/ds-$codec" ]; then
		(cd "$WT/new" && go run ./examples/makedataset -n 40000 -codec "$codec" "$OUT/ds-$codec" >/dev/null)
	fi
done

for round in $(seq 1 "$ROUNDS"); do
	for side in old new; do
		for codec in none lz4; do
			for shuffle in none block; do
				"$OUT/loch-$side" bench "$OUT/ds-$codec" --batch-size 256 --shuffle "$shuffle" --epochs "$EPOCHS" --json \
					>"$OUT/bench-$side-$codec-$shuffle-$round.json"
			done
		done
		if [ "$GOBENCH" = 1 ]; then
			(cd "$WT/$side" && go test -run '^$' -bench 'Write|Scan|RandomRead' -benchtime 3x . \
				>"$OUT/gobench-$side-$round.txt")
		fi
	done
done

echo
echo "| codec | shuffle | round | old loader MB/s | old raw MB/s | old ratio | old first batch ms | new loader MB/s | new raw MB/s | new ratio | new first batch ms |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for codec in none lz4; do
	for shuffle in none block; do
		for round in $(seq 1 "$ROUNDS"); do
			row="| $codec | $shuffle | $round |"
			for side in old new; do
				row="$row $(python3 -c 'import json,sys; r=json.load(open(sys.argv[1])); print("%.0f | %.0f | %.2f | %.0f |" % (r["mb_per_s"], r["raw_mb_per_s"], r["ratio_to_raw"], r["first_batch_ms"]))' \
					"$OUT/bench-$side-$codec-$shuffle-$round.json")"
			done
			echo "$row"
		done
	done
done
echo
for round in $(seq 1 "$ROUNDS"); do
	for side in old new; do
		echo "go test -bench, $side, round $round:"
		grep -E '^Benchmark' "$OUT/gobench-$side-$round.txt" 2>/dev/null || true
	done
done
