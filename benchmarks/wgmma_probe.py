#!/usr/bin/env python
"""GEMM1 of issue 23's fp8 layers alone: the shipped Triton tile against our Gluon wgmma kernel (stages, registers per consumer thread).

Usage on the GPU machine: ``python benchmarks/wgmma_probe.py 2048 8192`` (token counts). Each variant's output is compared
with the shipped tile's (normwise difference of the dequantized outputs); times are CUDA-graph replays, median.
"""
import sys
import time
from pathlib import Path
import torch
sys.path.insert(0, str(Path("benchmarks").resolve()))
import kernel_sweep
from kernel_sweep import build_layers, fp8_yaml
from runtime_bench import time_graph_ms
from moe_oracle.kernels import _gluon_fp8_gemm as ws
kernel_sweep.DEVICE = "cuda"
tokens_list = [int(t) for t in sys.argv[1:]] or [2048, 8192]
with torch.no_grad():
    for layer in build_layers(["qwen3-30b-a3b-fp8", "deepseek-v3-ep8-fp8"], False):
        for tokens in tokens_list:
            case = layer.case(tokens, seed=tokens)
            ex, lay = layer.experts, case.lay
            shipped = ex.configs_for(tokens)[0]
            n_out = ex._w13.shape[1] // 2
            def variant(mod, **kw):
                def fn():
                    out = torch.empty(lay.rows, n_out, dtype=torch.float8_e4m3fn, device="cuda")
                    sc = torch.empty(lay.rows, n_out // 128, dtype=torch.float32, device="cuda")
                    mod.fp8_gated_wgmma(case.xq, case.xs, ex._w13, ex._s13, lay.counts, lay.sorted_tok, out, sc, 0, 1.702, 7.0, **kw)
                    return out, sc
                return fn
            runs = [("triton " + fp8_yaml(shipped), lambda: case.gemm1(shipped))]
            for st in (3, 4):
                for regs in (232, 224):
                    runs.append((f"ws stages {st} regs {regs}", variant(ws, num_stages=st, consumer_regs=regs)))
            ref = None
            print(f"# {layer.key} at {tokens} tokens", flush=True)
            for name, fn in runs:
                try:
                    t0 = time.time()
                    out = case.dense("gemm1", fn()); torch.cuda.synchronize()
                    ref = out if ref is None else ref
                    diff = float((out - ref).norm() / ref.norm())
                    ms = time_graph_ms(fn, samples=7, target_s=0.05)
                    print(f"  {ms:.4f} ms  {name}  (normwise diff {diff:.1e}; first call {time.time() - t0:.1f}s)", flush=True)
                except Exception as exc:  # noqa: BLE001 - named and skipped
                    print(f"  {name}: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
