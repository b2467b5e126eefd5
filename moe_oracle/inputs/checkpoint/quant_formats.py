"""A checkpoint's quantization as a vLLM release reads it, resolved per routed-experts module.

:func:`read_quant_format` picks the quantization document the engine uses (config.json
``quantization_config``, then ``text_config.quantization_config``, then
``compression_config``, then ``hf_quant_config.json`` beside config.json), normalizes it
as ``ModelArchConfigConvertor._normalize_quantization_config`` does, and detects the
quantization method as ``ModelConfig._verify_quantization`` does (the override order:
GPTQ/AWQ, ``moe_wna16`` on request, ModelOpt by ``quant_algo``, MXFP4, DeepSeek-V4 FP8).

:meth:`QuantFormat.experts` then answers, for one experts module name, what the engine's
``get_quant_method`` builds for that ``RoutedExperts``: the (weight, activation) scheme
handed to the MoE oracle, or unquantized with the exclusion pattern that decided it.
Sources are named per method below (Q/ = vllm/model_executor/layers/quantization/); they are
vLLM 0.29.0-0.33.0 except where a fact of :data:`~moe_oracle.inputs.checkpoint.releases.FACTS` says
which releases it holds for. Every answer is for one release (``release``: the release the
answer is for, an unmodelled one's stand-in; the newest modelled when not given), and every
refusal names it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ...core.errors import ConfigError, InputIssue
from ...core.quant import SCHEMES, UNQUANTIZED, QuantScheme
from . import matching as m
from .releases import NEWEST, ReaderRelease

if TYPE_CHECKING:
    from ...core.versions import EngineRelease

__all__ = ["SUPPORTED_METHODS", "ExpertsQuant", "QuantFormat", "read_quant_format"]

SUPPORTED_METHODS = (
    "fp8", "deepseek_v4_fp8", "compressed-tensors", "modelopt", "modelopt_fp4", "modelopt_mxfp8",
    "modelopt_mixed", "mxfp4", "gpt_oss_mxfp4", "quark", "gptq", "awq", "moe_wna16", "fbgemm_fp8",
)
"""vLLM quantization methods whose routed-experts handling this module reproduces."""

_REMOVED = {
    "ptpc_fp8": "{release} has no ptpc_fp8 method (no modelled release 0.29.0-0.33.0 has it); per-token-per-channel FP8 is the online shorthand --quantization fp8_per_channel, not a checkpoint format",
}

_MODELOPT_LEGACY_ALGOS = {"FP8": "modelopt", "FP8_PER_CHANNEL_PER_TOKEN": "modelopt", "FP8_PB_WO": "modelopt", "NVFP4": "modelopt_fp4", "MIXED_PRECISION": "modelopt_mixed"}
_MODELOPT_FP8_ALGOS = ("FP8", "FP8_PER_CHANNEL_PER_TOKEN", "FP8_PB_WO")
_BLOCK_FP8_MOE_ALGOS = ("FP8_PB_WO", "FP8_BLOCK_SCALES")


@dataclass(frozen=True)
class ExpertsQuant:
    """What the engine builds for one routed-experts module.

    Attributes:
        scheme: (weight, activation) keys handed to the MoE oracle; unquantized when excluded.
        method: family of the MoE method that consults the oracle, as the tables spell
            ``quant_method`` (``fp8``, ``modelopt``, ``compressed-tensors``, ``mxfp4``, ``quark``,
            ``gptq``, ``awq``, ``moe_wna16``); ``None`` for unquantized experts.
        weight_block_size: ``[block_n, block_k]`` of block-FP8 experts, else ``None``.
        weight_group_size: group size of INT/GPTQ/AWQ weights (``-1`` per channel), else ``None``.
        excluded_by: the exclusion pattern (or rule) that left the experts unquantized.
        evidence: one sentence saying which rule decided, with the engine source.
        notes: warnings about this module (patterns the engine does not read, ...).
        act_order: activation ordering of GPTQ-style int weights (compressed-tensors
            ``weights.actorder`` or ``none``; GPTQ ``desc_act`` with groups is ``group``), the
            MoEConfig field the Marlin and WNA16 checks read; ``None`` for other schemes.
    """

    scheme: QuantScheme
    method: str | None
    weight_block_size: tuple[int, int] | None = None
    weight_group_size: int | None = None
    excluded_by: str | None = None
    evidence: str = ""
    notes: tuple[str, ...] = ()
    act_order: str | None = None

    @property
    def label(self) -> str:
        """Scheme name, ``bf16`` for unquantized experts."""
        return "bf16" if self.scheme.weight is None else self.scheme.name


@dataclass(frozen=True)
class QuantFormat:
    """One checkpoint's quantization document and the method vLLM detects for it.

    Attributes:
        method: vLLM method name after override detection (``None``: not quantized).
        declared: ``quant_method`` as written (``"fp8"`` for a DeepSeek-V4 checkpoint).
        source: where the document came from (``config.json quantization_config`` ...).
        config: the document (read-only).
        file: file for error messages.
        model_type: the (text) model type, which some methods read.
        expert_dtype: DeepSeek-V4 ``expert_dtype`` (``fp4``/``fp8``), else ``None``.
        notes: format-level notes (side effects, deprecations, fields the engine ignores).
        release: the vLLM release the document is read for (its facts decide; refusals name it).
    """

    method: str | None
    declared: str | None
    source: str
    config: Mapping[str, Any] = field(default_factory=lambda: MappingProxyType({}))
    file: str | None = None
    model_type: str | None = None
    expert_dtype: str | None = None
    notes: tuple[str, ...] = ()
    release: ReaderRelease = NEWEST

    def experts(self, module: str, proj_names: tuple[str, ...] = ("gate_proj", "up_proj", "down_proj")) -> ExpertsQuant:
        """The quantization the engine gives the routed experts at ``module``.

        Args:
            module: experts module name in the checkpoint (``model.layers.3.mlp.experts``).
            proj_names: the checkpoint's expert projection names (gate, up, down), used by
                methods that match ``<module>.0.<proj>`` (compressed-tensors).

        Raises:
            ConfigError: the engine refuses this layer (mixed projection schemes, an
                unsupported scheme), with the field and value.
        """
        if self.method is None:
            return ExpertsQuant(UNQUANTIZED, None, evidence=f"{self.source}: unquantized")
        out = _RESOLVERS[self.method](self, module, proj_names)
        block, group = out.weight_block_size, out.weight_group_size
        if block is not None and not all(isinstance(b, int) and not isinstance(b, bool) and 1 <= b <= 2**20 for b in block):
            raise self.fail(".weight_block_size", "block sizes must be integers from 1 to 2**20", list(block), {"minimum": 1, "maximum": 2**20})
        if group is not None and (isinstance(group, bool) or not isinstance(group, int) or not (group == -1 or 1 <= group <= 2**40)):
            raise self.fail(".group_size", "a weight group size must be -1 (per channel) or an integer from 1 to 2**40", group, {"minimum": -1, "maximum": 2**40})
        return out

    def shared_excluded_by(self, module: str) -> str | None:
        """The pattern that leaves a shared expert (linear layers) unquantized, if any.

        Matched on its ``down_proj`` with the method's linear-layer rule; informational: shared
        experts are dense layers and never reach the MoE oracle.
        """
        name = f"{module}.down_proj"
        c = self.config
        if self.method in ("fp8", "deepseek_v4_fp8"):
            return m.vllm_is_layer_skipped(name, _list(c.get("ignored_layers") or c.get("modules_to_not_convert")))
        if self.method == "fbgemm_fp8":
            return m.vllm_is_layer_skipped(name, _list(c.get("modules_to_not_convert")))
        if self.method == "compressed-tensors":
            return m.ct_should_ignore(name, _list(c.get("ignore")))
        if self.method and self.method.startswith("modelopt"):
            return m.modelopt_excluded(name, _modelopt_exclude(c, self.release))
        if self.method == "quark":
            return m.quark_should_ignore(name, _list(c.get("exclude")))
        if self.method == "awq":
            return m.vllm_is_layer_skipped(name, _list(c.get("modules_to_not_convert")), "substring")
        if self.method in ("mxfp4", "gpt_oss_mxfp4"):
            return "(MXFP4 linear layers are not quantized: Mxfp4Config)"
        return None

    def fail(self, path: str, message: str, value: Any = None, allowed: Any = None) -> ConfigError:
        where = "$.quantization_config" if "config.json" in self.source or "text_config" in self.source else "$"
        return ConfigError([InputIssue(f"{where}{path}", message, value, allowed, self.file)])


def _list(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


def _issue(file: str | None, path: str, message: str, value: Any = None, allowed: Any = None) -> ConfigError:
    return ConfigError([InputIssue(path, message, value, allowed, file)])


# ----------------------------------------------------------------------------- reading


def read_quant_format(
    cfg: Mapping[str, Any],
    *,
    text_cfg: Mapping[str, Any] | None = None,
    beside: Mapping[str, Any] | None = None,
    override: Mapping[str, Any] | None = None,
    user_quantization: str | None = None,
    model_type: str | None = None,
    expert_dtype: str | None = None,
    file: str | None = None,
    release: "EngineRelease | str | ReaderRelease | None" = None,
) -> QuantFormat:
    """The quantization a vLLM release applies to a checkpoint.

    Args:
        cfg: config.json.
        text_cfg: its ``text_config`` (multimodal wrappers), if any.
        beside: ``hf_quant_config.json`` found beside config.json; read only when config.json
            has no quantization document (``vllm/transformers_utils/config.py``), or for a
            ModelOpt MIXED_PRECISION document without ``quantized_layers``.
        override: an ``hf_quant_config.json`` the user named explicitly; replaces the document.
        user_quantization: vLLM ``--quantization`` (only ``moe_wna16`` changes the answer here).
        model_type: the text model type (DeepSeek-V4 FP8 detection).
        expert_dtype: DeepSeek-V4 ``expert_dtype``.
        file: path for error messages.
        release: the vLLM release the answer is for (:meth:`ReaderRelease.of`: an
            ``EngineRelease`` is read by its stand-in; ``None``: the newest modelled release).

    Raises:
        ConfigError: a method the release does not have, or one this module does not read
            (the message lists those it reads), or a malformed document; each names the release.
    """
    rel = ReaderRelease.of(release)
    notes: list[str] = []
    doc: Any
    if override is not None:
        doc, source = override, "hf_quant_config.json (given explicitly)"
    elif isinstance(cfg.get("quantization_config"), dict):
        doc, source = cfg["quantization_config"], "config.json quantization_config"
    elif text_cfg is not None and isinstance(text_cfg.get("quantization_config"), dict):
        doc, source = text_cfg["quantization_config"], "config.json text_config.quantization_config"
    elif isinstance(cfg.get("compression_config"), dict):
        doc, source = cfg["compression_config"], "config.json compression_config"
    elif beside is not None:
        doc, source = beside, "hf_quant_config.json beside config.json (config.json has no quantization_config)"
    else:
        if cfg.get("quantization_config") is not None:
            raise _issue(file, "$.quantization_config", "must be an object", cfg.get("quantization_config"))
        return QuantFormat(None, None, "no quantization_config", file=file, model_type=model_type, expert_dtype=expert_dtype, release=rel)
    doc = dict(doc)
    # _normalize_quantization_config runs on the document the HF config carries, before the
    # loader may swap a MIXED_PRECISION document without quantized_layers for the file beside it.
    declared = _normalized_method(doc, file, source, rel)
    if beside is not None and override is None and "config.json" in source:
        if _modelopt_algo(doc) == "MIXED_PRECISION" and "quantized_layers" not in doc:
            doc, source = dict(beside), "hf_quant_config.json beside config.json (config.json's MIXED_PRECISION document has no quantized_layers)"
            doc["quant_method"] = declared
        else:
            notes.append("hf_quant_config.json beside config.json is not read: config.json carries the quantization document (vllm/transformers_utils/config.py)")
    if not declared:
        # _verify_quantization: an empty quant_method means no quantization.
        return QuantFormat(None, None, f"{source} without quant_method (unquantized)", MappingProxyType(doc), file, model_type, expert_dtype, tuple(notes), rel)
    method = _detect_method(doc, declared, user_quantization, model_type, file, rel)
    scale_fmt = doc.get("scale_fmt")  # read at config load (vllm/transformers_utils/config.py), from the checkpoint's document
    if method == "deepseek_v4_fp8" and declared == "quark":
        doc = _deepseek_v4_from_quark(doc)
        notes.append(f"{rel.words}: DeepseekV4FP8Config claims this Quark checkpoint (global weights OCP MXFP4) and reads it as block FP8 [128, 128] with its exclude list as ignored_layers (vllm/models/deepseek_v4/quant_config.py override_quantization_method, from_config; 0.31.0+ leave Quark checkpoints to QuarkConfig)")
    if scale_fmt == "ue8m0":
        notes.append("scale_fmt ue8m0: vLLM sets VLLM_USE_DEEP_GEMM_E8M0=1 at config load (DeepGEMM with UE8M0 scales); the MoE weight key is unchanged")
    elif scale_fmt is not None:
        notes.append(f"scale_fmt {scale_fmt!r} is not read by {rel.words} (only ue8m0 has an effect)")
    if method == "fbgemm_fp8":
        notes.append("fbgemm_fp8 is deprecated in vLLM 0.29.0-0.33.0 (DEPRECATED_QUANTIZATION_METHODS): it loads only with --allow-deprecated-quantization")
    if method == "deepseek_v4_fp8" and _list(doc.get("ignore")) and not (doc.get("ignored_layers") or doc.get("modules_to_not_convert")):
        notes.append("the document's 'ignore' list is not read: DeepseekV4FP8Config (an Fp8Config) reads only ignored_layers / modules_to_not_convert")
    return QuantFormat(method, declared, source, MappingProxyType(doc), file, model_type, expert_dtype, tuple(notes), rel)


def _deepseek_v4_from_quark(doc: Mapping[str, Any]) -> dict[str, Any]:
    """vllm/models/deepseek_v4/quant_config.py ``DeepseekV4FP8Config.from_config`` (0.29.0-0.30.0):
    a claimed Quark document becomes a block-FP8 one, its ``exclude`` list the ignored layers."""
    return {"quant_method": "fp8", "activation_scheme": "dynamic", "fmt": "e4m3", "scale_fmt": "ue8m0", "weight_block_size": [128, 128],
            "ignored_layers": [n for n in (doc.get("exclude") or []) if isinstance(n, str)]}


def _is_quark_mxfp4_ocp(doc: Mapping[str, Any]) -> bool:
    """``DeepseekV4FP8Config._is_quark_mxfp4_ocp``: the global weights are OCP MXFP4."""
    glob = doc.get("global_quant_config")
    weight = glob.get("weight") if isinstance(glob, dict) else None
    return isinstance(weight, dict) and weight.get("dtype") == "fp4" and weight.get("qscheme") == "per_group" and weight.get("group_size") == 32


def _modelopt_algo(doc: Mapping[str, Any]) -> str | None:
    inner = doc.get("quantization")
    algo = inner.get("quant_algo") if isinstance(inner, dict) else doc.get("quant_algo")
    return str(algo).upper() if algo is not None else None


def _normalized_method(doc: dict[str, Any], file: str | None, source: str, rel: ReaderRelease) -> str:
    """``_normalize_quantization_config``: legacy ModelOpt documents get a quant_method
    (MIXED_PRECISION from 0.33.0: fact ``modelopt_legacy_mixed_precision``)."""
    producer = doc.get("producer")
    inner = doc.get("quantization")
    legacy = isinstance(inner, dict) and "modelopt_quant_config" in inner
    if (isinstance(producer, dict) and producer.get("name") == "modelopt") or legacy:
        algo = inner.get("quant_algo") if isinstance(inner, dict) else None
        if algo is not None:
            upper = str(algo).upper()
            known = {a: m_ for a, m_ in _MODELOPT_LEGACY_ALGOS.items() if a != "MIXED_PRECISION" or rel.holds("modelopt_legacy_mixed_precision")}
            if upper not in known:
                raise _issue(file, "$.quantization.quant_algo", f"{rel.words} refuses this ModelOpt algorithm in a legacy hf_quant_config.json layout ({source}): 'Unknown ModelOpt quant algo'" + ("" if upper != "MIXED_PRECISION" else " (MIXED_PRECISION is read in this layout from vLLM 0.33.0)"), algo, sorted(known))
            doc["quant_method"] = known[upper]
    method = doc.get("quant_method", "")
    if not isinstance(method, str):
        raise _issue(file, "$.quantization_config.quant_method", "must be a string", method, list(SUPPORTED_METHODS))
    method = method.lower().replace("compressed_tensors", "compressed-tensors")
    doc["quant_method"] = method
    return method


_DSV4_MODEL_TYPES = ("deepseek_v4",)
_DSV41_MODEL_TYPES = ("deepseek_v4", "deepseek_v4_text", "deepseek_v41", "deepseek_v41_text")


def _detect_method(doc: Mapping[str, Any], declared: str, user: str | None, model_type: str | None, file: str | None, rel: ReaderRelease) -> str:
    """``_verify_quantization``: the override classes, in the engine's order.

    DeepSeek-V4's FP8 config (``DeepseekV4FP8Config.override_quantization_method``) takes the
    model types of its class: ``deepseek_v4`` alone in 0.29.0 (and off CUDA/ROCm), the V4.1 class's
    four from 0.30.0 (fact ``deepseek_v41_model``; the V4.1 class serves CUDA and ROCm); before
    0.31.0 it also claims a Quark checkpoint whose global weights are OCP MXFP4 (fact
    ``deepseek_v4_claims_quark_mxfp4``).
    """
    if declared in _REMOVED:
        raise _issue(file, "$.quantization_config.quant_method", _REMOVED[declared].format(release=rel.words), declared, list(SUPPORTED_METHODS))
    if declared in ("gptq", "awq") and user == "moe_wna16":
        return "moe_wna16"
    if declared == "gptq":
        return "gptq"
    if declared in ("awq", "awq_marlin", "auto_awq"):
        return "awq"
    if declared.startswith("modelopt"):
        algo = _modelopt_algo(doc)
        if algo == "FP8":
            return "modelopt"
        if algo is not None and ("NVFP4" in algo or "FP4" in algo):
            return "modelopt_fp4"
        if algo is not None and "MXFP8" in algo:
            return "modelopt_mxfp8"
        if algo == "MIXED_PRECISION":
            return "modelopt_mixed"
        if declared in ("modelopt", "modelopt_fp4", "modelopt_mxfp8", "modelopt_mixed"):
            return declared
    if declared in ("mxfp4", "gpt_oss_mxfp4"):
        return "gpt_oss_mxfp4" if model_type == "gpt_oss" else "mxfp4"
    dsv4_types = _DSV41_MODEL_TYPES if rel.holds("deepseek_v41_model") else _DSV4_MODEL_TYPES
    if declared in ("fp8", "deepseek_v4_fp8") and model_type in dsv4_types:
        return "deepseek_v4_fp8"
    if declared == "quark" and model_type in dsv4_types and rel.holds("deepseek_v4_claims_quark_mxfp4") and _is_quark_mxfp4_ocp(doc):
        return "deepseek_v4_fp8"
    if declared in ("fp8", "compressed-tensors", "quark", "fbgemm_fp8", "moe_wna16"):
        return declared
    raise _issue(file, "$.quantization_config.quant_method", f"quantization method not read by moe-oracle ({rel.words} also has experts_int8, torchao, inc, fp_quant, humming and online methods, which we do not model)", declared or None, list(SUPPORTED_METHODS))


# ----------------------------------------------------------------------------- per method


_MOE_FAMILY = {"deepseek_v4_fp8": "fp8", "gpt_oss_mxfp4": "mxfp4", "modelopt_fp4": "modelopt", "modelopt_mxfp8": "modelopt", "modelopt_mixed": "modelopt"}


def _fam(q: QuantFormat) -> str | None:
    """The ``quant_method`` value the tables read for this checkpoint's MoE methods."""
    return _MOE_FAMILY.get(q.method or "", q.method)


