#!/usr/bin/env python
"""Benchmark fused-MoE kernels against each other and against the machine's limits.

For real model shapes (examples/models: qwen3-30b-a3b, mixtral-8x7b-instruct-v0.1, gpt-oss-20b
dimensions, all in bf16) at several token counts, each kernel is built by its declared adapter
(the catalog entry's ``adapter`` string, paired with the single-rank prepare/finalize of its
interface and format), timed (median of ``--iters`` calls after warm-up; CUDA events on GPU),
and compared with the float32 reference once per model.

Machine limits, measured first: dense bf16 peak (a large ``torch.matmul``: 8192^3 on CUDA,
1024^3 float32 on CPU) and memory bandwidth (a large device-to-device copy, counting bytes read
plus written). Per row: FLOPs and bytes as in :mod:`moe_oracle.runtime.runner`
(``2*T*K*(H*N1 + I*H)``; touched experts' weights + activations), achieved TFLOP/s and GB/s, their
fraction of the measured limits, and the roofline fraction ``max(flops/peak, bytes/bw) / time``.

gpt-oss-20b is MXFP4 with expert biases in its checkpoint; here only its dimensions and
swigluoai activation are used, in bf16 without biases.

Kernels with host synchronizations (the reference) cannot be captured in a CUDA graph; with
``--cuda-graph`` they are reported once as "no graph" and timed eagerly only.

Usage::

    python benchmarks/runtime_bench.py --device cuda --quick
    python benchmarks/runtime_bench.py --device cpu --quick --max-experts 8
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path

import torch

from moe_oracle._resources import examples_dir
from moe_oracle.oracle import default_catalog
from moe_oracle.runtime.build import make_kernel_from_adapters
from moe_oracle.runtime.runner import layer_bytes, layer_flops
from moe_oracle.runtime.spec import LayerSpec, RoutingParams
from moe_oracle.runtime.timing import measure_ms, median
from moe_oracle.runtime.weights import make_random_weights
from moe_oracle.vocab import ActivationFormat, Interface

MODELS = {
    # file stem -> (routing method, activation)
    "qwen3-30b-a3b": ("renormalize_naive", "silu"),  # softmax -> top-8 -> renormalize (norm_topk_prob)
    "mixtral-8x7b-instruct-v0.1": ("renormalize", "silu"),  # top-2 -> softmax
    "gpt-oss-20b": ("renormalize", "swigluoai"),  # top-4 -> softmax, interleaved SwiGLU-OAI, limit 7
}
PF_FOR = {
    (Interface.MODULAR, ActivationFormat.STANDARD): "no_dp_ep_modular",
    (Interface.MONOLITHIC, ActivationFormat.STANDARD): "no_dp_ep_monolithic",
    (Interface.MODULAR, ActivationFormat.BATCHED_EXPERTS): "deepep_low_latency",  # BatchedAllToAllModular, one rank
}


def model_spec(name: str) -> LayerSpec:
    """LayerSpec of one model's MoE layer, bf16, read from its config.json copy."""
    path = None
    for base in (examples_dir(), Path("/work/shared/models")):
        if (base / f"{name}.json").is_file():
            path = base / f"{name}.json"
            break
    if path is None:
        raise FileNotFoundError(f"no config for {name}")
    cfg = json.loads(path.read_text())
    cfg = cfg.get("text_config", cfg)
    method, activation = MODELS[name]
    experts = cfg.get("num_experts") or cfg.get("num_local_experts") or cfg["n_routed_experts"]
    inter = cfg.get("moe_intermediate_size") or cfg["intermediate_size"]
    return LayerSpec(
        num_experts=int(experts),
        hidden_size=int(cfg["hidden_size"]),
        intermediate_size=int(inter),
        routing=RoutingParams(method, int(cfg["num_experts_per_tok"])),
        activation=activation,
        dtype="bfloat16",
        swiglu_limit=cfg.get("swiglu_limit"),
    )


def peak_tflops(device: torch.device) -> float:
    """Dense matmul rate: bf16 8192^3 on CUDA, float32 1024^3 on CPU (median of 10 after 3 warm-ups)."""
    n, dtype = (8192, torch.bfloat16) if device.type == "cuda" else (1024, torch.float32)
    a = torch.randn(n, n, device=device, dtype=dtype)
    b = torch.randn(n, n, device=device, dtype=dtype)
    ms = median(measure_ms(lambda: torch.matmul(a, b), device=device, warmup=3, iters=10))
    return 2 * n**3 / (ms * 1e-3) / 1e12


