#!/usr/bin/env python
"""Our experts against their own grouped GEMMs and the machine's limits, side by side, on one GPU.

For real model layers (config files under examples/models) and token counts from 16 to 8,192,
every variant below runs on the same routed inputs, each call captured in a CUDA graph and timed
by its replays (CUDA events; median of ``--samples`` samples of several replays each):

* ``ours``: the experts adapter (``FusedMoEKernel``'s experts half: routing layout, both GEMMs,
  activation, weighted combine), e.g. ``TorchGroupedMMExperts`` on its Triton path;
* ``portable``: the same adapter's plain-torch path (the implementation before this benchmark's
  Triton glue), bf16 models only, with ``--portable``;
* ``gemms+act``: the adapter's own two grouped GEMMs and the fused activation kernel between them,
  on rows already sorted by expert (layout computed outside the timed region): what the experts
  would cost if the glue were free;
* ``gemms``: the two grouped GEMMs alone;
* for fp8 layers also ``bf16 ours`` / ``bf16 gemms+act``: the bf16 adapter on the same shapes
  (weights dequantized to bf16), the speed an fp8 path has to beat.

Machine limits, measured in the same process before and after the kernels (the better of the two
is drawn): dense bf16 matmul rate (8192^3, ``torch.matmul`` on random data), dense fp8 matmul rate
(8192^3, ``torch._scaled_mm`` row-wise scales, bf16 out) and copy bandwidth (1 GiB
device-to-device copy, bytes read plus written); each the faster of graph replays and eager calls.

Counting (per call, ``T`` tokens, top-``K``, ``H`` hidden, ``I`` intermediate, ``N1`` GEMM1 rows):
FLOPs ``= 2*T*K*(H*N1 + I*H)`` (the two GEMMs on real rows only); bytes ``= touched experts x
bytes per expert (weights, scales, biases in their storage dtype) + T*H*2 (input) + T*H*2
(output)``, the least any implementation must move; the floor ``max(FLOPs / peak, bytes /
bandwidth)`` is drawn in the figures. The fp8 layers' peak is the fp8 rate, the others' bf16.

Numerics: each model's ``ours`` output at ``--check-tokens`` tokens against the float32 reference
(:func:`moe_oracle.kernels.reference.reference_moe`), normwise ``max|out - ref| / max|ref|``; for
the per-channel fp8 experts also against the reference whose GEMM1 output is rounded to bf16 (what
``torch._scaled_grouped_mm`` stores).

Models: Qwen3-30B-A3B, Mixtral-8x7B, gpt-oss-120b (bf16 dims with its expert biases and
swigluoai), a DeepSeek-V3 EP8 shard (32 of 256 experts, hidden 7168, intermediate 2048, receiving
``T*8`` routed rows: the load of one rank after an all-to-all dispatch of ``T`` tokens per rank
with uniform routing, modelled as a 32-expert top-8 layer), and in fp8: the DeepSeek shard and
Qwen3-30B-A3B-FP8 (``fp8_block``), Llama-4-Maverick (``fp8_channel_token``).

With ``--peer FOLDER`` (the folder benchmarks/prepare_peer.py unpacks from the vLLM wheel) it
times instead, for the five layers of issue 23 by default, ``ours`` against vLLM's Triton
fused-MoE kernel (benchmarks/vllm_peer.py: vLLM's kernel and tuned configs, its compiled helpers
stood in for by ours and timed separately as ``peer align``), interleaved over ``--rounds`` rounds,
and prints ours / peer and the share of the floor of both, with the numerics of both against the
float32 reference at ``--check-tokens``; ``--csv`` and ``--plots`` write the rows and one figure
per layer (time and % of floor against tokens).

Usage::

    python benchmarks/prepare_peer.py                               # here: downloads the wheel -> .peer/
    python benchmarks/runtime_bench.py --peer .peer/vllm-0.33.0 --json peer.json --csv peer.csv --plots figs/

    python benchmarks/runtime_bench.py --json out.json            # everything (CUDA)
    python benchmarks/runtime_bench.py --models qwen3-30b-a3b --tokens 16 8192
    python benchmarks/plot_runtime.py out.json --out-dir figures/  # the PNGs

``--dry-run`` runs the same flow on CPU (checks the script, not speed; every line and the JSON
say DRY RUN): Triton's interpreter (``TRITON_INTERPRET=1``, set before Triton is imported) runs
our kernels, handed to the adapters as benchmarks/kernel_sweep.py does; each model is a tiny
stand-in with the same scheme, activation, biases, routing and top-k (:func:`dry_spec`); the
machine limits are fixed stand-ins (:data:`DRY_LIMITS`), not measured; one host-timed call
replaces the CUDA-graph timing. What cannot run on CPU is named in the output (:data:`DRY_NOTES`):
CUDA graphs and events; ``torch._scaled_grouped_mm`` (CUDA only), for which the float32
emulation of tests/runtime/test_triton_kernels.py stands in (the per-channel fp8 layer);
``torch._grouped_mm`` runs as torch's CPU implementation. A variant that fails, or a numerics
value that is not finite, makes a dry run exit 1 (on the GPU failures stay reported, not fatal).
With ``--peer`` the peer runs under the interpreter too, with a stand-in device name and SM 9.0
(:data:`DRY_PEER_DEVICE`)::

    python benchmarks/runtime_bench.py --dry-run --models mixtral-8x7b --tokens 8 32 --check-tokens 32
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import time
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Callable, Iterable, Iterator

if "--dry-run" in sys.argv:  # Triton decides at import whether it interprets: before anything imports it
    os.environ["TRITON_INTERPRET"] = "1"

import torch  # noqa: E402

from moe_oracle.core.config import Device, MoEConfig  # noqa: E402
from moe_oracle.inputs.hf import from_hf_config, load_hf_config  # noqa: E402
from moe_oracle.inputs.models import resolve_model_path  # noqa: E402
from moe_oracle.kernels.reference import reference_moe  # noqa: E402
from moe_oracle.core.quant import UNQUANTIZED  # noqa: E402
from moe_oracle.runtime.routing import route  # noqa: E402
from moe_oracle.runtime.spec import LayerSpec, RoutingParams  # noqa: E402
from moe_oracle.runtime.weights import MoEWeights, make_random_weights  # noqa: E402

TOKENS = [16, 64, 256, 1024, 2048, 4096, 8192]
DEVICE = "cuda"
DRY = False
"""``--dry-run`` (set by :func:`main`): CPU, Triton's interpreter, stand-in layers and limits, host timer."""
DRY_TOKENS = [8, 32]
"""A dry run's token counts (the last one the numerics check's) unless ``--tokens`` / ``--check-tokens`` are given."""
DRY_LIMITS = {"bf16_tflops": 1.0, "fp8_tflops": 2.0, "copy_gbs": 10.0}
"""A dry run's machine limits: fixed stand-ins (not measured; nothing on a CPU is comparable)."""
DRY_PEER_DEVICE = ("DRY RUN CPU", (9, 0))
"""The device name (no vLLM tuned config file matches it: the default heuristic) and capability the peer sees in a dry run."""
DRY_NOTES = [
    "DRY RUN on CPU: checks the script, not speed",
    "layers: tiny stand-ins (same scheme, activation, biases, routing, top-k; E <= 16, H 256, I 128)",
    "kernels: our Triton kernels under Triton's interpreter (TRITON_INTERPRET=1)",
    "timer: host wall time of one call; CUDA graphs and CUDA events not run on CPU",
    f"machine limits: fixed stand-ins {DRY_LIMITS}, not measured (torch.matmul / torch._scaled_mm / copy limits not run)",
    "torch._grouped_mm: torch's CPU implementation",
    "torch._scaled_grouped_mm (CUDA only): not run on CPU; a float32 emulation stands in (per-channel fp8 layers: ours, gemms+act, gemms)",
]
"""What a dry run does instead of the GPU run, printed at its start and written into its JSON."""
FAILED: list[str] = []
"""Variants that raised (``model tokens name: error``): reported; fatal in a dry run."""


