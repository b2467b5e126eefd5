#!/usr/bin/env bash
# One GPU session on the lent H200 machine (README "GPU results (H200)"): how the figures were made.
#
#   OUT=/tmp/out bash benchmarks/gpu_session.sh                 # every stage
#   STAGES="tests bench" bash benchmarks/gpu_session.sh         # some of them
#
# Stages, in order (each writes one file under $OUT, default /tmp/moe-oracle-gpu):
#   probe  gpus.txt         devices, versions; what torch's grouped GEMMs accept (benchmarks/gpu_probe.py)
#   tests  gpu_tests.log    pytest -m gpu: compiled Triton paths, fp8 experts, graphs, NCCL with 1 rank
#   dist   dist.log         the distributed scenarios over gloo (2 and 4 ranks) and NCCL (1 rank; 2 with two GPUs)
#   tune   tune.log         tile shapes of the fp8 block GEMM (benchmarks/fp8_block_tune.py)
#   bench  bench.log/.json  our experts vs their own grouped GEMMs (benchmarks/runtime_bench.py)
#   run    run.log          moe-oracle explain/run with the environment probed here (DeepSeek-R1 fp8)
#   suite  suite.log        the unit, golden and runtime suites on this machine
# The PNGs are drawn afterwards from bench.json (benchmarks/plot_runtime.py; no GPU needed).
# benchmarks/results/ (2026-12-01, one H200): STAGES="probe tests tune bench" gave
# h200_fp8_block_tuning.log (the tile table in kernels/_triton_moe.py came from it); then
# STAGES="probe tests dist bench run" gave h200_probe.txt, h200_gpu_tests.log, h200_dist_tests.log,
# h200_runtime_bench.{log,json} and h200_run.log, each copied from $OUT.
# Needs the image's torch and Triton; jsonschema and its dependencies come as wheels in .whl/ when
# the image lacks them.
set -u
OUT=${OUT:-/tmp/moe-oracle-gpu}
STAGES=${STAGES:-probe tests dist tune bench run}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ -d .whl ] && ! python3 -c "import jsonschema" 2>/dev/null; then
    python3 -m pip install -q --no-index --find-links .whl --no-compile --no-cache-dir --target /tmp/site jsonschema && export PYTHONPATH=/tmp/site  # pip picks the wheels of this Python (rpds-py is built per version)
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD"
export MOE_ORACLE_CACHE_DIR=/tmp/moe-oracle-cache
has() { case " $STAGES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
stamp() { echo "== $1 ($(date -u +%H:%M:%S))"; }

if has probe; then
    { stamp probe; nvidia-smi --query-gpu=name,compute_cap,memory.total,clocks.max.sm --format=csv
      timeout 120 python3 benchmarks/gpu_probe.py; } 2>&1 | tee "$OUT/gpus.txt"
fi
if has tests; then
    { stamp "pytest -m gpu (NCCL tests: stage dist)"; timeout 420 python3 -m pytest -m gpu tests/runtime --ignore=tests/runtime/test_distributed.py -q -p no:cacheprovider -rA 2>&1; } | tee "$OUT/gpu_tests.log" | tail -40
fi
if has dist; then
    { stamp "distributed scenarios (gloo 2 and 4 ranks, NCCL 1 rank, NCCL 2 ranks if two GPUs)"; timeout 300 python3 -m pytest tests/runtime/test_distributed.py -q -p no:cacheprovider -rA 2>&1; } | tee "$OUT/dist.log" | tail -30
fi
if has tune; then
    { stamp "fp8 block GEMM tile shapes"; timeout 300 python3 benchmarks/fp8_block_tune.py 2>&1; } | tee "$OUT/tune.log" | grep -E "^#|best|bf16 grouped"
fi
if has bench; then
    { stamp "runtime benchmark"; timeout 480 python3 benchmarks/runtime_bench.py --portable --json "$OUT/bench.json" 2>&1; } | tee "$OUT/bench.log" | tail -70
fi
if has run; then
    { stamp "selection and run on this machine (probed)"
      python3 -m moe_oracle.cli explain --probe --model deepseek-r1 2>&1 | head -6
      timeout 240 python3 -m moe_oracle.cli run --model deepseek-r1 --tokens 2048 --layers 2 2>&1
      timeout 120 python3 -m moe_oracle.cli run --model llama-4-maverick-17b-128e-instruct-fp8 --tokens 2048 2>&1
      timeout 120 python3 -m moe_oracle.cli run --model qwen3-30b-a3b --tokens 2048 --layers 2 2>&1; } | tee "$OUT/run.log"
fi
if has suite; then
    { stamp "unit, golden and runtime suites"; timeout 300 python3 -m pytest tests/unit tests/golden tests/runtime -q -p no:cacheprovider 2>&1 | tail -15; } | tee "$OUT/suite.log"
fi
