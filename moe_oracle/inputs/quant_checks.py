"""The checkpoint's quantization as vLLM verifies it at start: the method a checkpoint (and the
serve line's ``--quantization``) resolves to, the platform's ``supported_quantization`` gate, the
deprecated and out-of-tree methods, and the methods a layer given field by field can come from.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

from ..core.errors import ConfigError, InputIssue
from .release_facts import PlatformQuantization, platform_quantization, release_values
from .requantization import online_target_refusal

__all__ = ["PlatformQuantizationIssue", "checkpoint_quantization", "config_quant_method_issue", "layer_gate_methods", "layer_quantization_methods", "modelled_quant_methods", "platform_admits", "platform_refusal", "platform_refusal_any", "quantization_from_flag", "quantization_override", "verify_checkpoint_quantization", "verify_layer_quantization"]


_OVERRIDE_ORDER = ("auto_gptq", "gptq", "gptq_marlin", "auto_awq", "awq", "awq_marlin", "inc", "moe_wna16", "modelopt", "modelopt_fp4",
                   "modelopt_mxfp8", "mxfp8", "modelopt_mixed", "mxfp4", "gpt_oss_mxfp4", "deepseek_v4_fp8", "humming")


def _modelopt_algo(doc: Mapping[str, Any]) -> str | None:
    """Q/modelopt.py ``ModelOptQuantConfigBase._extract_modelopt_quant_algo``."""
    if not str(doc.get("quant_method", "")).lower().startswith("modelopt"):
        return None
    inner = doc.get("quantization")
    if "quantization" in doc:
        return str(inner.get("quant_algo", "")).upper() if isinstance(inner, Mapping) else None
    return str(doc.get("quant_algo", "")).upper()


def _override_by(name: str, doc: Mapping[str, Any], user: str | None, model_type: str | None) -> str | None:
    """``override_quantization_method`` of the class registered as ``name`` (vLLM 0.29.0-0.33.0,
    Q/ = vllm/model_executor/layers/quantization/); ``None`` where the class has none."""
    method = str(doc.get("quant_method", "")).lower()
    algo = _modelopt_algo(doc)
    if name == "auto_gptq":  # Q/auto_gptq.py
        return "auto_gptq" if method == "gptq" and user in (None, "gptq", "gptq_marlin", "auto_gptq", "marlin") else None
    if name == "auto_awq":  # Q/auto_awq.py (on a GPU; the CPU platform has its own method)
        return "auto_awq" if method == "awq" and user in (None, "awq", "awq_marlin", "auto_awq", "marlin") else None
    if name == "inc":  # Q/inc/inc.py
        return "inc" if doc.get("quant_method") == "auto-round" else None
    if name == "moe_wna16":  # Q/moe_wna16.py is_moe_wna16_compatible (bits; act order and AWQ's SM are checked later)
        ok = (method == "gptq" and doc.get("bits") in (4, 8)) or (method == "awq" and doc.get("bits") == 4)
        return "moe_wna16" if ok and user == "moe_wna16" else None
    if name == "modelopt":  # Q/modelopt.py ModelOptFp8Config
        return "modelopt" if algo == "FP8" else None
    if name == "modelopt_fp4":
        return "modelopt_fp4" if algo is not None and ("NVFP4" in algo or "FP4" in algo) else None
    if name == "modelopt_mxfp8":
        return "modelopt_mxfp8" if algo is not None and "MXFP8" in algo else None
    if name == "modelopt_mixed":
        return "modelopt_mixed" if algo == "MIXED_PRECISION" else None
    if name == "gpt_oss_mxfp4":  # Q/mxfp4.py GptOssMxfp4Config
        return "gpt_oss_mxfp4" if doc.get("quant_method") in ("mxfp4", "gpt_oss_mxfp4") and model_type == "gpt_oss" else None
    if name == "humming":  # Q/humming.py (the error is vLLM's, raised from the override itself)
        if user == "humming" and model_type == "gpt_oss" and doc.get("quant_method") == "mxfp4":
            raise ValueError("For gpt-oss model, use '--moe-backend humming' instead of '--quantization humming'.")
        return "humming" if user == "humming" else None
    return None


def quantization_override(doc: Mapping[str, Any], user: str | None, model_type: str | None) -> str | None:
    """The method ``ModelConfig._verify_quantization`` takes from the first override class that
    accepts the checkpoint's quantization document ``doc`` under ``--quantization user``
    (vLLM 0.29.0-0.33.0 vllm/config/model.py; ``humming`` is tried first when asked for), or
    ``None`` when none does (then the checkpoint's ``quant_method`` must equal ``user``).

    Raises:
        ValueError: vLLM's own, from ``HummingConfig.override_quantization_method``
            (Q/humming.py): ``--quantization humming`` on a gpt-oss MXFP4 checkpoint.

    >>> quantization_override({"quant_method": "gptq", "bits": 4}, "marlin", "qwen3_moe")
    'auto_gptq'
    >>> quantization_override({"quant_method": "fp8"}, "awq", "qwen3_moe") is None
    True
    """
    order = ("humming",) + _OVERRIDE_ORDER if user == "humming" else _OVERRIDE_ORDER
    for name in order:
        found = _override_by(name, doc, user, model_type)
        if found is not None:
            return found
    return None


# Platform.value -> the vLLM platform modules it may run as (vLLM 0.29.0-0.33.0
# vllm/platforms/__init__.py: cpu_platform_plugin returns ZenCpuPlatform on an AMD Zen CPU with
# zentorch, else CpuPlatform; the others one class each).
_PLATFORM_MODULES = {"cuda": ("cuda",), "rocm": ("rocm",), "xpu": ("xpu",), "cpu": ("cpu", "zen_cpu"), "tpu": ("tpu",)}


class PlatformQuantizationIssue(InputIssue):
    """A method the device's platform does not list. ``allowed`` is the platform's list, not a
    set of spellings of the value: no did-you-mean (``modelopt`` is not a spelling of ``modelopt_fp4``)."""

    def suggestion(self) -> str | None:
        return None


def _gates(release: str, device: Any) -> tuple[PlatformQuantization, ...]:
    platform = getattr(getattr(device, "platform", None), "value", getattr(device, "platform", None))
    gates = platform_quantization(release)
    return tuple(gates[m] for m in _PLATFORM_MODULES.get(str(platform), ()) if m in gates)


def _refused_by(methods: Sequence[str], release: str, device: Any) -> tuple[PlatformQuantization, ...]:
    """The gates of ``device``'s platform that refuse every one of ``methods``, when all of its
    classes do (a CPU runs as CpuPlatform or ZenCpuPlatform); ``()`` otherwise."""
    gates = _gates(release, device)
    refusing = tuple(g for g in gates if all(g.allows(m) is False for m in methods))
    return refusing if gates and len(refusing) == len(gates) else ()


def platform_admits(methods: Sequence[str], release: str, device: Any) -> bool:
    """Whether vLLM ``release`` starts on ``device``'s platform with one of ``methods`` (the
    method ``_verify_quantization`` checks; several when only the layer's family is known, see
    :func:`layer_quantization_methods`). ``True`` for no method and where the platform's class is
    not in vLLM's tree (TPU: not known).

    >>> from moe_oracle.inputs.hardware import lookup_hardware
    >>> platform_admits(["moe_wna16"], "0.33.0", lookup_hardware("MI300X").device), platform_admits(["moe_wna16"], "0.33.0", lookup_hardware("H200").device)
    (False, True)
    """
    return not methods or not _refused_by(methods, release, device)


def _other_platforms(methods: Sequence[str], release: str) -> str:
    """Catalog GPUs (one per platform, catalog order) whose platform lets one of ``methods`` through."""
    from .hardware import GPU_CATALOG

    shown: dict[str, str] = {}
    for name, hw in GPU_CATALOG.items():
        d = hw.device
        platform = d.platform.value
        if platform == "cpu" or platform in shown or not platform_admits(methods, release, d):
            continue
        gates = _gates(release, d)
        how = "every method passes" if all(g.supported == () for g in gates) else "listed"
        shown[platform] = f"{platform}, {how}: --gpu {name}"
    return "; ".join(shown.values())


def platform_refusal(method: str, release: str, device: Any, *, path: str, how: str, file: str | None = None, instead: str | None = None) -> InputIssue | None:
    """The refusal vLLM ``release`` gives ``method`` on ``device``'s platform at start, or ``None``
    when its check lets it through (or does not know: out of tree).

    vLLM 0.29.0-0.33.0 vllm/config/model.py ``ModelConfig._verify_quantization`` calls
    ``current_platform.verify_quantization(self.quantization)`` on the method it ends with (the
    override's name where an override took the checkpoint), after the unknown-method check and
    before the deprecation check; ``Platform.verify_quantization`` (vllm/platforms/interface.py)
    raises when the class's ``supported_quantization`` is non-empty and lacks it. The lists are the
    release's (:func:`moe_oracle.inputs.release_facts.platform_quantization`): ROCm and XPU have lists (XPU's
    differs by release), CUDA and CPU none. ``RocmPlatform.verify_quantization`` (vllm/platforms/rocm.py)
    calls the base check and refuses nothing more (it sets ``VLLM_USE_TRITON_AWQ=1``, which only
    the AWQ linear ops read).

    Args:
        path, file: the input the method came from (a flag, or the checkpoint's ``quant_method``).
        how: how the method came to be the one checked (clause for the message).
        instead: the other fix (default: another checkpoint; for a ``--quantization`` value,
            dropping or changing it).

    Returns:
        An issue naming the release, the device and platform, the method, vLLM's own message and
        the fix (another GPU whose platform allows it, or another checkpoint); ``allowed`` is the
        platform's list, ``keyword`` ``supported_quantization``.
    """
    return platform_refusal_any([method], release, device, path=path, how=how, file=file, instead=instead)


def platform_refusal_any(methods: Sequence[str], release: str, device: Any, *, path: str, how: str, file: str | None = None, instead: str | None = None) -> InputIssue | None:
    """:func:`platform_refusal` for a layer whose checkpoint may have any of ``methods``: an issue
    only when the platform refuses each (where :func:`platform_admits` is ``False``)."""
    refusing = _refused_by(methods, release, device)
    if not refusing:
        return None
    gate = refusing[0]
    platform = getattr(device.platform, "value", device.platform)
    on = f"{device.name} ({platform})" if getattr(device, "name", None) else str(platform)
    cls = gate.qualname.rsplit(".", 1)[1]
    shown = " or ".join(methods)
    elsewhere = _other_platforms(methods, release)
    fix = (f"serve it on a GPU whose platform allows {shown} ({elsewhere})" if elsewhere else f"no modelled GPU platform allows {shown}") + f", or {instead or f'use a checkpoint quantized with a method {gate.device_name} allows'}"
    quoted = " and ".join(repr(gate.refusal(m)) for m in methods)
    message = (f"vLLM {release} refuses to start on {on}: {quoted} (Platform.verify_quantization from ModelConfig._verify_quantization, "
               f"vllm/platforms/interface.py and vllm/config/model.py; {cls}.supported_quantization, vllm/platforms/{gate.module}.py); {how}; {fix}")
    return PlatformQuantizationIssue(path, message, methods[0] if len(methods) == 1 else list(methods), list(gate.supported or ()), file, keyword="supported_quantization")


def _out_of_tree_note(methods: Sequence[str], release: str, device: Any) -> list[str]:
    gates = [g for g in _gates(release, device) if g.supported is None]
    if not methods or not gates:
        return []
    return [f"vLLM {release} runs {gates[0].module} through {gates[0].out_of_tree} (out of its tree, {gates[0].qualname}): whether that platform accepts {' / '.join(methods)} is not checked"]


# A layer's quant_method (the family the tables read: checkpoint/quant_formats.py _fam) -> the
# vLLM methods _verify_quantization may have checked for a checkpoint whose experts read so
# (quant_formats._detect_method and the per-method resolvers, quantization_override; vLLM
# 0.29.0-0.33.0): fp8 experts also come from online -q fp8, DeepSeek-V4 and ModelOpt
# MIXED_PRECISION block-FP8 layers; awq from awq (a CPU keeps it), auto_awq or awq_marlin.
_LAYER_METHODS = {
    "fp8": ("fp8", "deepseek_v4_fp8", "modelopt_mixed"),
    "modelopt": ("modelopt", "modelopt_fp4", "modelopt_mxfp8", "modelopt_mixed"),
    "mxfp4": ("mxfp4", "gpt_oss_mxfp4"),
    "gptq": ("auto_gptq",),
    "awq": ("auto_awq", "awq_marlin", "awq"),
    "moe_wna16": ("moe_wna16",),
    "compressed-tensors": ("compressed-tensors",),
    "quark": ("quark",),
    "fbgemm_fp8": ("fbgemm_fp8",),
}
# ModelOpt per scheme family (quant_formats._modelopt, _modelopt_mixed): FP8 experts are
# modelopt or modelopt_mixed, NVFP4 modelopt_fp4 or modelopt_mixed, MXFP8 modelopt_mxfp8 or modelopt_mixed.
_MODELOPT_BY_FAMILY = {"fp8": ("modelopt", "modelopt_mixed"), "nvfp4": ("modelopt_fp4", "modelopt_mixed"), "mxfp8": ("modelopt_mxfp8", "modelopt_mixed")}


# The config-file quant_method values moe-oracle models besides the formats above and the
# names they come from: online methods the constraint tables key on (rules/constraints.yaml
# constraint.online_nvfp4_sm100: nvfp4_per_token; constraint.mxfp8_method_*: mxfp8; lut_b_moe, whose
# experts are the tables' lut_b family; the online FP8 shorthands: rules/frontends.yaml
# frontend.fp8.batch_invariant_token and frontend.fp8_per_block.online, constraint.fp8_per_channel_backend,
# vllm_cutlass.allow_vllm_cutlass).
_TABLE_ONLINE_METHODS = ("mxfp8", "nvfp4_per_token", "lut_b_moe", "fp8_per_tensor", "fp8_per_block", "fp8_per_channel")
# Names the tables read that no modelled release has (rules citing vLLM main): refused as vLLM
# refuses them, with the checkpoint reader's explanation (checkpoint/quant_formats.py _REMOVED).
_NOT_A_RELEASE_METHOD = {
    "fp8_requant_mxfp4": "it is moe-oracle's name for the method vLLM 0.34.0 hands ROCm block-FP8 experts to under VLLM_FP8_MOE_REQUANT=mxfp4 (Fp8BlockExpertsAsMxfp4FusedMoE, rules/frontends.yaml frontend.fp8.rocm_requant_mxfp4); give quant_method fp8 and that variable instead",
    "ptpc_fp8": "no modelled release has a ptpc_fp8 method (vLLM main's name); per-token-per-channel FP8 is the online shorthand fp8_per_channel in 0.29.0-0.34.0: give quant_method fp8_per_channel",
}


WITHOUT_DOCUMENT: tuple[str, ...] = ("fp8", "fp8_per_tensor", "fp8_per_block", "fp8_per_channel", "w4afp8", "lut_b_moe")
"""``--quantization`` methods moe-oracle models on a checkpoint without a quantization document:
``fp8`` (online per-tensor FP8, :mod:`moe_oracle.inputs.serve_apply`; from 0.31.0 vLLM's
``get_quant_config`` takes it as ``fp8_per_tensor``, 0.29.0-0.30.0 ``Fp8Config`` builds the same
``Fp8PerTensorOnlineMoEMethod``), the online FP8 shorthands ``fp8_per_tensor``, ``fp8_per_block``
and ``fp8_per_channel`` (vLLM 0.29.0-0.34.0 vllm/config/quantization.py ``_ONLINE_SHORTHANDS``;
Q/online/base.py ``_ONLINE_MOE_METHODS``: ``Fp8PerTensorOnlineMoEMethod``,
``Fp8PerBlockOnlineMoEMethod``, ``Fp8PtpcOnlineMoEMethod``) and, where the release has them,
``w4afp8`` (vLLM 0.34.0 vllm/model_executor/model_loader/weight_utils.py ``get_quant_config``:
``W4AFP8Config`` has no config file names, so vLLM builds ``W4AFP8Config()`` with its defaults)
and the online ``lut_b_moe`` (vLLM 0.34.0 vllm/config/quantization.py ``_ONLINE_SHORTHANDS``: LUT-B
routed experts, ``LutBOnlineMoEMethod``)."""

_ONLINE_MOE_METHODS: Mapping[str, str] = {
    "mxfp8": "Mxfp8OnlineMoEMethod",
    "mxfp4": "Mxfp4OnlineMoEMethod",
    "int8_per_channel_weight_only": "Int8OnlineMoEMethod",
    "nvfp4_per_token": "Nvfp4OnlineMoEMethod",
}
"""The online ``--quantization`` shorthands moe-oracle does not model on an unquantized checkpoint,
with the MoE method vLLM builds for the routed experts (vLLM 0.29.0-0.34.0
vllm/config/quantization.py ``_ONLINE_SHORTHANDS``, Q/online/base.py ``_ONLINE_MOE_METHODS``;
present only where the release's ``QuantizationMethods`` lists the name: the unknown-method check
comes first)."""

FROM_FLAG = "_moe_oracle_from_flag"
"""Key :mod:`moe_oracle.inputs.serve_apply` sets in the document it writes for a method of
:data:`WITHOUT_DOCUMENT` (its value: the flag): vLLM checks that method as given on the serve line
(no document), so refusals name the flag, not a checkpoint."""

_ONLINE_LINEAR_ONLY: Mapping[str, str] = {
    "mxfp4_hadamard32": "vLLM 0.34.0 vllm/config/quantization.py _ONLINE_SHORTHANDS: linear only, no moe field; online/base.py returns UnquantizedFusedMoEMethod for routed experts",
}
"""Online ``--quantization`` shorthands that leave the MoE layers unquantized, with the source
(present only in the releases whose ``QuantizationMethods`` list them: the unknown-method check
comes first)."""


def modelled_quant_methods(release: str) -> tuple[str, ...]:
    """The ``quant_method`` values a config file's layer may name for vLLM ``release``: the
    release's methods (vllm/model_executor/layers/quantization/__init__.py ``QuantizationMethods``,
    ``engine_facts/vllm-release-values.yaml``) whose MoE method moe-oracle models, i.e. the
    checkpoint formats the tables read (``fp8``, ``modelopt``, ``compressed-tensors`` ...), the
    names vLLM ends with for them (``modelopt_fp4``, ``auto_gptq``, ``gpt_oss_mxfp4`` ...:
    :data:`_LAYER_METHODS`, :data:`moe_oracle.core.normalize.TABLE_QUANT_METHOD`) and the online
    methods the tables key on (``mxfp8``, ``nvfp4_per_token``). In the release's order.

    >>> "modelopt_fp4" in modelled_quant_methods("0.33.0"), "humming" in modelled_quant_methods("0.33.0")
    (True, False)
    """
    from ..core.normalize import TABLE_QUANT_METHOD

    wanted = {*_LAYER_METHODS, *(m for ms in _LAYER_METHODS.values() for m in ms), *TABLE_QUANT_METHOD, *_TABLE_ONLINE_METHODS}
    return tuple(m for m in release_values(release)["quantization"] if m in wanted)


def config_quant_method_issue(value: Any, release: str, *, path: str = "$.model.quant_method", file: str | None = None) -> InputIssue | None:
    """The refusal of a config file's ``quant_method`` ``value`` for vLLM ``release``, or ``None``.

    The value names the layer's quantization method as vLLM does (a checkpoint's
    ``quantization_config.quant_method``, or the name an override ends with): vLLM ``release``
    refuses any other at start ("Unknown quantization method", ``ModelConfig._verify_quantization``,
    vllm/config/model.py, 0.29.0-0.33.0), and a method it knows whose MoE method moe-oracle does
    not model (``humming``, ``experts_int8``, the online ``fp8_per_*`` shorthands ...) would be
    answered as if it had no method: refused as not modelled. ``None`` (unknown or
    unquantized) passes. The allowed values are :func:`modelled_quant_methods`.

    >>> config_quant_method_issue("bogus", "0.33.0").keyword, config_quant_method_issue("modelopt_fp4", "0.33.0") is None
    ('enum', True)
    """
    if value is None:
        return None
    allowed = list(modelled_quant_methods(release))
    if value in allowed:
        return None
    methods = release_values(release)["quantization"]
    if isinstance(value, str) and not value.strip():
        return InputIssue(path, f"an empty quant_method names no method (vLLM {release} reads a checkpoint's empty quant_method as none, ModelConfig._verify_quantization): give the method, or null when unquantized or unknown", value, allowed, file, keyword="enum")
    if value in methods:
        message = (f"vLLM {release} knows the quantization method {value}, but moe-oracle does not model the MoE method it builds "
                   "(the tables key quant_method on the checkpoint formats below); give the checkpoint's format, or leave quant_method out (null: unknown)")
        return InputIssue(path, message, value, allowed, file, keyword="enum")
    why = _NOT_A_RELEASE_METHOD.get(str(value))
    message = f"vLLM {release} refuses the layer at start: 'Unknown quantization method: {value}' (ModelConfig._verify_quantization, vllm/config/model.py; the methods: QuantizationMethods)" + (f"; {why}" if why else "")
    return InputIssue(path, message, value, allowed, file, keyword="enum")


def layer_quantization_methods(config: Any) -> tuple[str, ...]:
    """The vLLM methods ``_verify_quantization`` may have checked for a layer described without
    its checkpoint (a ``--config`` file, or a checkpoint's layer under another ``--quant``): from
    its ``quant_method`` (the format the tables read) and, for ModelOpt, its scheme's family.
    A ``quant_method`` that is not such a format (``modelopt_fp4``, ``gpt_oss_mxfp4``, ``mxfp8``:
    the name vLLM ends with) is itself the method checked. ``()`` for an unquantized layer.

    >>> from moe_oracle.core.quant import SCHEMES
    >>> from types import SimpleNamespace as NS
    >>> layer_quantization_methods(NS(quant_method="modelopt", quant=SCHEMES["nvfp4"])), layer_quantization_methods(NS(quant_method="modelopt_fp4", quant=SCHEMES["nvfp4"]))
    (('modelopt_fp4', 'modelopt_mixed'), ('modelopt_fp4',))
    """
    method = getattr(config, "quant_method", None)
    family = getattr(getattr(getattr(config, "quant", None), "family", None), "value", "")
    if method == "modelopt":
        return _MODELOPT_BY_FAMILY.get(family, _LAYER_METHODS["modelopt"])
    if method == "quark" and family == "mxfp4" and getattr(config, "model_type", None) in (None, "deepseek_v4"):
        return ("quark", "deepseek_v4_fp8")  # vLLM 0.29.0-0.30.0 may take it as deepseek_v4_fp8 (_dsv4_may_take_quark)
    if not method:
        return ()
    return _LAYER_METHODS.get(method, (method,))


def layer_gate_methods(config: Any, release: str) -> tuple[str, ...]:
    """:func:`layer_quantization_methods` that vLLM ``release`` knows (the platform check runs
    after the unknown-method check): what :func:`verify_layer_quantization` and why-not's
    admissibility check hold a layer to, so both answer alike."""
    known = release_values(release)["quantization"]
    return tuple(m for m in layer_quantization_methods(config) if m in known)


def verify_layer_quantization(config: Any, release: str, *, path: str, file: str | None = None, headline: str = "bad --config") -> list[str]:
    """Refuse a layer described without its checkpoint (a ``--config`` file, or a checkpoint's
    layer under another ``--quant``) when vLLM ``release`` refuses, on the layer's platform,
    every method its checkpoint can have (:func:`layer_gate_methods`, :func:`platform_refusal`);
    where only some are refused, a note names them (the answer holds for a checkpoint of the others).
    A deprecated method (``fbgemm_fp8``) is noted, not refused: vLLM needs
    ``--allow-deprecated-quantization`` for it, which a layer without its serve line cannot give.

    Returns:
        notes.

    Raises:
        ConfigError: every such method refused, naming ``path`` (``$.model.quant_method``,
            ``--quant``) in ``file``.
    """
    known = list(layer_gate_methods(config, release))
    if not known:
        return []
    device = config.device
    if known == [config.quant_method]:
        how = f"quant_method {config.quant_method} is the method checked"
    elif len(known) == 1:
        how = f"a layer of quant_method {config.quant_method} comes from a {known[0]} checkpoint, the method checked"
    else:
        how = f"a layer of quant_method {config.quant_method} with {config.quant.name} experts comes from a {' or '.join(known)} checkpoint, each refused"
    issue = platform_refusal_any(known, release, device, path=path, how=how, file=file)
    if issue is not None:
        raise ConfigError([replace(issue, value=config.quant_method)], headline=headline)
    platform = getattr(device.platform, "value", device.platform)
    refused = [m for m in known if _refused_by([m], release, device)]
    notes = _out_of_tree_note(known, release, device)
    if refused:
        notes.append(f"{path}: vLLM {release} refuses {', '.join(refused)} on {platform} (supported_quantization): the answer holds for a {' or '.join(m for m in known if m not in refused)} checkpoint")
    if all(m in release_values(release)["deprecated_quantization"] for m in known):
        notes.append(f"{path}: vLLM {release} refuses the deprecated quantization method {' / '.join(known)} at start unless --allow-deprecated-quantization is given "
                     "(ModelConfig._verify_quantization; DEPRECATED_QUANTIZATION_METHODS): the answer is for a start with it")
    return notes


def _dsv4_may_take_quark(doc: Mapping[str, Any], user: str | None, model_type: str | None) -> bool:
    """Whether ``DeepseekV4FP8Config.override_quantization_method`` of some modelled release takes
    this quark document (vllm/models/deepseek_v4/quant_config.py, and deepseek_v41/ on CUDA and
    ROCm from 0.30.0): in vLLM 0.29.0-0.30.0 an AMD-Quark export whose global weight scheme is OCP
    MXFP4 (``_is_quark_mxfp4_ocp``: fp4, per_group, group 32) under model_type deepseek_v4 or
    ``-q deepseek_v4_fp8`` is checked as ``deepseek_v4_fp8``; from 0.31.0 a quark document never
    is. :func:`quantization_override` does not model that override, so the platform check stays
    off for these documents rather than refuse what 0.29.0-0.30.0 start with.

    >>> _dsv4_may_take_quark({"global_quant_config": {"weight": {"dtype": "fp4", "qscheme": "per_group", "group_size": 32}}}, None, "deepseek_v4")
    True
    """
    weight = (doc.get("global_quant_config") or {}).get("weight") if isinstance(doc.get("global_quant_config") or {}, Mapping) else None
    ocp = isinstance(weight, Mapping) and weight.get("dtype") == "fp4" and weight.get("qscheme") == "per_group" and weight.get("group_size") == 32
    return ocp and (model_type == "deepseek_v4" or user == "deepseek_v4_fp8")


def checkpoint_quantization(quant: Any, user: str | None, model_type: str | None = None) -> str | None:
    """The method ``ModelConfig._verify_quantization`` checks for this checkpoint (``self.quantization``
    after the override loop): the override's name, else the checkpoint's ``quant_method``, else
    (no quantization document) the ``--quantization`` value; ``None``: unquantized. Assumes
    :func:`verify_checkpoint_quantization` accepted the pair.

    >>> from types import SimpleNamespace as NS
    >>> checkpoint_quantization(NS(config={"quant_method": "gptq", "bits": 4}, declared="gptq"), "moe_wna16")
    'moe_wna16'
    """
    config = dict(getattr(quant, "config", None) or {})
    if "quant_method" not in config:
        return user
    declared = getattr(quant, "declared", None) or None
    override = quantization_override({**config, "quant_method": declared or ""}, user, model_type if model_type is not None else getattr(quant, "model_type", None))
    return override or declared


def quantization_from_flag(quant: Any, user: str | None) -> str | None:
    """The method ``ModelConfig._verify_quantization`` checks when the ``--quantization user``
    flag chose it: an override class that takes this checkpoint's document only under that flag
    (``moe_wna16`` for a GPTQ/AWQ checkpoint under ``-q moe_wna16``, Q/moe_wna16.py), so any
    checkpoint of the same format is checked as that method on that serve line; ``None`` when
    the document decides (or there is no flag). Assumes :func:`verify_checkpoint_quantization`
    accepted the pair.

    >>> from types import SimpleNamespace as NS
    >>> gptq = NS(config={"quant_method": "gptq", "bits": 4}, declared="gptq", model_type="qwen3_moe")
    >>> quantization_from_flag(gptq, "moe_wna16"), quantization_from_flag(gptq, "marlin"), quantization_from_flag(gptq, None)
    ('moe_wna16', None, None)
    """
    config = dict(getattr(quant, "config", None) or {})
    if user is None or "quant_method" not in config:
        return None
    doc = {**config, "quant_method": getattr(quant, "declared", None) or ""}
    model_type = getattr(quant, "model_type", None)
    try:
        override = quantization_override(doc, user, model_type)
    except ValueError:
        return None
    return override if override is not None and quantization_override(doc, None, model_type) != override else None


def verify_checkpoint_quantization(quant: Any, user: str | None, flag: str, release: str, *, allow_deprecated: bool, allow_flag: str, device: Any, another_checkpoint: str | None = None,
                                   online_moe: str | None = None, experts_quantized: bool = True) -> list[str]:
    """Check the checkpoint's quantization document against ``--quantization`` as vLLM
    ``release`` does at start (vllm/config/model.py ``ModelConfig._verify_quantization``,
    the same in 0.29.0-0.33.0), in its order:

    1. Without a quantization document (online quantization), the ``--quantization`` value
       itself is checked (:func:`moe_oracle.inputs.release_facts.quantization_value_issues`).
    2. With one, the override classes run first (:func:`quantization_override`): ``-q marlin``
       on a GPTQ checkpoint becomes ``auto_gptq``, any ``-q`` on a ModelOpt FP8 one ``modelopt``.
       Where none accepts, a ``--quantization`` other than the checkpoint's ``quant_method`` is
       refused ("does not match"); an empty ``quant_method`` counts as ``None`` there, so any
       ``--quantization`` no override takes is refused.
    3. The method this yields (``self.quantization``: the override's name where an override
       took the checkpoint, so a GPTQ checkpoint under ``-q moe_wna16`` is checked as
       ``moe_wna16``; :func:`checkpoint_quantization`) must be one of the release's methods,
       then pass the device platform's check (:func:`platform_refusal`:
       ``current_platform.verify_quantization``, the platform class's ``supported_quantization``
       in that release), and, if deprecated (the release's ``DEPRECATED_QUANTIZATION_METHODS``,
       ``engine_facts/vllm-release-values.yaml``), needs ``--allow-deprecated-quantization``.
       The ``--quantization`` value as given is not checked by name: an override has replaced
       it, or it equals the checkpoint's method. In step 1 the same three checks run on it.

    Not modelled in :func:`quantization_override`: ``DeepseekV4FP8Config``'s override
    (vllm/models/deepseek_v4/quant_config.py; deepseek_v41/ on CUDA and ROCm from 0.30.0), which
    takes an fp8 DeepSeek-V4 checkpoint as ``deepseek_v4_fp8``; ``fp8`` and ``deepseek_v4_fp8``
    are on every platform list of every modelled release (tests/unit/test_platform_quantization.py),
    so the platform check answers the same. Its 0.29.0-0.30.0 take-over of AMD-Quark OCP MXFP4
    documents is noted instead of checked (:func:`_dsv4_may_take_quark`).

    ``--quantization humming`` is taken by ``HummingConfig``'s override for every checkpoint
    (Q/humming.py), and the MoE layers then run ``HummingMoEMethod``, whose kernel choice the
    tables do not model: refused as not modelled rather than answered with the checkpoint's own
    selection, once the platform check (which comes first in vLLM) lets it through.

    ``another_checkpoint`` (moe-oracle's ``--quant``, or a config file's ``model.quant``, giving
    the layer experts other than the checkpoint's): the answer is then for another checkpoint
    of the same format with those experts, whose method is not this document's, so step 3's
    platform check is not applied to the document's method; where it would refuse, a note says
    so. The caller holds the layer to :func:`verify_layer_quantization` instead (the methods a
    checkpoint of that format with those experts can have), as why-not's search does for every
    edit of the numerics, so a fix that changes ``--quant`` runs as printed.

    Args:
        quant: the checkpoint's :class:`~moe_oracle.inputs.checkpoint.quant_formats.QuantFormat`.
        user: the ``--quantization`` value (``None``: not given); ``flag`` names where it was given.
        release: the modelled release the answer is for.
        allow_deprecated, allow_flag: whether ``--allow-deprecated-quantization`` was given, and
            how to name it in a refusal.
        device: the :class:`~moe_oracle.core.config.Device` the answer is for (its platform).
        another_checkpoint: how the layer's experts were changed (``--quant fp8_block``), or ``None``.
        online_moe, experts_quantized: a ``--quantization-config`` target of the routed experts (no
            ``-q``), and whether the checkpoint quantizes them (:mod:`.requantization`).

    Returns:
        notes (a ``--quantization`` an override class replaces; a platform whose check vLLM's
        tree does not hold, TPU; the document's method that the platform refuses, under
        ``another_checkpoint``).

    Raises:
        ConfigError: a method vLLM refuses (unknown, not supported on the platform, or
            deprecated), a mismatch no override accepts, vLLM's gpt-oss ``--quantization humming``
            refusal, ``humming`` (not modelled), or a method outside :data:`WITHOUT_DOCUMENT` on an
            unquantized checkpoint (online quantization with it is not modelled).
    """
    from .release_facts import quantization_value_issues

    config = dict(getattr(quant, "config", None) or {})
    if "quant_method" not in config or config.get(FROM_FLAG):  # no quantization document: online quantization, or none
        if user is None:
            return []
        issues = quantization_value_issues(user, release, allow_deprecated=allow_deprecated, flag=flag)
        if user in release_values(release)["quantization"]:  # unknown first, then the platform, then deprecated
            refused = platform_refusal(user, release, device, path=flag, how=f"{flag.split()[-1]} {user} on a checkpoint without a quantization document is the method vLLM checks (online quantization)",
                                      instead=f"drop {flag.split()[-1]} {user} (or give a method the platform allows)")
            issues = [refused] if refused is not None else issues
        if issues:
            raise ConfigError(issues, headline=f"bad {flag.split()[0]}")
        notes = _out_of_tree_note([user], release, device)
        if user in _ONLINE_LINEAR_ONLY:
            return notes + [f"{flag.split()[-1]} {user}: vLLM {release} quantizes only the linear layers online with it; the MoE layers stay unquantized (UnquantizedFusedMoEMethod; {_ONLINE_LINEAR_ONLY[user]})"]
        if user not in WITHOUT_DOCUMENT:
            # vLLM quantizes online with that method (humming: HummingMoEMethod) or fails to build
            # its config; only WITHOUT_DOCUMENT is modelled (serve_apply), and answering for the
            # unquantized layer would be wrong.
            modelled = [m for m in WITHOUT_DOCUMENT if m in release_values(release)["quantization"]]
            what = (f"vLLM {release} quantizes the routed experts online with {_ONLINE_MOE_METHODS[user]} (vllm/config/quantization.py _ONLINE_SHORTHANDS, "
                    "Q/online/base.py _ONLINE_MOE_METHODS), whose kernel choice moe-oracle does not model for a serve line" if user in _ONLINE_MOE_METHODS
                    else f"vLLM {release} quantizes the layer online with that method or refuses it")
            raise ConfigError([InputIssue(flag, f"{flag.split()[-1]} {user} on an unquantized checkpoint is not modelled: {what}; moe-oracle models {flag.split()[-1]} on a checkpoint without a quantization document only for {', '.join(modelled)}", user, modelled)], headline=f"bad {flag.split()[0]}")
        return notes
    declared = getattr(quant, "declared", None) or None  # "" -> None, as _verify_quantization does after the override loop
    headline = f"bad {flag.split()[0]}"
    try:
        override = quantization_override({**config, "quant_method": declared or ""}, user, getattr(quant, "model_type", None))
    except ValueError as exc:
        raise ConfigError([InputIssue(flag, f"vLLM {release} refuses the checkpoint at start: {str(exc)!r} (HummingConfig.override_quantization_method, vllm/model_executor/layers/quantization/humming.py)", user, None)], headline=headline) from None
    if override == "humming":
        refused = platform_refusal("humming", release, device, path=flag, how=f"vLLM's humming override takes the checkpoint as humming under {flag.split()[-1]} humming (HummingConfig.override_quantization_method)",
                                   instead=f"drop {flag.split()[-1]} humming")
        if refused is not None:
            raise ConfigError([refused], headline=headline)
        raise ConfigError([InputIssue(flag, f"not modelled: vLLM {release} takes any checkpoint as humming under --quantization humming (HummingConfig.override_quantization_method) and its MoE layers run HummingMoEMethod, whose kernel choice (select_humming_moe_experts, vllm/model_executor/layers/quantization/humming.py) moe-oracle does not model; drop it (or ask for --moe-backend humming)", user, None)], headline=headline)
    if override is None and user is not None and user != declared:
        shown = declared if declared else "None"
        fix = f"drop it or give {declared}" if declared else "drop it (the checkpoint's empty quant_method means no quantization)"
        raise ConfigError([InputIssue(flag, f"vLLM {release} refuses the checkpoint at start: 'Quantization method specified in the model config ({shown}) does not match the quantization method specified in the `quantization` argument ({user})', and no override method accepts this pair (ModelConfig._verify_quantization, vllm/config/model.py); {fix}", user, [declared] if declared else None)], headline=headline)
    notes = []
    requantized = online_target_refusal(user, flag, online_moe, override, declared, release, experts_quantized)
    if requantized is not None:
        raise ConfigError([requantized], headline=headline)
    if override is not None and user is not None and user != override and user != declared:
        notes.append(f"{flag} {user} on a {declared} checkpoint: vLLM {release}'s {override} override takes the checkpoint as {override} (ModelConfig._verify_quantization), so {flag.split()[-1]} {user} has no effect of its own")
    effective = override or declared
    if effective is None:
        return notes
    values = release_values(release)
    where = (f"{getattr(quant, 'source', 'checkpoint')} quant_method", getattr(quant, "file", None))
    if effective not in values["quantization"]:
        raise ConfigError([InputIssue(where[0], f"vLLM {release} refuses the checkpoint at start: 'Unknown quantization method: {effective}' (ModelConfig._verify_quantization, vllm/config/model.py; the methods: QuantizationMethods)", effective, list(values["quantization"]), where[1])], headline="bad checkpoint")
    if override is None:
        how = f"the checkpoint's quant_method {declared}"
    else:
        how = f"vLLM's {override} override takes the checkpoint (quant_method {declared}{f', {flag.split()[-1]} {user}' if user is not None else ''}) as {override}, the method checked"
    if effective == "quark" and _dsv4_may_take_quark(config, user, getattr(quant, "model_type", None)):
        # Not modelled: which name vLLM checks depends on the release (see _dsv4_may_take_quark).
        return notes + [f"{where[0]}: vLLM 0.29.0-0.30.0 take a DeepSeek-V4 AMD-Quark OCP MXFP4 checkpoint as deepseek_v4_fp8 (DeepseekV4FP8Config.override_quantization_method, vllm/models/deepseek_v4/quant_config.py), later releases as quark; the platform's quantization check (supported_quantization) is not applied to it here"]
    # The flag chose the method when the override takes the checkpoint so only under it (-q moe_wna16 on GPTQ).
    from_flag = quantization_from_flag(quant, user) is not None
    if another_checkpoint is not None and not from_flag:
        # Another checkpoint's method is not this document's: noted, not refused (the caller
        # holds the layer to verify_layer_quantization). A method the serve line's flag chose
        # is that line's, whatever the checkpoint: checked below.
        mine = platform_refusal(effective, release, device, path=where[0], how=how, file=where[1])
        if mine is not None:
            platform = getattr(device.platform, "value", device.platform)
            on = f"{device.name} ({platform})" if getattr(device, "name", None) else str(platform)
            notes.append(f"{another_checkpoint}: the answer is for another checkpoint of quant_method {declared} with these experts, not for this one: vLLM {release} refuses this checkpoint's own method {effective} on {on} "
                         f"(Platform.verify_quantization, supported_quantization; {how})")
    else:
        refused = platform_refusal(effective, release, device, path=flag if from_flag else where[0], how=how, file=None if from_flag else where[1],
                                   instead=f"drop {flag.split()[-1]} {user}" if from_flag else None)
        if refused is not None:
            raise ConfigError([refused], headline=headline if from_flag else "bad checkpoint")
    if effective in values["deprecated_quantization"] and not allow_deprecated:
        raise ConfigError([InputIssue(where[0], f"vLLM {release} refuses the deprecated quantization method {effective} at start unless {allow_flag} is given (ModelConfig._verify_quantization, vllm/config/model.py; DEPRECATED_QUANTIZATION_METHODS)", declared, None, where[1])], headline="bad checkpoint")
    return notes if another_checkpoint is not None and not from_flag else notes + _out_of_tree_note([effective], release, device)


