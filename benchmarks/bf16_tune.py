#!/usr/bin/env python
"""Tile shapes of our Triton bf16 grouped GEMM, and which path wins, per layer and token count (one GPU).

For each bf16 layer of runtime_bench.py (default: the three of issue 23) and each token count, on
routed random inputs: every candidate tile of GEMM1 (gated, activation fused, rows read through
the sorted token index) and of GEMM2 is timed alone (CUDA-graph replays, median); the best pair is
then timed as the whole experts call (``path triton``) against the same call on
``torch._grouped_mm`` (``path torch_grouped_mm``). A candidate that fails to compile (shared
memory) or whose output differs from the first candidate's by more than bf16 rounding is dropped
and named.

Writes the path table (the format of ``moe_oracle/runtime_tables/paths/bf16_grouped.yaml``):
each measured token count serves up to the geometric mean of it and the next one, the last
without limit; the ``default`` ranges are copied from the shipped table.

Usage: ``python benchmarks/bf16_tune.py --out tuned.yaml`` (then ``runtime_bench.py --paths tuned.yaml``).
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runtime_bench import MODELS, TOKENS, model_spec, time_graph_ms  # noqa: E402

from moe_oracle.kernels import _triton_moe as ops  # noqa: E402
from moe_oracle.kernels.path_tables import PathChoice, default_table_path  # noqa: E402
from moe_oracle.kernels.torch_grouped_mm import TorchGroupedMMExperts  # noqa: E402
from moe_oracle.runtime.routing import route  # noqa: E402
from moe_oracle.runtime.weights import make_random_weights  # noqa: E402
from moe_oracle.core.tables import safe_load  # noqa: E402

T = ops.GemmTile
GEMM1 = [  # gated: n activation columns = 2n weight rows per program
    T(16, 32, 128, 4, 4), T(16, 64, 128, 4, 4), T(16, 32, 256, 4, 3), T(16, 64, 256, 4, 2), T(16, 128, 128, 4, 3), T(16, 64, 64, 4, 6),
    T(32, 64, 128, 4, 4), T(32, 128, 128, 4, 3), T(32, 64, 64, 4, 5),
    T(64, 64, 128, 4, 3), T(64, 128, 64, 4, 4), T(64, 128, 64, 8, 4), T(64, 64, 64, 4, 4, 8), T(64, 128, 64, 4, 4, 8), T(64, 128, 64, 8, 3, 8),
    T(128, 64, 64, 8, 4), T(128, 128, 64, 8, 3), T(128, 64, 64, 4, 4, 8), T(128, 128, 32, 8, 4, 8), T(128, 128, 64, 8, 4),
    T(128, 128, 64, 8, 3, 8), T(128, 64, 128, 8, 3), T(128, 64, 64, 8, 4, 8),
]
GEMM2 = [
    T(16, 64, 128, 4, 4), T(16, 128, 128, 4, 3), T(16, 64, 256, 4, 3), T(16, 32, 256, 4, 4), T(16, 128, 64, 4, 5),
    T(32, 128, 128, 4, 3), T(32, 64, 128, 4, 4), T(32, 256, 64, 8, 3),
    T(64, 128, 64, 4, 4), T(64, 256, 64, 8, 3), T(64, 128, 128, 8, 3), T(64, 128, 64, 4, 4, 8), T(64, 64, 128, 4, 4), T(64, 128, 128, 4, 3, 8),
    T(64, 256, 64, 8, 4, 8),
    T(128, 128, 64, 8, 4), T(128, 256, 64, 8, 3), T(128, 128, 64, 8, 4, 8), T(128, 256, 32, 8, 4, 8), T(128, 256, 64, 8, 4),
    T(128, 128, 128, 8, 3), T(128, 256, 64, 8, 3, 8),
]


def _block_ms(rows_per_expert: float) -> set[int]:
    if rows_per_expert <= 8:
        return {16}
    if rows_per_expert <= 32:
        return {16, 32}
    if rows_per_expert <= 96:
        return {32, 64, 128}
    return {64, 128}


def _tile_yaml(t: ops.GemmTile) -> str:
    return f"{{m: {t.block_m}, n: {t.block_n}, k: {t.block_k}, warps: {t.num_warps}, stages: {t.num_stages}, group_m: {t.group_m}}}"


def tune_model(key: str, tokens_list: list[int], samples: int) -> tuple[list[str], list[str]]:
    """Log lines and the YAML lines of one shape."""
    model = MODELS[key]
    spec = model_spec(model)
    if spec.quant.weight is not None:
        raise SystemExit(f"{key} is an fp8 layer: this tunes the bf16 GEMM")
    weights = make_random_weights(spec, seed=0, device="cuda", generator_device="cuda")
    experts = TorchGroupedMMExperts(spec, weights)
    e, k = spec.num_local_experts, spec.top_k
    log = [f"# {model.label}: E={e} top-{k} H={spec.hidden_size} I={spec.intermediate_size}"]
    print(log[0], flush=True)
    gen = torch.Generator(device="cuda").manual_seed(7)
    winners = []
    for tokens in tokens_list:
        x = torch.randn(tokens, spec.hidden_size, generator=gen, device="cuda").to(torch.bfloat16)
        logits = torch.randn(tokens, spec.num_experts, generator=gen, device="cuda")
        topk_w, topk_ids = route(logits, spec.routing)
        topk_w, topk_ids = topk_w.float().contiguous(), topk_ids.to(torch.int64).contiguous()
        lay = ops.route_layout(topk_ids, 0, e)
        real = tokens * k
        allowed = _block_ms(real / e)
        best = {}
        for name, cands in (("gemm1", GEMM1), ("gemm2", GEMM2)):
            ref, timings = None, []
            a_in = None
            if name == "gemm2":
                a_in = ops.bf16_grouped_gemm(x, experts._w13, lay.counts, lay.rows, best["gemm1"][1], sorted_tok=lay.sorted_tok, act=spec.activation)
            for tile in (c for c in cands if c.block_m in allowed):
                if name == "gemm1":
                    fn = lambda tile=tile: ops.bf16_grouped_gemm(x, experts._w13, lay.counts, lay.rows, tile, sorted_tok=lay.sorted_tok, act=spec.activation)  # noqa: E731
                else:
                    fn = lambda tile=tile: ops.bf16_grouped_gemm(a_in, experts._w2, lay.counts, lay.rows, tile)  # noqa: E731
                try:
                    out = fn()[:real].float()
                    if ref is None:
                        ref = out
                    elif float((out - ref).abs().max() / ref.abs().max()) > 2.0**-7:
                        print(f"  {name} {tile}: output differs from the first candidate's: dropped", flush=True)
                        continue
                    ms = time_graph_ms(fn, samples=samples, target_s=0.08)
                except Exception as exc:  # noqa: BLE001 - a tile that does not compile is skipped, named
                    print(f"  {name} {_tile_yaml(tile)}: {type(exc).__name__}: {str(exc)[:120]}", flush=True)
                    continue
                timings.append((ms, tile))
            timings.sort(key=lambda p: p[0])
            best[name] = timings[0]
            log.append(f"  T={tokens:>5} {name}: " + "  ".join(f"{ms:.4f} {_tile_yaml(t)}" for ms, t in timings[:4]))
            print(log[-1], flush=True)
        experts.force_path = PathChoice("triton", best["gemm1"][1], best["gemm2"][1])
        tri = time_graph_ms(lambda: experts.apply(x, topk_w, topk_ids), samples=samples)
        experts.force_path = PathChoice("torch_grouped_mm")
        tor = time_graph_ms(lambda: experts.apply(x, topk_w, topk_ids), samples=samples)
        experts.force_path = None
        path = "triton" if tri <= tor else "torch_grouped_mm"
        winners.append((tokens, path, best["gemm1"][1], best["gemm2"][1]))
        log.append(f"  T={tokens:>5} whole call: triton {tri:.4f} ms, torch_grouped_mm {tor:.4f} ms -> {path}")
        print(log[-1], flush=True)
    weights = experts = None  # freed before empty_cache (not del: the timed closures name them)
    torch.cuda.empty_cache()
    yaml = [f"  - name: {key}", f"    num_experts: {e}", f"    hidden_size: {spec.hidden_size}", f"    intermediate_size: {spec.intermediate_size}", f"    top_k: {k}", "    ranges:"]
    for i, (tokens, path, g1, g2) in enumerate(winners):
        limit = "" if i == len(winners) - 1 else f"max_tokens: {int(math.sqrt(tokens * winners[i + 1][0]))}, "
        tiles = f", gemm1: {_tile_yaml(g1)}, gemm2: {_tile_yaml(g2)}" if path == "triton" else ""
        yaml.append(f"      - {{{limit}path: {path}{tiles}}}  # measured at {tokens} tokens")
    return log, yaml


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=["qwen3-30b-a3b", "mixtral-8x7b", "deepseek-v3-ep8"])
    parser.add_argument("--tokens", nargs="+", type=int, default=TOKENS)
    parser.add_argument("--samples", type=int, default=7)
    parser.add_argument("--out", type=Path, required=True, help="the path table to write")
    args = parser.parse_args(argv)
    t0 = time.time()
    shipped = safe_load(default_table_path().read_text())
    body = []
    for key in args.models:
        _, yaml = tune_model(key, args.tokens, args.samples)
        body += yaml
    default = ["default:"] + [f"  - {_flow(r)}" for r in shipped["default"]]
    head = ["kind: runtime_paths", "experts: torch_grouped_mm",
            f"measured: \"{torch.cuda.get_device_name()}, torch {torch.__version__}, benchmarks/bf16_tune.py --tokens {' '.join(map(str, args.tokens))}\"",
            "notes: >", *("  " + line for line in shipped.get("notes", "").strip().splitlines()), "shapes:"]
    args.out.write_text("\n".join(head + body + default) + "\n")
    print(f"# wrote {args.out} in {time.time() - t0:.0f}s", flush=True)
    return 0


def _flow(r: dict) -> str:
    parts = []
    for k, v in r.items():
        parts.append(f"{k}: {{{', '.join(f'{a}: {b}' for a, b in v.items())}}}" if isinstance(v, dict) else f"{k}: {v}")
    return "{" + ", ".join(parts) + "}"


if __name__ == "__main__":
    sys.exit(main())
