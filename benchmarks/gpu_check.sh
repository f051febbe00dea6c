#!/usr/bin/env bash
# The GPU check in one command, for a machine with an NVIDIA GPU, numba with
# numba-cuda, and no network (a cluster node, a lent GPU box):
#
#   bash benchmarks/gpu_check.sh            # the results in $OUT (default: gpu-check-out/<time>/)
#   bash benchmarks/gpu_check.sh --smoke    # the same steps on numba's CUDA simulator, tiny
#                                           # sizes (minutes on two cores: 1500 s at most)
#
# Steps, each under its own time limit and all within GPU_CHECK_SECONDS (450 s: under
# 8 minutes with the slack the limits leave), the most useful first, so that a run cut
# short still returns what finished; every step's output goes to $OUT/<step>.log as it
# runs and one line a step to $OUT/summary.txt:
#
#   install   the wheels the machine lacks and antiamp itself, offline, from
#             wheelhouse/ (made beforehand on a networked machine by
#             `python benchmarks/gpu_offline.py download`), into .gpu-site/ (on
#             PYTHONPATH); nothing installed there is upgraded.  About 15 s.
#   versions  Python, NumPy, numba, numba-cuda, JAX, antiamp; the GPU as numba and
#             nvidia-smi see it ($OUT/versions.txt).  A few seconds.
#   ptx       beside the tests (CPU only, one core; waited for before any timing):
#             tests/gpu_ptx_checks.py --report, every kernel compiled for compute
#             capability 9.0 and its registers, local and shared memory, occupancy at
#             256 threads a block and hot-loop instructions ($OUT/ptx.log, a JSON line a
#             kernel in $OUT/ptx_report.jsonl; exit 3: no CUDA compiler, skipped).
#             About 20 s.  Limit 120 s.
#   tests     pytest tests/test_gpu.py: every GPU kernel against its CPU kernel at
#             2^24 instances (bit for bit; float sums within 1e-12), one worker a
#             test.  At 2e11 instances/s (the issue's GPU baseline) the GPU's share is
#             negligible; the CPU references at 2^24 take about a second each at the
#             16-core CPU's 0.8e9/s (the loop's two learners, 1.3e9 cases each, a few
#             seconds); what costs is compiling each kernel for both targets on a
#             fresh machine (tens of seconds, in parallel).  Limit 160 s.
#   kernels   benchmarks/bench_gpu.py's table: for the floor and each of the 12
#             kernels, the GPU against the CPU (checked first), then the GPU, the CPU
#             and JAX timed, 3 calls each, each call's instances grown until it lasts
#             0.2 s (capped at 2^36 on the GPU: 0.34 s of the 2e11/s baseline; 2^32 on
#             the CPU and JAX: 5 s at 0.8e9/s), so a kernel costs about 3 x 3 x 0.2 s
#             whatever its rate, plus its compilation for the GPU (NVVM, a few seconds
#             a kernel; the CPU kernels mostly come from the tests' numba cache):
#             13 x ~10 s.  ($OUT/bench.jsonl, a JSON line a kernel.)  Limit 200 s.
#   sweeps    10^4-cell grids end to end, run.device=cuda against run.device=cpu: the
#             baseline and the signals model's simulated payoffs, the GPU at 10^7
#             instances a cell (10^11: 0.5 s at 2e11/s, the rest per-cell work) and
#             at 10^6, the CPU at 10^6 (10^10: 12.5 s at 0.8e9/s; 10^7 would take
#             125 s a model).  Limit 90 s.
#   colmad    the same for colmad, on 900 cells (its per-cell work, the exact
#             enumeration and the moments, is about 10 ms a cell on the CPU, which a
#             10^4-cell grid would spend three times over).  What time is left.
#   report    $OUT/BENCHMARKS-gpu.md: BENCHMARKS.md's GPU section from bench.jsonl, and
#             the ptx step's table.
#
# Environment: OUT, PYTHON (default: the first of python3, python, python3.1x that
# imports numba), GPU_CHECK_SECONDS,
# WHEELHOUSE (default wheelhouse/), GPU_CHECK_SITE (default .gpu-site/).  --no-install
# uses the environment as it is.  Exit status 0 when every step passed.
set -u
cd "$(dirname "$0")/.." || exit 2

SMOKE=0
INSTALL=1
for arg in "$@"; do
    case "$arg" in
        --smoke) SMOKE=1 ;;
        --no-install) INSTALL=0 ;;
        -h|--help) awk 'NR > 1 && /^set -u/ {exit} NR > 1' "$0"; exit 0 ;;
        *) echo "gpu_check: unknown argument $arg (--smoke, --no-install)" >&2; exit 2 ;;
    esac
