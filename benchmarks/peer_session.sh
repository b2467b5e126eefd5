#!/usr/bin/env bash
# One GPU call for issue 23 on the lent H200 (how benchmarks/results/h200_peer_* and h200_kernel_sweep.log were made):
#
#   python benchmarks/prepare_peer.py                    # here, where the package index is reachable
#   OUT=/tmp/out STAGES="sweep ship tests bench" bash benchmarks/peer_session.sh   # there (device tool, carrying .peer, .whl)
#
# Stages, in this order (each writes its files under $OUT):
#   sweep  sweep.log, kernel_sweep.log, fp8_block.yaml, bf16_grouped.yaml   tiles of our Triton GEMMs per layer and
#          token count (benchmarks/kernel_sweep.py: the fp8 layers, bf16 Qwen3 from 1,024 tokens)
#   tune   tune.log, bf16_tuned.yaml   bf16 tiles and path per layer and token count (benchmarks/bf16_tune.py)
#   ab     ab.log   whole calls of ours vs the peer (runtime_bench.py --peer) with the committed tables (A) and the swept
#          ones (B), back to back AB_REPS times (default 2) on AB_MODELS at AB_TOKENS (run-to-run noise is 1.5-6 %:
#          keep a swept range only where B beats A in every repetition); the committed tables are restored after
#   ship   the swept (else tuned) tables replace runtime_tables/paths/ in this copy (tested and timed below;
#          copy them from $OUT into the repository afterwards to commit what was measured)
#   probe  glue_probe.log   the call's pieces (layout, quantization, GEMMs, combine) timed alone (benchmarks/glue_probe.py)
#   tests  gpu_tests.log    pytest -m gpu tests/runtime (without the NCCL scenarios)
#   bench  bench.log, peer.json        ours vs vLLM's Triton kernel (runtime_bench.py --peer) with the shipped tables
# The figures are drawn afterwards from peer.json (benchmarks/plot_runtime.py --peer; no GPU needed).
# SWEEP_ARGS: more arguments of kernel_sweep.py (e.g. --tokens 1024 2048 4096 8192 --compile-timeout 120).
# T_SWEEP / DEADLINE / T_TUNE / T_PROBE / T_TESTS / T_BENCH bound each stage (seconds); ROUNDS, SAMPLES the bench.
set -u
OUT=${OUT:-/tmp/moe-oracle-peer}
STAGES=${STAGES:-sweep ship tests bench}
PEER=${PEER:-.peer/vllm-0.33.0}
mkdir -p "$OUT"
export PYTHONUNBUFFERED=1 MOE_ORACLE_CACHE_DIR=/tmp/moe-oracle-cache
if [ -d .whl ] && ! python3 -c "import jsonschema" 2>/dev/null; then  # jsonschema and its dependencies as wheels (README.md of the device tool)
    python3 -m pip install -q --no-index --find-links .whl --no-compile --no-cache-dir --target /tmp/site jsonschema && export PYTHONPATH=/tmp/site  # pip picks the wheels of this Python (rpds-py is built per version)
fi
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD"
has() { case " $STAGES " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }
stamp() { echo "== $1 ($(date -u +%H:%M:%S))"; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,memory.used --format=csv,noheader
python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())"
if has sweep; then
    stamp "kernel_sweep.py"
    { stamp "kernel_sweep.py"; timeout ${T_SWEEP:-220} python3 benchmarks/kernel_sweep.py --out-dir "$OUT" --jobs ${JOBS:-12} --deadline ${DEADLINE:-150} ${SWEEP_ARGS:-} 2>&1; } > "$OUT/sweep.log"
    grep -E "^# |whole call|deadline|Error|gemm[12] \(" "$OUT/sweep.log" | tail -40
fi
if has tune; then
    { stamp "bf16 tiles and paths"; timeout ${T_TUNE:-220} python3 benchmarks/bf16_tune.py --out "$OUT/bf16_tuned.yaml" 2>&1; } > "$OUT/tune.log"
    grep -E "whole call|wrote|Error" "$OUT/tune.log" | tail -30
fi
if has ab && [ -s "$OUT/fp8_block.yaml" ] && [ -s "$OUT/bf16_grouped.yaml" ]; then
    mkdir -p "$OUT/committed" && cp moe_oracle/runtime_tables/paths/fp8_block.yaml moe_oracle/runtime_tables/paths/bf16_grouped.yaml "$OUT/committed/"
    for rep in $(seq ${AB_REPS:-2}); do
        for side in A B; do
            if [ $side = A ]; then src="$OUT/committed"; else src="$OUT"; fi
            cp "$src/fp8_block.yaml" "$src/bf16_grouped.yaml" moe_oracle/runtime_tables/paths/
            { stamp "($side$rep) runtime_bench.py --peer $PEER, tables from $src"
              timeout ${T_AB:-90} python3 benchmarks/runtime_bench.py --peer "$PEER" --models ${AB_MODELS:-qwen3-30b-a3b deepseek-v3-ep8-fp8 qwen3-30b-a3b-fp8} \
                --tokens ${AB_TOKENS:-2048 4096 8192} --samples ${SAMPLES:-9} --rounds ${ROUNDS:-3} --json "$OUT/ab_$side$rep.json" 2>&1; } >> "$OUT/ab.log"
        done
    done
    cp "$OUT/committed/fp8_block.yaml" "$OUT/committed/bf16_grouped.yaml" moe_oracle/runtime_tables/paths/
    grep -E "^== |T= " "$OUT/ab.log" | grep -vE "numerics" | sed -E 's/\[ours: .*//' | cut -c1-150
fi
if has ship; then  # test and time the tables that will be committed
    if [ -s "$OUT/fp8_block.yaml" ] && [ -s "$OUT/bf16_grouped.yaml" ]; then
        cp "$OUT/fp8_block.yaml" "$OUT/bf16_grouped.yaml" moe_oracle/runtime_tables/paths/ && echo "== the swept tables are now runtime_tables/paths/"
    elif [ -s "$OUT/bf16_tuned.yaml" ]; then
        cp "$OUT/bf16_tuned.yaml" moe_oracle/runtime_tables/paths/bf16_grouped.yaml && echo "== the tuned table is now runtime_tables/paths/bf16_grouped.yaml"
    else
        echo "== nothing to ship: the committed tables are tested and timed"
    fi
fi
if has probe; then
    { stamp "glue_probe.py"; timeout ${T_PROBE:-60} python3 benchmarks/glue_probe.py 2>&1; } > "$OUT/glue_probe.log"
    tail -9 "$OUT/glue_probe.log"
fi
if has tests; then
    stamp "pytest -m gpu tests/runtime"
    { stamp "pytest -m gpu tests/runtime"; timeout ${T_TESTS:-110} python3 -m pytest -m gpu tests/runtime --ignore=tests/runtime/test_distributed.py -q -p no:cacheprovider -rA 2>&1; } > "$OUT/gpu_tests.log"
    tail -3 "$OUT/gpu_tests.log"
fi
if has bench; then
    stamp "runtime_bench.py --peer $PEER"
    { stamp "runtime_bench.py --peer $PEER"; timeout ${T_BENCH:-270} python3 benchmarks/runtime_bench.py --peer "$PEER" --samples ${SAMPLES:-9} --rounds ${ROUNDS:-2} --json "$OUT/peer.json" 2>&1; } > "$OUT/bench.log"
    grep -vE "^  T=" "$OUT/bench.log" | tail -40
fi
stamp "done"
