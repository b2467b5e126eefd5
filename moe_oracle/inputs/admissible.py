"""Which edits of a deployment vLLM would start with: the filter why-not's search (dead-end fixes
too) holds every candidate fix to, so that each printed fix runs as printed."""

from __future__ import annotations

from typing import Callable

from ..core.catalog import Catalog
from ..core.config import MoEConfig
from ..core.environment import Environment
from .checkpoint.formats_float import ONLINE_FP8
from .declared import answer_release
from .deployment import Deployment
from .model_start_refusals import blame_from, model_start_refusal
from .moonep_start import moonep_quantized_model_refusal
from .quant_checks import layer_gate_methods, platform_admits
from .release_facts import ENGINE_VERSION

__all__ = ["admissible"]


def admissible(deployment: Deployment, catalog: Catalog) -> Callable[[MoEConfig, Environment], bool]:
    """For why-not's search (dead-end fixes too): whether vLLM starts with an edited deployment,
    held to the platform quantization check that ``select`` with the fix applied runs
    (:func:`build_deployment`), so every printed fix runs as printed.

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
    class's parallel checks (:mod:`.model_start_refusals`)."""
    gate = deployment.checkpoint_gate

    def admits(c: MoEConfig, env: Environment) -> bool:
        release = answer_release(catalog, env) or ENGINE_VERSION
        online = ONLINE_FP8.get(c.quant_method or "")
        if online is not None and c.quant.name != online[0]:
            return False  # an online FP8 method builds its own scheme: no checkpoint has these experts under it
        if deployment.attention_heads and deployment.attention_heads % c.parallel.tp_size:
            return False
        if deployment.engine_num_experts == 0 and c.parallel.use_ep:
            return False
        if moonep_quantized_model_refusal(deployment.model_quantization, c.parallel.all2all_backend.value, release, "--all2all") is not None:
            return False
        if deployment.architecture is not None and model_start_refusal(deployment.architecture, c.parallel, release, c.device.platform.value, blame_from({}), num_experts=c.num_experts) is not None:
            return False
        if gate is not None and (c.quant, c.quant_method) == gate[:2]:
            return platform_admits(gate[2], release, c.device)
        if gate is not None and gate[3] is not None and c.quant_method == gate[1]:
            return platform_admits(gate[3], release, c.device)  # the serve line's -q chose it
        return platform_admits(layer_gate_methods(c, release), release, c.device)

    return admits
