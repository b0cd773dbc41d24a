#!/usr/bin/env bash
# run.sh installs a loch wheel and runs the GPU tests and the GPU
# benchmarks with it, on a machine with a CUDA GPU, torch, jax (with its
# CUDA plugin), numpy and pytest, and neither Go nor a network:
#
#   bash python/gpu_tests/run.sh dist/loch-<version>-py3-none-manylinux_<glibc>_x86_64.whl
#
# (the wheel defaults to the one dist/loch-*.whl). In order, each stage
# under a time limit, a failure of one not stopping the next (about 4
# minutes on 16 cores and an H100):
#   1. the wheel installed with pip --target into $LOCH_SITE (default
#      /tmp/site), put first on PYTHONPATH, its loch command first on PATH;
#   2. the machine: nvidia-smi -L, python, torch, jax and where loch comes from;
#   3. pytest python/gpu_tests, torch's tests and jax's each in a process of
#      its own (junit XML and logs into $OUT when set);
#   4. python/bench/bench_loaders.py --only go --generate sdk: ds.pytorch()
#      against the wheel's `loch bench` (JSON into $OUT);
#   5. python/gpu_tests/bench_cuda.py: ds.pytorch(device="cuda") against
#      the CPU loader, on the same data;
#   6. python/gpu_tests/probe_cuda.py: questions answered by this machine.
# The exit status is the tests' (pytest's), or the first failing stage's.
#
# $PYTHON is the interpreter (default python3); LOCH_TEST_DEVICE=cpu runs the
# tests as a dry run on a machine without a GPU (the CUDA benchmarks and
# probes are then left out); $BENCH_DIR holds the benchmark data (default
# /tmp/bl); $BENCH_IMAGES sizes it (default 20000); $BENCH_EPOCHS and
# $BENCH_ROUNDS (default 30 and 5: an lz4 epoch takes about 45 ms on 16
# cores) are bench_loaders.py's --go-epochs and --go-rounds, $BENCH_TIMEOUT
# (default 200) its time limit in seconds.
set -u -o pipefail

PYTHON=${PYTHON:-python3}
SITE=${LOCH_SITE:-/tmp/site}
BENCH_DIR=${BENCH_DIR:-/tmp/bl}
BENCH_IMAGES=${BENCH_IMAGES:-20000}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT" || exit 2
if [ -n "${OUT:-}" ]; then
	mkdir -p "$OUT"
	exec > >(tee -a "$OUT/run.log") 2>&1
fi

wheel=${1:-}
if [ -z "$wheel" ]; then
	shopt -s nullglob
	wheels=(dist/loch-*.whl)
	if [ "${#wheels[@]}" -ne 1 ]; then
		echo "run.sh: give the wheel: found ${#wheels[@]} dist/loch-*.whl in $ROOT" >&2
		exit 2
	fi
	wheel=${wheels[0]}
fi
[ -f "$wheel" ] || { echo "run.sh: no wheel at $wheel" >&2; exit 2; }

