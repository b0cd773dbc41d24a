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
#   6. python/gpu_tests/probe_cuda.py: questions answered by this machine;
#   then issue 40's ResNet-50 figures (about 2.5 minutes more on 16 cores
#   and an H200; every figure into one $OUT/resnet.json):
#   7. bench_resnet.py prepare: $RESNET_IMAGES (default 10000) JPEGs of
#      224-320 px made by numpy and PIL on every core in $RESNET_DIR/jpeg
#      (default /tmp/rn), and the loch dataset of the same files
#      ($RESNET_DIR/loch, `loch ingest imagefolder --image-compression jpeg`);
#   8. bench_resnet.py decode: JPEG decode images/s, torchvision's batched
#      nvJPEG against PIL and torchvision on every core and against loch's
#      CPU loader (and its GPU decode when the wheel has it), same JPEGs;
#   9. examples/train_resnet.py under torchrun on every GPU: ResNet-50,
#      bf16, channels_last, $RESNET_EPOCHS (default 2) epochs from local
#      disk, decode on the CPU: samples/s, data-wait share, GPU utilisation;
#  10. the same with --decode gpu, when the wheel's ds.pytorch() has decode=;
#  11. bench_resnet.py dali: DALI's ImageNet pipeline feeding the same loop,
#      DALI from dist/gpu-wheels (`make gpu-wheels`) when not installed;
#      without it the stage is skipped, saying so loudly (not a failure).
# $LOCH_GPU_STAGES picks stage groups (default "tests loaders cuda resnet":
# 3, 4, 5-6, 7-11); the install and machine stages always run.
# The exit status is the tests' (pytest's), or the first failing stage's.
#
# $PYTHON is the interpreter (default python3); LOCH_TEST_DEVICE=cpu runs the
# tests as a dry run on a machine without a GPU (the CUDA benchmarks and
# probes are then left out); $BENCH_DIR holds the benchmark data (default
# /tmp/bl); $BENCH_IMAGES sizes it (default 20000); $BENCH_EPOCHS and
# $BENCH_ROUNDS (default 30 and 5: an lz4 epoch takes about 45 ms on 16
# cores) are bench_loaders.py's --go-epochs and --go-rounds, $BENCH_TIMEOUT
# (default 200) its time limit in seconds. With LOCH_TEST_DEVICE=cpu the
# ResNet stages are a smoke run on the CPU (64 small JPEGs, resnet18, 2
# steps, no GPU contender, no DALI).
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

