"""What an operator already has, turned into oracle inputs: a ``vllm serve`` line, an
environment file, package and environment-variable declarations.

The command-line front end (:mod:`moe_oracle.cli`) calls these; each returns its result
plus *notes*: one sentence per input that has no effect or is read in a way the operator
may not expect. Nothing here is fatal unless the engine itself would refuse the input
(then :class:`~moe_oracle.core.errors.ConfigError`, exit code 2).
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from .envfile import read_environment_file
from ..core.packages import PackageSpec, canonical_name, parse_requirement, unique_specs
from ..core.environment import Environment
from ..core.envvars import env_issues, env_notes
from ..core.errors import ConfigError, InputIssue, did_you_mean
from .serve import PlatformQuantization, ServeArgs, engine_facts, platform_quantization, release_values

if TYPE_CHECKING:
    from ..core.versions import EngineRelease

__all__ = ["SERVE_TO_ARGS", "DeclaredEnvironment", "PlatformQuantizationIssue", "answer_release", "apply_serve", "blame_hf_overrides", "check_draft_moe_backend", "checkpoint_quantization", "declare_environment",
           "config_quant_method_issue", "engine_release", "layer_gate_methods", "layer_quantization_methods", "load_serve_checkpoint", "modelled_quant_methods", "platform_admits", "platform_refusal", "quantization_from_flag", "quantization_override", "serve_model_path", "verify_checkpoint_quantization", "verify_layer_quantization"]

# ServeArgs attribute -> (argparse dest, flag as the user types it for moe-oracle)
SERVE_TO_ARGS = {
    "tp": ("tp", "--tp"),
    "dp": ("dp", "--dp"),
    "ep": ("ep", "--ep"),
    "all2all": ("all2all", "--all2all"),
    "eplb": ("eplb", "--eplb"),
    "redundant_experts": ("redundant_experts", "--redundant-experts"),
    "lora": ("lora", "--lora"),
    "moe_backend": ("moe_backend", "--moe-backend"),
    "draft_moe_backend": ("draft_moe_backend", "--draft-moe-backend"),  # read by plan (and diff of a whole model)
    "max_num_batched_tokens": ("max_tokens", "--max-tokens"),
}


def check_draft_moe_backend(value: str, release: str) -> None:
    """Refuse a ``--draft-moe-backend`` value that vLLM ``release`` would refuse as
    ``--speculative-config``'s ``moe_backend``, which the flag stands for.

    The flag is exact, as the value it mirrors: vLLM 0.29.0-0.33.0 vllm/config/speculative.py
    ``SpeculativeConfig.moe_backend`` is a ``MoEBackend | None`` literal that pydantic matches as
    written (no lower-casing, no dashes to underscores, unlike ``--moe-backend``). The names are
    the release's ``--moe-backend`` choices (the same ``MoEBackend`` literal,
    ``engine_facts/vllm-<release>.yaml``).

    Raises:
        ConfigError: naming ``--draft-moe-backend``, the value and the names it accepts (with
            the exact spelling when only case or dashes differ).
    """
    allowed = [str(c) for c in next((f.get("choices") or [] for f in engine_facts(release)["serve_flags"] if f["dest"] == "moe_backend"), [])]
    if value in allowed:
        return
    folded = value.strip().lower().replace("-", "_")
    hint = f"; write it as {folded}" if folded in allowed else ""
    raise ConfigError([InputIssue("--draft-moe-backend", f"vLLM {release} refuses this draft MoE backend: the flag stands for --speculative-config moe_backend, a MoEBackend name matched exactly (SpeculativeConfig.moe_backend, vllm/config/speculative.py){hint}", value, allowed)], headline="bad --draft-moe-backend")


def apply_serve(args: argparse.Namespace, serve: ServeArgs) -> None:
    """Fill the deployment flags of ``args`` from a parsed ``vllm serve`` line.

    A flag given both ways must agree: ``--draft-moe-backend`` and the serve line's
    ``--speculative-config`` ``moe_backend`` too (both set the draft's backend, vLLM 0.33.0
    ``SpeculativeConfig.moe_backend``; only ``plan`` and ``diff`` of a whole model read it:
    explain and select answer for the target layer). ``--draft-moe-backend`` is checked first
    (:func:`check_draft_moe_backend`, for the release that parsed the serve line), so a
    spelling vLLM refuses is named as such, not as a disagreement. Boolean vLLM flags given as off
    (``--no-enable-eplb``) leave the oracle's flag unset, which means off.

    ``args.from_serve`` is set to the argparse destinations the serve line filled (a flag the
    operator also typed is the flag's), so that messages name the input a value came from.

    Raises:
        ConfigError: ``--model``/``--config`` together with ``--serve``, or a flag given both
            ways with different values.
    """
    if getattr(args, "model", None) or getattr(args, "config", None):
        raise ConfigError([InputIssue("--serve", "the vllm serve line names the model; drop --model/--config", args.model or args.config, None)], headline="bad --serve")
    if getattr(args, "draft_moe_backend", None) is not None and serve.draft_moe_backend is not None:
        check_draft_moe_backend(args.draft_moe_backend, serve.version)
    issues = []
    from_serve: list[str] = []
    for attr, (dest, flag) in SERVE_TO_ARGS.items():
        value = getattr(serve, attr)
        if value is None or value is False:
            continue
        current = getattr(args, dest, None)
        if current is not None and current != value:
            issues.append(InputIssue(flag, f"given as {flag} {current} and in --serve as {serve.flag_for(attr)} {value}", current, None))
            continue
        if current is None:
            from_serve.append(dest)
        setattr(args, dest, value)
    if issues:
        raise ConfigError(issues, headline="bad --serve")
    args.from_serve = frozenset(from_serve)


def serve_model_path(serve: ServeArgs, base: Path | None = None) -> Path:
    """The ``config.json`` a serve line's model resolves to.

    ``--hf-config-path`` wins when given. A local path or a shipped example name resolves
    through :func:`moe_oracle.inputs.models.resolve_model_path`; a Hugging Face id resolves to a shipped
    example named after the whole id (``nvidia/Qwen3.5-122B-A10B-NVFP4`` ->
    ``nvidia-qwen3.5-122b-a10b-nvfp4``, as examples/models names a vendor's re-quantized
    checkpoint), else after its last component (``Qwen/Qwen3-30B-A3B-FP8`` -> ``qwen3-30b-a3b-fp8``).

    Raises:
        ConfigError: nothing on this machine or among the examples matches.
    """
    from .models import resolve_model_path

    ref = serve.hf_config_path or serve.model
    assert ref is not None
    try:
        return resolve_model_path(ref, base)
    except ConfigError as first:
        local = Path(ref) if base is None or Path(ref).is_absolute() else base / ref
        if local.is_dir():
            # A checkpoint directory: its config.json, never a shipped example of the same name.
            try:
                return resolve_model_path(str(local / "config.json"))
            except ConfigError:
                raise ConfigError([InputIssue("--serve MODEL", "the checkpoint directory has no config.json", str(local), None)], headline="bad --serve") from None
        tail = ref.rstrip("/").rsplit("/", 1)[-1]
        whole = ref.strip("/").replace("/", "-").lower() if ref.count("/") == 1 and not ref.startswith((".", "/")) else ""
        for candidate in dict.fromkeys([whole, tail, tail.lower()]):
            if candidate and candidate != ref:
                try:
                    return resolve_model_path(candidate, base)
                except ConfigError:
                    continue
        issue = first.issues[0]
        raise ConfigError([InputIssue("--serve MODEL", f"{ref!r} is not a local checkpoint or config.json, and {tail!r} is not a shipped example (this tool does not download models; pass the checkpoint directory or its config.json)", ref, issue.allowed)], headline="bad --serve") from None


def load_serve_checkpoint(serve: ServeArgs, path: Path, hf_cfg: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """Apply the serve line's ``--hf-overrides`` and ``--quantization`` to a parsed config.json.

    vLLM 0.29.0-0.33.0 vllm/config/model.py: ``hf_overrides`` (a dict) updates the HF config
    (``ModelConfig._apply_dict_overrides``: a dict value for a nested config such as
    ``text_config`` is merged into it, recursively, :func:`_update_nested`; any other value,
    a dict-valued parameter such as ``quantization_config`` included, replaces); on
    an unquantized checkpoint ``-q fp8`` quantizes online (Q/fp8.py: static per-tensor weights,
    dynamic per-tensor activations), but only where vLLM finds no quantization document at all
    (``hf_quant_config.json`` beside config.json, ``compression_config`` and
    ``text_config.quantization_config`` count). Whether a ``--quantization`` that differs from a quantized
    checkpoint's method is taken or refused is :func:`verify_checkpoint_quantization`'s
    question (it needs the whole quantization document, ``hf_quant_config.json`` included).

    Returns:
        (the config to read, notes). Nothing here is refused.
    """
    notes = []
    cfg = dict(hf_cfg)
    if serve.hf_overrides:
        for key, value in serve.hf_overrides.items():
            current = cfg.get(key)
            if isinstance(value, Mapping) and isinstance(current, Mapping) and _is_sub_config(key, current):
                cfg[key] = _update_nested(current, value)
            else:
                cfg[key] = value  # a dict-valued parameter (quantization_config, rope_scaling) is replaced whole
        notes.append(f"--hf-overrides applied to {path}: {', '.join(sorted(serve.hf_overrides))}")
    q = serve.quantization
    if q and not isinstance(cfg.get("quantization_config"), Mapping) and _quant_document_elsewhere(cfg, path):
        return cfg, notes  # a quantized checkpoint after all: verify_checkpoint_quantization checks -q against it
    if q:
        current = cfg.get("quantization_config")
        method = current.get("quant_method") if isinstance(current, Mapping) else None
        if method is None:
            if q == "fp8":  # another method is refused by verify_checkpoint_quantization (not modelled)
                cfg["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic"}
                notes.append("--quantization fp8 on an unquantized checkpoint: vLLM quantizes the experts online (static per-tensor FP8 weights, dynamic per-tensor activations)")
        elif q == method:
            notes.append(f"--quantization {q} matches the checkpoint's quant_method: no effect")
    return cfg, notes


# config.json keys transformers builds a nested PreTrainedConfig from (a composite model's
# sub_configs); any other dict value is a plain dict-valued parameter.
_SUB_CONFIGS = frozenset({"text_config", "vision_config", "audio_config", "speech_config", "thinker_config", "talker_config", "llm_config", "language_config"})


def _is_sub_config(key: str, value: Mapping[str, Any]) -> bool:
    """Whether config.json's ``key`` holds a nested ``PreTrainedConfig`` (a sub-config key, or a
    dict naming its own ``model_type``), which vLLM's ``hf_overrides`` merge into rather than replace."""
    return key in _SUB_CONFIGS or "model_type" in value