done

START=$(date +%s)
LIMIT=${GPU_CHECK_SECONDS:-$([ "$SMOKE" = 1 ] && echo 1500 || echo 450)}
OUT=${OUT:-gpu-check-out/$(date -u +%Y%m%d-%H%M%S)}
mkdir -p "$OUT" || exit 2
OUT=$(cd "$OUT" && pwd)
WHEELHOUSE=${WHEELHOUSE:-wheelhouse}
SITE=${GPU_CHECK_SITE:-$PWD/.gpu-site}
if [ -z "${PYTHON:-}" ]; then  # the first Python that has numba (the machine's), else python3
    for c in python3 python python3.12 python3.13 python3.11; do
        if command -v "$c" >/dev/null && "$c" -c "import numba" 2>/dev/null; then
            PYTHON=$(command -v "$c")
            break
        fi
    done
    PYTHON=${PYTHON:-$(command -v python3 || command -v python)}
fi
export PYTHONUNBUFFERED=1
# The timings and sweeps launch small grids on purpose (the correctness checks, a cell
# of 10^6 instances): numba-cuda's low-occupancy warning would only be noise.
export NUMBA_CUDA_LOW_OCCUPANCY_WARNINGS=0
# JAX takes 75% of the GPU's memory on first use unless told otherwise; numba needs some.
export XLA_PYTHON_CLIENT_PREALLOCATE=false
if [ "$SMOKE" = 1 ]; then
    export NUMBA_ENABLE_CUDASIM=1
fi
NCPU=$(nproc 2>/dev/null || echo 2)
FAILED=0

# section NAME SECONDS COMMAND...: COMMAND under the smaller of SECONDS and the time
# left, its output to the terminal and $OUT/NAME.log, one line to $OUT/summary.txt.
section() {
    local name=$1 budget=$2 left t0 rc note=""
    shift 2
    left=$(( LIMIT - ($(date +%s) - START) ))
    if [ "$left" -lt 10 ]; then
        echo "$name: skipped (the run's ${LIMIT} s are spent)" | tee -a "$OUT/summary.txt"
        FAILED=1
        return
    fi
    [ "$budget" -gt "$left" ] && budget=$left
    echo "=== $name (at most ${budget} s) ==="
    t0=$(date +%s)
    timeout -k 10 "$budget" "$@" 2>&1 | tee "$OUT/$name.log"
    rc=${PIPESTATUS[0]}
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then note="  (stopped at its time limit)"; fi
    [ "$rc" = 0 ] || FAILED=1
    printf '%-9s exit %3s  %4s s%s\n' "$name" "$rc" "$(( $(date +%s) - t0 ))" "$note" \
        | tee -a "$OUT/summary.txt"
}

VERSIONS='
import importlib.metadata as md, platform, sys
print("python", platform.python_version(), sys.executable)
for p in ("numpy", "numba", "llvmlite", "numba-cuda", "cuda-bindings", "cuda-python",
          "jax", "jaxlib", "scipy", "pandas", "xarray", "zarr", "dask", "hydra-core",
          "antiamp"):
    try:
        print(p, md.version(p))
    except md.PackageNotFoundError:
        print(p, "-")
import antiamp
from antiamp.kernels.gpu import simulator, status
print("antiamp from", antiamp.__file__)
ok, why = status()
print("GPU:", why, "(usable)" if ok else "(NOT usable)", "[simulator]" if simulator() else "")
if ok and not simulator():
    from antiamp.kernels.gpu import cuda
    d = cuda().get_current_device()
    print("compute capability", d.compute_capability, "multiprocessors",
          d.MULTIPROCESSOR_COUNT)
sys.exit(0 if ok else 1)
'

echo "gpu_check: results in $OUT; python $PYTHON; limit ${LIMIT} s" | tee "$OUT/summary.txt"

if [ "$INSTALL" = 1 ]; then
    section install 90 "$PYTHON" benchmarks/gpu_offline.py install --wheelhouse "$WHEELHOUSE" \
        --target "$SITE"
    export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
    export PATH="$SITE/bin:$PATH"
fi

section versions 60 bash -c '"$0" -c "$1" && { command -v nvidia-smi >/dev/null && nvidia-smi \
    --query-gpu=name,driver_version,memory.total,clocks.max.sm --format=csv || true; }' \
    "$PYTHON" "$VERSIONS"
cp "$OUT/versions.log" "$OUT/versions.txt" 2>/dev/null

