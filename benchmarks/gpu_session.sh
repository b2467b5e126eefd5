#!/usr/bin/env bash
# One GPU session on the lent H200 machine (see README "GPU results"): how the figures were made.
#
#   bash benchmarks/gpu_session.sh            # writes logs under $OUT (default /tmp/moe-oracle-gpu)
#
# Runs, in order: the `gpu`-marked tests (torch._grouped_mm numerics, NCCL prepare/finalize when
# two GPUs exist), `moe-oracle explain/run` with the environment probed on that machine, the
# runtime benchmark, then the unit, golden and runtime suites. Needs the image's torch; jsonschema and its
# dependencies may be installed from wheels in .whl/ when the image lacks them.
set -u
OUT=${OUT:-/tmp/moe-oracle-gpu}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if [ -d .whl ] && ! python3 -c "import jsonschema" 2>/dev/null; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD"
export MOE_ORACLE_CACHE_DIR=/tmp/moe-oracle-cache

nvidia-smi --query-gpu=name,compute_cap,memory.total --format=csv | tee "$OUT/gpus.txt"
python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.version.cuda, 'devices', torch.cuda.device_count())" | tee -a "$OUT/gpus.txt"

echo "== gpu tests" | tee "$OUT/gpu_tests.log"
timeout 300 python3 -m pytest -m gpu tests/runtime -q -p no:cacheprovider -rA 2>&1 | tee -a "$OUT/gpu_tests.log" | tail -40

echo "== selection on this machine (probed)" | tee "$OUT/run.log"
python3 -m moe_oracle.cli explain --probe --model qwen3-30b-a3b 2>&1 | head -25 | tee -a "$OUT/run.log"
for model in qwen3-30b-a3b mixtral-8x7b-instruct-v0.1; do
    timeout 240 python3 -m moe_oracle.cli run --model "$model" --tokens 512 --layers 2 2>&1 | tee -a "$OUT/run.log"
done

echo "== runtime benchmark" | tee "$OUT/bench.log"
timeout 400 python3 benchmarks/runtime_bench.py --device cuda --quick --cuda-graph --json "$OUT/bench.json" 2>&1 | tee -a "$OUT/bench.log" | tail -60

echo "== unit, golden and runtime suites on the GPU machine" | tee "$OUT/suite.log"
timeout 300 python3 -m pytest tests/unit tests/golden tests/runtime -q -p no:cacheprovider 2>&1 | tail -15 | tee -a "$OUT/suite.log"