def _update_nested(target: Mapping[str, Any], updates: Mapping[str, Any]) -> dict[str, Any]:
    """``target`` updated as vLLM 0.29.0-0.33.0 ``ModelConfig._update_nested`` (vllm/config/model.py)
    updates a nested config: a dict value is merged into an existing dict, recursively; any other
    value replaces. Returns a new dict (``target`` is not changed).

    >>> _update_nested({"q": {"a": 1, "b": 2}, "n": 1}, {"q": {"b": 3}, "n": {"x": 1}})
    {'q': {'a': 1, 'b': 3}, 'n': {'x': 1}}
    """
    out = dict(target)
    for key, value in updates.items():
        current = out.get(key)
        out[key] = _update_nested(current, value) if isinstance(value, Mapping) and isinstance(current, Mapping) else value
    return out


def _quant_document_elsewhere(cfg: Mapping[str, Any], path: Path) -> bool:
    """Whether vLLM finds a quantization document for a config.json without
    ``quantization_config``: ``hf_quant_config.json`` beside it (vllm/transformers_utils/config.py
    ``get_config``), ``compression_config`` or ``text_config.quantization_config``
    (vllm/transformers_utils/model_arch_config_convertor.py ``get_quantization_config``)."""
    from .models import quant_config_beside

    text = cfg.get("text_config")
    return (isinstance(cfg.get("compression_config"), Mapping) or (isinstance(text, Mapping) and isinstance(text.get("quantization_config"), Mapping))
            or quant_config_beside(path) is not None)


