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

from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, Callable, Mapping

from ...core.errors import ConfigError, InputIssue
from ...core.quant import UNQUANTIZED
from . import matching as m
from .formats_ct import ct_experts
from .formats_float import ONLINE_FP8 as _ONLINE_FP8  # only the serve line's flag writes a document naming one (serve_apply, FROM_FLAG)
from .formats_float import fbgemm_experts, fp8_experts, fp8_online_experts, lut_b_experts, mxfp4_experts, w4afp8_experts
from .formats_int import awq_experts, gptq_experts, moe_wna16_experts
from .formats_modelopt import modelopt_experts, modelopt_mixed_experts
from .formats_quark import quark_experts
from ..quant_checks import FROM_FLAG
from .quant_records import MODELOPT_LEGACY_ALGOS, ExpertsQuant, issue, modelopt_algo, modelopt_exclude, str_list
from .releases import NEWEST, ReaderRelease

if TYPE_CHECKING:
    from ...core.versions import EngineRelease

__all__ = ["SUPPORTED_METHODS", "ExpertsQuant", "QuantFormat", "read_quant_format"]

SUPPORTED_METHODS = (
    "fp8", "deepseek_v4_fp8", "compressed-tensors", "modelopt", "modelopt_fp4", "modelopt_mxfp8",
    "modelopt_mixed", "mxfp4", "mxfp8", "gpt_oss_mxfp4", "quark", "gptq", "awq", "moe_wna16", "fbgemm_fp8", "w4afp8", "lut_b_moe",
    "fp8_per_tensor", "fp8_per_block", "fp8_per_channel",
)
"""vLLM quantization methods whose routed-experts handling this module reproduces."""

# Methods the serve line's --quantization writes as a document (serve_apply, FROM_FLAG) -> the
# release fact that says the release has the method.
_FLAG_METHOD_FACTS = {"w4afp8": "w4afp8_method", "lut_b_moe": "lut_b_method"}