@dataclass(frozen=True)
class Model:
    name: str
    label: str
    config: str
    shard_experts: int | None = None  # an EP shard: this many local experts, top-k among them
    bf16: bool = False  # run the checkpoint's dims unquantized in bf16 (its biases kept)


MODELS = {
    "qwen3-30b-a3b": Model("qwen3-30b-a3b", "Qwen3-30B-A3B (128 x 2048 x 768, top-8)", "qwen3-30b-a3b"),
    "mixtral-8x7b": Model("mixtral-8x7b", "Mixtral-8x7B (8 x 4096 x 14336, top-2)", "mixtral-8x7b-instruct-v0.1"),
    "deepseek-v3-ep8": Model("deepseek-v3-ep8", "DeepSeek-V3 EP8 shard (32 x 7168 x 2048, 8 rows/token)", "deepseek-r1", shard_experts=32, bf16=True),
    "gpt-oss-120b": Model("gpt-oss-120b", "gpt-oss-120b bf16 dims (128 x 2880 x 2880, top-4, bias)", "gpt-oss-120b", bf16=True),
    "deepseek-v3-ep8-fp8": Model("deepseek-v3-ep8-fp8", "DeepSeek-V3 EP8 shard, FP8 128x128 blocks", "deepseek-r1", shard_experts=32),
    "qwen3-30b-a3b-fp8": Model("qwen3-30b-a3b-fp8", "Qwen3-30B-A3B-FP8 (128x128 blocks)", "qwen3-30b-a3b-fp8"),
    "llama-4-maverick-fp8": Model("llama-4-maverick-fp8", "Llama-4-Maverick FP8 (per-channel x per-token, 128 x 5120 x 8192, top-1)", "llama-4-maverick-17b-128e-instruct-fp8"),
}


def dry_spec(spec: LayerSpec) -> LayerSpec:
    """A dry run's stand-in of ``spec``: at most 16 experts, hidden 256, intermediate 128 (multiples of
    128: fp8_block's limit; of 16: torch._scaled_grouped_mm's), the rest (scheme, activation, biases,
    routing, top-k) kept."""
    return replace(spec, num_experts=min(spec.num_experts, 16), hidden_size=256, intermediate_size=128)


def model_spec(model: Model, *, dry: bool = False) -> LayerSpec:
    """The layer spec of ``model`` (module docstring), from its Hugging Face config copy (``dry``: its :func:`dry_spec`)."""
    ck = from_hf_config(load_hf_config(resolve_model_path(model.config)))
    kwargs = dict(ck.kwargs)
    if model.bf16:
        kwargs["quant"] = UNQUANTIZED
        kwargs.pop("quant_method", None)
    spec = LayerSpec.from_config(MoEConfig(device=Device("cuda", capability=90), **kwargs))
    if model.shard_experts:
        spec = replace(spec, num_experts=model.shard_experts, routing=RoutingParams("renormalize", spec.top_k))
    return dry_spec(spec) if dry else spec


# ----------------------------------------------------------------------------- machine limits


