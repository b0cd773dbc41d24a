#!/usr/bin/env bash
# bench/pgbench.sh: pgbench (Debian's postgresql-client) against
# loch serve --pg (issue 38): a point query over a 1,000-row table from 1, 8
# and 64 clients (TXNS transactions each), latency p50/p99 from pgbench's
# per-transaction log, and connections per second (-C: a new connection,
# SCRAM login included, per transaction). Usage: bench/pgbench.sh [TXNS];
# LOCH=path/to/loch runs that binary instead of building this checkout's
# (a baseline: another revision's).
set -euo pipefail
TXNS=${1:-50}
dir=$(mktemp -d)
trap 'kill $pid 2>/dev/null; wait $pid 2>/dev/null; rm -rf "$dir"' EXIT
loch=${LOCH:-}
if [ -z "$loch" ]; then
	go build -o "$dir/loch" ./cmd/loch
	loch=$dir/loch
fi
$loch sql "$dir/lake" "CREATE TABLE frames (id BIGINT, caption TEXT)" >/dev/null
$loch sql "$dir/lake" "INSERT INTO frames SELECT range, 'c' || range FROM range(1000)" >/dev/null
echo bench | $loch user add "$dir/users.json" bench --role reader >/dev/null
$loch serve "$dir/lake" --pg 127.0.0.1:0 --users "$dir/users.json" --max-conns 128 >"$dir/addr" 2>"$dir/log" &
pid=$!
for _ in $(seq 100); do grep -q postgresql "$dir/addr" 2>/dev/null && break; sleep 0.1; done
port=$(sed -E 's|.*:([0-9]+)/.*|\1|' "$dir/addr")
echo 'SELECT id FROM frames WHERE id = 7;' >"$dir/q.sql"
export PGPASSWORD=bench
echo "| clients | p50 | p99 | transactions/s |"
echo "|---|---|---|---|"
for c in 1 8 64; do
	(cd "$dir" && rm -f pgbench_log.* && pgbench -h 127.0.0.1 -p "$port" -U bench -n -M extended -f q.sql \
		-c "$c" -j "$(( c < 2 ? 1 : 2 ))" -t "$TXNS" --log lake >"$dir/out" 2>&1) || { cat "$dir/out"; exit 1; }
	tps=$(sed -nE 's/^tps = ([0-9.]+).*/\1/p' "$dir/out")
	cat "$dir"/pgbench_log.* | awk '{print $3}' | sort -n >"$dir/lat"
	n=$(wc -l <"$dir/lat")
	p50=$(sed -n "$(( (n + 1) / 2 ))p" "$dir/lat")
	p99=$(sed -n "$(( (n * 99 + 99) / 100 ))p" "$dir/lat")
	printf '| %d | %.1f ms | %.1f ms | %.1f |\n' "$c" "$(echo "$p50/1000" | bc -l)" "$(echo "$p99/1000" | bc -l)" "$tps"
done
(cd "$dir" && pgbench -h 127.0.0.1 -p "$port" -U bench -n -C -M simple -f q.sql -c 1 -t "$TXNS" lake >"$dir/out" 2>&1) || { cat "$dir/out"; exit 1; }
echo
echo "connections/s, a new connection per transaction (-C, no TLS): $(sed -nE 's/^tps = ([0-9.]+).*/\1/p' "$dir/out")"