# resnet_stages runs stages 7-11 (issue 40), each under a time limit; their
# JSON goes to $RESNET_DIR/out, gathered into $OUT/resnet.json at the end
# ($OUT brings back few files).
resnet_stages() {
	local dir=${RESNET_DIR:-/tmp/rn} images=${RESNET_IMAGES:-10000} epochs=${RESNET_EPOCHS:-2}
	local gpus train=() dry=0 rc what
	gpus=$(nvidia-smi -L 2>/dev/null | grep -c '^GPU')
	what="ResNet-50 on $gpus GPUs"
	if [ "${LOCH_TEST_DEVICE:-cuda}" = cpu ] || [ "$gpus" -eq 0 ]; then
		dry=1 gpus=1 images=${RESNET_IMAGES:-64} what="resnet18 on the CPU (smoke run)"
		train=(--device cpu --model resnet18 --image-size 32 --batch-size 4 --steps 2)
		echo "ResNet stages: a CPU smoke run ($images images, resnet18, 2 steps)"
	fi
	local bench=python/gpu_tests/bench_resnet.py out=$dir/out
	local torchrun=("$PYTHON" -m torch.distributed.run --standalone "--nproc_per_node=$gpus")
	mkdir -p "$out" && rm -f "$out"/*.json
	local sides=()
	[ "$dry" -eq 1 ] && sides=(--min-side 40 --max-side 64 --classes 4)

	stage "ResNet data: $images JPEGs and their loch dataset (bench_resnet.py prepare)"
	timeout 120 "$PYTHON" "$bench" prepare --dir "$dir" --images "$images" "${sides[@]}" --loch "$(command -v loch)"
	rc=$?
	note resnet_prepare $rc
	[ "$rc" -ne 0 ] && return

	stage "JPEG decode: GPU against every core (bench_resnet.py decode)"
	timeout 120 "$PYTHON" "$bench" decode --dir "$dir" --dataset "$dir/loch" --json "$out/decode.json" \
		$([ "$dry" -eq 1 ] && echo --crop 32 --batch 8 || echo --rounds 2)
	note resnet_decode $?

	stage "$what from local disk, decode on the CPU (train_resnet.py)"
	timeout 180 "${torchrun[@]}" examples/train_resnet.py "$dir/loch" --epochs "$epochs" --decode cpu "${train[@]}" \
		--json "$out/train_loch_cpu.json"
	note resnet_loch_cpu $?

	if [ "$dry" -eq 0 ] && "$PYTHON" -c 'import sys; from loch.torch import TorchOptions as T; sys.exit("decode" not in T.__optional_keys__)'; then
		stage "$what from local disk, decode on the GPU (train_resnet.py --decode gpu)"
		timeout 180 "${torchrun[@]}" examples/train_resnet.py "$dir/loch" --epochs "$epochs" --decode gpu \
			--json "$out/train_loch_gpu.json"
		note resnet_loch_gpu $?
	else
		echo "(no --decode gpu run: no GPU, or this wheel's ds.pytorch() has no decode=)"
	fi

	if [ "$dry" -eq 0 ]; then
		resnet_dali "$dir" "$epochs" "${torchrun[@]}"
	else
		echo "(no DALI run on a CPU)"
	fi
	[ -n "${OUT:-}" ] && "$PYTHON" -c 'import json, sys, pathlib
print(json.dumps({p.stem: json.loads(p.read_text()) for p in sorted(pathlib.Path(sys.argv[1]).glob("*.json"))}, indent=1))' \
		"$out" >"$OUT/resnet.json"
}

# resnet_dali DIR EPOCHS TORCHRUN...: stage 11, DALI installed from
# dist/gpu-wheels into its own --target folder (last on PYTHONPATH, so
# that nothing the machine has is replaced) when python has none.
resnet_dali() {
	local dir=$1 epochs=$2 site=${LOCH_DALI_SITE:-/tmp/dali-site} path=$PYTHONPATH
	shift 2
	stage "ResNet-50 fed by DALI (bench_resnet.py dali)"
	if ! "$PYTHON" -c 'import nvidia.dali' 2>/dev/null; then
		local wheels=(dist/gpu-wheels/*.whl)
		if [ -e "${wheels[0]}" ]; then
			rm -rf "$site"
			"$PYTHON" -m pip install -q --no-index --no-deps --no-compile --target "$site" "${wheels[@]}" &&
				path="$PYTHONPATH:$site"
		else
			echo "*** NO DALI: python has none and dist/gpu-wheels is empty (make gpu-wheels; about 260 MB)"
		fi
	fi
	if ! PYTHONPATH=$path "$PYTHON" -c 'import nvidia.dali'; then
		echo "*** DALI BASELINE SKIPPED: DALI does not import (above)"
		results+=("resnet_dali=skipped")
		return
	fi
	PYTHONPATH=$path timeout 180 "$@" python/gpu_tests/bench_resnet.py dali --dir "$dir" --epochs "$epochs" \
		--json "$dir/out/train_dali.json"
	note resnet_dali $?
}

stage() { printf '\n=== %s (%s)\n' "$1" "$(date -u +%H:%M:%S)"; }
status=0
note() { # note NAME RC: records the first failure
	echo "--- $1: exit $2"
	results+=("$1=$2")
	if [ "$2" -ne 0 ] && [ "$status" -eq 0 ]; then status=$2; fi
}
results=()
STAGES=" ${LOCH_GPU_STAGES:-tests loaders cuda resnet} "
want() { [[ "$STAGES" == *" $1 "* ]]; }

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
want tests || echo "LOCH_GPU_STAGES: no GPU tests"
want tests && for part in torch_cuda:120 jax_gpu:60; do
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

if want loaders; then
	stage "ds.pytorch() against loch bench (bench_loaders.py --only go --generate sdk)"
	json=()
	[ -n "${OUT:-}" ] && json=(--json "$OUT/bench_loaders.json")
	timeout "${BENCH_TIMEOUT:-200}" "$PYTHON" python/bench/bench_loaders.py --only go --generate sdk --loch "$(command -v loch)" \
		--dir "$BENCH_DIR" --images "$BENCH_IMAGES" --go-rounds "$rounds" --go-epochs "$bench_epochs" --retries 0 "${json[@]}"
	note bench_loaders $?
fi

if [ "${LOCH_TEST_DEVICE:-cuda}" != cpu ] && want cuda; then
	stage "ds.pytorch(device=\"cuda\") against the CPU loader (bench_cuda.py)"
	timeout 45 "$PYTHON" python/gpu_tests/bench_cuda.py --dir "$BENCH_DIR" --images "$BENCH_IMAGES"
	note bench_cuda $?

	stage "probes (probe_cuda.py)"
	timeout 60 "$PYTHON" python/gpu_tests/probe_cuda.py
	note probes $?
fi

want resnet && resnet_stages
stage "done: ${results[*]}"
[ "$tests" -ne 0 ] && exit "$tests"
exit "$status"