def bandwidth_gbs(device: torch.device) -> float:
    """Copy bandwidth, bytes read + written: 1 GiB on CUDA, 128 MiB on CPU (median of 10)."""
    size = (1 << 30) if device.type == "cuda" else (128 << 20)
    src = torch.empty(size, dtype=torch.uint8, device=device)
    dst = torch.empty_like(src)
    ms = median(measure_ms(lambda: dst.copy_(src), device=device, warmup=3, iters=10))
    return 2 * size / (ms * 1e-3) / 1e9


def cuda_graph_replay(fn, device: torch.device):  # noqa: ANN001, ANN201
    """Capture ``fn`` in a CUDA graph (after warm-up on a side stream) and return its replay."""
    stream = torch.cuda.Stream(device)
    stream.wait_stream(torch.cuda.current_stream(device))
    with torch.cuda.stream(stream):
        for _ in range(3):
            fn()
    torch.cuda.current_stream(device).wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph.replay


def profile_once(fn, device: torch.device, label: str) -> None:  # noqa: ANN001
    """Print where one call's time goes: host time, device time, kernel launches (torch.profiler)."""
    from torch.profiler import ProfilerActivity, profile

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if device.type == "cuda" else [])
    fn()
    with profile(activities=activities) as prof:
        fn()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
    events = prof.key_averages()
    launches = sum(e.count for e in events if "cudaLaunchKernel" in e.key or "cuLaunchKernel" in e.key)
    device_us = sum(getattr(e, "self_device_time_total", getattr(e, "self_cuda_time_total", 0)) for e in events)
    host_us = sum(e.self_cpu_time_total for e in events)
    print(f"# profile {label}: host {host_us / 1e3:.3f} ms, device kernels {device_us / 1e3:.3f} ms, {launches} kernel launches")
    sort = "self_cuda_time_total" if device.type == "cuda" else "self_cpu_time_total"
    print("\n".join("#   " + line for line in events.table(sort_by=sort, row_limit=8).splitlines()))