# vllm/config/model.py ModelConfig._verify_quantization (0.29.0-0.33.0): the override classes, in order.
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
    release's (:func:`moe_oracle.inputs.serve.platform_quantization`): ROCm and XPU have lists (XPU's
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
    return _refusal([method], release, device, path=path, how=how, file=file, instead=instead)


def _refusal(methods: Sequence[str], release: str, device: Any, *, path: str, how: str, file: str | None = None, instead: str | None = None) -> InputIssue | None:
    """:func:`platform_refusal` for a layer whose checkpoint may have any of ``methods``: an issue
    only when the platform refuses each."""
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
# constraint.online_nvfp4_sm100: nvfp4_per_token; constraint.mxfp8_method_*: mxfp8).
_TABLE_ONLINE_METHODS = ("mxfp8", "nvfp4_per_token")
# Names the tables read that no modelled release has (rules citing vLLM main): refused as vLLM
# refuses them, with the checkpoint reader's explanation (checkpoint/quant_formats.py _REMOVED).
_NOT_A_RELEASE_METHOD = {
    "ptpc_fp8": "no modelled release has a ptpc_fp8 method (the tables' rules on it follow vLLM main); per-token-per-channel FP8 is the online shorthand fp8_per_channel in 0.29.0-0.33.0, which moe-oracle does not model",
}


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
    issue = _refusal(known, release, device, path=path, how=how, file=file)
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


