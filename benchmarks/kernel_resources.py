#!/usr/bin/env python
"""Time, registers, spills, shared memory and pipelining of fp8 GEMM tile variants, each compiled on the GPU.

For the fp8 layers of issue 23 at ``--tokens`` (default 2,048): the shipped tiles of GEMM1 and GEMM2
and the fourth sweep's candidates around them (``kernel_sweep.FP8_S11``: 16 warps, gate and up in
one dot, activation rows through a tensor descriptor), each GEMM timed alone as kernel_sweep.py
times it (CUDA-graph replays, median); for each variant Triton compiled for it: ``n_regs``,
``n_spills``, shared memory, and in its TTGIR the asynchronous copies (a software-pipelined K loop
issues them) and the tensor-core waits. kernel_sweep.py logs only each case's four fastest tiles;
this prints every one. Usage: ``python benchmarks/kernel_resources.py`` on the GPU machine.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
import kernel_sweep  # noqa: E402
from kernel_sweep import FP8_S11, build_layers, fp8_yaml  # noqa: E402
from runtime_bench import time_graph_ms  # noqa: E402

from moe_oracle.kernels._triton_fp8_gemm import _fp8_block_gemm_kernel  # noqa: E402


def _compiled() -> dict:
    out = {}
    for cache in getattr(_fp8_block_gemm_kernel, "device_caches", {}).values():
        kernels = cache[0] if isinstance(cache, tuple) else cache
        out.update({str(key): k for key, k in kernels.items()})
    return out


def _resources(k) -> str:  # noqa: ANN001 - CompiledKernel
    ttgir = getattr(k, "asm", {}).get("ttgir", "")
    meta = getattr(k, "metadata", None)
    return (f"regs {getattr(k, 'n_regs', '?')}, spills {getattr(k, 'n_spills', '?')}, shared {getattr(meta, 'shared', '?')}, "
            f"async copies {ttgir.count('async_copy_global_to_local')}, tma loads {ttgir.count('async_tma_copy_global_to_local')}, "
            f"dot waits {ttgir.count('warp_group_dot_wait')}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, default=2048)
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--layers", nargs="+", default=["qwen3-30b-a3b-fp8"], choices=kernel_sweep.FP8_LAYERS)
    parser.add_argument("--gemm2", type=int, default=4, help="GEMM2 candidates of FP8_S11 timed (the first N)")
    args = parser.parse_args()
    kernel_sweep.DEVICE = "cuda"
    with torch.no_grad():
        for layer in build_layers(args.layers, False):
            case = layer.case(args.tokens, seed=args.tokens)
            shipped = layer.experts.configs_for(args.tokens)
            print(f"# {layer.key} at {args.tokens} tokens (shipped: gemm1 {fp8_yaml(shipped[0])}, gemm2 {fp8_yaml(shipped[1])})", flush=True)
            for gemm, cfgs in (("gemm1", [shipped[0], *FP8_S11["gemm1"]]), ("gemm2", [shipped[1], *FP8_S11["gemm2"][:args.gemm2]])):
                for cfg in dict.fromkeys(cfgs):
                    before = set(_compiled())
                    try:
                        fn = (lambda cfg=cfg, gemm=gemm: getattr(case, gemm)(cfg))
                        fn()
                        torch.cuda.synchronize()
                        ms = time_graph_ms(fn, samples=args.samples, target_s=0.05)
                    except Exception as exc:  # noqa: BLE001 - named and skipped
                        print(f"  {gemm} {fp8_yaml(cfg)}: {type(exc).__name__}: {str(exc)[:100]}", flush=True)
                        continue
                    new = [k for key, k in _compiled().items() if key not in before]
                    res = "; ".join(_resources(k) for k in new) or "compiled earlier"
                    print(f"  {gemm} {ms:.4f} ms {fp8_yaml(cfg)}{'  (shipped)' if cfg == shipped[gemm == 'gemm2'] else ''}  [{res}]", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