def _graph(fn: Callable[[], object]) -> torch.cuda.CUDAGraph:
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(stream):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(stream)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        fn()
    return graph


def time_graph_ms(fn: Callable[[], object], *, samples: int = 15, target_s: float = 0.25) -> float:
    """Median milliseconds of one call of ``fn`` replayed from a CUDA graph.

    Each sample times ``inner`` back-to-back replays between two CUDA events (``inner`` chosen so
    a sample lasts about ``target_s / samples``); the median over samples, divided by ``inner``.
    """
    graph = _graph(fn)
    for _ in range(3):
        graph.replay()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    graph.replay()
    end.record()
    torch.cuda.synchronize()
    one = max(start.elapsed_time(end), 1e-3)
    inner = max(1, min(200, int(target_s * 1e3 / samples / one)))
    times = []
    for _ in range(samples):
        start.record()
        for _ in range(inner):
            graph.replay()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end) / inner)
    del graph
    times.sort()
    return times[len(times) // 2]


def host_ms(fn: Callable[[], object], **_: object) -> float:
    """Dry run: host wall time of one call (interpreter; checks the flow, not speed)."""
    t = time.perf_counter()
    fn()
    return (time.perf_counter() - t) * 1e3


TIMER: Callable[..., float] = time_graph_ms
"""The timer of the benches: :func:`time_graph_ms`, :func:`host_ms` in a dry run."""


def _eager_ms(fn: Callable[[], object], iters: int = 10) -> float:
    for _ in range(3):
        fn()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(iters):
        start.record()
        fn()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    return sorted(times)[len(times) // 2]


def _fastest_ms(fn: Callable[[], object]) -> float:
    """The faster of graph replays and eager calls (a limit is the best the machine does)."""
    return min(time_graph_ms(fn), _eager_ms(fn))


def _matmul_ms(fp8: bool, n: int) -> float:
    a = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, n, device="cuda", dtype=torch.bfloat16)
    if not fp8:
        return _fastest_ms(lambda: torch.matmul(a, b))
    a8, b8 = a.to(torch.float8_e4m3fn), b.to(torch.float8_e4m3fn).t().contiguous().t()  # b column-major
    sa, sb = torch.ones(n, 1, device="cuda"), torch.ones(1, n, device="cuda")
    return _fastest_ms(lambda: torch._scaled_mm(a8, b8, sa, sb, out_dtype=torch.bfloat16))


def _copy_ms(dtype: torch.dtype, size: int) -> float:
    src = torch.empty(size // torch.empty((), dtype=dtype).element_size(), dtype=dtype, device="cuda")
    src.view(torch.uint8).random_(0, 120)
    dst = torch.empty_like(src)
    return _fastest_ms(lambda: dst.copy_(src))


def machine_limits() -> dict:
    """Dense bf16 and fp8 matmul rates (TFLOP/s) and copy bandwidth (GB/s), measured here.

    Matmuls: 8192^3 on random data, ``torch.matmul`` (bf16) and ``torch._scaled_mm`` (fp8 e4m3,
    row-wise scales, bf16 out). Copy: 1 GiB device-to-device ``copy_`` of bf16 and of uint8 data,
    bytes read plus written. Each the faster of CUDA-graph replays and eager calls, best case kept.
    """
    if DRY:
        return dict(DRY_LIMITS)
    n, size = 8192, 1 << 30
    limits = {
        "bf16_tflops": 2 * n**3 / (_matmul_ms(False, n) * 1e-3) / 1e12,
        "fp8_tflops": 2 * n**3 / (_matmul_ms(True, n) * 1e-3) / 1e12,
        "copy_gbs": 2 * size / (min(_copy_ms(torch.bfloat16, size), _copy_ms(torch.uint8, size)) * 1e-3) / 1e9,
    }
    torch.cuda.empty_cache()
    return limits


# ----------------------------------------------------------------------------- variants


def experts_for(spec: LayerSpec, weights: MoEWeights, *, portable: bool = False):  # noqa: ANN201
    """Our experts adapter for ``spec``'s scheme."""
    from moe_oracle.kernels.torch_grouped_mm import TorchGroupedMMExperts, TorchScaledGroupedMMExperts
    from moe_oracle.kernels.triton_fp8_block import TritonFP8BlockExperts

    scheme = spec.quant.name
    if scheme == "unquantized":
        return TorchGroupedMMExperts(spec, weights, use_triton=not portable)
    if scheme == "fp8_block":
        return TritonFP8BlockExperts(spec, weights)
    if scheme == "fp8_channel_token":
        return TorchScaledGroupedMMExperts(spec, weights)
    raise ValueError(f"no experts of ours for {scheme}")


def gemm_baselines(experts, x: torch.Tensor, topk_ids: torch.Tensor) -> dict[str, Callable[[], object]]:  # noqa: ANN001
    """``gemms+act`` and ``gemms`` closures for ``experts`` on rows sorted outside the timed region."""
    from moe_oracle.kernels import _triton_moe as ops
    from moe_oracle.kernels.torch_grouped_mm import TorchGroupedMMExperts, TorchScaledGroupedMMExperts, _scaled_grouped_mm
    from moe_oracle.kernels.triton_fp8_block import TritonFP8BlockExperts

    spec = experts.spec
    first, n = spec.first_local_expert, spec.num_local_experts
    alpha = 1.702 if spec.swiglu_alpha is None else spec.swiglu_alpha
    limit = 7.0 if spec.swiglu_limit is None else spec.swiglu_limit
    if isinstance(experts, TorchGroupedMMExperts):
        lay = ops.route_layout(topk_ids, first, n, x=x)
        buf, offs = lay.buf, lay.offs
        a0, _ = ops.activation(torch._grouped_mm(buf, experts._w13_t, offs=offs), spec.activation, offs, bias=experts._bias13, swiglu_alpha=alpha, swiglu_limit=limit)

        def gemms_act() -> object:
            h = torch._grouped_mm(buf, experts._w13_t, offs=offs)
            a, _ = ops.activation(h, spec.activation, offs, bias=experts._bias13, swiglu_alpha=alpha, swiglu_limit=limit)
            return torch._grouped_mm(a, experts._w2_t, offs=offs)

        def gemms() -> object:
            torch._grouped_mm(buf, experts._w13_t, offs=offs)
            return torch._grouped_mm(a0, experts._w2_t, offs=offs)

        return {"gemms+act": gemms_act, "gemms": gemms}
    if isinstance(experts, TorchScaledGroupedMMExperts):
        xq, xs = ops.quantize_rows(x, None)
        lay = ops.route_layout(topk_ids, first, n, x=xq, x_scale=xs)
        buf, bscale, offs = lay.buf, lay.buf_scale.view(-1), lay.offs
        a0, as0 = ops.activation(_scaled_grouped_mm(buf, experts._w13_t, bscale, experts._s13, offs), spec.activation, offs, quant="token")

        def gemms_act() -> object:
            h = _scaled_grouped_mm(buf, experts._w13_t, bscale, experts._s13, offs)
            a, s = ops.activation(h, spec.activation, offs, quant="token")
            return _scaled_grouped_mm(a, experts._w2_t, s, experts._s2, offs)

        def gemms() -> object:
            _scaled_grouped_mm(buf, experts._w13_t, bscale, experts._s13, offs)
            return _scaled_grouped_mm(a0, experts._w2_t, as0, experts._s2, offs)

        return {"gemms+act": gemms_act, "gemms": gemms}
    if isinstance(experts, TritonFP8BlockExperts):
        # Our block GEMMs fuse the activation into GEMM1: "gemms" is GEMM1 (with its epilogue) + GEMM2
        # on pre-sorted rows (A read contiguously), i.e. the whole experts call minus layout and combine.
        xq, xs = ops.quantize_rows(x, 128)
        lay = ops.route_layout(topk_ids, first, n)
        ids = lay.sorted_tok[: lay.rows].long().clamp(max=x.shape[0] - 1)
        xq_sorted, xs_sorted = xq[ids].contiguous(), xs[ids].contiguous()

        def gemms() -> object:
            a, s = ops.fp8_block_gemm(xq_sorted, xs_sorted, experts._w13, experts._s13, lay.counts, lay.rows, act=spec.activation, quant_out=True)
            return ops.fp8_block_gemm(a, s, experts._w2, experts._s2, lay.counts, lay.rows)

        return {"gemms": gemms}
    raise TypeError(type(experts).__name__)


def layer_counts(spec: LayerSpec, tokens: int, touched: int, weights: MoEWeights) -> tuple[int, int]:
    """(FLOPs, bytes) of one experts call (module docstring)."""
    flops = 2 * tokens * spec.top_k * (spec.hidden_size * spec.w13_rows + spec.intermediate_size * spec.hidden_size)
    return flops, touched * weights.bytes_per_expert() + 4 * tokens * spec.hidden_size


def routed_inputs(spec: LayerSpec, weights: MoEWeights, token_counts: Iterable[int]) -> Iterator[tuple[int, torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor, int, int, int]]:
    """Per token count, in order: ``(tokens, x [tokens, hidden] bf16, logits [tokens, E] float32,
    topk_weights [tokens, K] float32, topk_ids [tokens, K] int64, experts touched, FLOPs, bytes)``,
    hidden states and router logits drawn from one generator (seed 1) on :data:`DEVICE`, so both
    benches route the same inputs (the logits feed the float32 reference's own routing)."""
    gen = torch.Generator(device=DEVICE).manual_seed(1)
    for tokens in token_counts:
        x = torch.randn(tokens, spec.hidden_size, generator=gen, device=DEVICE).to(torch.bfloat16)
        logits = torch.randn(tokens, spec.num_experts, generator=gen, device=DEVICE)
        topk_w, topk_ids = route(logits, spec.routing, correction_bias=weights.correction_bias)
        topk_w, topk_ids = topk_w.float().contiguous(), topk_ids.to(torch.int64).contiguous()
        touched = int(torch.unique(topk_ids).numel())
        yield (tokens, x, logits, topk_w, topk_ids, touched, *layer_counts(spec, tokens, touched, weights))


def bf16_copy(weights: MoEWeights, spec: LayerSpec) -> tuple[LayerSpec, MoEWeights]:
    """The same experts dequantized to bf16 (for the bf16 comparison of fp8 layers)."""
    w13 = torch.stack([weights.expert_fp32(e)[0].to(torch.bfloat16) for e in range(weights.num_local_experts)])
    w2 = torch.stack([weights.expert_fp32(e)[1].to(torch.bfloat16) for e in range(weights.num_local_experts)])
    return replace(spec, quant=UNQUANTIZED), MoEWeights(w13=w13, w2=w2, w13_bias=weights.w13_bias, w2_bias=weights.w2_bias)


def bench_model(model: Model, args: argparse.Namespace, limits: dict) -> dict:
    spec = model_spec(model, dry=DRY)
    fp8 = spec.quant.weight is not None
    peak = limits["fp8_tflops" if fp8 else "bf16_tflops"]
    t0 = time.time()
    weights = make_random_weights(spec, seed=0, device=DEVICE, generator_device=DEVICE)
    variants = {"ours": experts_for(spec, weights)}
    if args.portable and not fp8:
        variants["portable"] = experts_for(spec, weights, portable=True)
    bf16_weights = None
    if fp8:
        bspec, bf16_weights = bf16_copy(weights, spec)
        variants["bf16 ours"] = experts_for(bspec, bf16_weights)
    print(f"# {'DRY RUN stand-in of ' if DRY else ''}{model.label}: E={spec.num_experts} top-{spec.top_k} H={spec.hidden_size} I={spec.intermediate_size} {spec.activation.value} {spec.quant.name} bias={spec.has_bias}; weights {weights.bytes_per_expert() * spec.num_experts / 2**30:.1f} GiB, built in {time.time() - t0:.1f}s", flush=True)
    rows, numerics = [], {}
    for tokens, x, logits, topk_w, topk_ids, touched, flops, nbytes in routed_inputs(spec, weights, args.tokens):
        calls: dict[str, Callable[[], object]] = {}
        with torch.no_grad():
            for name, ex in variants.items():
                calls[name] = (lambda ex=ex: ex.apply(x, topk_w, topk_ids))
                if name in ("ours", "bf16 ours"):
                    prefix = "" if name == "ours" else "bf16 "
                    calls.update({prefix + k: v for k, v in gemm_baselines(ex, x, topk_ids).items()})
            for name, fn in calls.items():
                try:
                    ms = TIMER(fn, samples=args.samples)
                except Exception as exc:  # reported, not fatal: a variant that cannot be captured or run
                    print(f"  {name:<16} {tokens:>6}  failed: {type(exc).__name__}: {str(exc)[:160]}", flush=True)
                    FAILED.append(f"{model.name} {tokens} {name}: {type(exc).__name__}: {str(exc)[:160]}")
                    continue
                fl, by = (flops, nbytes) if not name.startswith("bf16") else layer_counts(spec, tokens, touched, bf16_weights)
                rows.append(dict(kernel=name, tokens=tokens, ms=ms, tflops=fl / ms / 1e9, gbs=by / ms / 1e6, flops=fl, bytes=by, experts_touched=touched,
                                 floor_ms=max(fl / (peak * 1e9) if not name.startswith("bf16") else fl / (limits["bf16_tflops"] * 1e9), by / (limits["copy_gbs"] * 1e6))))
            if tokens == args.check_tokens:
                out = variants["ours"].apply(x, topk_w, topk_ids).float()
                ref = reference_moe(x, logits, weights, spec)
                numerics["normwise_vs_reference"] = float((out - ref).abs().max() / ref.abs().max())
                if spec.quant.name == "fp8_channel_token":
                    ref16 = reference_moe(x, logits, weights, spec, gemm1_dtype=torch.bfloat16)
                    numerics["normwise_vs_reference_gemm1_bf16"] = float((out - ref16).abs().max() / ref16.abs().max())
                numerics["tokens"] = tokens
                del ref
        by_name = {r["kernel"]: r for r in rows if r["tokens"] == tokens}
        line = "  ".join(f"{k} {v['ms']:.3f}" for k, v in by_name.items())
        ratio = by_name["ours"]["ms"] / by_name["gemms+act"]["ms"] if "gemms+act" in by_name and "ours" in by_name else None
        print(f"  T={tokens:>5}: {line}" + (f"  ours/gemms+act {ratio:.2f}" if ratio else ""), flush=True)
    print(f"  numerics: {numerics}", flush=True)
    weights = variants = bf16_weights = None  # freed before the next layer (not del: the timed closures name them)
    if DEVICE == "cuda":
        torch.cuda.empty_cache()
    return dict(model=model.name, label=model.label, fp8=fp8, scheme=spec.quant.name, num_experts=spec.num_experts, top_k=spec.top_k,
                hidden=spec.hidden_size, intermediate=spec.intermediate_size, activation=spec.activation.value, bias=spec.has_bias,
                rows=rows, numerics=numerics)


PEER_MODELS = ["qwen3-30b-a3b", "mixtral-8x7b", "deepseek-v3-ep8", "deepseek-v3-ep8-fp8", "qwen3-30b-a3b-fp8"]
"""The five layers of issue 23, measured against vLLM's Triton kernel with ``--peer``."""

PEER_NOTE = (
    "peer = vLLM {version} fused_moe_kernel (Triton source from the wheel; vLLM's tuned config JSON for this card and shape where the wheel ships one, else vLLM's default heuristic: each layer's line says which) launched as vLLM launches it; "
    "its compiled helpers are STOOD IN FOR by our code, timed separately: moe_align_block_size -> our Triton layout kernels + scatter + "
    "searchsorted ('peer align'), silu_and_mul (+ fp8 1x128 quantization) -> our Triton activation kernel, moe_sum -> torch.sum. "
    "ours/peer counts the peer's alignment at our stand-in's time; ours/peer-w/o-align leaves it out."
)


def _tile_label(t) -> str:  # noqa: ANN001 - GemmTile or BlockConfig
    k = getattr(t, "block_k", 128)
    label = f"{t.block_m}x{t.block_n}x{k}w{t.num_warps}s{t.num_stages}" + (f"g{t.group_m}" if t.group_m != 1 else "") + ("tma" if t.tma else "") + (f"r{t.split}" if getattr(t, "split", 0) else "")
    label += (f"p{t.persistent}" if getattr(t, "persistent", 0) else "") + ("f" if getattr(t, "flat", False) else "") + ("ws" if getattr(t, "ws", False) else "")
    return label + ("A" if getattr(t, "tma_a", False) else "")


def _path_label(experts, tokens: int) -> str:  # noqa: ANN001
    """Which path and tiles of ours served ``tokens`` (bf16: the path table's choice; fp8: the tile table's, or the kernel's own)."""
    configs_for = getattr(experts, "configs_for", None)
    if configs_for is not None:
        c1, c2 = configs_for(tokens)
        return "fp8 " + ("kernel default" if c1 is None else f"{_tile_label(c1)} / {_tile_label(c2)}")
    path_for = getattr(experts, "path_for", None)
    if path_for is None or getattr(experts, "paths", None) is None:
        return type(experts).__name__
    choice = path_for(tokens)
    if choice.path != "triton":
        return choice.path
    return f"triton {_tile_label(choice.gemm1)} / {_tile_label(choice.gemm2)}"


def bench_peer_model(model: Model, args: argparse.Namespace, limits: dict, peer) -> dict:  # noqa: ANN001
    """Ours against the peer (vllm_peer.py) on one layer: the same routed inputs and weights."""
    from vllm_peer import VLLMTritonPeer

    spec = model_spec(model, dry=DRY)
    fp8 = spec.quant.weight is not None
    peak = limits["fp8_tflops" if fp8 else "bf16_tflops"]
    t0 = time.time()
    weights = make_random_weights(spec, seed=0, device=DEVICE, generator_device=DEVICE)
    ours = experts_for(spec, weights)
    if args.paths is not None and getattr(ours, "paths", None) is not None:
        from moe_oracle.kernels.path_tables import load_paths

        ours.paths = load_paths(str(args.paths))
    theirs = VLLMTritonPeer(peer, spec, weights, device=DRY_PEER_DEVICE if DRY else None)
    print(f"# {'DRY RUN stand-in of ' if DRY else ''}{model.label}: E={spec.num_experts} top-{spec.top_k} H={spec.hidden_size} I={spec.intermediate_size} {spec.quant.name}; "
          f"weights {weights.bytes_per_expert() * spec.num_experts / 2**30:.1f} GiB, built in {time.time() - t0:.1f}s; peer configs: {theirs.config_file or 'none (vLLM default heuristic)'}", flush=True)
    rows, numerics = [], {}
    for tokens, x, logits, topk_w, topk_ids, touched, flops, nbytes in routed_inputs(spec, weights, args.tokens):
        floor = max(flops / (peak * 1e9), nbytes / (limits["copy_gbs"] * 1e6))
        with torch.no_grad():
            calls = {"ours": (lambda: ours.apply(x, topk_w, topk_ids)), **theirs.parts(x, topk_w, topk_ids)}
            best: dict[str, float] = {}
            for _ in range(args.rounds):  # interleaved: ours, peer, peer's parts; each round's median, best round kept
                for name, fn in calls.items():
                    try:
                        ms = TIMER(fn, samples=args.samples)
                    except Exception as exc:  # reported, not fatal
                        print(f"  {name:<16} {tokens:>6}  failed: {type(exc).__name__}: {str(exc)[:200]}", flush=True)
                        FAILED.append(f"{model.name} {tokens} {name}: {type(exc).__name__}: {str(exc)[:200]}")
                        continue
                    best[name] = min(best.get(name, float("inf")), ms)
            if tokens == args.check_tokens:
                ref = reference_moe(x, logits, weights, spec)
                for name, fn in (("ours", calls["ours"]), ("peer", calls["peer"])):
                    out = fn().float()
                    numerics[f"{name}_normwise_vs_reference"] = float((out - ref).abs().max() / ref.abs().max())
                if fp8:  # the peer rounds GEMM1's output to bf16 before the activation: the reference that does the same
                    ref16 = reference_moe(x, logits, weights, spec, gemm1_dtype=torch.bfloat16)
                    out = calls["peer"]().float()
                    numerics["peer_normwise_vs_reference_gemm1_bf16"] = float((out - ref16).abs().max() / ref16.abs().max())
                numerics["tokens"] = tokens
                del ref
        for name, ms in best.items():
            rows.append(dict(kernel=name, tokens=tokens, ms=ms, tflops=flops / ms / 1e9, gbs=nbytes / ms / 1e6, flops=flops, bytes=nbytes,
                             experts_touched=touched, floor_ms=floor))
        o, pr, pw, al = (best.get(k, float("nan")) for k in ("ours", "peer", "peer w/o align", "peer align"))
        print(f"  T={tokens:>5}: ours {o:.4f}  peer {pr:.4f} (w/o align {pw:.4f}, align {al:.4f})  ours/peer {o / pr:.2f} ({o / pw:.2f})  "
              f"floor {floor:.4f}: ours {100 * floor / o:.0f} %, peer {100 * floor / pr:.0f} %  [ours: {_path_label(ours, tokens)}; peer: {theirs.config_source(tokens)}]", flush=True)
        rows[-1]["path"] = _path_label(ours, tokens)
        rows[-1]["peer_config"] = theirs.config_source(tokens)
    print(f"  numerics (normwise max|out-ref|/max|ref| vs the float32 reference): {numerics}", flush=True)
    weights = ours = theirs = None  # freed before the next layer (not del: the timed closures name them)
    if DEVICE == "cuda":
        torch.cuda.empty_cache()
    return dict(model=model.name, label=model.label, fp8=fp8, scheme=spec.quant.name, num_experts=spec.num_experts, top_k=spec.top_k,
                hidden=spec.hidden_size, intermediate=spec.intermediate_size, activation=spec.activation.value, bias=spec.has_bias,
                rows=rows, numerics=numerics)


def peer_summary(results: list[dict]) -> str:
    """Per layer and token count: ours, peer, ratios and shares of the floor (the done-when targets marked)."""
    lines = [f"{'layer':<22} {'tokens':>6} {'ours ms':>8} {'peer ms':>8} {'ours/peer':>9} {'(w/o al.)':>9} {'ours %fl':>8} {'peer %fl':>8}  targets"]
    for res in results:
        for t in sorted({r["tokens"] for r in res["rows"]}):
            by = {r["kernel"]: r for r in res["rows"] if r["tokens"] == t}
            if "ours" not in by or "peer" not in by:
                continue
            o, p = by["ours"]["ms"], by["peer"]["ms"]
            pw = by.get("peer w/o align", {}).get("ms", float("nan"))
            fl = by["ours"]["floor_ms"]
            share = 100 * fl / o
            need = 80 if t <= 16 else 60 if t >= 2048 else None
            marks = ["ratio ok" if o <= p else "RATIO MISSED"]
            if need:
                marks.append(f">={need}% ok" if share >= need else f">={need}% MISSED")
            lines.append(f"{res['model']:<22} {t:>6} {o:>8.4f} {p:>8.4f} {o / p:>9.2f} {o / pw:>9.2f} {share:>7.0f}% {100 * fl / p:>7.0f}%  {', '.join(marks)}")
    return "\n".join(lines)


def write_csv(results: list[dict], path: Path) -> None:
    """One row per layer, kernel and token count (what the figures draw)."""
    import csv

    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["model", "kernel", "tokens", "ms", "floor_ms", "pct_of_floor", "tflops", "gbs", "experts_touched"])
        for res in results:
            for r in res["rows"]:
                w.writerow([res["model"], r["kernel"], r["tokens"], f"{r['ms']:.5f}", f"{r['floor_ms']:.5f}", f"{100 * r['floor_ms'] / r['ms']:.1f}",
                            f"{r['tflops']:.1f}", f"{r['gbs']:.0f}", r["experts_touched"]])


def summary(results: list[dict]) -> str:
    """Per model and token count: ours / gemms+act (bf16 targets) and fp8 ours vs bf16 ours."""
    lines = [f"{'model':<24} {'tokens':>6} {'ours ms':>9} {'gemms+act':>9} {'ratio':>6} {'target':>7} {'bf16 ours':>9} {'fp8/bf16':>8}"]
    for res in results:
        for t in sorted({r["tokens"] for r in res["rows"]}):
            rows = {r["kernel"]: r for r in res["rows"] if r["tokens"] == t}
            ours = rows.get("ours")
            base = rows.get("gemms+act")
            if ours is None:
                continue
            ratio = ours["ms"] / base["ms"] if base else None
            target = (1.1 if t <= 256 else 1.25 if t >= 2048 else None) if not res["fp8"] else None
            b16 = rows.get("bf16 ours")
            lines.append(
                f"{res['model']:<24} {t:>6} {ours['ms']:>9.3f} {base['ms'] if base else float('nan'):>9.3f} {ratio if ratio else float('nan'):>6.2f} "
                f"{('<=' + str(target)) if target else '':>7} {b16['ms'] if b16 else float('nan'):>9.3f} {ours['ms'] / b16['ms'] if b16 else float('nan'):>8.2f}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--models", nargs="+", default=list(MODELS), choices=list(MODELS))
    parser.add_argument("--tokens", nargs="+", type=int, default=None, help=f"token counts (default {TOKENS}; dry run {DRY_TOKENS})")
    parser.add_argument("--samples", type=int, default=15, help="timed samples per variant (median reported)")
    parser.add_argument("--check-tokens", type=int, default=None, help=f"compare with the float32 reference at this token count (default 256; dry run {DRY_TOKENS[-1]})")
    parser.add_argument("--portable", action="store_true", help="also time the bf16 adapter's plain-torch path")
    parser.add_argument("--json", type=Path, default=None, help="write limits and rows as JSON here")
    parser.add_argument("--peer", type=Path, default=None, help="folder from benchmarks/prepare_peer.py: time ours against vLLM's Triton kernel (default models: the five of issue 23)")
    parser.add_argument("--rounds", type=int, default=2, help="with --peer: interleaved rounds per token count (best round's median kept)")
    parser.add_argument("--csv", type=Path, default=None, help="with --peer: write the rows as CSV here")
    parser.add_argument("--plots", type=Path, default=None, help="with --peer: draw one PNG per layer into this folder (needs matplotlib)")
    parser.add_argument("--paths", type=Path, default=None, help="a bf16 path table (benchmarks/bf16_tune.py --out) instead of the shipped one")
    parser.add_argument("--dry-run", action="store_true", help="CPU, Triton's interpreter, tiny stand-in layers, fixed stand-in limits, host timer (checks the script, not speed)")
    args = parser.parse_args(argv)
    if args.peer is not None and args.models == list(MODELS):
        args.models = list(PEER_MODELS)
    if args.tokens is None:
        args.tokens = list(DRY_TOKENS if args.dry_run else TOKENS)
    if args.check_tokens is None:
        args.check_tokens = DRY_TOKENS[-1] if args.dry_run else 256
    if args.dry_run:
        dry_setup(parser)
    elif not torch.cuda.is_available():
        parser.error("this benchmark times CUDA graphs: it needs a CUDA device (or --dry-run)")
    if args.check_tokens not in args.tokens:
        args.tokens = sorted(set(args.tokens) | {args.check_tokens})
    limits = machine_limits()
    name = "CPU (DRY RUN: Triton interpreter, stand-in layers and limits)" if DRY else torch.cuda.get_device_name()
    if DRY:
        for note in DRY_NOTES:
            print(f"# {note}", flush=True)

    def show(tag: str, lim: dict) -> None:
        print(f"# {name}, torch {torch.__version__}, limits {tag}{' (DRY RUN: fixed stand-ins, not measured)' if DRY else ''}: "
              f"bf16 dense {lim['bf16_tflops']:.0f} TFLOP/s, fp8 dense {lim['fp8_tflops']:.0f} TFLOP/s, copy {lim['copy_gbs']:.0f} GB/s", flush=True)

    show("before", limits)
    results = []
    record = {"device": name, "torch": torch.__version__, "limits": limits, "limits_before": limits, "models": results}
    if DRY:
        record.update(dry_run=True, dry_run_notes=DRY_NOTES)
    peer = None
    if args.peer is not None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from vllm_peer import load_peer

        import triton

        peer = load_peer(args.peer, float32_dots=DRY)
        record["peer"] = peer.manifest
        record["triton"] = triton.__version__
        if DRY:
            note = (f"peer (DRY RUN): vLLM's kernel under the interpreter, {peer.manifest['dry_run_patch']} (Triton's interpreter multiplies bf16 dot "
                    f"operands wrongly), device seen as {DRY_PEER_DEVICE[0]!r} SM {DRY_PEER_DEVICE[1][0]}.{DRY_PEER_DEVICE[1][1]}: no tuned config file, vLLM's default heuristic")
            record["dry_run_notes"] = [*DRY_NOTES, note]
            print(f"# {note}", flush=True)
        print("# " + PEER_NOTE.format(version=peer.manifest.get("vllm", "?")) + f" Triton {triton.__version__}; wheel {peer.manifest.get('wheel')} sha256 {peer.manifest.get('sha256', '?')[:16]}", flush=True)
    for key in args.models:
        results.append(bench_model(MODELS[key], args, limits) if peer is None else bench_peer_model(MODELS[key], args, limits, peer))
        if args.json:  # written after each model: a later failure keeps what was measured
            args.json.write_text(json.dumps(record, indent=1))
    after = machine_limits()
    show("after", after)
    # The lines drawn are the best the machine did in this run (before or after the kernels).
    record["limits_after"] = after
    record["limits"] = {k: max(limits[k], after[k]) for k in limits}
    if args.json:
        args.json.write_text(json.dumps(record, indent=1))
    if peer is None:
        if DRY:
            print("# DRY RUN summary (CPU, Triton interpreter, stand-in layers: the times check the script, not speed)")
        print(summary(results))
        return dry_verdict(results) if DRY else 0
    if args.csv:
        write_csv(results, args.csv)
    if args.plots:
        from plot_runtime import plot_peer

        args.plots.mkdir(parents=True, exist_ok=True)
        try:
            for res in results:
                print(plot_peer(res, record["limits"], name, args.plots), flush=True)
        except ImportError as exc:
            print(f"# no plots here ({exc}): draw them from the JSON with benchmarks/plot_runtime.py --peer", flush=True)
    print("# " + PEER_NOTE.format(version=peer.manifest.get("vllm", "?")))
    if DRY:
        print("# DRY RUN peer summary (CPU, Triton interpreter, stand-in layers: the times check the script, not speed)")
    print(peer_summary(results))
    return dry_verdict(results) if DRY else 0


def dry_setup(parser: argparse.ArgumentParser) -> None:
    """Switch this process to a dry run (module docstring): CPU tensors, the interpreted kernels
    handed to the adapters, the emulated ``torch._scaled_grouped_mm``, the host timer."""
    global DRY, DEVICE, TIMER
    from moe_oracle.kernels import _triton_moe as ops
    from moe_oracle.kernels import torch_grouped_mm, triton_fp8_block

    if not ops.INTERPRET:
        parser.error("--dry-run: Triton was imported without TRITON_INTERPRET=1; run this script itself (python benchmarks/runtime_bench.py --dry-run) "
                     "or set TRITON_INTERPRET=1 before anything imports Triton")
    DRY, DEVICE, TIMER = True, "cpu", host_ms
    # The adapters take no Triton path on CPU by themselves: hand them the interpreted kernels (as kernel_sweep.py --dry-run does).
    torch_grouped_mm.triton_ops = triton_fp8_block.triton_ops = lambda device: ops
    torch_grouped_mm._scaled_grouped_mm = torch_grouped_mm.emulated_scaled_grouped_mm  # CUDA only: named in DRY_NOTES


def dry_verdict(results: list[dict]) -> int:
    """A dry run's exit status: 1 when a variant failed or a numerics value is missing or not finite (each named), else 0."""
    bad = list(FAILED)
    for res in results:
        values = {k: v for k, v in res["numerics"].items() if k != "tokens"}
        if not values:
            bad.append(f"{res['model']}: no numerics")
        bad += [f"{res['model']}: numerics {k} = {v}" for k, v in values.items() if not math.isfinite(v)]
        bad += [f"{res['model']} {r['tokens']} {r['kernel']}: {r['ms']} ms" for r in res["rows"] if not math.isfinite(r["ms"])]
    for line in bad:
        print(f"# DRY RUN FAILED: {line}", flush=True)
    print(f"# DRY RUN {'FAILED' if bad else 'passed'}: {len(results)} models, {sum(len(r['rows']) for r in results)} timed rows", flush=True)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