def _excluded(q: QuantFormat, pattern: str, rule: str) -> ExpertsQuant:
    return ExpertsQuant(UNQUANTIZED, None, excluded_by=pattern, evidence=f"{q.source}: excluded by {pattern!r} ({rule}); the experts stay in the model dtype")


def _fp8_block(q: QuantFormat, block: Any, path: str) -> tuple[int, int]:
    if not isinstance(block, list) or len(block) != 2 or not all(isinstance(b, int) and not isinstance(b, bool) and b >= 1 for b in block):
        raise q.fail(path, "the block size of FP8 weights must be [block_n, block_k], two positive integers (Fp8Config)", block, {"length": 2})
    return (block[0], block[1])


def _fp8(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/fp8.py ``Fp8Config.from_config`` / ``get_quant_method`` / ``Fp8MoEMethod``."""
    c = q.config
    scheme = c.get("activation_scheme")
    if scheme is None:
        raise q.fail(".activation_scheme", "Fp8Config requires activation_scheme", None, ["static", "dynamic"])
    if scheme not in ("static", "dynamic"):
        raise q.fail(".activation_scheme", "unsupported activation scheme (Fp8Config)", scheme, ["static", "dynamic"])
    block = c.get("weight_block_size")
    if block is not None:
        if not isinstance(block, list) or len(block) != 2:
            raise q.fail(".weight_block_size", "the quantization block size of weight must have 2 dimensions (Fp8Config)", block, {"length": 2})
        if scheme != "dynamic":
            raise q.fail(".activation_scheme", f"{q.release.words} refuses an FP8 block checkpoint with static activations: 'The block-wise quantization only supports dynamic activation scheme'", scheme, ["dynamic"])
    ignored = _list(c.get("ignored_layers")) or _list(c.get("modules_to_not_convert"))
    hit = m.vllm_is_layer_skipped(module, ignored)
    if hit is not None:
        return _excluded(q, hit, "is_layer_skipped, exact mode: an ignored name containing 'experts' contains the experts prefix")
    if q.method == "deepseek_v4_fp8":
        return _deepseek_v4(q, block)
    if c.get("store_dtype") == "mxfp4":
        return ExpertsQuant(SCHEMES["mxfp4_w16"], "mxfp4", evidence=f"{q.source}: fp8 with store_dtype mxfp4: Fp8Config builds Mxfp4MoEMethod (no activation key)")
    if block is not None:
        b = _fp8_block(q, block, ".weight_block_size")
        return ExpertsQuant(SCHEMES["fp8_block"], _fam(q), weight_block_size=b, evidence=f"{q.source}: fp8 with weight_block_size {list(b)}: Fp8MoEMethod (block weights, dynamic 1x{b[1]} activations)")
    if scheme == "static":
        return ExpertsQuant(SCHEMES["fp8_tensor_static"], _fam(q), evidence=f"{q.source}: fp8 per-tensor, static activations (Fp8MoEMethod)")
    return ExpertsQuant(SCHEMES["fp8_tensor_dynamic"], _fam(q), evidence=f"{q.source}: fp8 per-tensor, dynamic per-tensor activations (Fp8MoEMethod; per-token under VLLM_BATCH_INVARIANT)")


def _deepseek_v4(q: QuantFormat, block: Any) -> ExpertsQuant:
    """vllm/models/deepseek_v4/quant_config.py ``DeepseekV4FP8Config.get_quant_method``: FP4 experts
    get ``Mxfp4MoEMethod``, with the activation key kMxfp8Dynamic from 0.33.0 (fact
    ``deepseek_v4_mxfp4_activation_key``; before, none)."""
    dtype = q.expert_dtype or "fp4"
    if dtype not in ("fp4", "fp8"):
        raise _issue(q.file, "$.expert_dtype", "Unsupported DeepSeek V4 expert_dtype (DeepseekV4FP8Config)", dtype, ["fp4", "fp8"])
    why = f"expert_dtype {dtype}" + ("" if q.expert_dtype else " (absent: vLLM assumes fp4)")
    if dtype == "fp4":
        algo = str(q.config.get("moe_quant_algo") or "").upper()
        if algo == "NVFP4":
            return ExpertsQuant(SCHEMES["nvfp4"], "modelopt", weight_group_size=16, evidence=f"{q.source}: deepseek_v4_fp8, {why}, moe_quant_algo NVFP4: ModelOptNvFp4FusedMoE (W4A4)")
        if not q.release.holds("deepseek_v4_mxfp4_activation_key"):
            return ExpertsQuant(SCHEMES["mxfp4_w16"], "mxfp4", evidence=f"{q.source}: deepseek_v4_fp8, {why}: Mxfp4MoEMethod with no activation key ({q.release.words}; 0.33.0 passes kMxfp8Dynamic)")
        return ExpertsQuant(SCHEMES["mxfp4_mxfp8"], "mxfp4", evidence=f"{q.source}: deepseek_v4_fp8, {why}: Mxfp4MoEMethod with activation key MXFP8 (kMxfp8Dynamic)")
    b = _fp8_block(q, block, ".weight_block_size") if block is not None else None
    scheme = SCHEMES["fp8_block"] if b else SCHEMES["fp8_tensor_dynamic"]
    return ExpertsQuant(scheme, _fam(q), weight_block_size=b, evidence=f"{q.source}: deepseek_v4_fp8, {why}: Fp8MoEMethod" + (f" with {list(b)} blocks" if b else ""))


def _fbgemm(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/fbgemm_fp8.py: ``get_quant_method`` returns nothing for RoutedExperts."""
    if "modules_to_not_convert" not in q.config or "activation_scale_ub" not in q.config:
        missing = [k for k in ("modules_to_not_convert", "activation_scale_ub") if k not in q.config]
        raise q.fail(f".{missing[0]}", "FBGEMMFp8Config requires modules_to_not_convert and activation_scale_ub", None, missing)
    return ExpertsQuant(UNQUANTIZED, None, excluded_by="(fbgemm_fp8 quantizes linear layers only)", evidence=f"{q.source}: fbgemm_fp8 gives RoutedExperts no quant method, so the experts run unquantized (FBGEMMFp8Config.get_quant_method)")


def _mxfp4(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/mxfp4.py: every RoutedExperts gets Mxfp4MoEMethod; no exclusion is read for experts."""
    listed = _list(q.config.get("modules_to_not_convert"))
    hit = m.vllm_is_layer_skipped(module, listed)
    notes = (f"{hit!r} names these experts, but Mxfp4Config never skips RoutedExperts",) if hit else ()
    return ExpertsQuant(SCHEMES["mxfp4_w16"], _fam(q), weight_group_size=32, evidence=f"{q.source}: {q.method}: Mxfp4MoEMethod with no activation key (BF16-activation variants preferred)", notes=notes)


# --- compressed-tensors ------------------------------------------------------------------


def _ct_targets(q: QuantFormat) -> list[tuple[str, str, Mapping[str, Any]]]:
    """(target, group name, group) in the engine's insertion order, attention-only groups dropped;
    ``RoutedExperts`` aliases ``Linear`` (``_add_fused_moe_to_target_scheme_map``)."""
    groups = q.config.get("config_groups")
    if not isinstance(groups, dict) or not groups:
        raise q.fail(".config_groups", "compressed-tensors config has no config_groups", groups)
    out: list[tuple[str, str, Mapping[str, Any]]] = []
    by_target: dict[str, tuple[str, Mapping[str, Any]]] = {}
    for name, group in groups.items():
        if not isinstance(group, dict):
            raise q.fail(f".config_groups.{name}", "must be an object", group)
        targets = group.get("targets")
        if not isinstance(targets, list) or not all(isinstance(t, str) for t in targets):
            raise q.fail(f".config_groups.{name}.targets", "must be a list of names, re: patterns or module classes", targets)
        if len(targets) == 1 and targets[0].endswith("Attention"):
            continue
        for t in targets:
            by_target[t] = (name, group)  # a later group replaces an earlier one's entry, as the dict does
    for t, (name, group) in by_target.items():
        out.append((t, name, group))
    if "Linear" in by_target and "RoutedExperts" not in by_target:
        out.append(("RoutedExperts", by_target["Linear"][0], by_target["Linear"][1]))
    return out


_CT_FIXED_PROJ = ("gate_proj", "up_proj", "down_proj")


def _ct_actorder(q: QuantFormat) -> None:
    """``_quantization_scheme_map_from_config``: from 0.30.0 (fact ``ct_actorder_refused``) any
    config group with targets whose weights use group/dynamic activation ordering refuses the
    checkpoint at config load, whatever the group targets."""
    if not q.release.holds("ct_actorder_refused"):
        return
    groups = q.config.get("config_groups")
    for name, group in (groups.items() if isinstance(groups, dict) else ()):
        w = group.get("weights") if isinstance(group, dict) else None
        if isinstance(w, dict) and group.get("targets") and w.get("actorder") in ("group", "dynamic"):
            raise q.fail(f".config_groups.{name}.weights.actorder", f"{q.release.words} refuses compressed-tensors group/dynamic activation ordering: 'is no longer supported' (vLLM 0.29.0 still runs it)", w.get("actorder"), [None, "static", "weight"])


def _ct(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/compressed_tensors: ``CompressedTensorsMoEMethod.get_moe_method`` on ``<module>.0.<proj>``:
    the model's checkpoint projection names from 0.32.0, ``gate_proj``/``up_proj``/``down_proj``
    before (fact ``ct_checkpoint_proj_names``)."""
    _ct_actorder(q)
    if not q.release.holds("ct_checkpoint_proj_names"):
        proj = _CT_FIXED_PROJ
    ignore = _list(q.config.get("ignore"))
    targets = _ct_targets(q)
    picks: list[tuple[str, str | None, str | None, Mapping[str, Any] | None]] = []
    for p in proj:
        name = f"{module}.0.{p}"
        hit = m.ct_should_ignore(name, ignore)
        if hit is not None:
            picks.append((name, hit, None, None))
            continue
        target = m.ct_find_target(name, "RoutedExperts", [t for t, _, _ in targets])
        if target is None:
            picks.append((name, None, None, None))
            continue
        gname, group = next((g, grp) for t, g, grp in targets if t == target)
        picks.append((name, None, f"{gname} (target {target!r})", group))
    # The engine compares the scheme dicts by value: (weights, input/output activations, format).
    chosen = {_ct_key(q, pick[3]) for pick in picks}
    if len(chosen) > 1:
        raise q.fail(".config_groups", "All MoE projections need to have same quantization scheme but found multiple (compressed-tensors get_moe_method)", {n: (g or ("ignored by " + str(i) if i else "no target")) for n, i, g, _ in picks}, None)
    name, ignored_by, group_label, group = picks[-1]
    if group is None:
        if ignored_by is not None:
            return _excluded(q, ignored_by, "compressed-tensors should_ignore_layer on " + name)
        listed = ", ".join(t for t, _, _ in targets)
        return ExpertsQuant(UNQUANTIZED, None, excluded_by="(no config group targets these experts)", evidence=f"{q.source}: no config_groups target matches {name} (targets: {listed}), so vLLM builds UnquantizedFusedMoEMethod")
    return _ct_scheme(q, group, group_label or "", name)


def _ct_key(q: QuantFormat, group: Mapping[str, Any] | None) -> str:
    if group is None:
        return "null"
    fmt = group.get("format") or q.config.get("format")
    return json.dumps([group.get("weights"), group.get("input_activations"), group.get("output_activations"), fmt], sort_keys=True, default=str)


def _ct_scheme(q: QuantFormat, group: Mapping[str, Any], label: str, name: str) -> ExpertsQuant:
    where = f".config_groups.{label.split(' ')[0]}"
    w = group.get("weights")
    a = group.get("input_activations")
    if not isinstance(w, dict):
        return ExpertsQuant(UNQUANTIZED, None, excluded_by="(group has no weights)", evidence=f"{q.source}: group {label} quantizes no weights: unquantized")
    if a is not None and not isinstance(a, dict):
        raise q.fail(f"{where}.input_activations", "must be an object or null", a)
    fmt = group.get("format") or q.config.get("format")
    wt, wb, ws, wg = w.get("type"), w.get("num_bits"), w.get("strategy"), w.get("group_size")
    sym = w.get("symmetric", True) is not False
    actorder = w.get("actorder")
    if actorder is not None and actorder not in ("group", "weight", "static", "dynamic"):
        raise q.fail(f"{where}.weights.actorder", "not a compressed-tensors activation ordering", actorder, [None, "group", "weight", "static", "dynamic"])
    order = actorder or "none"  # the MoEConfig act_order of int weights (refused orderings never get here from 0.30.0)
    src = f"{q.source}: {label}"
    at, ab, ast, ag, adyn = (a or {}).get("type"), (a or {}).get("num_bits"), (a or {}).get("strategy"), (a or {}).get("group_size"), (a or {}).get("dynamic")
    is_nvfp4 = lambda t, b, s, g, sy: t == "float" and b == 4 and s == "tensor_group" and g == 16 and sy  # noqa: E731
    is_mxfp4 = wt == "float" and wb == 4 and ws == "group" and wg == 32 and sym
    # order of CompressedTensorsMoEMethod.get_moe_method
    if is_mxfp4 and a and at == "float" and ab == 8 and not w.get("dynamic") and adyn and ast in ("token", "group") and (a.get("symmetric", True) is not False) and q.release.holds("ct_w4a8_mxfp4_method"):
        act = "fp8_dynamic_group128" if ast == "group" and ag == 128 else ("fp8_dynamic_token" if ast == "token" else None)
        if act is None:
            raise q.fail(f"{where}.input_activations.group_size", "FP8 activation groups other than 128 have no quant key in our vocabulary", ag, [128])
        return ExpertsQuant(QuantScheme("mxfp4_static", act), _fam(q), weight_group_size=32, evidence=f"{src}: MXFP4 weights with dynamic FP8 {ast} activations (CompressedTensorsW4A8Mxfp4MoEMethod)")
    if is_mxfp4:
        why = "" if not a or q.release.holds("ct_w4a8_mxfp4_method") else f"; {q.release.words} has no W4A8 MXFP4 method (0.32.0 adds CompressedTensorsW4A8Mxfp4MoEMethod), so the activations are not keyed"
        return ExpertsQuant(SCHEMES["mxfp4_w16"], _fam(q), weight_group_size=32, evidence=f"{src}: MXFP4 weights, group 32 (CompressedTensorsW4A4Mxfp4MoEMethod; the oracle gets no activation key{why})")
    if wt == "float" and wb == 8 and ws == "group" and wg == 32 and sym and w.get("scale_dtype") in ("torch.uint8", "uint8"):
        return ExpertsQuant(SCHEMES["mxfp8"], _fam(q), weight_group_size=32, evidence=f"{src}: MXFP8 weights (CompressedTensorsW8A8Mxfp8MoEMethod)")
    if ws in ("channel", "group") and not a and not w.get("dynamic"):
        if wb not in (4, 8) or fmt != "pack-quantized":
            raise q.fail(f"{where}.weights", "For Fused MoE layers, only format pack-quantized and bits 4 or 8 are supported (compressed-tensors WNA16)", {"format": fmt, "num_bits": wb}, {"format": "pack-quantized", "num_bits": [4, 8]})
        gs = -1 if ws == "channel" else wg
        ordered = f", actorder {actorder}" if actorder else ""
        if wb == 8:
            return ExpertsQuant(SCHEMES["int8_w16"], _fam(q), weight_group_size=gs, evidence=f"{src}: INT8 weight-only, group {gs}{ordered} (CompressedTensorsWNA16MoEMethod)", act_order=order)
        key = ("int4_g32" if gs == 32 else "int4") + ("" if sym else "_asym") + "_w16"
        return ExpertsQuant(SCHEMES[key], _fam(q), weight_group_size=gs, evidence=f"{src}: INT4 weight-only, {'symmetric' if sym else 'asymmetric'}, group {gs}{ordered} (CompressedTensorsWNA16MoEMethod)", act_order=order)
    if is_nvfp4(wt, wb, ws, wg, sym):
        if a is None:
            return ExpertsQuant(SCHEMES["nvfp4_w16"], _fam(q), weight_group_size=16, evidence=f"{src}: NVFP4 weights, no input activations (CompressedTensorsW4A4Nvfp4MoEMethod, use_a16)")
        if not is_nvfp4(at, ab, ast, ag, a.get("symmetric", True) is not False):
            raise q.fail(f"{where}.input_activations", "For NVFP4 weights, input quantization must also be NVFP4 format or None for NVFP4A16", dict(a), None)
        return ExpertsQuant(SCHEMES["nvfp4"], _fam(q), weight_group_size=16, evidence=f"{src}: NVFP4 weights and activations (CompressedTensorsW4A4Nvfp4MoEMethod)")
    if wt == "float" and wb == 8 and a and at == "float" and sym and not w.get("dynamic") and ws in ("tensor", "channel", "block") and (adyn or (a.get("symmetric", True) is not False and ast == "tensor")):
        return _ct_fp8(q, w, a, src, where)
    if wt == "int" and wb == 8 and a and ab == 8 and ws in ("tensor", "channel") and ast == "token" and sym and not w.get("dynamic") and adyn:
        return ExpertsQuant(SCHEMES["int8_channel_token"], _fam(q), evidence=f"{src}: INT8 W8A8 with dynamic per-token activations (CompressedTensorsW8A8Int8MoEMethod: channel weight key)")
    if wt == "int" and wb == 4 and a and at == "float" and ab == 8 and ws == "group" and ast == "token" and sym and (a.get("symmetric", True) is not False) and adyn and not w.get("dynamic"):
        return ExpertsQuant(SCHEMES["w4a8_fp8"], _fam(q), weight_group_size=wg, evidence=f"{src}: INT4 group weights with dynamic FP8 per-token activations (CompressedTensorsW4A8Fp8MoEMethod)", act_order=order)
    if wt == "int" and wb == 4 and a and at == "int" and ab == 8 and ws in ("group", "channel") and ast == "token" and sym and adyn and not w.get("dynamic"):
        gs = -1 if ws == "channel" else wg
        key = {-1: "w4a8_int8_channel", 128: "w4a8_int8_group128", 64: "w4a8_int8_group64", 32: "w4a8_int8_group32"}.get(gs)
        if key is None:
            raise q.fail(f"{where}.weights.group_size", "W4A8-INT8 group size not in the vocabulary", gs, [-1, 32, 64, 128])
        return ExpertsQuant(SCHEMES[key], _fam(q), weight_group_size=gs, evidence=f"{src}: INT4 weights with dynamic INT8 per-token activations (CompressedTensorsW4A8Int8MoEMethod)", act_order=order)
    raise q.fail(where, "Unsupported FusedMoe scheme (compressed-tensors get_moe_method raises for these experts)", {"weights": {k: w.get(k) for k in ("type", "num_bits", "strategy", "group_size")}, "input_activations": None if a is None else {k: a.get(k) for k in ("type", "num_bits", "strategy", "dynamic")}}, None)


def _ct_fp8(q: QuantFormat, w: Mapping[str, Any], a: Mapping[str, Any], src: str, where: str) -> ExpertsQuant:
    """``CompressedTensorsW8A8Fp8MoEMethod``: tensor/tensor, channel/token or block weights."""
    ws, ast, adyn = w.get("strategy"), a.get("strategy"), bool(a.get("dynamic"))
    if ws == "block":
        b = _fp8_block(q, w.get("block_structure"), f"{where}.weights.block_structure")
        return ExpertsQuant(SCHEMES["fp8_block"], _fam(q), weight_block_size=b, evidence=f"{src}: FP8 block {list(b)} weights, dynamic per-group activations (CompressedTensorsW8A8Fp8MoEMethod)")
    if ws == "tensor" and ast == "tensor":
        # Upstream hands a dynamic per-tensor activation to the oracle as kFp8Dynamic128Sym
        # (reference §5.18); as hf.py always did, we keep the key the checkpoint declares.
        scheme = SCHEMES["fp8_tensor_dynamic"] if adyn else SCHEMES["fp8_tensor_static"]
        return ExpertsQuant(scheme, _fam(q), evidence=f"{src}: FP8 per-tensor weights, {'dynamic' if adyn else 'static'} per-tensor activations (CompressedTensorsW8A8Fp8MoEMethod)")
    if ws == "channel" and ast == "token":
        if not adyn:
            raise q.fail(f"{where}.input_activations.dynamic", "For FP8 Fused MoE layer, we require either per tensor or channelwise, dynamic per token quantization", False, [True])
        return ExpertsQuant(SCHEMES["fp8_channel_token"], _fam(q), evidence=f"{src}: FP8 per-channel weights, dynamic per-token activations (CompressedTensorsW8A8Fp8MoEMethod)")
    raise q.fail(f"{where}.weights.strategy", "CompressedTensorsW8A8Fp8MoEMethod accepts tensor weights with tensor activations, channel weights with token activations, or block weights (anything else fails its assertion)", {"weights": ws, "input_activations": ast}, [["tensor", "tensor"], ["channel", "token"], ["block", "*"]])


# --- ModelOpt ----------------------------------------------------------------------------


def _modelopt_exclude(c: Mapping[str, Any], rel: ReaderRelease) -> list[str]:
    """``ModelOptQuantConfigBase.from_config``: a legacy document's ``quantization.exclude_modules``;
    a flat (config.json) document's ``ignore``, and from 0.33.0 its ``exclude_modules`` when it has
    no ``ignore`` (fact ``modelopt_flat_exclude_modules``)."""
    inner = c.get("quantization")
    if isinstance(inner, dict):
        return _list(inner.get("exclude_modules"))
    if rel.holds("modelopt_flat_exclude_modules"):
        return _list(c.get("ignore", c.get("exclude_modules", [])))
    return _list(c.get("ignore", []))


def _modelopt(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/modelopt.py ``ModelOptQuantConfigBase.get_quant_method`` (FP8, NVFP4, MXFP8)."""
    c = q.config
    algo = _modelopt_algo(c)
    if not algo:
        raise q.fail(".quant_algo", "Missing 'quant_algo' in quantization config (ModelOpt)", None, sorted(_MODELOPT_LEGACY_ALGOS))
    hit = m.modelopt_excluded(module, _modelopt_exclude(c, q.release))
    if hit is None and "ignore" not in c and not isinstance(c.get("quantization"), dict) and m.modelopt_excluded(module, _list(c.get("exclude_modules"))) is not None:
        notes: tuple[str, ...] = (f"exclude_modules names these experts, but {q.release.words} reads only 'ignore' in a config.json ModelOpt document (exclude_modules from 0.33.0): they stay quantized",)
    else:
        notes = ()
    if hit is not None:
        return _excluded(q, hit, "ModelOpt is_layer_excluded: exact, substring, then fnmatch")
    if any(s in module for s in ("vision_tower", "vision_model", "vit_large_projector")):
        return _excluded(q, "(vision module)", "ModelOpt leaves vision modules unquantized")
    out = _modelopt_scheme(q, algo)
    return replace(out, notes=out.notes + notes) if notes else out


def _modelopt_scheme(q: QuantFormat, algo: str) -> ExpertsQuant:
    c = q.config
    if q.method == "modelopt":
        if algo not in _MODELOPT_FP8_ALGOS:
            raise q.fail(".quant_algo", "Unsupported ModelOpt FP8 quant_algo for vLLM", algo, list(_MODELOPT_FP8_ALGOS))
        return ExpertsQuant(SCHEMES["fp8_tensor_static"], _fam(q), evidence=f"{q.source}: ModelOpt {algo}: ModelOptFp8MoEMethod (static per-tensor weights and activations)")
    if q.method == "modelopt_fp4":
        if algo not in ("NVFP4", "W4A16_NVFP4"):
            raise q.fail(".quant_algo", "Unsupported ModelOpt NVFP4 quant_algo", algo, ["NVFP4", "W4A16_NVFP4"])
        groups = c.get("config_groups")
        weight_only = algo == "W4A16_NVFP4" or (isinstance(groups, dict) and groups and all(isinstance(g, dict) and g.get("input_activations") is None for g in groups.values()))
        if weight_only:
            why = "W4A16_NVFP4" if algo == "W4A16_NVFP4" else "NVFP4 with no input_activations in any config group: routed through W4A16"
            return ExpertsQuant(SCHEMES["nvfp4_w16"], _fam(q), weight_group_size=16, evidence=f"{q.source}: ModelOpt {why} (ModelOptNvFp4FusedMoE, use_a16)")
        return ExpertsQuant(SCHEMES["nvfp4"], _fam(q), weight_group_size=16, evidence=f"{q.source}: ModelOpt NVFP4 (ModelOptNvFp4FusedMoE, W4A4)")
    return ExpertsQuant(SCHEMES["mxfp8"], _fam(q), weight_group_size=32, evidence=f"{q.source}: ModelOpt MXFP8 (ModelOptMxFp8FusedMoE)")


def _mixed_candidates(prefix: str) -> list[str]:
    out = [prefix]
    if prefix.startswith("language_model.model."):
        out.append("model.language_model." + prefix[len("language_model.model."):])
    elif prefix.startswith("model.language_model."):
        out.append("language_model.model." + prefix[len("model.language_model."):])
    return out


def _mixed_algo(layers: Mapping[str, Any], prefix: str) -> tuple[str, str] | None:
    """``ModelOptMixedPrecisionConfig._resolve_quant_algo`` for a RoutedExperts prefix: (key, algo)."""
    def algo(key: str) -> str:
        info = layers[key]
        return str(info.get("quant_algo", "") if isinstance(info, dict) else "").upper()

    for cand in _mixed_candidates(prefix):
        if cand in layers:
            return cand, algo(cand)
    for cand in _mixed_candidates(prefix):
        for key in layers:
            if key.startswith(cand + "."):
                return key, algo(key)
    if prefix.endswith(".experts"):
        parent = prefix.rsplit(".experts", 1)[0] + "."
        for key in layers:
            if key.startswith(parent):
                return key, algo(key)
    return None


_B12X_BLOCK_CODECS = {"IQ2_XS": (256, 74), "IQ2_XXS": (256, 66), "Q8_0": (32, 34)}
"""vllm/utils/b12x.py ``B12X_BLOCK_CODECS`` (0.32.0-0.33.0): codec -> (group_size, block_payload_bytes)."""


def _mixed_layer_checks(q: QuantFormat, layers: Mapping[str, Any]) -> None:
    """``ModelOptMixedPrecisionConfig.__init__``: one group size for every block-FP8 layer (from
    0.30.0, fact ``modelopt_mixed_block_fp8_moe``) and the B12X codec contract of every codec
    layer (from 0.32.0, fact ``modelopt_mixed_b12x_codecs``); any layer, not only the experts."""
    recipes = {k: v for k, v in layers.items() if isinstance(v, dict)}
    if q.release.holds("modelopt_mixed_block_fp8_moe"):
        sizes = {int(i.get("group_size", 128)) for i in recipes.values() if str(i.get("quant_algo", "")).upper() in _BLOCK_FP8_MOE_ALGOS}
        if len(sizes) > 1:
            raise q.fail(".quantized_layers", f"{q.release.words} refuses the checkpoint: 'MIXED_PRECISION currently requires all block-FP8 MoE layers to use one group_size'", sorted(sizes), None)
    if q.release.holds("modelopt_mixed_b12x_codecs"):
        for prefix, recipe in recipes.items():
            codec = str(recipe.get("quant_algo", "")).upper()
            if codec in _B12X_BLOCK_CODECS:
                want = {"group_size": _B12X_BLOCK_CODECS[codec][0], "block_payload_bytes": _B12X_BLOCK_CODECS[codec][1], "packing": "ggml"}
                if any(recipe.get(k) != v for k, v in want.items()):
                    raise q.fail(f".quantized_layers.{prefix}", f"{q.release.words} refuses the checkpoint: 'unsupported {codec} block contract'", dict(recipe), want)


def _modelopt_mixed(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/modelopt.py ``ModelOptMixedPrecisionConfig.get_quant_method`` for RoutedExperts: block-FP8
    experts get Fp8MoEMethod from 0.30.0 (before: no MoE method); B12X codec experts get
    ModelOptBlockQuantMoEMethod from 0.32.0 (before: no MoE method), which moe-oracle does not model."""
    c = q.config
    inner = c.get("quantization")
    layers = (inner.get("quantized_layers") if isinstance(inner, dict) else c.get("quantized_layers")) or {}
    if not isinstance(layers, dict) or not layers:
        raise q.fail(".quantized_layers", "MIXED_PRECISION quant_algo requires a non-empty 'quantized_layers' mapping in the quantization config", layers or None, None)
    _mixed_layer_checks(q, layers)
    hit = m.modelopt_excluded(module, _modelopt_exclude(c, q.release))
    if hit is not None:
        return _excluded(q, hit, "ModelOpt is_layer_excluded: exact, substring, then fnmatch")
    found = _mixed_algo(layers, module)
    if found is None:
        return ExpertsQuant(UNQUANTIZED, None, excluded_by="(not in quantized_layers)", evidence=f"{q.source}: MIXED_PRECISION and no quantized_layers entry for {module}: the layer is left unquantized")
    key, algo = found
    src = f"{q.source}: MIXED_PRECISION quantized_layers[{key!r}] = {algo}"
    if algo in _B12X_BLOCK_CODECS and q.release.holds("modelopt_mixed_b12x_codecs"):
        raise q.fail(f".quantized_layers.{key}.quant_algo", f"not modelled for {q.release.words}: B12X block-codec experts run ModelOptBlockQuantMoEMethod (Q/modelopt_block_quant.py), whose kernel choice moe-oracle does not model (no quant key for {algo} weights)", algo, None)
    if algo in _BLOCK_FP8_MOE_ALGOS and q.release.holds("modelopt_mixed_block_fp8_moe"):
        sizes = {int(i.get("group_size", 128)) for i in layers.values() if isinstance(i, dict) and str(i.get("quant_algo", "")).upper() in _BLOCK_FP8_MOE_ALGOS}
        b = next(iter(sizes))
        return ExpertsQuant(SCHEMES["fp8_block"], "fp8", weight_block_size=(b, b), evidence=f"{src} (Fp8MoEMethod with [{b}, {b}] blocks)")
    if algo == "FP8":
        return ExpertsQuant(SCHEMES["fp8_tensor_static"], _fam(q), evidence=f"{src} (ModelOptFp8MoEMethod)")
    if algo == "NVFP4":
        return ExpertsQuant(SCHEMES["nvfp4"], _fam(q), weight_group_size=16, evidence=f"{src} (ModelOptNvFp4FusedMoE, W4A4)")
    if algo == "W4A16_NVFP4":
        return ExpertsQuant(SCHEMES["nvfp4_w16"], _fam(q), weight_group_size=16, evidence=f"{src} (ModelOptNvFp4FusedMoE, use_a16)")
    if algo == "MXFP8":
        return ExpertsQuant(SCHEMES["mxfp8"], _fam(q), weight_group_size=32, evidence=f"{src} (ModelOptMxFp8FusedMoE)")
    return ExpertsQuant(UNQUANTIZED, None, excluded_by=f"(algo {algo} has no MoE method)", evidence=f"{src}: {q.release.words} builds no MoE method for this algorithm, so the experts run unquantized")


# --- Quark -------------------------------------------------------------------------------


def _quark(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/quark/quark.py ``get_quant_method_target`` and quark_moe.py ``get_moe_method_target``
    (0.30.0+); vLLM 0.29.0's ``QuarkMoEMethod.get_moe_method`` reads the scheme dictionaries itself
    (:func:`_quark_v0_29`). W4A16 INT4 experts need 0.31.0, OCP MXFP8 experts 0.33.0 (facts
    ``quark_w4a16_int4_moe``, ``quark_mxfp8_moe``); OCP MXFP4 experts with dynamic FP8 or MXFP8
    activations are refused by every release (``QuarkOCP_MX_MoEMethod``)."""
    c = q.config
    if not isinstance(c.get("export"), dict):
        raise q.fail(".export", "The export key should be included in the configurations of Quark quantized model", c.get("export"), None)
    hit = m.quark_should_ignore(module, _list(c.get("exclude")))
    if hit is not None:
        return _excluded(q, hit, "Quark should_ignore_layer with check_children: a listed child ignores the whole MoE layer")
    layer_cfgs = c.get("layer_quant_config") or {}
    matched = m.quark_layer_config(module, layer_cfgs) if isinstance(layer_cfgs, dict) else None
    cfg = matched[1] if matched else c.get("global_quant_config")
    label = f"layer_quant_config[{matched[0]!r}]" if matched else "global_quant_config"
    if not isinstance(cfg, dict):
        raise q.fail(f".{label}", "must be an object", cfg)
    if cfg.get("output_tensors") or cfg.get("bias"):
        raise q.fail(f".{label}", "Currently, Quark models with output_tensors and bias quantized are not supported", {"output_tensors": cfg.get("output_tensors"), "bias": cfg.get("bias")}, None)
    w, a = cfg.get("weight"), cfg.get("input_tensors")
    src = f"{q.source}: quark {label}"
    if isinstance(w, list) or isinstance(a, list):
        if (isinstance(w, list) and len(w) > 1) or (isinstance(a, list) and len(a) > 1):
            raise q.fail(f".{label}.weight", "two-level Quark schemes (W4A8-FP8, NVFP4 lists) are not read by moe-oracle; we read FP8, OCP MX (MXFP4/MXFP8), INT8 and W4A16 INT4", w, None)
        if not q.release.holds("quark_quant_key_dispatch"):
            raise q.fail(f".{label}.weight", f"not modelled for {q.release.words}: its Quark MoE method reads a one-element scheme list as a dictionary (unwrapping starts in 0.30.0)", w, None)
        w = w[0] if isinstance(w, list) else w
        a = a[0] if isinstance(a, list) else a
    if not isinstance(w, dict):
        raise q.fail(f".{label}.weight", "Unsupported FusedMoe scheme (no weight quantization)", w, None)
    if not q.release.holds("quark_quant_key_dispatch"):
        return _quark_v0_29(q, w, a, label, src)
    wd, wq = w.get("dtype"), w.get("qscheme")
    if wd == "fp8_e4m3" and isinstance(a, dict) and a.get("dtype") == "fp8_e4m3" and not w.get("is_dynamic"):
        block = list(w.get("block_size") or [])
        if wq == "per_block" and block == [128, 128] and w.get("symmetric") is True:
            if not (a.get("is_dynamic") and a.get("qscheme") == "per_group" and a.get("group_size") == 128 and a.get("symmetric") is True):
                raise q.fail(f".{label}.input_tensors", "Unsupported FusedMoe scheme: block FP8 weights need dynamic symmetric per_group-128 FP8 inputs", dict(a), None)
            if w.get("scale_type") == "float8_e8m0fnu":
                raise q.fail(f".{label}.weight.scale_type", "Unsupported weight quant key: QuarkW8A8Fp8MoEMethod does not take kFp8Static128BlockE8M0Sym", "float8_e8m0fnu", None)
            return ExpertsQuant(SCHEMES["fp8_block"], _fam(q), weight_block_size=(128, 128), evidence=f"{src}: FP8 [128, 128] blocks, dynamic per-group activations (QuarkW8A8Fp8MoEMethod)")
        if wq in ("per_tensor", "per_channel"):
            wkey = "fp8_static_channel" if wq == "per_channel" else "fp8_static_tensor"
            if a.get("is_dynamic"):
                akey = "fp8_dynamic_token" if a.get("qscheme") == "per_channel" else "fp8_dynamic_tensor"
            elif a.get("qscheme") == "per_tensor":
                akey = "fp8_static_tensor"
            else:
                raise q.fail(f".{label}.input_tensors.qscheme", "Unsupported FusedMoe scheme: static FP8 inputs must be per_tensor", a.get("qscheme"), ["per_tensor"])
            return ExpertsQuant(QuantScheme(wkey, akey), _fam(q), evidence=f"{src}: FP8 {wq} weights, {'dynamic' if a.get('is_dynamic') else 'static'} {a.get('qscheme')} inputs (QuarkW8A8Fp8MoEMethod)")
    if isinstance(wd, str) and wd.replace("fp", "mxfp") in ("mxfp4", "mxfp8_e4m3", "mxfp6_e3m2", "mxfp6_e2m3"):
        mx = wd.replace("fp", "mxfp")
        ok = (wq == "per_group" and w.get("group_size") == 32 and w.get("scale_format") == "e8m0") or (mx == "mxfp8_e4m3" and wq == "per_block" and len(w.get("block_size") or []) == 2 and (w.get("block_size") or [0, 0])[1] == 32)
        if ok:
            if mx.startswith("mxfp6"):
                raise q.fail(f".{label}.weight.dtype", "OCP MXFP6 has no quant key in our vocabulary (we read MXFP4 and MXFP8 weights)", wd, ["fp4", "fp8_e4m3"])
            if mx == "mxfp8_e4m3" and not q.release.holds("quark_mxfp8_moe"):
                raise q.fail(f".{label}.weight.dtype", f"{q.release.words} refuses Quark OCP MXFP8 experts (QuarkOCP_MX_MoEMethod: 'Unsupported OCP MX dtype combination for MoE'; 0.33.0 adds QuarkW8A8Mxfp8MoEMethod)", wd, ["fp4"])
            wkey = "mxfp4_static" if mx == "mxfp4" else "mxfp8_static"
            akey = _quark_mx_activation(q, a, label)
            if wkey == "mxfp4_static" and akey in ("fp8_dynamic_tensor", "mxfp8_dynamic"):
                why = "'QuarkOCP_MX_MoEMethod with dynamic input scales is currently not implemented'" if akey == "fp8_dynamic_tensor" else "'Unsupported OCP MX dtype combination for MoE' (MXFP8 activations with MXFP4 weights)"
                raise q.fail(f".{label}.input_tensors", f"{q.release.words} refuses OCP MXFP4 experts with dynamic FP8 activations: {why}; it runs MXFP4 with no, static per-tensor FP8 or dynamic MXFP4 activations", dict(a), None)
            scheme = QuantScheme(wkey, akey)
            cls = "QuarkOCP_MX_MoEMethod" if wkey == "mxfp4_static" else "QuarkW8A8Mxfp8MoEMethod"
            return ExpertsQuant(scheme, _fam(q), weight_group_size=32, evidence=f"{src}: OCP {mx.upper()} weights, activations {akey or 'bf16'} ({cls})")
    if wd == "int8" and isinstance(a, dict) and a.get("dtype") == "int8" and wq in ("per_tensor", "per_channel") and w.get("symmetric") is True:
        static_in = a.get("qscheme") == "per_tensor" and not a.get("is_dynamic")
        dynamic_in = a.get("qscheme") == "per_channel" and a.get("is_dynamic") is True
        if (static_in and not w.get("is_dynamic")) or dynamic_in:
            wkey = "int8_static_channel" if wq == "per_channel" else "int8_static_tensor"
            akey = "int8_static_tensor" if static_in else ("int8_dynamic_token" if wq == "per_channel" else "int8_dynamic_tensor")
            asym = a.get("symmetric") is not True
            if asym:  # kInt8StaticTensorAsym / kInt8DynamicTokenAsym / kInt8DynamicTensorAsym
                akey += "_asym"
            return ExpertsQuant(QuantScheme(wkey, akey), _fam(q), evidence=f"{src}: INT8 W8A8{', asymmetric activations' if asym else ''} (QuarkW8A8Int8MoEMethod)")
    if wd in ("int4", "uint4") and a is None:
        if not q.release.holds("quark_w4a16_int4_moe"):
            raise q.fail(f".{label}.weight.dtype", f"{q.release.words} refuses Quark W4A16 INT4 experts ('Unsupported FusedMoe scheme'; 0.31.0 adds QuarkW4A16Int4MoEMethod)", wd, None)
        gs, sym = w.get("group_size"), w.get("symmetric")
        if not isinstance(gs, int) or gs <= 0 or not isinstance(sym, bool):
            raise q.fail(f".{label}.weight", "Quark W4A16 INT4/UINT4 configs must specify a positive weight.group_size and a boolean weight.symmetric", {"group_size": gs, "symmetric": sym}, None)
        key = ("int4_g32" if gs == 32 else "int4") + ("" if sym else "_asym") + "_w16"
        return ExpertsQuant(SCHEMES[key], _fam(q), weight_group_size=gs, evidence=f"{src}: W4A16 INT4, group {gs} (QuarkW4A16Int4MoEMethod)")
    raise q.fail(f".{label}", "Unsupported FusedMoe scheme (Quark get_moe_method_target raises); we read FP8 tensor/channel/block, OCP MXFP4/MXFP8, INT8 W8A8 and W4A16 INT4", {"weight": {k: w.get(k) for k in ("dtype", "qscheme", "group_size")}, "input_tensors": a if a is None else {k: a.get(k) for k in ("dtype", "qscheme", "is_dynamic")}}, None)


def _quark_v0_29(q: QuantFormat, w: Mapping[str, Any], a: Any, label: str, src: str) -> ExpertsQuant:
    """vLLM 0.29.0 Q/quark/quark_moe.py ``QuarkMoEMethod.get_moe_method`` (fact
    ``quark_quant_key_dispatch`` does not hold): ``_is_fp8_w8a8`` -> ``QuarkW8A8Fp8MoEMethod``
    (per-tensor or per-channel weights and activations alike; no block FP8), OCP MX ->
    ``QuarkOCP_MX_MoEMethod`` (MXFP4 weights), ``_is_static_tensor_w8a8`` /
    ``_is_dynamic_per_token_w8a8`` -> ``QuarkW8A8Int8MoEMethod`` (dynamic inputs select with the
    symmetric keys; static inputs run the legacy fused_experts path, outside any oracle: not
    modelled), else "Unsupported FusedMoe scheme"."""
    rel = q.release.words
    wd, wq = w.get("dtype"), w.get("qscheme")
    a = a if isinstance(a, dict) else None
    ad, aq, adyn = (a or {}).get("dtype"), (a or {}).get("qscheme"), bool((a or {}).get("is_dynamic"))
    if wd == "fp8_e4m3" and ad == "fp8_e4m3" and not w.get("is_dynamic") and wq in ("per_tensor", "per_channel", "per_block"):
        if wq == "per_tensor" and aq == "per_tensor":
            akey = "fp8_dynamic_tensor" if adyn else "fp8_static_tensor"
            return ExpertsQuant(QuantScheme("fp8_static_tensor", akey), _fam(q), evidence=f"{src}: FP8 per_tensor weights, {'dynamic' if adyn else 'static'} per_tensor inputs (QuarkW8A8Fp8MoEMethod, {rel})")
        if wq == "per_channel" and aq == "per_channel" and adyn:
            return ExpertsQuant(SCHEMES["fp8_channel_token"], _fam(q), evidence=f"{src}: FP8 per_channel weights, dynamic per-token inputs (QuarkW8A8Fp8MoEMethod, {rel})")
        raise q.fail(f".{label}.weight.qscheme", f"{rel} refuses these FP8 experts (QuarkW8A8Fp8MoEMethod: only per-tensor and per-channel scales for weights and activations alike, per-channel with dynamic inputs; block FP8 experts need 0.30.0)", {"weight": wq, "input_tensors": aq, "input_is_dynamic": adyn}, [["per_tensor", "per_tensor"], ["per_channel", "per_channel (dynamic)"]])
    if isinstance(wd, str) and wd in ("fp4", "fp6_e3m2", "fp6_e2m3") and wq == "per_group" and w.get("group_size") == 32 and w.get("scale_format") == "e8m0":
        if wd != "fp4":
            raise q.fail(f".{label}.weight.dtype", "OCP MXFP6 has no quant key in our vocabulary (we read MXFP4 and MXFP8 weights)", wd, ["fp4"])
        if a is None:
            return ExpertsQuant(SCHEMES["mxfp4_w16"], _fam(q), weight_group_size=32, evidence=f"{src}: OCP MXFP4 weights, no input quantization (QuarkOCP_MX_MoEMethod, {rel})")
        if ad == "fp8_e4m3" and not adyn:
            return ExpertsQuant(QuantScheme("mxfp4_static", "fp8_static_tensor"), _fam(q), weight_group_size=32, evidence=f"{src}: OCP MXFP4 weights, static FP8 inputs (QuarkOCP_MX_MoEMethod, {rel})")
        if ad == "fp4" and adyn:
            return ExpertsQuant(QuantScheme("mxfp4_static", "mxfp4_dynamic"), _fam(q), weight_group_size=32, evidence=f"{src}: OCP MXFP4 weights, dynamic MXFP4 inputs (QuarkOCP_MX_MoEMethod, {rel})")
        raise q.fail(f".{label}.input_tensors", f"{rel} refuses OCP MXFP4 experts with these inputs (QuarkOCP_MX_MoEMethod runs no, static FP8 or dynamic MXFP4 inputs)", dict(a), None)
    if wd == "int8" and ad == "int8" and wq in ("per_tensor", "per_channel") and w.get("symmetric") is True:
        if aq == "per_channel" and (a or {}).get("is_dynamic") is True:
            scheme = SCHEMES["int8_channel_token"] if wq == "per_channel" else QuantScheme("int8_static_tensor", "int8_dynamic_tensor")
            return ExpertsQuant(scheme, _fam(q), evidence=f"{src}: INT8 W8A8, dynamic inputs (QuarkW8A8Int8MoEMethod, {rel}: symmetric keys whatever the input symmetry)")
        if aq == "per_tensor" and not adyn and not w.get("is_dynamic"):
            raise q.fail(f".{label}.input_tensors.is_dynamic", f"not modelled for {rel}: static-input INT8 experts run QuarkW8A8Int8MoEMethod's legacy fused_experts path, which asks no oracle", False, [True])
    raise q.fail(f".{label}", f"{rel} refuses these experts: 'Unsupported FusedMoe scheme' (QuarkMoEMethod.get_moe_method); moe-oracle reads FP8 per-tensor/per-channel, OCP MXFP4 and dynamic INT8 W8A8 there", {"weight": {k: w.get(k) for k in ("dtype", "qscheme", "group_size")}, "input_tensors": a if a is None else {k: a.get(k) for k in ("dtype", "qscheme", "is_dynamic")}}, None)


def _quark_mx_activation(q: QuantFormat, a: Any, label: str) -> str | None:
    """Quark ``_is_w_ocp_mx_a_x(allow_static_fp8=True)`` activation key."""
    if a is None:
        return None
    if not isinstance(a, dict):
        raise q.fail(f".{label}.input_tensors", "must be an object or null", a)
    if not a.get("is_dynamic"):
        if a.get("dtype") == "fp8_e4m3" and a.get("qscheme") == "per_tensor" and a.get("symmetric") is True:
            return "fp8_static_tensor"
        raise q.fail(f".{label}.input_tensors", "Quark OCP MX quantization is incompatible with static input scales (other than symmetric per-tensor FP8)", dict(a), None)
    if a.get("dtype") == "fp8_e4m3" and a.get("qscheme") == "per_group" and a.get("group_size") == 32:
        return "mxfp8_dynamic"
    if a.get("dtype") == "fp8_e4m3":
        return "fp8_dynamic_tensor"
    if a.get("dtype") == "fp4":
        return "mxfp4_dynamic"
    raise q.fail(f".{label}.input_tensors.dtype", "activation dtype not in Quark's OCP MX map (or not in our vocabulary)", a.get("dtype"), ["fp8_e4m3", "fp4"])


# --- GPTQ / AWQ / moe_wna16 --------------------------------------------------------------


def _require(q: QuantFormat, keys: tuple[str, ...], who: str) -> None:
    missing = [k for k in keys if k not in q.config]
    if missing:
        raise q.fail(f".{missing[0]}", f"{who} requires {', '.join(keys)}", None, list(keys))


def _gptq_desc_act(q: QuantFormat, desc: Any, gs: Any, dynamic: Mapping[str, Any]) -> None:
    """``normalize_and_validate_gptq_desc_act`` (Q/utils/gptq_utils.py, 0.30.0+, fact
    ``gptq_desc_act_refused``): desc_act with groups, in the document or a positive dynamic rule,
    refuses the checkpoint; vLLM 0.29.0 runs it (activation reordering with g_idx)."""
    if not q.release.holds("gptq_desc_act_refused"):
        return
    if desc and gs != -1:
        raise q.fail(".desc_act", f"{q.release.words} refuses GPTQ group activation ordering: 'desc_act=True is no longer supported' (vLLM 0.29.0 still runs it)", desc, [False])
    for pattern, ov in dynamic.items():
        if isinstance(pattern, str) and not pattern.startswith("-:") and isinstance(ov, dict) and ov.get("desc_act", desc) and ov.get("group_size", gs) != -1:
            raise q.fail(f".dynamic.{pattern}", f"{q.release.words} refuses GPTQ group activation ordering enabled by a dynamic rule (vLLM 0.29.0 still runs it)", ov, None)


def _gptq(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/auto_gptq.py ``AutoGPTQConfig``: ``dynamic`` rules, desc_act refusal (0.30.0+), MoE via
    Marlin (AutoGPTQMoEMethod) when the shape allows it, else MoeWNA16 (decided by the tables from
    ``weight_group_size``, ``act_order`` and the per-partition intermediate size). desc_act with
    one group per channel is a no-op (``act_order`` ``none``), as ``AutoGPTQConfig`` normalizes it."""
    _require(q, ("bits", "group_size", "desc_act", "sym"), "AutoGPTQConfig")
    c = q.config
    bits, gs, desc, sym = c["bits"], c["group_size"], c["desc_act"], c["sym"]
    dynamic = c.get("dynamic") or {}
    if not isinstance(dynamic, dict):
        raise q.fail(".dynamic", "must be an object of regex -> overrides", dynamic)
    _gptq_desc_act(q, desc, gs, dynamic)
    if desc and gs == -1:
        desc = False  # AutoGPTQConfig.__init__: one group per output channel
    rule = m.gptq_dynamic_rule(module, dynamic)
    note = ()
    if rule is not None and rule[1] is False:
        return _excluded(q, rule[0], "GPTQModel dynamic '-:' rule")
    if rule is not None:
        ov = rule[1] if isinstance(rule[1], dict) else {}
        bits, gs, sym = ov.get("bits", bits), ov.get("group_size", gs), ov.get("sym", sym)
        desc = ov["desc_act"] if isinstance(ov.get("desc_act"), bool) else desc  # override_config (0.29.0's get_moe_quant_method)
        note = (f"dynamic rule {rule[0]!r} overrides {sorted(ov)}",)
    if (bits, sym) not in ((4, True), (8, True)):
        raise q.fail(".bits", "Unsupported quantization config for AutoGPTQ MoE (bits, sym)", {"bits": bits, "sym": sym}, [{"bits": 4, "sym": True}, {"bits": 8, "sym": True}])
    scheme = SCHEMES["int8_w16"] if bits == 8 else SCHEMES["int4_g32_w16" if gs == 32 else "int4_w16"]
    order = "group" if desc and gs != -1 else "none"
    act = " (desc_act with one group per channel is a no-op)" if c["desc_act"] and gs == -1 else (f" with desc_act (activation reordering, {q.release.words})" if order == "group" else "")
    return ExpertsQuant(scheme, _fam(q), weight_group_size=gs, evidence=f"{q.source}: GPTQ {bits}-bit, group {gs}{act} (AutoGPTQMoEMethod on Marlin when hidden % 128 == 0 and the partition divides by the group, else MoeWNA16)", notes=note, act_order=order)


def _awq(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/auto_awq.py ``AutoAWQConfig``: substring exclusion, zero points, Marlin or MoeWNA16."""
    c = q.config
    bits, gs, zp = c.get("bits", c.get("w_bit")), c.get("group_size", c.get("q_group_size")), c.get("zero_point", True)
    if bits is None or gs is None:
        raise q.fail(".bits", "AWQ requires bits (w_bit) and group_size (q_group_size)", {"bits": bits, "group_size": gs}, None)
    hit = m.vllm_is_layer_skipped(module, _list(c.get("modules_to_not_convert")), "substring")
    if hit is not None:
        return _excluded(q, hit, "AutoAWQ is_layer_skipped, substring mode")
    if bits != 4:
        raise q.fail(".bits", "AWQ MoE supports 4-bit weights", bits, [4])
    scheme = SCHEMES[("int4_g32" if gs == 32 else "int4") + ("_asym" if zp else "") + "_w16"]
    return ExpertsQuant(scheme, _fam(q), weight_group_size=gs, evidence=f"{q.source}: AWQ 4-bit, group {gs}, {'zero points' if zp else 'symmetric'} (AutoAWQMoEMethod on Marlin when the shape allows it, else MoeWNA16)")


def _moe_wna16(q: QuantFormat, module: str, proj: tuple[str, ...]) -> ExpertsQuant:
    """Q/moe_wna16.py ``MoeWNA16Config`` (``--quantization moe_wna16`` over a GPTQ/AWQ checkpoint)."""
    c = q.config
    lin = c.get("quant_method")
    if lin not in ("gptq", "awq", "awq_marlin"):
        raise q.fail(".quant_method", "moe_wna16 only support gptq and awq", lin, ["gptq", "awq"])
    _require(q, ("bits", "group_size"), "MoeWNA16Config")
    bits, gs = c["bits"], c["group_size"]
    order = None
    if lin == "gptq":
        dynamic = c.get("dynamic") or {}
        desc = c.get("desc_act", False)
        _gptq_desc_act(q, desc, gs, dynamic if isinstance(dynamic, dict) else {})
        order = "group" if desc and gs != -1 else "none"
    zp = (not c.get("sym", True)) if lin == "gptq" else bool(c.get("zero_point"))
    skip = [] if lin == "gptq" else _list(c.get("modules_to_not_convert"))
    hit = m.substring_skipped(module, skip)
    if hit is not None:
        return _excluded(q, hit, "moe_wna16 is_layer_skipped_quant (substring)")
    if bits not in (4, 8):
        raise q.fail(".bits", "moe_wna16 supports 4- and 8-bit weights", bits, [4, 8])
    if bits == 8:
        scheme = SCHEMES["int8_w16"]
    else:
        scheme = SCHEMES[("int4_g32" if gs == 32 else "int4") + ("_asym" if zp else "") + "_w16"]
    return ExpertsQuant(scheme, _fam(q), weight_group_size=gs, evidence=f"{q.source}: --quantization moe_wna16 over {lin}: {bits}-bit, group {gs}{', zero points' if zp else ''} (MoeWNA16Method)", act_order=order)


_RESOLVERS: Mapping[str, Callable[[QuantFormat, str, tuple[str, ...]], ExpertsQuant]] = MappingProxyType({
    "fp8": _fp8,
    "deepseek_v4_fp8": _fp8,
    "fbgemm_fp8": _fbgemm,
    "compressed-tensors": _ct,
    "modelopt": _modelopt,
    "modelopt_fp4": _modelopt,
    "modelopt_mxfp8": _modelopt,
    "modelopt_mixed": _modelopt_mixed,
    "mxfp4": _mxfp4,
    "gpt_oss_mxfp4": _mxfp4,
    "quark": _quark,
    "gptq": _gptq,
    "awq": _awq,
    "moe_wna16": _moe_wna16,
})