def verify_checkpoint_quantization(quant: Any, user: str | None, flag: str, release: str, *, allow_deprecated: bool, allow_flag: str, device: Any, another_checkpoint: str | None = None) -> list[str]:
    """Check the checkpoint's quantization document against ``--quantization`` as vLLM
    ``release`` does at start (vllm/config/model.py ``ModelConfig._verify_quantization``,
    the same in 0.29.0-0.33.0), in its order:

    1. Without a quantization document (online quantization), the ``--quantization`` value
       itself is checked (:func:`moe_oracle.inputs.serve.quantization_value_issues`).
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

    Returns:
        notes (a ``--quantization`` an override class replaces; a platform whose check vLLM's
        tree does not hold, TPU; the document's method that the platform refuses, under
        ``another_checkpoint``).

    Raises:
        ConfigError: a method vLLM refuses (unknown, not supported on the platform, or
            deprecated), a mismatch no override accepts, vLLM's gpt-oss ``--quantization humming``
            refusal, ``humming`` (not modelled), or a method other than fp8 on an unquantized
            checkpoint (online quantization with it is not modelled).
    """
    from .serve import quantization_value_issues

    config = dict(getattr(quant, "config", None) or {})
    if "quant_method" not in config:  # no quantization document: online quantization, or none
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
        if user != "fp8":
            # vLLM quantizes online with that method (humming: HummingMoEMethod) or fails to build
            # its config; only online fp8 is modelled (load_serve_checkpoint), and answering for
            # the unquantized layer would be wrong.
            raise ConfigError([InputIssue(flag, f"{flag.split()[-1]} {user} on an unquantized checkpoint is not modelled: vLLM {release} quantizes the layer online with that method or refuses it; moe-oracle models online quantization only for fp8", user, ["fp8"])], headline=f"bad {flag.split()[0]}")
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


def _override_at(overrides: Mapping[str, Any], path: str) -> tuple[str, Any] | None:
    """The ``--hf-overrides`` key (dotted) and value that set the field at JSON ``path``, or ``None``
    when the field's value comes from the checkpoint file.

    An override that is not an object replaces the file's value wholesale, so a path inside it is
    the override's; an object override is merged key by key (:func:`load_serve_checkpoint`), so a
    path it does not name is the file's.

    >>> _override_at({"text_config": {"num_experts": -4}}, "$.text_config.num_experts")
    ('text_config.num_experts', -4)
    >>> _override_at({"text_config": {"num_experts": -4}}, "$.text_config.hidden_act") is None
    True
    """
    if not path.startswith("$") or " " in path:
        return None
    node: Any = overrides
    keys: list[str] = []
    for name, index in re.findall(r"\.([^.\[\]]+)|\[(\d+)\]", path[1:]):
        if not isinstance(node, Mapping):
            break
        key = name or index
        if key not in node:
            return None
        node = node[key]
        keys.append(key)
    return (".".join(keys), node) if keys else None


def blame_hf_overrides(exc: ConfigError, serve: ServeArgs | None) -> ConfigError:
    """``exc`` with each problem in a field the serve line's ``--hf-overrides`` set charged to that
    flag (``--serve --hf-overrides KEY``, with the value given and what is allowed) instead of the
    checkpoint file; problems in the file's own fields are kept as they are.

    Returns ``exc`` itself when no problem lies in an overridden field.
    """
    overrides = serve.hf_overrides if serve is not None else None
    if not overrides:
        return exc
    issues = []
    for issue in exc.issues:
        hit = _override_at(overrides, issue.path)
        if hit is None:
            issues.append(issue)
            continue
        key, value = hit
        shown = json.dumps(value) if isinstance(value, (Mapping, list)) else repr(value)
        where = f" (applied to {issue.file})" if issue.file else ""
        issues.append(replace(issue, path=f"--serve --hf-overrides {key}", file=None, message=f"--hf-overrides sets {key} to {shown}{where}: {issue.message}"))
    if all(a is b for a, b in zip(issues, exc.issues)):
        return exc
    return ConfigError(issues, headline="bad --serve" if all(i.path.startswith("--serve") for i in issues) else None)