stage() { printf '\n=== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }
status=0
note() { # note NAME RC: records the first failure
	echo "--- $1: exit $2"
	results+=("$1=$2")
	if [ "$2" -ne 0 ] && [ "$status" -eq 0 ]; then status=$2; fi
}
results=()

stage "install $wheel into $SITE"
rm -rf "$SITE"
if ! "$PYTHON" -m pip install -q --no-index --no-deps --no-compile --target "$SITE" "$wheel"; then
	# pip refuses a wheel whose platform tag this machine does not match:
	# unpack it as it is, so that the tests say what does not load.
	echo "run.sh: pip refused the wheel; unpacking it instead (ldd: $(ldd --version 2>&1 | head -1))"
	rm -rf "$SITE"
	"$PYTHON" -m zipfile -e "$wheel" "$SITE" || exit 2
	chmod +x "$SITE"/loch/_lib/loch
	mkdir -p "$SITE/bin"
	printf '#!/bin/sh\nexec "%s" "$@"\n' "$SITE/loch/_lib/loch" >"$SITE/bin/loch"
	chmod +x "$SITE/bin/loch"
fi
export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
export PATH="$SITE/bin:$PATH"
export PYTHONDONTWRITEBYTECODE=1

stage "machine"
nvidia-smi -L || echo "(no nvidia-smi)"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null
echo "cores $(nproc), $(awk '/MemTotal/ {printf "%.0f GiB", $2/2^20}' /proc/meminfo), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "loch command: $(command -v loch) -> $(loch version 2>&1 | head -1)"
"$PYTHON" - "$SITE" <<'EOF'
import sys, platform
import numpy, torch
import loch
print(f"python {platform.python_version()}, numpy {numpy.__version__}, torch {torch.__version__} "
      f"(CUDA {torch.version.cuda}, available {torch.cuda.is_available()}, {torch.cuda.device_count()} devices)")
try:
    import jax
    print(f"jax {jax.__version__}, devices {jax.devices()}")
except Exception as e:  # reported, and the jax tests fail with the reason
    print(f"jax: {type(e).__name__}: {e}")
print(f"loch {loch.__version__} from {loch.__file__}")
if not loch.__file__.startswith(sys.argv[1]):
    sys.exit(f"loch comes from {loch.__file__}, not from the wheel in {sys.argv[1]}")
from pathlib import Path
tree, wheel = Path("python/loch"), Path(loch.__file__).parent
differ = [p.name for p in sorted(tree.glob("*.py")) if not (wheel / p.name).exists()
          or (wheel / p.name).read_bytes() != p.read_bytes()]
if differ:  # the tests and benchmarks are this tree's; the SDK is the wheel's
    print(f"WARNING: the wheel's Python SDK is not this tree's (make wheel again): {', '.join(differ)} differ")
EOF
note machine $?

# torch and jax in processes of their own: a CUDA library clash between
# them cannot take the torch tests down with it.
tests=0
for part in torch_cuda:120 jax_gpu:60; do
	name=${part%%:*} limit=${part##*:}
	stage "GPU tests: pytest python/gpu_tests/test_$name.py"
	junit=()
	[ -n "${OUT:-}" ] && junit=(--junitxml "$OUT/test_$name.xml")
	timeout "$limit" "$PYTHON" -m pytest "python/gpu_tests/test_$name.py" -q -rfEs -p no:cacheprovider "${junit[@]}" 2>&1 |
		tee ${OUT:+"$OUT/test_$name.log"}
	rc=$?
	note "test_$name" $rc
	[ "$rc" -ne 0 ] && [ "$tests" -eq 0 ] && tests=$rc
done

if [ "${LOCH_TEST_DEVICE:-cuda}" = cpu ]; then
	echo "LOCH_TEST_DEVICE=cpu: a dry run, so no CUDA benchmarks or probes"
	bench_epochs=1 rounds=1
else
	bench_epochs=${BENCH_EPOCHS:-30} rounds=${BENCH_ROUNDS:-5}
fi

stage "ds.pytorch() against loch bench (bench_loaders.py --only go --generate sdk)"
json=()
[ -n "${OUT:-}" ] && json=(--json "$OUT/bench_loaders.json")
timeout "${BENCH_TIMEOUT:-200}" "$PYTHON" python/bench/bench_loaders.py --only go --generate sdk --loch "$(command -v loch)" \
	--dir "$BENCH_DIR" --images "$BENCH_IMAGES" --go-rounds "$rounds" --go-epochs "$bench_epochs" --retries 0 "${json[@]}"
note bench_loaders $?

if [ "${LOCH_TEST_DEVICE:-cuda}" != cpu ]; then
	stage "ds.pytorch(device=\"cuda\") against the CPU loader (bench_cuda.py)"
	timeout 45 "$PYTHON" python/gpu_tests/bench_cuda.py --dir "$BENCH_DIR" --images "$BENCH_IMAGES"
	note bench_cuda $?

	stage "probes (probe_cuda.py)"
	timeout 60 "$PYTHON" python/gpu_tests/probe_cuda.py
	note probes $?
fi

stage "done: ${results[*]}"
[ "$tests" -ne 0 ] && exit "$tests"
exit "$status"