def bench(args: argparse.Namespace) -> list[dict]:
    from moe_oracle.kernels.reference import reference_moe

    device = torch.device(args.device)
    catalog = default_catalog()
    peak, bw = peak_tflops(device), bandwidth_gbs(device)
    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    print(f"# device {name}: measured dense peak {peak:.1f} TFLOP/s ({'bf16' if device.type == 'cuda' else 'fp32'}), copy bandwidth {bw:.0f} GB/s")
    rows: list[dict] = []
    header = f"{'model':<28} {'kernel':<18} {'tokens':>6} {'ms':>9} {'TFLOP/s':>8} {'%peak':>6} {'GB/s':>7} {'%bw':>5} {'%roof':>6} {'rel err':>8}"
    print(header)
    print("-" * len(header))
    for model in args.models:
        spec = model_spec(model)
        if args.max_experts and args.max_experts < spec.num_experts:
            spec = replace(spec, num_experts=args.max_experts, routing=replace(spec.routing, top_k=min(spec.top_k, args.max_experts)))
        weights = make_random_weights(spec, seed=0, device=device, generator_device=device)
        gen = torch.Generator(device=device).manual_seed(1)
        for kernel_id in args.kernels:
            entry = catalog.experts_by_id(kernel_id)
            pf = catalog.prepare_finalize_by_id(PF_FOR[(entry.interface, entry.activation_format)])
            try:
                kernel = make_kernel_from_adapters(entry.adapter, pf.adapter, spec=spec, weights=weights)
            except Exception as exc:  # a kernel that cannot be built here is reported, not fatal
                print(f"{model:<28} {kernel_id:<18} not built: {type(exc).__name__}: {exc}")
                continue
            rel_err = None
            modes = ["eager"] + (["graph"] if args.cuda_graph and device.type == "cuda" else [])
            graph_failed = False
            for tokens, mode in [(t, m) for t in args.tokens for m in modes]:
                if mode == "graph" and graph_failed:
                    continue
                label = kernel_id if mode == "eager" else f"{kernel_id}+graph"
                x = torch.randn(tokens, spec.hidden_size, generator=gen, device=device).to(torch.bfloat16)
                logits = torch.randn(tokens, spec.num_experts, generator=gen, device=device).to(torch.bfloat16)
                with torch.no_grad():
                    try:
                        call = (lambda: kernel(x, logits)) if mode == "eager" else cuda_graph_replay(lambda: kernel(x, logits), device)
                        ms = median(measure_ms(call, device=device, warmup=args.warmup, iters=args.iters))
                    except Exception as exc:
                        if mode == "graph":
                            graph_failed = True
                            print(f"{model:<28} {label:<18} no graph: capture failed ({type(exc).__name__}); the kernel synchronizes with the host")
                        else:
                            print(f"{model:<28} {label:<18} {tokens:>6} failed: {type(exc).__name__}: {str(exc)[:120]}")
                        continue
                    if args.profile and tokens == args.tokens[0] and model == args.models[0]:
                        profile_once(call, device, f"{model} {label} T={tokens}")
                    if rel_err is None and tokens >= args.check_tokens:
                        ref = reference_moe(x, logits, weights, spec)
                        out = kernel(x, logits).float()
                        rel_err = float((out - ref).abs().max() / ref.abs().max())
                from moe_oracle.runtime.routing import route

                touched = int(torch.unique(route(logits, spec.routing)[1]).numel())
                flops = layer_flops(spec, tokens)
                nbytes = layer_bytes(spec, tokens, touched, weights.bytes_per_expert())
                s = ms * 1e-3
                tflops, gbs = flops / s / 1e12, nbytes / s / 1e9
                roof = max(flops / (peak * 1e12), nbytes / (bw * 1e9)) / s
                row = dict(model=model, kernel=label, tokens=tokens, ms=ms, tflops=tflops, pct_peak=100 * tflops / peak, gbs=gbs, pct_bw=100 * gbs / bw, pct_roofline=100 * roof, experts_touched=touched, rel_err=rel_err if tokens >= args.check_tokens else None, num_experts=spec.num_experts, top_k=spec.top_k, hidden=spec.hidden_size, intermediate=spec.intermediate_size)
                rows.append(row)
                err_txt = f"{row['rel_err']:.1e}" if row["rel_err"] is not None else "-"
                print(f"{model:<28} {label:<18} {tokens:>6} {ms:>9.3f} {tflops:>8.2f} {row['pct_peak']:>6.1f} {gbs:>7.0f} {row['pct_bw']:>5.1f} {row['pct_roofline']:>6.1f} {err_txt:>8}", flush=True)
        del weights
        if device.type == "cuda":
            torch.cuda.empty_cache()
    return [dict(device=name, peak_tflops=peak, bandwidth_gbs=bw)] + rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--quick", action="store_true", help="fewer token counts and iterations")
    parser.add_argument("--models", nargs="+", default=list(MODELS))
    parser.add_argument("--kernels", nargs="+", default=["torch_grouped_mm", "reference"], help="experts kernel ids of the catalog")
    parser.add_argument("--tokens", nargs="+", type=int, default=None)
    parser.add_argument("--iters", type=int, default=None)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--max-experts", type=int, default=None, help="cap experts per layer (default: all on CUDA, 8 on CPU)")
    parser.add_argument("--check-tokens", type=int, default=32, help="compare with the fp32 reference at the first token count >= this")
    parser.add_argument("--json", type=Path, default=None, help="also write the rows as JSON here")
    parser.add_argument("--cuda-graph", action="store_true", help="also time each kernel replayed from a CUDA graph (kernels without host syncs)")
    parser.add_argument("--profile", action="store_true", help="print a torch.profiler summary of one call per kernel (first model, first token count)")
    args = parser.parse_args(argv)
    if args.tokens is None:
        if args.device == "cpu":
            args.tokens = [1, 16, 64] if args.quick else [1, 16, 64, 256]
        else:
            args.tokens = [1, 32, 512, 4096] if args.quick else [1, 8, 32, 128, 512, 2048, 8192]
    if args.iters is None:
        args.iters = 5 if args.quick else 20
    if args.max_experts is None and args.device == "cpu":
        args.max_experts = 8
    rows = bench(args)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