_REMOVED = {
    "ptpc_fp8": "{release} has no ptpc_fp8 method (no modelled release 0.29.0-0.33.0 has it); per-token-per-channel FP8 is the online shorthand --quantization fp8_per_channel, not a checkpoint format",
}


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
        doc_file: the file the document came from where it is not ``file`` (an
            ``hf_quant_config.json`` given with ``--hf-quant-config`` or found beside config.json):
            problems in the document name it.
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
    doc_file: str | None = None

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
            return m.vllm_is_layer_skipped(name, str_list(c.get("ignored_layers") or c.get("modules_to_not_convert")))
        if self.method == "fbgemm_fp8":
            return m.vllm_is_layer_skipped(name, str_list(c.get("modules_to_not_convert")))
        if self.method == "compressed-tensors":
            return m.ct_should_ignore(name, str_list(c.get("ignore")))
        if self.method and self.method.startswith("modelopt"):
            return m.modelopt_excluded(name, modelopt_exclude(c, self.release))
        if self.method == "quark":
            return m.quark_should_ignore(name, str_list(c.get("exclude")))
        if self.method == "awq":
            return m.vllm_is_layer_skipped(name, str_list(c.get("modules_to_not_convert")), "substring")
        if self.method in ("mxfp4", "gpt_oss_mxfp4"):
            return "(MXFP4 linear layers are not quantized: Mxfp4Config)"
        return None

    def fail(self, path: str, message: str, value: Any = None, allowed: Any = None) -> ConfigError:
        where = "$.text_config.quantization_config" if "text_config" in self.source else "$.quantization_config" if "config.json" in self.source else "$"
        return ConfigError([InputIssue(f"{where}{path}", message, value, allowed, self.file if where != "$" or self.doc_file is None else self.doc_file)])


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
    override_file: str | None = None,
    beside_file: str | None = None,
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
        override_file, beside_file: the files ``override`` and ``beside`` came from; a problem in
            the document read from one names it (``None``: ``file``).

    Raises:
        ConfigError: a method the release does not have, or one this module does not read
            (the message lists those it reads), or a malformed document; each names the release.
    """
    rel = ReaderRelease.of(release)
    notes: list[str] = []
    doc: Any
    if override is not None:
        doc, source = override, "hf_quant_config.json (given explicitly)"
        own = cfg.get("quantization_config") or (text_cfg or {}).get("quantization_config") or cfg.get("compression_config")
        if isinstance(own, dict):
            # The explicit document wins (vLLM reads only one): say so where it hides another.
            modelopt = override.get("quantization") if isinstance(override.get("quantization"), dict) else {}
            theirs = f"quant_method {own['quant_method']}" if own.get("quant_method") else "no quant_method"
            ours = override.get("quant_method") or modelopt.get("quant_algo") or "ModelOpt quantization without a quant_algo"
            notes.append(f"--hf-quant-config replaces config.json's own quantization document ({theirs}) with the file given ({ours}); "
                         "vLLM reads one document, so the answer is for the file given")
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
            raise issue(file, "$.quantization_config", "must be an object", cfg.get("quantization_config"))
        return QuantFormat(None, None, "no quantization_config", file=file, model_type=model_type, expert_dtype=expert_dtype, release=rel)
    doc = dict(doc)
    doc_file = (override_file if override is not None else beside_file if source.startswith("hf_quant_config.json beside") else None) or file
    if doc.get(FROM_FLAG):
        source = f"{doc[FROM_FLAG]} (no quantization document)"
    # _normalize_quantization_config runs on the document the HF config carries, before the
    # loader may swap a MIXED_PRECISION document without quantized_layers for the file beside it.
    declared = _normalized_method(doc, doc_file, source, rel)
    if beside is not None and override is None and source.startswith("config.json"):  # config.json's own document, not the file beside it
        if modelopt_algo(doc) == "MIXED_PRECISION" and "quantized_layers" not in doc:
            doc, source = dict(beside), "hf_quant_config.json beside config.json (config.json's MIXED_PRECISION document has no quantized_layers)"
            doc_file = beside_file or file
            doc["quant_method"] = declared
        else:
            notes.append("hf_quant_config.json beside config.json is not read: config.json carries the quantization document (vllm/transformers_utils/config.py)")
    if doc.get(FROM_FLAG) and declared in _FLAG_METHOD_FACTS and not rel.holds(_FLAG_METHOD_FACTS[declared]):
        # The serve line's --quantization, written as a document by serve_apply, names a method
        # this release lacks: no document, and verify_checkpoint_quantization refuses the flag.
        return QuantFormat(None, None, f"{doc[FROM_FLAG]} (a method {rel.words} does not have)", MappingProxyType(doc), file, model_type, expert_dtype, tuple(notes), rel, None if doc_file == file else doc_file)
    if not declared:
        # _verify_quantization: an empty quant_method means no quantization.
        return QuantFormat(None, None, f"{source} without quant_method (unquantized)", MappingProxyType(doc), file, model_type, expert_dtype, tuple(notes), rel, None if doc_file == file else doc_file)
    if declared == "compressed-tensors" and doc.get("format") == "mxfp4-pack-quantized" and _architecture(cfg) in _MXFP4_REROUTED_ARCHITECTURES:
        doc["quant_method"] = declared = "mxfp4"
        notes.append(f"{rel.words}: {_architecture(cfg)} checkpoints in compressed-tensors mxfp4-pack-quantized are rewritten to quant_method 'mxfp4' at load, so the experts get Mxfp4Config's Mxfp4MoEMethod "
                     "(vllm/model_executor/models/config.py KimiK3ForConditionalGenerationConfig.verify_and_update_model_config); the document's ignore list is not read for experts")
    method = _detect_method(doc, declared, user_quantization, model_type, doc_file, rel)
    if declared == "mxfp8" and "quantization" not in doc and not doc.get("quant_algo"):
        doc = _minimax_mxfp8(doc)
        notes.append(f"{rel.words}: quant_method 'mxfp8' loads with ModelOptMxFp8Config, which reads the document as ModelOpt MXFP8 with its ignored_layers as exclude_modules (Q/modelopt.py ModelOptMxFp8Config.from_config)")
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
    if method == "deepseek_v4_fp8" and str_list(doc.get("ignore")) and not (doc.get("ignored_layers") or doc.get("modules_to_not_convert")):
        if rel.holds("deepseek_v4_modelopt_ignore") and str(doc.get("moe_quant_algo") or "").upper() == "NVFP4":
            notes.append(f"{rel.words}: the document's 'ignore' list leaves no layer unquantized (DeepseekV4FP8Config, an Fp8Config, reads ignored_layers / modules_to_not_convert for that); with moe_quant_algo NVFP4 it keeps the experts it names in native MXFP4 (vllm/models/deepseek_v41/quant_config.py _is_nvfp4_expert_layer, CUDA/ROCm)")
        else:
            notes.append(f"{rel.words}: the document's 'ignore' list is not read: DeepseekV4FP8Config (an Fp8Config) reads only ignored_layers / modules_to_not_convert")
    return QuantFormat(method, declared, source, MappingProxyType(doc), file, model_type, expert_dtype, tuple(notes), rel, None if doc_file == file else doc_file)


def _minimax_mxfp8(doc: Mapping[str, Any]) -> dict[str, Any]:
    """Q/modelopt.py ``ModelOptMxFp8Config.from_config`` (0.29.0-0.33.0): a MiniMax-style
    ``quant_method: mxfp8`` document without ``quant_algo`` becomes a legacy ModelOpt MXFP8 one.

    >>> _minimax_mxfp8({"quant_method": "mxfp8", "ignored_layers": ["lm_head"]})["quantization"]
    {'quant_algo': 'MXFP8', 'kv_cache_quant_algo': None, 'exclude_modules': ['lm_head']}
    """
    return {"quant_method": "modelopt", "quantization": {"quant_algo": "MXFP8", "kv_cache_quant_algo": doc.get("kv_cache_quant_algo"),
                                                         "exclude_modules": list(doc.get("ignored_layers") or [])}}


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
            known = {a: m_ for a, m_ in MODELOPT_LEGACY_ALGOS.items() if a != "MIXED_PRECISION" or rel.holds("modelopt_legacy_mixed_precision")}
            if upper not in known:
                raise issue(file, "$.quantization.quant_algo", f"{rel.words} refuses this ModelOpt algorithm in a legacy hf_quant_config.json layout ({source}): 'Unknown ModelOpt quant algo'" + ("" if upper != "MIXED_PRECISION" else " (MIXED_PRECISION is read in this layout from vLLM 0.33.0)"), algo, sorted(known))
            doc["quant_method"] = known[upper]
    method = doc.get("quant_method", "")
    if not isinstance(method, str):
        raise issue(file, "$.quantization_config.quant_method", "must be a string", method, list(SUPPORTED_METHODS))
    method = method.lower().replace("compressed_tensors", "compressed-tensors")
    doc["quant_method"] = method
    return method


_MXFP4_REROUTED_ARCHITECTURES = ("KimiK3ForConditionalGeneration", "KimiK3MTPModel")
"""Architectures whose compressed-tensors ``mxfp4-pack-quantized`` document vLLM rewrites to
``quant_method: mxfp4`` before resolving the method (vLLM 0.29.0-0.34.0
``vllm/model_executor/models/config.py`` ``MODELS_CONFIG_MAP`` -> ``KimiK3ForConditionalGenerationConfig``)."""


def _architecture(cfg: Mapping[str, Any]) -> str | None:
    archs = cfg.get("architectures")
    return archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None


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
        raise issue(file, "$.quantization_config.quant_method", _REMOVED[declared].format(release=rel.words), declared, list(SUPPORTED_METHODS))
    if declared in ("gptq", "awq") and user == "moe_wna16":
        return "moe_wna16"
    if declared == "gptq":
        return "gptq"
    if declared in ("awq", "awq_marlin", "auto_awq"):
        return "awq"
    if declared.startswith("modelopt"):
        algo = modelopt_algo(doc)
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
    if declared == "mxfp8":
        # Q/__init__.py get_quantization_config: "mxfp8" -> ModelOptMxFp8Config (MiniMax-style checkpoints)
        return "modelopt_mxfp8"
    dsv4_types = _DSV41_MODEL_TYPES if rel.holds("deepseek_v41_model") else _DSV4_MODEL_TYPES
    if declared in ("fp8", "deepseek_v4_fp8") and model_type in dsv4_types:
        return "deepseek_v4_fp8"
    if declared == "quark" and model_type in dsv4_types and rel.holds("deepseek_v4_claims_quark_mxfp4") and _is_quark_mxfp4_ocp(doc):
        return "deepseek_v4_fp8"
    if declared in ("fp8", "compressed-tensors", "quark", "fbgemm_fp8", "moe_wna16"):
        return declared
    if declared == "lut_b_moe":
        if not doc.get(FROM_FLAG):
            raise issue(file, "$.quantization_config.quant_method", "lut_b_moe is an online --quantization shorthand (vLLM 0.34.0 vllm/config/quantization.py _ONLINE_SHORTHANDS), not a checkpoint format moe-oracle reads from a quantization document: give it on the serve line (--quantization lut_b_moe) on a checkpoint without one", declared, [m_ for m_ in SUPPORTED_METHODS if m_ != "lut_b_moe"])
        return declared
    if declared in _ONLINE_FP8:
        if not doc.get(FROM_FLAG):
            raise issue(file, "$.quantization_config.quant_method", f"{declared} is an online --quantization shorthand (vLLM 0.29.0-0.34.0 vllm/config/quantization.py _ONLINE_SHORTHANDS), not a checkpoint format: "
                        f"{rel.words} refuses it in a checkpoint's document (OnlineQuantizationConfig.from_config raises NotImplementedError); give it on the serve line (--quantization {declared}) on a checkpoint without one",
                        declared, [m_ for m_ in SUPPORTED_METHODS if m_ not in _ONLINE_FP8])
        return declared
    if declared == "w4afp8":
        if not rel.holds("w4afp8_method"):
            raise issue(file, "$.quantization_config.quant_method", f"{rel.words} refuses the checkpoint at start: 'Unknown quantization method: w4afp8' (the w4afp8 method, Q/w4afp8.py, is new in vLLM 0.34.0)", declared, [m_ for m_ in SUPPORTED_METHODS if m_ != "w4afp8"])
        return declared
    raise issue(file, "$.quantization_config.quant_method", f"quantization method not read by moe-oracle ({rel.words} also has experts_int8, torchao, inc, fp_quant, humming and online methods, which we do not model)", declared or None, list(SUPPORTED_METHODS))


# ----------------------------------------------------------------------------- per method


# --- compressed-tensors ------------------------------------------------------------------


# --- ModelOpt ----------------------------------------------------------------------------


"""vllm/utils/b12x.py ``B12X_BLOCK_CODECS`` (0.32.0-0.33.0): codec -> (group_size, block_payload_bytes)."""


# --- Quark -------------------------------------------------------------------------------


# --- GPTQ / AWQ / moe_wna16 --------------------------------------------------------------


_RESOLVERS: Mapping[str, Callable[[QuantFormat, str, tuple[str, ...]], ExpertsQuant]] = MappingProxyType({
    "fp8": fp8_experts,
    "deepseek_v4_fp8": fp8_experts,
    "fbgemm_fp8": fbgemm_experts,
    "compressed-tensors": ct_experts,
    "modelopt": modelopt_experts,
    "modelopt_fp4": modelopt_experts,
    "modelopt_mxfp8": modelopt_experts,
    "modelopt_mixed": modelopt_mixed_experts,
    "mxfp4": mxfp4_experts,
    "gpt_oss_mxfp4": mxfp4_experts,
    "quark": quark_experts,
    "gptq": gptq_experts,
    "awq": awq_experts,
    "moe_wna16": moe_wna16_experts,
    "w4afp8": w4afp8_experts,
    "lut_b_moe": lut_b_experts,
    "fp8_per_tensor": fp8_online_experts,
    "fp8_per_block": fp8_online_experts,
    "fp8_per_channel": fp8_online_experts,
})
