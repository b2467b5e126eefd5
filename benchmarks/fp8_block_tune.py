#!/usr/bin/env python
"""Tile shapes of our 128x128-block fp8 grouped GEMM (kernels/_triton_moe.py), timed on real shapes.

For a DeepSeek-V3 EP8 shard (32 experts, hidden 7168, intermediate 2048, 8 rows per token) and
Qwen3-30B-A3B-FP8 (128 experts, 2048, 768, top-8) at several token counts, GEMM1 (gated activation
and fp8 quantization fused, A read through the sorted token index) and GEMM2 (bf16 out) are timed
with each candidate :class:`~moe_oracle.kernels._triton_moe.BlockConfig` (CUDA graph replays,
median), next to ``torch._grouped_mm`` on the same shapes in bf16. The fastest config per mean
rows per expert goes into ``BLOCK_CONFIGS``.

Usage: ``python benchmarks/fp8_block_tune.py`` (CUDA).
"""

from __future__ import annotations

import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from runtime_bench import MODELS, model_spec, time_graph_ms  # noqa: E402

from moe_oracle.kernels import _triton_moe as ops  # noqa: E402
from moe_oracle.runtime.routing import route  # noqa: E402
from moe_oracle.runtime.weights import make_random_weights  # noqa: E402

CANDIDATES = [
    ops.BlockConfig(16, 4, 4),
    ops.BlockConfig(32, 4, 4),
    ops.BlockConfig(64, 4, 3),
    ops.BlockConfig(64, 4, 4),
    ops.BlockConfig(64, 8, 3),
    ops.BlockConfig(128, 8, 3),
]


def tune(key: str, tokens_list: tuple[int, ...]) -> None:
    spec = model_spec(MODELS[key])
    w = make_random_weights(spec, seed=0, device="cuda", generator_device="cuda")
    w13_bf16 = torch.stack([w.expert_fp32(e)[0].to(torch.bfloat16) for e in range(spec.num_experts)]).transpose(-2, -1)
    w2_bf16 = torch.stack([w.expert_fp32(e)[1].to(torch.bfloat16) for e in range(spec.num_experts)]).transpose(-2, -1)
    print(f"# {key}: E={spec.num_experts} top-{spec.top_k} H={spec.hidden_size} I={spec.intermediate_size}", flush=True)
    for tokens in tokens_list:
        x = torch.randn(tokens, spec.hidden_size, device="cuda").to(torch.bfloat16)
        _, ids = route(torch.randn(tokens, spec.num_experts, device="cuda"), spec.routing)
        xq, xs = ops.quantize_rows(x, 128)
        lay = ops.route_layout(ids, 0, spec.num_experts, x=x)
        rows = lay.rows
        flops1 = 2 * rows * spec.hidden_size * spec.w13_rows
        flops2 = 2 * rows * spec.intermediate_size * spec.hidden_size
        h = torch._grouped_mm(lay.buf, w13_bf16, offs=lay.offs)
        a16, _ = ops.activation(h, spec.activation, lay.offs)
        t1 = time_graph_ms(lambda: torch._grouped_mm(lay.buf, w13_bf16, offs=lay.offs), samples=7)
        t2 = time_graph_ms(lambda: torch._grouped_mm(a16, w2_bf16, offs=lay.offs), samples=7)
        print(f"  T={tokens:>5} rows/expert {rows / spec.num_experts:>7.1f}  bf16 grouped_mm: GEMM1 {t1:.3f} ms ({flops1 / t1 / 1e9:.0f} TFLOP/s)  GEMM2 {t2:.3f} ms ({flops2 / t2 / 1e9:.0f})", flush=True)
        best: dict[str, tuple[float, ops.BlockConfig]] = {}
        for cfg in CANDIDATES:
            def gemm1(cfg: ops.BlockConfig = cfg) -> tuple[torch.Tensor, torch.Tensor | None]:
                return ops.fp8_block_gemm(xq, xs, w.w13, w.w13_scale, lay.counts, rows, sorted_tok=lay.sorted_tok, act=spec.activation, quant_out=True, config=cfg)

            try:
                a, s = gemm1()
                g1 = time_graph_ms(gemm1, samples=7)
                g2 = time_graph_ms(lambda: ops.fp8_block_gemm(a, s, w.w2, w.w2_scale, lay.counts, rows, config=cfg), samples=7)
            except Exception as exc:  # a config that does not compile or fit is reported
                print(f"    {cfg}: failed {type(exc).__name__}: {str(exc)[:120]}", flush=True)
                continue
            for name, t in (("GEMM1", g1), ("GEMM2", g2)):
                if name not in best or t < best[name][0]:
                    best[name] = (t, cfg)
            print(f"    BM={cfg.block_m:>3} warps={cfg.num_warps} stages={cfg.num_stages}: GEMM1+act+quant {g1:.3f} ms ({flops1 / g1 / 1e9:.0f} TFLOP/s)  GEMM2 {g2:.3f} ms ({flops2 / g2 / 1e9:.0f})", flush=True)
        for name, (t, cfg) in best.items():
            print(f"    best {name}: BM={cfg.block_m} warps={cfg.num_warps} stages={cfg.num_stages} {t:.3f} ms", flush=True)


def main() -> int:
    tune("deepseek-v3-ep8-fp8", (16, 128, 1024, 4096, 8192))
    torch.cuda.empty_cache()
    tune("qwen3-30b-a3b-fp8", (16, 128, 1024, 8192))
    return 0


if __name__ == "__main__":
    sys.exit(main())