@dataclass(frozen=True)
class DeclaredEnvironment:
    """The environment built from the flags, plus where the device may come from."""

    environment: Environment
    notes: tuple[str, ...]
    gpu: str | None = None
    gpu_source: str | None = None


def declare_environment(
    catalog: Any,
    *,
    packages: Sequence[str] = (),
    without: Sequence[str] = (),
    env: Sequence[str] = (),
    env_file: str | None = None,
    serve_env: Iterable[tuple[str, str]] = (),
    base: Environment | None = None,
) -> DeclaredEnvironment:
    """An :class:`Environment` from ``--environment FILE``, ``--package``, ``--without`` and ``--env``.

    Later sources win: the file (or ``base``, a config file's environment), then the serve
    line's ``NAME=VALUE`` words, then the flags. Only packages and variables the tables read
    are kept in the record; the others are accepted and listed in a note. Notes and errors on
    variables name the engine release the declared packages make the answer for
    (:func:`answer_release`), and its variable names decide which are unknown.

    Raises:
        ConfigError: a malformed declaration (``--env`` without a variable name), one package
            given two different versions by ``--package`` (or within the file), one variable
            given two different values by ``--env``, or a value the engine refuses at start
            (``VLLM_USE_DEEP_GEMM=true``).
    """
    notes: list[str] = []
    read = set(catalog.package_names)
    specs: dict[str, PackageSpec] = {}
    absent: set[str] = set(base.absent) if base is not None else set()
    complete = bool(base.complete) if base is not None else False
    variables: dict[str, str] = dict(base.env) if base is not None else {}
    set_by: dict[str, str] = {name: "the --config file's environment" for name in variables}  # variable -> the input that set it
    gpu = gpu_source = None
    file_vars: dict[str, str] = {}
    doc = None
    if base is not None:
        specs.update({n: PackageSpec(n, v) for n, v in base.packages})
        specs.update({n: PackageSpec(n, None) for n in base.unversioned})
    # Packages first: they decide the release that the variables' notes and errors are about.
    if env_file is not None:
        doc = read_environment_file(env_file)
        specs.update({p.name: p for p in doc.packages})
        complete = doc.complete
    declared_packages = []
    for spec in unique_specs([(parse_requirement(spec_text, "--package"), None) for spec_text in packages], "--package"):
        specs[spec.name] = spec
        absent.discard(spec.name)
        declared_packages.append(spec.name)
        if spec.version_note():
            notes.append(f"--package: {spec.version_note()}")
    for name in without:
        key = canonical_name(name)
        if key in {canonical_name(p) for p in declared_packages}:
            raise ConfigError([InputIssue("--without", "package declared both installed (--package) and absent (--without)", name, None)], headline="bad --without")
        specs.pop(key, None)
        absent.add(key)
    flag_vars: dict[str, str] = {}
    for item in env:
        if "=" not in item:
            raise ConfigError([InputIssue("--env", "expected VAR=VALUE", item, None)], headline="bad --env")
        name, value = item.split("=", 1)
        if not name.strip():
            raise ConfigError([InputIssue("--env", "the variable name is empty: expected VAR=VALUE", item, None)], headline="bad --env")
        if name in flag_vars and flag_vars[name] != value:
            # As a repeated --package: the same declaration twice is accepted, two values are refused.
            raise ConfigError([InputIssue(f"--env {name}", f"declared twice with different values: {flag_vars[name]!r} and {value!r}; declare one value", None, None)], headline="bad --env")
        flag_vars[name] = value
    kept_specs = [s for n, s in specs.items() if n in read]
    packages_only = Environment(
        tuple((s.name, s.version) for s in kept_specs if s.version is not None),
        frozenset(n for n in absent if n in read),
        complete,
        unversioned=frozenset(s.name for s in kept_specs if s.version is None),
    )
    release = answer_release(catalog, packages_only)

    if env_file is not None and doc is not None:
        notes += [f"--environment {env_file}: {n}" for n in doc.notes]
        unread = sorted({p.name for p in doc.packages} - read)
        kept = sorted({p.name for p in doc.packages} & read)
        notes.append(f"--environment {env_file} ({doc.format}): {len(doc.packages)} package{'s' if len(doc.packages) != 1 else ''}, {len(kept)} read by the tables ({', '.join(kept) or 'none'})" + (f"; {len(unread)} {'other does' if len(unread) == 1 else 'others do'} not affect selection" if unread else "") + ("; every unlisted package is absent" if doc.complete else ""))
        file_vars = dict(doc.env)
        _collect_vars(catalog, file_vars, variables, set_by, notes, f"--environment {env_file}", release, quiet_unread=True)
        if doc.gpus:
            gpu, gpu_source = doc.gpus[0], f"--environment {env_file}"
    serve_vars = dict(serve_env)
    if serve_vars:
        _collect_vars(catalog, serve_vars, variables, set_by, notes, "--serve", release, quiet_unread=False)
    unread = [n for n in sorted({canonical_name(p) for p in declared_packages} | {canonical_name(n) for n in without}) if n not in read]
    if unread:
        shown = []
        for name in unread:
            guess = did_you_mean(name, sorted(read))
            shown.append(name + (f" (did you mean {guess!r}?)" if guess else ""))
        notes.append(f"packages no table reads (accepted; they do not change the answer): {', '.join(shown)}")
    _collect_vars(catalog, flag_vars, variables, set_by, notes, "--env", release, quiet_unread=False)
    # Name where each value came from: the engine refuses it, and the operator must find it.
    origin = {**{n: f"--environment {env_file}:" for n in file_vars}, **{n: "--serve" for n in serve_vars}, **{n: "--env" for n in flag_vars}}
    issues = [issue for name, value in sorted(variables.items()) for issue in env_issues([(name, value)], catalog.env_vars, origin.get(name, "--env"), release=release)]
    if issues:
        raise ConfigError(issues, headline="bad environment variable")
    environment = replace(packages_only, env=tuple(sorted(variables.items())))
    for s in kept_specs:
        if s.version is None:
            notes.append(f"{s.name} is installed from {s.reference or 'an undeclared version'}: its version is unknown, so version rules on it abstain (pip list --format=json reports it)")
    return DeclaredEnvironment(environment, tuple(notes), gpu, gpu_source)


