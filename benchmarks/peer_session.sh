#!/usr/bin/env bash
# One GPU call for issue 23 on the lent H200 (how benchmarks/results/h200_peer_* were made):
#
#   python benchmarks/prepare_peer.py                    # here, where the package index is reachable
#   OUT=/tmp/out STAGES="tune ship tests bench" bash benchmarks/peer_session.sh   # there (device tool, carrying .peer, .whl)
#
# Stages, in this order (each writes one file under $OUT):
#   tune   tune.log, bf16_tuned.yaml   tiles and path per layer and token count (benchmarks/bf16_tune.py)
#   ship   the tuned table replaces runtime_tables/paths/bf16_grouped.yaml in this copy (tested and timed below;
#          copy $OUT/bf16_tuned.yaml into the repository afterwards to commit what was measured)
#   tests  gpu_tests.log    pytest -m gpu tests/runtime (without the NCCL scenarios)
#   bench  bench.log, peer.json        ours vs vLLM's Triton kernel (runtime_bench.py --peer), with the
#                                      tuned table when the tune stage wrote one, else the shipped table
# The figures are drawn afterwards from peer.json (benchmarks/plot_runtime.py --peer; no GPU needed).
set -u
OUT=${OUT:-/tmp/moe-oracle-peer}
STAGES=${STAGES:-tune ship tests bench}
PEER=${PEER:-.peer/vllm-0.33.0}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MOE_ORACLE_CACHE_DIR=/tmp/moe-oracle-cache
if [ -d .whl ] && ! python3 -c "import jsonschema" 2>/dev/null; then  # jsonschema and its dependencies as wheels (README.md of the device tool)
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD"
has() { case " $STAGES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
stamp() { echo "== $1 ($(date -u +%H:%M:%S))"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used --format=csv,noheader
if has tune; then
    { stamp "bf16 tiles and paths"; timeout ${T_TUNE:-220} python3 benchmarks/bf16_tune.py --out "$OUT/bf16_tuned.yaml" 2>&1; } > "$OUT/tune.log"
    grep -E "whole call|wrote|Error" "$OUT/tune.log" | tail -30
fi
if has ship && [ -s "$OUT/bf16_tuned.yaml" ]; then  # test and time the table that will be committed
    cp "$OUT/bf16_tuned.yaml" moe_oracle/runtime_tables/paths/bf16_grouped.yaml && echo "== the tuned table is now runtime_tables/paths/bf16_grouped.yaml"
fi
if has tests; then
    { stamp "pytest -m gpu tests/runtime"; timeout ${T_TESTS:-110} python3 -m pytest -m gpu tests/runtime --ignore=tests/runtime/test_distributed.py -q -p no:cacheprovider -rA 2>&1; } > "$OUT/gpu_tests.log"
    tail -3 "$OUT/gpu_tests.log"
fi
if has bench; then
    paths=()
    if ! has ship && [ -s "$OUT/bf16_tuned.yaml" ]; then paths=(--paths "$OUT/bf16_tuned.yaml"); fi
    { stamp "runtime_bench.py --peer $PEER ${paths[*]}"; timeout ${T_BENCH:-270} python3 benchmarks/runtime_bench.py --peer "$PEER" "${paths[@]}" --samples ${SAMPLES:-9} --rounds ${ROUNDS:-2} --json "$OUT/peer.json" 2>&1; } > "$OUT/bench.log"
    grep -vE "^  T=" "$OUT/bench.log" | tail -45
fi