# ptx: in the background beside the tests step (the compiler, not the GPU), in a
# folder of its own, with the simulator off (the simulator compiles nothing).
mkdir -p "$OUT/ptx-work"
PTX_T0=$(date +%s)
ROOT=$PWD
( cd "$OUT/ptx-work" && env -u NUMBA_ENABLE_CUDASIM timeout -k 5 120 "$PYTHON" \
      "$ROOT/tests/gpu_ptx_checks.py" --report --json "$OUT/ptx_report.jsonl" \
      > "$OUT/ptx.log" 2>&1; echo $? > "$OUT/ptx.rc" ) &
PTX_PID=$!
# ptx_done: wait for the ptx step and write its summary line (exit 3: skipped).
ptx_done() {
    local rc note=""
    wait "$PTX_PID"
    rc=$(cat "$OUT/ptx.rc" 2>/dev/null || echo 1)
    case "$rc" in
        0) ;;
        3) note="  (skipped: $(head -c 200 "$OUT/ptx.log"))" ;;
        124|137) note="  (stopped at its time limit)"; FAILED=1 ;;
        *) FAILED=1 ;;
    esac
    printf '%-9s exit %3s  %4s s%s\n' ptx "$rc" "$(( $(date +%s) - PTX_T0 ))" "$note" \
        | tee -a "$OUT/summary.txt"
}

# -p no:benchmark: a GPU image may have pytest-benchmark, which warns under xdist at
# start-up, and the project's filterwarnings turns that warning into an error.
if [ "$SMOKE" = 1 ]; then  # the simulator: the GPU tests skip, the sizes are tiny
    section tests 200 "$PYTHON" -m pytest -p no:cacheprovider -p no:benchmark -n 0 -rA tests/test_gpu.py \
        --junitxml="$OUT/test_gpu.xml"
    ptx_done
    section kernels 900 "$PYTHON" benchmarks/bench_gpu.py --only kernels --smoke \
        --json "$OUT/bench.jsonl"
    section sweeps 300 "$PYTHON" benchmarks/bench_gpu.py --only sweeps --smoke \
        --sweep-models baseline,signals --json "$OUT/bench.jsonl"
    section colmad 300 "$PYTHON" benchmarks/bench_gpu.py --only sweeps --smoke \
        --sweep-models colmad --json "$OUT/bench.jsonl"
else
    WORKERS=$(( NCPU < 7 ? NCPU : 7 ))  # tests/test_gpu.py has 7 tests
    section tests 160 "$PYTHON" -m pytest -p no:cacheprovider -p no:benchmark -n "$WORKERS" -rA \
        tests/test_gpu.py --junitxml="$OUT/test_gpu.xml"
    ptx_done
    section kernels 200 "$PYTHON" benchmarks/bench_gpu.py --only kernels --min-time 0.2 \
        --repeats 3 --n-gpu $(( 1 << 36 )) --n-cpu $(( 1 << 32 )) --n-jax $(( 1 << 32 )) \
        --json "$OUT/bench.jsonl"
    section sweeps 90 "$PYTHON" benchmarks/bench_gpu.py --only sweeps \
        --sweep-models baseline,signals --sweep-cells 10000 --sweep-n 10000000 \
        --sweep-n-cpu 1000000 --json "$OUT/bench.jsonl"
    section colmad 100 "$PYTHON" benchmarks/bench_gpu.py --only sweeps --sweep-models colmad \
        --sweep-cells 900 --sweep-n 10000000 --sweep-n-cpu 1000000 --json "$OUT/bench.jsonl"
fi

if [ -s "$OUT/bench.jsonl" ]; then
    "$PYTHON" benchmarks/bench_gpu.py --report-from "$OUT/bench.jsonl" > "$OUT/BENCHMARKS-gpu.md" \
        && echo "gpu_check: BENCHMARKS.md's GPU section in $OUT/BENCHMARKS-gpu.md"
fi
if grep -q '^| kernel | regs' "$OUT/ptx.log" 2>/dev/null; then
    { echo; echo "### The kernels' machine code"; echo;
      sed -n '/^Compiled for/,$p' "$OUT/ptx.log" | grep -E '^(\||Compiled for|$)'; } \
        >> "$OUT/BENCHMARKS-gpu.md"
fi
echo "gpu_check: $(( $(date +%s) - START )) s in all; $([ "$FAILED" = 0 ] && echo \
    'every step passed' || echo 'some step failed or was cut short: see summary.txt')" \
    | tee -a "$OUT/summary.txt"
exit "$FAILED"
