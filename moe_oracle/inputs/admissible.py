"""Which edits of a deployment vLLM would start with: the filter why-not's search (dead-end fixes
too) holds every candidate fix to, so that each printed fix runs as printed."""

from __future__ import annotations

from typing import Callable

from ..core.catalog import Catalog
from ..core.config import MoEConfig
from ..core.environment import Environment
from .attention_heads import attention_heads_refusal
from .checkpoint.formats_float import ONLINE_FP8
from .declared import answer_release
from .deployment import Deployment
from .ep_refusal import ep_refusal
from .model_start_refusals import blame_from, model_start_refusal
from .moonep_start import moonep_quantized_model_refusal
from .quant_checks import layer_gate_methods, platform_refusal_any
from .release_facts import ENGINE_VERSION

__all__ = ["start_refusal"]


def start_refusal(deployment: Deployment, catalog: Catalog) -> Callable[[MoEConfig, Environment], str | None]:
    """For why-not's search (dead-end fixes too): why vLLM would not start with an edited
    deployment (the refusal's message), ``None`` where it starts; held to the platform
    quantization check that ``select`` with the fix applied runs (:func:`build_deployment`), so
    every printed fix runs as printed, and why-not can say which edits vLLM refuses.

    An edit that keeps the checkpoint's experts and format is the checkpoint itself: the method
    vLLM checks for it (:func:`moe_oracle.inputs.quant_checks.checkpoint_quantization`) must pass the
    edited device's platform in the edited release (:func:`moe_oracle.inputs.quant_checks.platform_admits`),
    so no fix moves the checkpoint to a GPU whose platform refuses its method. Any other layer
    (``--quant`` or the layer's ``quant_method`` edited, or a ``--config`` layer given field by
    field) is a checkpoint of that format with those experts: one of the methods it can have must
    pass (:func:`moe_oracle.inputs.quant_checks.layer_gate_methods`), as ``select`` holds it to
    :func:`moe_oracle.inputs.quant_checks.verify_layer_quantization`, unless the serve line's ``-q`` chose
    the method (:func:`moe_oracle.inputs.quant_checks.quantization_from_flag`), which then must pass.
    A layer under an online FP8 ``--quantization`` has the scheme that method builds
    (:data:`moe_oracle.inputs.checkpoint.formats_float.ONLINE_FP8`). The checkpoint's own start checks hold the edit too: a tensor-parallel size that divides its
    attention heads (:mod:`.attention_heads`), expert parallelism only where vLLM finds experts
    (:mod:`.ep_refusal`), no MoonEP on a quantized model (:mod:`.moonep_start`), and its model
    class's parallel checks (:mod:`.model_start_refusals`). The messages name the input as the
    moe-oracle flag that edits it (``--tp``, ``--all2all``, ``--gpu``)."""
    gate = deployment.checkpoint_gate

    def refusal(c: MoEConfig, env: Environment) -> str | None:
        release = answer_release(catalog, env) or ENGINE_VERSION
        online = ONLINE_FP8.get(c.quant_method or "")
        if online is not None and c.quant.name != online[0]:
            # an online FP8 method builds its own scheme: no checkpoint has these experts under it
            return f"--quantization {c.quant_method} quantizes the experts as {online[0]}, not {c.quant.name}"
        issue = (attention_heads_refusal(deployment.attention_heads or 0, c.parallel.tp_size, "--tp", f"vLLM {release}")
                 or (ep_refusal("--ep", f"vLLM {release}") if deployment.engine_num_experts == 0 and c.parallel.use_ep else None)
                 or moonep_quantized_model_refusal(deployment.model_quantization, c.parallel.all2all_backend.value, release, "--all2all")
                 or (model_start_refusal(deployment.architecture, c.parallel, release, c.device.platform.value, blame_from({}), num_experts=c.num_experts)
                     if deployment.architecture is not None else None))
        if issue is None:
            if gate is not None and (c.quant, c.quant_method) == gate[:2]:
                methods, how = gate[2], "the checkpoint's quantization method"
            elif gate is not None and gate[3] is not None and c.quant_method == gate[1]:
                methods, how = gate[3], "the method the serve line's -q chose"
            else:
                methods, how = layer_gate_methods(c, release), "a method a checkpoint of this layer's format can have"
            issue = platform_refusal_any(methods, release, c.device, path="--gpu", how=how) if methods else None
        return None if issue is None else issue.message

    return refusal
