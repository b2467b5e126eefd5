#!/usr/bin/env python
"""Tiles of our Triton GEMMs per layer and token count, swept on one GPU in one call, written as the path tables.

For the fp8 layers of issue 23 (a DeepSeek-V3 EP8 shard and Qwen3-30B-A3B-FP8, 128x128 blocks) at
16 to 8,192 tokens, and the bf16 Qwen3-30B-A3B layer from 1,024 tokens, on routed random inputs:
each candidate tile of GEMM1 (activation fused; fp8: its fp8 output quantization too; rows read
through the sorted token index, as the adapters call it) and of GEMM2 is timed alone (CUDA-graph
replays, median of ``--samples``); candidates include the tiles served before, so a winner is at
least as fast as what it replaces in this run's timings. A candidate that fails to compile or
whose output differs from the first candidate's beyond rounding is dropped and named. For the bf16
layer the best pair is then timed as the whole experts call on our Triton GEMMs against the same
call on ``torch._grouped_mm``, and the faster path kept.

Compilation dominates a cold sweep, so ``--jobs`` worker processes first run every candidate
once (each on its share of the tiles; Triton's on-disk cache then holds every kernel), and the
timing pass in this process compiles nothing.

Writes into ``--out-dir``: ``fp8_block.yaml`` (the tuned fp8 layers, no default ranges: other
layers keep the kernel's own tiles) and ``bf16_grouped.yaml`` (the shipped table with the swept
layer's measured ranges replaced), each range's comment citing the measured times. Past
``--deadline`` seconds the sweep stops and writes what it measured (unmeasured ranges keep the
shipped values).

Usage: ``python benchmarks/kernel_sweep.py --out-dir DIR`` (CUDA); ``--dry-run`` runs the same flow
on CPU under Triton's interpreter on tiny layers with host timers (checks the script, not speed).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Callable

START = time.time()
if "--dry-run" in sys.argv:
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent))
from runtime_bench import MODELS, TOKENS, host_ms, model_spec, time_graph_ms  # noqa: E402

from moe_oracle.core.tables import safe_load  # noqa: E402
from moe_oracle.kernels import _triton_moe as ops  # noqa: E402
from moe_oracle.kernels.path_tables import PathChoice, default_table_path, fp8_table_path, parse_paths  # noqa: E402
from moe_oracle.kernels.torch_grouped_mm import TorchGroupedMMExperts  # noqa: E402
from moe_oracle.runtime.routing import route  # noqa: E402
from moe_oracle.runtime.weights import make_random_weights  # noqa: E402

FP8_LAYERS = ["deepseek-v3-ep8-fp8", "qwen3-30b-a3b-fp8"]
BF16_LAYERS = ["qwen3-30b-a3b"]
BF16_TOKENS = [1024, 2048, 4096, 8192]
PRIORITY = [2048, 4096, 8192, 1024, 256, 64, 16]
"""Sweep order of the token counts (issue 23's >= 60 %-of-floor targets first)."""

F = ops.BlockConfig
B = ops.GemmTile


def fp8_candidates(gemm: str, rows_per_expert: float) -> list[ops.BlockConfig]:
    """Tiles tried for one fp8 GEMM at this load; each bucket holds the kernel's own choice (BLOCK_CONFIGS)."""
    if rows_per_expert <= 8:
        cands = [F(16, 4, 4), F(16, 4, 4, tma=True), F(16, 4, 3, tma=True), F(32, 4, 4)]
    elif rows_per_expert <= 48:
        cands = [F(16, 4, 4), F(32, 4, 4), F(32, 4, 4, tma=True), F(64, 4, 4), F(64, 4, 4, tma=True)]
    elif rows_per_expert <= 160:
        cands = [F(64, 4, 4), F(64, 4, 4, tma=True), F(64, 8, 3), F(64, 8, 3, tma=True), F(64, 4, 3, tma=True), F(128, 8, 3, tma=True),
                 F(64, 8, 3, tma=True, split=32), F(64, 8, 3, tma=True, split=16), F(64, 4, 3, tma=True, split=32), F(64, 4, 4, split=32),
                 F(128, 8, 3, tma=True, split=64), F(128, 8, 3, split=64), F(128, 8, 3, split=32), F(128, 8, 4, split=32),
                 F(128, 8, 3, group_m=16, split=32)]
    else:
        cands = [F(64, 4, 4), F(64, 4, 4, tma=True), F(64, 8, 3), F(64, 8, 3, tma=True), F(64, 8, 4, tma=True),
                 F(64, 8, 3, group_m=16, tma=True), F(128, 8, 3), F(128, 8, 3, tma=True), F(128, 8, 4, tma=True),
                 F(64, 8, 4, tma=True, split=32), F(64, 8, 3, group_m=16, tma=True, split=32), F(64, 4, 4, tma=True, split=32),
                 F(64, 4, 4, split=32), F(128, 8, 3, split=64), F(128, 8, 3, tma=True, split=64), F(128, 8, 3, split=32),
                 F(128, 8, 4, split=64), F(128, 8, 3, group_m=16, split=64), F(128, 8, 3, group_m=4, split=64)]
    if rows_per_expert > 48:
        cands += FP8_NEW[gemm] + FP8_S11[gemm]
    if gemm == "gemm2" and rows_per_expert > 48:
        cands += [F(64, 8, 3, block_n=256), F(64, 8, 3, block_n=256, tma=True), F(64, 8, 4, block_n=256, tma=True), F(128, 8, 3, block_n=256, tma=True),
                  F(128, 8, 3, block_n=256, tma=True, split=64), F(64, 4, 5, tma=True), F(64, 4, 4, group_m=16, tma=True), F(128, 8, 4, split=64)]
    return cands


FP8_NEW = {
    "gemm1": [F(128, 8, 3, split=64, persistent=1), F(128, 8, 3, group_m=16, split=64, persistent=1), F(128, 8, 3, persistent=1, flat=True),
              F(128, 8, 3, tma=True, persistent=1, flat=True), F(128, 8, 4, persistent=1, flat=True), F(128, 8, 3, split=64, ws=True),
              F(128, 8, 3, tma=True, ws=True), F(64, 8, 2), F(64, 8, 2, tma=True), F(64, 4, 2), F(64, 4, 2, tma=True), F(64, 8, 2, split=32),
              F(64, 4, 2, split=32),
              # third sweep: warp-specialized and persistent around the winners of the second
              F(128, 8, 4, split=64, ws=True), F(128, 8, 3, group_m=16, split=64, ws=True), F(128, 8, 3, split=32, ws=True),
              F(128, 8, 3, split=64, persistent=1, ws=True), F(128, 8, 4, split=64, persistent=1), F(128, 8, 3, split=32, persistent=1)],
    "gemm2": [F(64, 4, 4, group_m=16, tma=True, persistent=2), F(64, 4, 4, group_m=16, tma=True, persistent=2, flat=True),
              F(64, 4, 4, group_m=16, tma=True, persistent=3, flat=True), F(64, 4, 4, group_m=16, ws=True), F(64, 4, 3, group_m=16, tma=True),
              F(128, 4, 3, tma=True), F(128, 4, 2, tma=True), F(128, 8, 2, tma=True), F(128, 4, 3, group_m=16, tma=True, persistent=2, flat=True),
              F(64, 8, 3, block_n=256, tma=True, persistent=1, flat=True),
              # third sweep: around the persistent winners of the second
              F(64, 4, 3, group_m=16, tma=True, persistent=2, flat=True), F(64, 4, 3, group_m=16, tma=True, persistent=3, flat=True),
              F(64, 4, 4, group_m=32, tma=True, persistent=2, flat=True), F(64, 4, 4, group_m=16, persistent=2, flat=True),
              F(64, 4, 3, group_m=16, tma=True, persistent=2), F(64, 4, 4, group_m=8, tma=True, persistent=2, flat=True)],
}
FP8_S11 = {
    "gemm1": [F(128, 16, 3, split=32), F(128, 16, 3, split=64), F(128, 16, 4, split=32), F(128, 16, 3, group_m=16, split=64),
              F(128, 16, 3, tma=True, split=32), F(64, 8, 4, split=32)],
    "gemm2": [F(64, 4, 3, group_m=16, tma=True, persistent=2, flat=True, tma_a=True), F(64, 4, 4, group_m=16, tma=True, persistent=2, flat=True, tma_a=True),
              F(64, 4, 4, group_m=16, tma=True, tma_a=True), F(64, 4, 4, group_m=16, tma=True, persistent=2, tma_a=True),
              F(64, 4, 3, group_m=16, tma=True, persistent=3, flat=True, tma_a=True), F(128, 8, 3, tma=True, tma_a=True),
              F(128, 4, 3, group_m=16, tma=True, persistent=2, flat=True, tma_a=True), F(64, 8, 3, block_n=256, tma=True, tma_a=True),
              F(128, 8, 3, block_n=256, tma=True, tma_a=True), F(64, 4, 4, group_m=16, tma_a=True), F(128, 16, 3, block_n=256, tma=True, tma_a=True)],
}
"""fp8 tiles of the fourth sweep (issue 23, session 11): GEMM2 with the activation rows through a tensor descriptor
(``tma_a``) around the earlier winners; GEMM1 with 16 warps (four warpgroups, 32 accumulator registers per thread
and tile half: more warps to interleave one's scale FMAs with another's tensor-core steps)."""

"""fp8 tiles of the second sweep (from 64 rows per expert): persistent grids (flattened tile and K loops where there are no small
last tiles), Triton's warp-specialized K loop, and two programs per SM (2 pipeline stages, <= 113 KB of shared memory), which
lets one program's per-K-step scale FMAs overlap the other's tensor-core steps."""

BF16_GEMM1 = [B(128, 128, 64, 8, 4), B(128, 128, 64, 8, 3, 8), B(64, 128, 64, 4, 4), B(128, 128, 64, 8, 4, tma=True), B(128, 128, 64, 8, 3, 8, tma=True),
              B(128, 128, 64, 8, 4, 8, tma=True), B(64, 128, 64, 4, 4, tma=True), B(128, 64, 128, 8, 3, tma=True),
              B(128, 128, 64, 8, 4, split=64), B(128, 128, 64, 8, 4, tma=True, split=64), B(128, 128, 64, 8, 4, split=32),
              B(128, 128, 64, 8, 4, tma=True, split=32), B(128, 128, 64, 8, 4, 8, tma=True, split=64), B(128, 128, 64, 8, 3, tma=True, split=64),
              B(128, 128, 64, 8, 4, 4, tma=True, split=64),
              B(128, 128, 64, 8, 4, tma=True, persistent=1), B(128, 128, 64, 8, 4, tma=True, persistent=1, flat=True),
              B(128, 128, 64, 8, 4, 8, tma=True, persistent=1, flat=True), B(128, 128, 64, 8, 3, tma=True, persistent=1, flat=True),
              B(128, 128, 64, 8, 4, tma=True, ws=True),
              # third sweep: the warp-specialized loop won the second from 4,096 tokens
              B(128, 128, 64, 8, 4, tma=True, split=32, ws=True), B(128, 128, 64, 8, 4, tma=True, split=64, ws=True),
              B(128, 128, 64, 8, 3, tma=True, ws=True), B(128, 128, 64, 8, 4, 8, tma=True, ws=True), B(128, 128, 64, 8, 4, 4, tma=True, ws=True),
              B(128, 128, 64, 8, 4, tma=True, persistent=1, ws=True), B(128, 128, 64, 8, 4, tma=True, persistent=1, flat=True, ws=True),
              # fourth sweep (session 11): 16 warps, 256 activation columns (512 weight rows) per program
              B(128, 128, 64, 16, 4, tma=True), B(128, 256, 64, 16, 2, tma=True), B(128, 256, 32, 16, 4, tma=True), B(128, 128, 64, 16, 4, tma=True, ws=True)]
BF16_GEMM2 = [B(128, 256, 64, 8, 4), B(128, 256, 64, 8, 3, 8), B(128, 256, 64, 8, 3, tma=True), B(128, 256, 64, 8, 4, tma=True),
              B(128, 256, 64, 8, 3, 8, tma=True), B(128, 128, 64, 8, 4, tma=True), B(64, 256, 64, 8, 4, tma=True), B(128, 128, 128, 8, 3, tma=True),
              B(128, 256, 64, 8, 4, tma=True, split=64), B(128, 256, 64, 8, 3, tma=True, split=64), B(128, 256, 64, 8, 3, tma=True, split=32),
              B(128, 256, 64, 8, 4, split=64), B(128, 128, 64, 8, 4, tma=True, split=64), B(128, 256, 64, 8, 4, 4, tma=True, split=64),
              B(128, 256, 64, 8, 4, tma=True, split=32),
              B(128, 256, 64, 8, 4, 4, tma=True, persistent=1, flat=True), B(128, 256, 64, 8, 4, 4, tma=True, split=64, persistent=1),
              B(128, 256, 64, 8, 3, 4, tma=True, persistent=1, flat=True), B(128, 256, 64, 8, 4, 4, tma=True, ws=True),
              B(128, 256, 64, 8, 4, 4, tma=True, split=64, ws=True), B(128, 128, 64, 8, 4, tma=True, ws=True), B(128, 256, 64, 8, 4, 1, tma=True, split=64, ws=True)]
"""bf16 tiles tried from 1,024 tokens (64+ rows per expert): the winners of h200_bf16_tune.log, their TMA twins, with small
last tiles (``split``: an expert's last m-tile of at most that many rows on a smaller tile's code path), and (second sweep)
persistent grids, flattened tile and K loops, Triton's warp-specialized K loop."""


def _split(c) -> str:  # noqa: ANN001 - GemmTile / BlockConfig; the optional keys only where set
    out = f", split: {c.split}" if c.split else ""
    out += f", persistent: {c.persistent}" if c.persistent else ""
    out += ", flat: true" if c.flat else ""
    out += ", ws: true" if c.ws else ""
    return out + (", tma_a: true" if c.tma_a else "")


def fp8_yaml(c: ops.BlockConfig) -> str:
    return f"{{m: {c.block_m}, n: {c.block_n}, warps: {c.num_warps}, stages: {c.num_stages}, group_m: {c.group_m}, tma: {str(c.tma).lower()}{_split(c)}}}"


def bf16_yaml(t: ops.GemmTile) -> str:
    return (f"{{m: {t.block_m}, n: {t.block_n}, k: {t.block_k}, warps: {t.num_warps}, stages: {t.num_stages}, group_m: {t.group_m}, "
            f"tma: {str(t.tma).lower()}{_split(t)}}}")


# ----------------------------------------------------------------------------- the cases


@dataclass
class Layer:
    """One layer's spec, weights and adapter on the device, and its GEMM calls."""

    key: str
    spec: object
    experts: object
    fp8: bool
    tokens: list[int]

    def case(self, tokens: int, seed: int) -> "Case":
        spec = self.spec
        gen = torch.Generator(device=DEVICE).manual_seed(seed)
        x = torch.randn(tokens, spec.hidden_size, generator=gen, device=DEVICE).to(torch.bfloat16)
        logits = torch.randn(tokens, spec.num_experts, generator=gen, device=DEVICE)
        topk_w, topk_ids = route(logits, spec.routing)
        topk_w, topk_ids = topk_w.float().contiguous(), topk_ids.to(torch.int64).contiguous()
        lay = ops.route_layout(topk_ids, 0, spec.num_local_experts)
        c = Case(self, tokens, x, topk_w, topk_ids, lay)
        if self.fp8:
            c.xq, c.xs = ops.quantize_rows(x, 128)
            c.a2, c.s2 = c.gemm1(None)
        else:
            c.a2 = c.gemm1(BF16_GEMM1[0])
        return c


@dataclass
class Case:
    layer: Layer
    tokens: int
    x: torch.Tensor
    topk_w: torch.Tensor
    topk_ids: torch.Tensor
    lay: object
    xq: torch.Tensor | None = None
    xs: torch.Tensor | None = None
    a2: torch.Tensor | None = None
    s2: torch.Tensor | None = None
    extra: dict = field(default_factory=dict)

    def candidates(self, gemm: str) -> list:
        return candidates(self.layer, self.tokens, gemm)

    def gemm1(self, cfg):  # noqa: ANN001, ANN201
        ex, lay, spec = self.layer.experts, self.lay, self.layer.spec
        if self.layer.fp8:
            return ops.fp8_block_gemm(self.xq, self.xs, ex._w13, ex._s13, lay.counts, lay.rows, sorted_tok=lay.sorted_tok,
                                      act=spec.activation, quant_out=True, config=cfg)
        return ops.bf16_grouped_gemm(self.x, ex._w13, lay.counts, lay.rows, cfg, sorted_tok=lay.sorted_tok, act=spec.activation)

    def gemm2(self, cfg):  # noqa: ANN001, ANN201
        ex, lay = self.layer.experts, self.lay
        if self.layer.fp8:
            return ops.fp8_block_gemm(self.a2, self.s2, ex._w2, ex._s2, lay.counts, lay.rows, config=cfg)
        return ops.bf16_grouped_gemm(self.a2, ex._w2, lay.counts, lay.rows, cfg)

    def dense(self, gemm: str, out) -> torch.Tensor:  # noqa: ANN001
        """The real rows of a GEMM's output as float32 (fp8 outputs dequantized)."""
        real = self.tokens * self.layer.spec.top_k
        if isinstance(out, tuple):
            y, s = out
            return (y[:real].float() * s[:real].repeat_interleave(128, 1)) if s is not None else y[:real].float()
        return out[:real].float()


def candidates(layer: Layer, tokens: int, gemm: str) -> list:
    """The tiles tried for ``gemm`` of ``layer`` at ``tokens`` tokens (a dry run: the first and one of each option)."""
    if layer.fp8:
        cands = fp8_candidates(gemm, tokens * layer.spec.top_k / layer.spec.num_local_experts)
    else:
        cands = BF16_GEMM1 if gemm == "gemm1" else BF16_GEMM2
    if DEVICE == "cpu":
        cands = list(dict.fromkeys([cands[0], *[c for c in cands if c.tma][:1], *[c for c in cands if c.block_n == 256][:1],
                                    *[c for c in cands if c.split][:1], *[c for c in cands if c.tma_a][:1]]))
    return cands


def build_layers(keys: list[str], dry: bool) -> list[Layer]:
    from moe_oracle.kernels import torch_grouped_mm, triton_fp8_block
    from moe_oracle.kernels.triton_fp8_block import TritonFP8BlockExperts

    if dry:  # the adapters take no Triton path on CPU by themselves: hand them the interpreted kernels
        torch_grouped_mm.triton_ops = triton_fp8_block.triton_ops = lambda device: ops
    layers = []
    for i, key in enumerate(keys):
        spec = model_spec(MODELS[key])
        if dry:  # tiny stand-ins with the same scheme, routing and top-k (distinct sizes: one table entry each)
            spec = replace(spec, num_experts=16, hidden_size=256, intermediate_size=128 * (i + 1))
        fp8 = spec.quant.weight is not None
        weights = make_random_weights(spec, seed=0, device=DEVICE, generator_device=DEVICE)
        experts = TritonFP8BlockExperts(spec, weights) if fp8 else TorchGroupedMMExperts(spec, weights)
        tokens = (TOKENS if fp8 else BF16_TOKENS) if not dry else [4, 128]
        layers.append(Layer(key, spec, experts, fp8, tokens))
    return layers


# ----------------------------------------------------------------------------- compile (workers) and time


def compile_share(layers: list[Layer], worker: int, workers: int, only: list[int] | None = None) -> None:
    """Run each candidate of this worker's share once, on every layer and token count that tries it
    (fills Triton's on-disk cache; a tile compiled for one fp8 layer usually serves the other too)."""
    if only:
        for layer in layers:
            layer.tokens = [t for t in layer.tokens if t in only]
    jobs = sorted({(layer.fp8, gemm, cfg) for layer in layers for tokens in layer.tokens for gemm in ("gemm1", "gemm2")
                   for cfg in candidates(layer, tokens, gemm)}, key=str)
    mine = set(jobs[worker::workers])
    for layer in layers:
        for tokens in layer.tokens:
            todo = [(gemm, cfg) for gemm in ("gemm1", "gemm2") for cfg in candidates(layer, tokens, gemm) if (layer.fp8, gemm, cfg) in mine]
            if not todo:
                continue
            case = layer.case(tokens, seed=tokens)
            for gemm, cfg in todo:
                _TRYING(worker).write_text(repr((layer.fp8, gemm, cfg)))  # left behind if this candidate kills or hangs the worker
                try:
                    getattr(case, gemm)(cfg)
                    if DEVICE == "cuda":
                        torch.cuda.synchronize()
                except Exception as exc:  # noqa: BLE001 - reported again by the timing pass
                    print(f"  worker {worker}: {layer.key} {gemm} {cfg}: {type(exc).__name__}: {str(exc)[:100]}", flush=True)
                    try:
                        if DEVICE == "cuda":
                            torch.cuda.synchronize()
                    except Exception:  # noqa: BLE001 - a broken CUDA context: stop here, the marker names the candidate
                        os._exit(3)
    if DEVICE == "cuda":
        torch.cuda.synchronize()
    _TRYING(worker).unlink(missing_ok=True)


def _TRYING(worker: int) -> Path:  # noqa: N802 - the marker file of a worker's current candidate (directory set by precompile)
    return Path(os.environ["KERNEL_SWEEP_MARKERS"]) / f"trying_{worker}"


BAD: set[str] = set()
"""Candidates that killed or hung a compile worker (repr of (fp8, gemm, tile)): the timing pass skips them."""


def precompile(args: argparse.Namespace) -> None:
    t0 = time.time()
    os.environ["KERNEL_SWEEP_MARKERS"] = tempfile.mkdtemp(prefix="kernel_sweep_")
    extra = (["--dry-run"] if args.dry_run else []) + (["--tokens", *map(str, args.tokens)] if args.tokens else [])
    procs = [subprocess.Popen([sys.executable, __file__, "--worker", str(i), "--workers", str(args.jobs)] + extra)
             for i in range(args.jobs)]
    codes = []
    for i, p in enumerate(procs):
        try:
            codes.append(p.wait(timeout=max(1.0, args.compile_timeout - (time.time() - t0))))
        except subprocess.TimeoutExpired:
            p.kill()
            codes.append(p.wait())
        marker = _TRYING(i)
        if marker.exists():  # the worker died or hung on this candidate
            BAD.add(marker.read_text())
            print(f"# worker {i} (exit {codes[-1]}) stopped on {marker.read_text()}: skipped in the timing pass", flush=True)
            marker.unlink()
    print(f"# precompiled in {args.jobs} workers in {time.time() - t0:.0f}s (exit codes {sorted(set(codes))})", flush=True)


def sweep_case(case: Case, timer: Callable, samples: int, log: list[str]) -> dict:
    """The best tile of each GEMM for one case, timed alone; the log lines name the top four and the dropped."""
    best = {}
    for gemm in ("gemm1", "gemm2"):
        ref, timings = None, []
        for cfg in case.candidates(gemm):
            if repr((case.layer.fp8, gemm, cfg)) in BAD:
                log.append(f"    {gemm} {cfg}: killed or hung a compile worker: skipped")
                continue
            fn = (lambda cfg=cfg, gemm=gemm: getattr(case, gemm)(cfg))
            try:
                out = case.dense(gemm, fn())
                if ref is None:
                    ref = out
                else:
                    err = float((out - ref).abs().max() / ref.abs().max().clamp_min(1e-30))
                    if not math.isfinite(err) or err > (0.2 if case.layer.fp8 and gemm == "gemm1" else 2.0**-6):
                        log.append(f"    {gemm} {cfg}: output differs from the first candidate's by {err:.3g}: dropped")
                        print(log[-1], flush=True)
                        continue
                ms = timer(fn, samples=samples, target_s=0.05)
            except Exception as exc:  # noqa: BLE001 - a tile that does not compile or fit is named and skipped
                log.append(f"    {gemm} {cfg}: {type(exc).__name__}: {str(exc)[:120]}")
                print(log[-1], flush=True)
                continue
            timings.append((ms, cfg))
        timings.sort(key=lambda p: p[0])
        best[gemm] = timings[0]
        show = fp8_yaml if case.layer.fp8 else bf16_yaml
        log.append(f"  T={case.tokens:>5} {gemm} ({len(timings)} tiles): " + "  ".join(f"{ms:.4f} {show(c)}" for ms, c in timings[:4]))
        print(log[-1], flush=True)
    return best


def run(args: argparse.Namespace) -> int:
    t0 = time.time()
    timer = host_ms if args.dry_run else time_graph_ms
    layers = build_layers(FP8_LAYERS + BF16_LAYERS, args.dry_run)
    device = "CPU (dry run)" if args.dry_run else torch.cuda.get_device_name()
    import triton

    head = f"{device}, torch {torch.__version__}, Triton {triton.__version__}, {time.strftime('%Y-%m-%d', time.gmtime())}"
    print(f"# kernel_sweep: {head}", flush=True)
    log: list[str] = []
    results: dict[str, list] = {layer.key: [] for layer in layers}
    for layer in layers:
        spec = layer.spec
        log.append(f"# {layer.key}: E={spec.num_experts} top-{spec.top_k} H={spec.hidden_size} I={spec.intermediate_size} {spec.quant.name}")
        print(log[-1], flush=True)
    # The counts of issue 23's unmet targets first: past the deadline the rest keep what they had.
    order = sorted(((layer, t) for layer in layers for t in layer.tokens), key=lambda p: (PRIORITY.index(p[1]) if p[1] in PRIORITY else len(PRIORITY), p[1]))
    for layer, tokens in order:
        if args.tokens and tokens not in args.tokens:
            continue
        if time.time() - START > args.deadline:
            log.append(f"  deadline ({args.deadline:.0f}s) passed: {layer.key} at {tokens} tokens not swept (keeps what it had)")
            print(log[-1], flush=True)
            continue
        log.append(f"# {layer.key} at {tokens} tokens")
        case = layer.case(tokens, seed=tokens)
        best = sweep_case(case, timer, args.samples, log)
        entry = {"tokens": tokens, "gemm1": best["gemm1"], "gemm2": best["gemm2"], "path": "triton"}
        if not layer.fp8:
            ex = layer.experts
            ex.force_path = PathChoice("triton", best["gemm1"][1], best["gemm2"][1])
            tri = timer(lambda: ex.apply(case.x, case.topk_w, case.topk_ids), samples=args.samples)
            ex.force_path = PathChoice("torch_grouped_mm")
            tor = timer(lambda: ex.apply(case.x, case.topk_w, case.topk_ids), samples=args.samples) if not args.dry_run else float("inf")
            ex.force_path = None
            entry.update(path="triton" if tri <= tor else "torch_grouped_mm", whole=(tri, tor))
            log.append(f"  T={tokens:>5} whole call: triton {tri:.4f} ms, torch_grouped_mm {tor:.4f} ms -> {entry['path']}")
            print(log[-1], flush=True)
        results[layer.key].append(entry)
    for rows in results.values():
        rows.sort(key=lambda r: r["tokens"])
    if DEVICE == "cuda":
        torch.cuda.empty_cache()
    args.out_dir.mkdir(parents=True, exist_ok=True)
    (args.out_dir / "fp8_block.yaml").write_text(fp8_table(layers, results, head))
    (args.out_dir / "bf16_grouped.yaml").write_text(bf16_table(layers, results, head))
    for name in ("fp8_block.yaml", "bf16_grouped.yaml"):  # what is written must load
        parse_paths(safe_load((args.out_dir / name).read_text()), name)
    (args.out_dir / "kernel_sweep.log").write_text("\n".join(log) + "\n")
    print(f"# wrote {args.out_dir}/fp8_block.yaml, bf16_grouped.yaml, kernel_sweep.log in {time.time() - t0:.0f}s", flush=True)
    return 0


# ----------------------------------------------------------------------------- the tables


def _limits(counts: list[int]) -> list[int | None]:
    """Each measured count serves up to the geometric mean of it and the next one; the last, any larger count."""
    return [int(math.sqrt(a * b)) for a, b in zip(counts, counts[1:])] + [None]


MEASURED = "{head}: benchmarks/kernel_sweep.py (benchmarks/results/h200_kernel_sweep.log); each GEMM's candidate tiles timed alone (CUDA-graph replays, median), the fastest kept"


def fp8_table(layers: list[Layer], results: dict, head: str) -> str:
    text = fp8_table_path().read_text()
    shipped = safe_load(text)
    shipped_table = parse_paths(shipped, str(fp8_table_path()))
    shipped_notes = {}  # (shape name, measured token count) -> the shipped comment
    shape = None
    for line in text.splitlines():
        if line.startswith("  - name: "):
            shape = line.split(": ", 1)[1].strip()
        elif "  # measured at " in line and shape is not None:
            note = line.split("  # ", 1)[1]
            shipped_notes[(shape, int(note.split()[2]))] = note if note.endswith("(earlier sweep)") else note + " (earlier sweep)"
    lines = ["kind: runtime_paths", "experts: triton_fp8_block", f"measured: \"{MEASURED.format(head=head)}\"", "notes: >",
             *_notes(shipped), "shapes:"]
    for layer in layers:
        rows = results.get(layer.key) or []
        if not layer.fp8:
            continue
        spec = layer.spec
        lines += [f"  - name: {layer.key}", f"    num_experts: {spec.num_experts}", f"    hidden_size: {spec.hidden_size}",
                  f"    intermediate_size: {spec.intermediate_size}", f"    top_k: {spec.top_k}", "    ranges:"]
        measured = {r["tokens"]: r for r in rows}
        counts = sorted(set(layer.tokens) | set(measured))
        for tokens, limit in zip(counts, _limits(counts)):
            lim = "" if limit is None else f"max_tokens: {limit}, "
            if tokens in measured:
                (m1, c1), (m2, c2) = measured[tokens]["gemm1"], measured[tokens]["gemm2"]
                note = f"measured at {tokens} tokens: gemm1 {m1:.4f} ms, gemm2 {m2:.4f} ms"
            elif (kept := shipped_table.choose(spec.num_experts, spec.hidden_size, spec.intermediate_size, spec.top_k, tokens)) is not None:
                c1, c2 = kept.gemm1, kept.gemm2  # not swept (deadline, --tokens): the shipped tiles and their comment
                note = shipped_notes.get((layer.key, tokens), f"{tokens} tokens not swept: the shipped tiles")
            else:  # not swept, not in the shipped table: the tiles the kernel picks by itself
                rows_total = tokens * spec.top_k
                c1 = ops.block_config(rows_total, spec.num_local_experts, gated=True)
                c2 = ops.block_config(rows_total, spec.num_local_experts, gated=False)
                note = f"{tokens} tokens not swept: the kernel's own tiles (BLOCK_CONFIGS)"
            lines.append(f"      - {{{lim}path: triton, gemm1: {fp8_yaml(c1)}, gemm2: {fp8_yaml(c2)}}}  # {note}")
    if lines[-1] == "shapes:":
        lines[-1] = "shapes: []"
    return "\n".join(lines) + "\n"


def _notes(doc: dict) -> list[str]:
    """The shipped notes as a folded block, wrapped as the files are."""
    return ["  " + line for line in textwrap.wrap(" ".join(doc.get("notes", "").split()), 98)]


def _value(v: object) -> str:
    """A YAML flow value: tiles and mappings inline, booleans lower case."""
    if isinstance(v, ops.GemmTile):
        return bf16_yaml(v)
    if isinstance(v, dict):
        return "{" + ", ".join(f"{a}: {_value(b)}" for a, b in v.items()) + "}"
    return str(v).lower() if isinstance(v, bool) else str(v)


def bf16_table(layers: list[Layer], results: dict, head: str) -> str:
    """The shipped bf16 table with the swept layers' measured ranges replaced (ranges follow runtime_bench's TOKENS)."""
    text = default_table_path().read_text()
    shipped = safe_load(text)
    comments = {}  # (shape name, range index) -> the shipped comment
    shape, index = None, -1
    for line in text.splitlines():
        if line.startswith("  - name: "):
            shape, index = line.split(": ", 1)[1].strip(), -1
        elif line.startswith("      - {") and shape is not None:
            index += 1
            comments[(shape, index)] = line.split("}  # ", 1)[1] if "}  # " in line else ""
    swept = {layer.key: {r["tokens"]: r for r in results.get(layer.key, [])} for layer in layers if not layer.fp8}
    measured = shipped.get("measured", "")
    if any(swept.values()):
        measured += f"; {', '.join(k for k, v in swept.items() if v)} from {min(t for v in swept.values() for t in v)} tokens: " + MEASURED.format(head=head)
    out = ["kind: runtime_paths", f"experts: {shipped.get('experts', 'torch_grouped_mm')}", f"measured: \"{measured}\"", "notes: >",
           *_notes(shipped), "shapes:"]
    for s in shipped.get("shapes") or []:
        out += [f"  - name: {s['name']}", *(f"    {k}: {s[k]}" for k in ("num_experts", "hidden_size", "intermediate_size", "top_k")), "    ranges:"]
        mine = swept.get(s["name"], {})
        aligned = len(s["ranges"]) == len(TOKENS)
        for i, rng in enumerate(s["ranges"]):
            comment = comments.get((s["name"], i), "")
            if aligned and TOKENS[i] in mine:
                r = mine[TOKENS[i]]
                tri, tor = r["whole"]
                rng = {k: v for k, v in rng.items() if k == "max_tokens"}
                rng["path"] = r["path"]
                if r["path"] == "triton":
                    rng["gemm1"] = r["gemm1"][1]
                    rng["gemm2"] = r["gemm2"][1]
                comment = (f"measured at {TOKENS[i]} tokens: triton {tri:.4f} ms (gemm1 {r['gemm1'][0]:.4f}, gemm2 {r['gemm2'][0]:.4f}), "
                           f"torch_grouped_mm {tor:.4f} ms")
            out.append(f"      - {_value(rng)}" + (f"  # {comment}" if comment else ""))
    out += ["default:", *(f"  - {_value(r)}" for r in shipped["default"])]
    return "\n".join(out) + "\n"


DEVICE = "cuda"


def main(argv: list[str] | None = None) -> int:
    global DEVICE
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out-dir", type=Path, default=Path("sweep_out"))
    parser.add_argument("--jobs", type=int, default=min(12, os.cpu_count() or 1), help="worker processes that compile first (0: none)")
    parser.add_argument("--samples", type=int, default=5)
    parser.add_argument("--deadline", type=float, default=1e9, help="seconds from the start (compiling included) after which no new case is swept; what was measured is written")
    parser.add_argument("--tokens", type=int, nargs="*", default=None, help="sweep only these token counts (the others keep the shipped tiles)")
    parser.add_argument("--compile-timeout", type=float, default=150, help="seconds the compile workers get; one still running is killed")
    parser.add_argument("--dry-run", action="store_true", help="CPU, Triton's interpreter, tiny layers, host timers")
    parser.add_argument("--worker", type=int, default=None, help=argparse.SUPPRESS)
    parser.add_argument("--workers", type=int, default=1, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    DEVICE = "cpu" if args.dry_run else "cuda"
    if args.worker is not None:
        with torch.no_grad():
            compile_share(build_layers(FP8_LAYERS + BF16_LAYERS, args.dry_run), args.worker, args.workers, args.tokens)
        return 0
    if not args.dry_run and not torch.cuda.is_available():
        parser.error("this sweep times CUDA graphs: it needs a CUDA device (or --dry-run)")
    if args.jobs > 0:
        precompile(args)
    with torch.no_grad():
        return run(args)


if __name__ == "__main__":
    sys.exit(main())
