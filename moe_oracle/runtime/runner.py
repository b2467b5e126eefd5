"""Run the selected kernel at a model's real dimensions and compare it with the float32 reference.

This is the engine of ``moe-oracle run``: :func:`run_layer` builds the kernel the
Decision chose (through :func:`~moe_oracle.runtime.build.make_kernel`, i.e. by its
declared adapters) for random weights, times it, and checks it against
:func:`~moe_oracle.kernels.reference.reference_moe` in float32.

Formulas (per layer call, ``T`` tokens, ``K`` top-k, ``H`` hidden, ``I`` intermediate,
``N1 = 2I`` gated or ``I`` non-gated):

* FLOPs ``= 2 * T * K * (H * N1 + I * H)`` (the two expert GEMMs; routing and the
  activation are not counted), so gated: ``2*T*K*(H*2I + I*H)``;
* bytes ``= touched * bytes_per_expert + T*H*e_in + T*H*e_out + T*E*e_logits`` where
  ``touched`` is the number of distinct experts the routed tokens hit,
  ``bytes_per_expert`` counts w13, w2 and their scales/biases in their storage dtype,
  ``e_*`` are element sizes (the minimum traffic of an ideal kernel);
* TFLOP/s ``= FLOPs / time / 1e12``, GB/s ``= bytes / time / 1e9`` with ``time`` the
  median per-call time in seconds;
* max abs error ``= max |out - ref|``; max relative error ``= max |out - ref| / max |ref|``
  (normwise: elementwise ratios blow up where the reference is near zero).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any

import torch

from ..core.config import MoEConfig
from .spec import LayerSpec
from .timing import measure_ms, median
from .weights import make_random_weights

if TYPE_CHECKING:
    from ..core.decision import Decision

__all__ = ["RunReport", "available_memory_bytes", "layer_bytes", "layer_flops", "run_layer"]


@dataclass(frozen=True)
class RunReport:
    """Result of :func:`run_layer`.

    Attributes:
        kernel, prepare_finalize: selected ids.
        experts_adapter, prepare_finalize_adapter: the ``module:Class`` strings that were built.
        device: ``"cpu"`` or ``"cuda:<i> (<name>, SM <cap>)"``.
        dtype, quant: model dtype and quant scheme name.
        tokens, layers: tokens per call and layers cycled through.
        num_experts: experts allocated (``max_experts`` may cap the model's count).
        top_k, hidden_size, intermediate_size: the dimensions run.
        time_ms: median per-call time, milliseconds; times_ms: every timed call.
        flops, bytes: per call (module docstring formulas); experts_touched: distinct experts hit (layer 0).
        tflops, gbps: achieved rates.
        max_abs_error, max_rel_error: worst over layers, vs the float32 reference.
        notes: what was changed from the config to make it run (capped experts ...).
    """

    kernel: str
    prepare_finalize: str
    experts_adapter: str
    prepare_finalize_adapter: str
    device: str
    dtype: str
    quant: str
    tokens: int
    layers: int
    num_experts: int
    top_k: int
    hidden_size: int
    intermediate_size: int
    time_ms: float
    times_ms: tuple[float, ...]
    flops: int
    bytes: int
    experts_touched: int
    tflops: float
    gbps: float
    max_abs_error: float
    max_rel_error: float
    notes: tuple[str, ...] = field(default=())

    def to_dict(self) -> dict[str, Any]:
        out = dataclasses.asdict(self)
        out["times_ms"] = list(self.times_ms)
        out["notes"] = list(self.notes)
        return out

    def describe(self) -> str:
        """One line: kernel, shape, time, rates, errors.

        A rate is printed in the largest unit it reaches (a CPU's 1.3 GFLOP/s read "0.00
        TFLOP/s", as if nothing was measured); a call too fast for the timer has no rate, and
        the line says so instead of printing 0.
        """
        if self.time_ms > 0:
            rates = f"{_rate(self.tflops * 1e12, 'FLOP/s', 2)}, {_rate(self.gbps * 1e9, 'B/s', 1)}"
        else:
            rates = "no FLOP/s or GB/s (the timed calls took less than the timer resolves)"
        return (
            f"{self.kernel} + {self.prepare_finalize} on {self.device}: {self.tokens} tokens x {self.layers} layer(s), "
            f"E={self.num_experts} top-{self.top_k} H={self.hidden_size} I={self.intermediate_size} {self.dtype}/{self.quant}: "
            f"{self.time_ms:.3f} ms, {rates}, "
            f"max abs err {self.max_abs_error:.3g}, max rel err {self.max_rel_error:.3g}"
        )


def _rate(per_second: float, unit: str, decimals: int) -> str:
    """``per_second`` in T (``decimals`` places, as GPU runs print it), else the largest of G, M, k
    it reaches (3 significant digits), never rounded to 0.

    >>> _rate(307.24e12, "FLOP/s", 2), _rate(1.26e9, "FLOP/s", 2), _rate(0.3e9, "B/s", 1), _rate(2366.7e9, "B/s", 1)
    ('307.24 TFLOP/s', '1.26 GFLOP/s', '300 MB/s', '2366.7 GB/s')
    """
    top = "T" if unit == "FLOP/s" else "G"
    scale = {"T": 1e12, "G": 1e9}[top]
    if per_second >= scale:
        return f"{per_second / scale:.{decimals}f} {top}{unit}"
    for prefix, size in (("G", 1e9), ("M", 1e6), ("k", 1e3)):
        if per_second >= size:
            return f"{per_second / size:.3g} {prefix}{unit}"
    return f"{per_second:.3g} {unit}"


def layer_flops(spec: LayerSpec, tokens: int) -> int:
    """``2 * tokens * top_k * (hidden * w13_rows + intermediate * hidden)``.

    >>> from moe_oracle.runtime.spec import RoutingParams
    >>> layer_flops(LayerSpec(8, 4, 2, RoutingParams("default", 2)), 3)
    288
    """
    return 2 * tokens * spec.top_k * (spec.hidden_size * spec.w13_rows + spec.intermediate_size * spec.hidden_size)


def layer_bytes(spec: LayerSpec, tokens: int, experts_touched: int, bytes_per_expert: int) -> int:
    """Touched experts' weights plus input, output and router logits (module docstring)."""
    elt = torch.empty((), dtype=spec.torch_dtype).element_size()
    logit = torch.empty((), dtype=spec.torch_router_logits_dtype).element_size()
    return experts_touched * bytes_per_expert + 2 * tokens * spec.hidden_size * elt + tokens * spec.num_experts * logit


def _device_text(device: torch.device) -> str:
    if device.type == "cuda":
        idx = device.index if device.index is not None else torch.cuda.current_device()
        major, minor = torch.cuda.get_device_capability(idx)
        return f"cuda:{idx} ({torch.cuda.get_device_name(idx)}, SM {major * 10 + minor})"
    return device.type


def _capped_spec(spec: LayerSpec, max_experts: int | None, notes: list[str]) -> LayerSpec:
    if max_experts is None or max_experts >= spec.num_experts:
        return spec
    if max_experts < 1:
        raise ValueError(f"max_experts must be >= 1, got {max_experts}")
    routing = spec.routing
    top_k = min(routing.top_k, max_experts)
    groups = routing.num_expert_group
    topk_group = routing.topk_group
    if groups and groups > 1 and max_experts % groups:
        notes.append(f"num_expert_group {groups} does not divide {max_experts} experts: grouping dropped")
        groups, topk_group = None, None
    notes.append(f"experts capped at {max_experts} of {spec.num_experts} (top-k {top_k}); real hidden/intermediate sizes kept")
    return replace(spec, num_experts=max_experts, routing=replace(routing, top_k=top_k, num_expert_group=groups, topk_group=topk_group))


def run_layer(
    config: MoEConfig,
    decision: "Decision",
    *,
    tokens: int,
    layers: int = 1,
    device: str | None = None,
    seed: int = 0,
    progress: bool = True,
    max_experts: int | None = None,
    warmup: int = 3,
    iters: int = 10,
    time_budget_s: float | None = 10.0,
) -> RunReport:
    """Build the Decision's kernel for ``config``'s real dimensions, run it, time it, check it.

    The whole (unsharded) layer runs on one device as one rank: ``ep_size`` 1 and the full
    intermediate size, whatever parallelism the decision was made for; distributed
    prepare/finalize classes then run as their single-rank case.

    Memory: every layer allocates all its experts (``num_experts x (w13 + w2)`` in the storage
    dtype, plus a float32 copy of one expert at a time for the reference). DeepSeek-sized
    layers (256 x 7168 x 2048) need ~22 GB per bf16 layer: pass ``max_experts`` to allocate
    and route among fewer experts (top-k capped to it) while keeping the real hidden and
    intermediate sizes; the report's notes say so.

    Args:
        config: the layer (dimensions, activation, routing, quantization, dtype).
        decision: the selection for ``config`` (its winner's adapters are built).
        tokens: tokens per call.
        layers: independent layers (own weights, seeds ``seed + l``, drawn on ``device``) the
            timed calls cycle through, so a layer's weights are not all cache-resident between its calls.
        device: ``"cuda"``, ``"cpu"`` ... (default: CUDA when available).
        seed: weights and inputs seed.
        progress: tqdm bar over building and timing (drawn only when a step lasts over 1 s).
        max_experts: cap on allocated experts (see Memory).
        warmup, iters: untimed and timed calls (at least ``layers`` timed calls are made).
        time_budget_s: stop timing early once the calls took this long (at least 3 timed
            calls); ``None`` always makes ``warmup + iters`` calls.

    Returns:
        A frozen :class:`RunReport`.

    Raises:
        ValueError: the decision has no winner; ``tokens``/``layers`` < 1.
        AdapterImportError, AdapterContractError, CompositionError, UnsupportedConfigError: the
            kernel cannot be built here.
    """
    from ..kernels.reference import reference_moe
    from .build import make_kernel
    from .routing import route

    if tokens < 1 or layers < 1:
        raise ValueError(f"tokens and layers must be >= 1, got {tokens} and {layers}")
    if decision.winner is None:
        raise ValueError(f"the decision selected no kernel: {decision.summary()}")
    dev = torch.device(device if device is not None else ("cuda" if torch.cuda.is_available() else "cpu"))
    notes: list[str] = []
    spec = _capped_spec(LayerSpec.from_config(config), max_experts, notes)
    row = decision.rows[decision.winner]

    gen = torch.Generator(device="cpu").manual_seed(seed + 10_000)
    x = torch.randn(tokens, spec.hidden_size, generator=gen).to(dev, spec.torch_dtype)
    logits = torch.randn(tokens, spec.num_experts, generator=gen).to(dev, spec.torch_router_logits_dtype)

    bar = None
    if progress:
        try:
            from tqdm.auto import tqdm

            bar = tqdm(total=layers, desc=f"building {row.entry.id}", delay=1.0, leave=False)
        except ImportError:
            bar = None
    weights, kernels = [], []
    max_abs, max_rel = 0.0, 0.0
    try:
        for layer in range(layers):
            w = make_random_weights(spec, seed=seed + layer, device=dev, generator_device=dev)
            k = make_kernel(decision, weights=w, spec=spec)
            with torch.no_grad():
                out = k(x, logits).float()
                ref = reference_moe(x, logits, w, spec)
            err = (out - ref).abs().max().item() if out.numel() else 0.0
            scale = ref.abs().max().item() if ref.numel() else 0.0
            max_abs = max(max_abs, err)
            max_rel = max(max_rel, err / scale if scale > 0 else err)
            weights.append(w)
            kernels.append(k)
            if bar is not None:
                bar.update(1)
    finally:
        if bar is not None:
            bar.close()

    calls = iter(range(1 << 62))

    def one_call() -> None:
        with torch.no_grad():
            kernels[next(calls) % layers](x, logits)

    times = measure_ms(one_call, device=dev, warmup=warmup, iters=max(iters, layers), progress=progress, desc=f"timing {row.entry.id}", budget_s=time_budget_s, min_iters=min(max(iters, layers), 3))
    t_ms = median(times)
    _, ids = route(logits, spec.routing, correction_bias=weights[0].correction_bias)
    touched = int(torch.unique(ids).numel())
    flops = layer_flops(spec, tokens)
    nbytes = layer_bytes(spec, tokens, touched, weights[0].bytes_per_expert())
    seconds = t_ms * 1e-3
    return RunReport(
        kernel=row.entry.id,
        prepare_finalize=row.pf.id if row.pf is not None else "",
        experts_adapter=row.entry.adapter,
        prepare_finalize_adapter=row.pf.adapter if row.pf is not None else "",
        device=_device_text(dev),
        dtype=spec.dtype.value,
        quant=spec.quant.name,
        tokens=tokens,
        layers=layers,
        num_experts=spec.num_experts,
        top_k=spec.top_k,
        hidden_size=spec.hidden_size,
        intermediate_size=spec.intermediate_size,
        time_ms=t_ms,
        times_ms=times,
        flops=flops,
        bytes=nbytes,
        experts_touched=touched,
        tflops=flops / seconds / 1e12 if seconds > 0 else 0.0,
        gbps=nbytes / seconds / 1e9 if seconds > 0 else 0.0,
        max_abs_error=max_abs,
        max_rel_error=max_rel,
        notes=tuple(notes),
    )


def available_memory_bytes() -> int | None:
    """Free memory where :func:`run_layer` allocates: the GPU's when CUDA is available, else the host's.

    Returns ``None`` when it cannot be read.
    """
    import os

    try:
        if torch.cuda.is_available():
            return int(torch.cuda.mem_get_info()[0])
        return int(os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE"))
    except (ValueError, OSError, AttributeError, RuntimeError):
        return None
