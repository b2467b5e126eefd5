"""The sweep's equivalence classes (moe_oracle.verify.sweep) give, combination by combination, the
answer of the unreduced product: same winner, prepare/finalize, refusal and invariant verdict."""

from __future__ import annotations

from moe_oracle.core.config import Device
from moe_oracle.core.oracle import default_catalog
from moe_oracle.core.quant import SCHEMES
from moe_oracle.verify.space import SHAPES
from moe_oracle.verify.sweep import Axes, Sweep
from moe_oracle.core.vocab import Activation, All2AllBackend, Platform, RoutingMethod

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from sweep import PARALLEL, _environment  # noqa: E402

# A slice that exercises every mechanism the classes rely on: an FP8 block scheme (block rules read
# numbers), a request that binds the passthrough all2all backend, one the engine refuses by name,
# one that refuses the passthrough backend, shapes that differ in shape-limit predicates, LoRA.
_PAR = dict(PARALLEL)
AXES = Axes(
    shapes=(SHAPES[0], SHAPES[4]),
    devices=(Device(Platform.CUDA, 90), Device(Platform.CUDA, 100), Device(Platform.ROCM, None, "gfx942")),
    schemes=(SCHEMES["unquantized"], SCHEMES["fp8_block"], SCHEMES["nvfp4"], SCHEMES["mxfp4_w16"]),
    parallels=tuple((label, _PAR[label]) for label in ("1 GPU", "EP8", f"DP4xTP2 EP {All2AllBackend.DEEPEP_LOW_LATENCY.value}", f"DP4xTP2 EP {All2AllBackend.PASSTHROUGH.value}")),
    requests=("auto", "flashinfer_moe_ep_cutedsl", "triton", "cpu"),
    activations=(Activation.SILU, Activation.SWIGLUOAI, Activation.GELU_NO_MUL, Activation.SILU_NO_MUL),
    routings=(RoutingMethod.RENORMALIZE, RoutingMethod.DEEPSEEK_V3, RoutingMethod.TOPK, RoutingMethod.UNSPECIFIED),
)


def _answers(reduce: bool) -> tuple[dict, int]:
    sw = Sweep(default_catalog(), _environment(), AXES, reduce=reduce)
    out = {}
    for prefix in sw.prefixes():
        for r in sw.run(*prefix):
            for member in r.members():
                key = (r.device, r.scheme, r.request, *member)
                assert key not in out, key
                out[key] = (r.kernel, r.pf, r.refused, r.broken)
    return out, sw.evaluated


def test_reduced_sweep_equals_the_product() -> None:
    reduced, n_reduced = _answers(True)
    full, n_full = _answers(False)
    assert len(full) == AXES.size() == n_full
    assert reduced.keys() == full.keys()
    differ = [k for k in full if reduced[k] != full[k]]
    assert not differ, [(k, reduced[k], full[k]) for k in differ[:5]]
    assert n_reduced < n_full / 2  # the classes do merge
    outcomes = set(full.values())
    assert any(o[2] for o in outcomes) and any(o[0] for o in outcomes) and any(o[0] is None and not o[2] for o in outcomes)
