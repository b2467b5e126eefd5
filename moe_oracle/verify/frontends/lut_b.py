"""The LUT-B front end: vLLM 0.34.0's online ``--quantization lut_b_moe`` (Q/online/lut_b.py).

``LutBOnlineMoEMethod(moe=moe)`` refuses expert bias and any ``moe_backend`` but ``auto`` and
``emulation`` and fixes its experts class in the constructor (``LutBSm107Experts`` when its
``is_supported_config`` passes and the sizes are 128-aligned, else ``LutBEmulationTritonExperts``);
no oracle and no backend enum are involved. The layer then runs its EPLB gate and
``create_weights`` (:meth:`VllmSide.load`), and ``process_weights_after_loading`` builds the kernel
with ``make_lut_b_moe_kernel`` (P/experts/lut_b_moe.py), which checks the chosen class again and
raises when it is unsupported. That function runs here as the release wrote it, with one stand-in:
the ``maybe_make_prepare_finalize`` it calls after its check is replaced for the call by one that
stops it (the prepare/finalize is asked apart, as for every front end:
:meth:`VllmSide.prepare_finalize`), so a refusal comes from vLLM's own check with vLLM's message.
"""

from __future__ import annotations

import importlib
from typing import Any

from ..backend_names import NO_MEMBER
from ..cases import Deployment
from . import NotDriven

Q = "vllm.model_executor.layers.quantization"
P = "vllm.model_executor.layers.fused_moe"

class _Checked(Exception):
    """Raised by the stand-in ``maybe_make_prepare_finalize``: the experts check passed."""


def lut_b_method(side: Any, dep: Deployment, moe: Any) -> tuple[Any, Any]:
    """``LutBOnlineMoEMethod``: ``--quantization lut_b_moe`` on an unquantized checkpoint."""
    if (dep.weight_key, dep.activation_key) != ("lut_b_static", "mxfp8_dynamic"):
        raise NotDriven(f"LUT-B MoE is (lut_b_static, mxfp8_dynamic), not ({dep.weight_key}, {dep.activation_key})")
    try:
        mod = importlib.import_module(f"{Q}.online.lut_b")
    except ImportError as exc:
        # Before 0.34.0 the release has no lut_b_moe method and refuses the flag at start.
        raise NotDriven(f"vLLM {side.sim.release} has no lut_b_moe method ({exc})", at_start=True) from None
    method = mod.LutBOnlineMoEMethod(moe=moe)
    side.load(dep, moe, method)
    _make_kernel_check(method, moe)
    return NO_MEMBER, method.experts_cls


def _make_kernel_check(method: Any, moe: Any) -> None:
    """Run the release's ``make_lut_b_moe_kernel`` up to its prepare/finalize (see the module doc)."""
    experts_mod = importlib.import_module(f"{P}.experts.lut_b_moe")
    a2a = importlib.import_module(f"{P}.all2all_utils")
    real = a2a.maybe_make_prepare_finalize

    def stop(**_: Any) -> Any:
        raise _Checked

    a2a.maybe_make_prepare_finalize = stop
    try:
        experts_mod.make_lut_b_moe_kernel(method.experts_cls, moe, method.get_fused_moe_quant_config(None), None)
    except _Checked:
        return
    finally:
        a2a.maybe_make_prepare_finalize = real
    raise AssertionError("make_lut_b_moe_kernel returned without asking for a prepare/finalize")