def engine_release(catalog: Any, env: Environment) -> "EngineRelease | None":
    """The engine release an answer for ``env`` is for (``Catalog.release``: declared, probed or
    assumed); ``None`` for a catalog without an engine (hand-built in tests)."""
    if getattr(catalog, "source", None) is None:
        return None
    return catalog.release(env)


def answer_release(catalog: Any, env: Environment) -> str | None:
    """The modelled engine release whose facts an answer for ``env`` states: the declared or
    probed release when the tables model it, else the modelled release standing in for it
    (:meth:`~moe_oracle.core.versions.EngineRelease.stand_in`), the newest when none is known;
    ``None`` for a catalog without an engine (hand-built in tests)."""
    release = engine_release(catalog, env)
    return release.stand_in if release is not None else None


def _collect_vars(catalog: Any, given: Mapping[str, str], into: dict[str, str], set_by: dict[str, str], notes: list[str], where: str, release: str | None, *, quiet_unread: bool) -> None:
    """Keep the variables the tables read in ``into`` (``set_by``: variable -> the input that set
    it, for the note when a later input overrides it); note removed, irrelevant and unknown ones
    (as vLLM ``release`` declares its variables: ``engine_facts/vllm-release-values.yaml``)."""
    read = {s.name for s in catalog.env_vars}
    removed = {r.name for r in catalog.removed_env_vars}
    other = []
    for name, value in given.items():
        if name in read:
            if into.get(name, value) != value:  # later sources win (declare_environment): say so
                notes.append(f"{where}: {name}={value!r} overrides {name}={into[name]!r} from {set_by.get(name, 'an earlier input')}")
            into[name] = value
            set_by[name] = where
        elif name not in removed:
            other.append(name)
    shown = [(n, v) for n, v in given.items() if n in read or n in removed or not quiet_unread]
    # The release's own variable names come from a generated facts file (a large YAML document): read only when there is a variable to note.
    engine_names = release_values(release)["env_vars"] if shown and release is not None else None
    for note in env_notes(shown, catalog.env_vars, catalog.removed_env_vars, engine_names, release=release):
        notes.append(f"{where}: {note}")
    if quiet_unread and other:
        notes.append(f"{where}: {len(other)} other environment {'variable does' if len(other) == 1 else 'variables do'} not affect MoE kernel selection")

