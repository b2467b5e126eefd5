"""The record of what vLLM builds for one routed-experts module (:class:`ExpertsQuant`), and the
helpers every quantization format's reader shares."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping

from ...core.errors import ConfigError, InputIssue
from ...core.quant import UNQUANTIZED, QuantScheme
from .releases import ReaderRelease

if TYPE_CHECKING:
    from .quant_formats import QuantFormat

__all__ = ["B12X_BLOCK_CODECS", "ExpertsQuant", "MODELOPT_LEGACY_ALGOS", "MOE_FAMILY", "excluded", "family_of", "issue", "modelopt_algo", "modelopt_exclude", "require_keys", "str_list"]


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


def str_list(value: Any) -> list[str]:
    return [v for v in value if isinstance(v, str)] if isinstance(value, list) else []


MOE_FAMILY = {"deepseek_v4_fp8": "fp8", "gpt_oss_mxfp4": "mxfp4", "modelopt_fp4": "modelopt", "modelopt_mxfp8": "modelopt", "modelopt_mixed": "modelopt",
              "w4afp8": "compressed-tensors"}


def family_of(q: QuantFormat) -> str | None:
    """The ``quant_method`` value the tables read for this checkpoint's MoE methods."""
    return MOE_FAMILY.get(q.method or "", q.method)


def excluded(q: QuantFormat, pattern: str, rule: str) -> ExpertsQuant:
    return ExpertsQuant(UNQUANTIZED, None, excluded_by=pattern, evidence=f"{q.source}: excluded by {pattern!r} ({rule}); the experts stay in the model dtype")


def modelopt_exclude(c: Mapping[str, Any], rel: ReaderRelease) -> list[str]:
    """``ModelOptQuantConfigBase.from_config``: a legacy document's ``quantization.exclude_modules``;
    a flat (config.json) document's ``ignore``, and from 0.33.0 its ``exclude_modules`` when it has
    no ``ignore`` (fact ``modelopt_flat_exclude_modules``)."""
    inner = c.get("quantization")
    if isinstance(inner, dict):
        return str_list(inner.get("exclude_modules"))
    if rel.holds("modelopt_flat_exclude_modules"):
        return str_list(c.get("ignore", c.get("exclude_modules", [])))
    return str_list(c.get("ignore", []))


def require_keys(q: QuantFormat, keys: tuple[str, ...], who: str) -> None:
    missing = [k for k in keys if k not in q.config]
    if missing:
        raise q.fail(f".{missing[0]}", f"{who} requires {', '.join(keys)}", None, list(keys))


MODELOPT_LEGACY_ALGOS = {"FP8": "modelopt", "FP8_PER_CHANNEL_PER_TOKEN": "modelopt", "FP8_PB_WO": "modelopt", "NVFP4": "modelopt_fp4", "MIXED_PRECISION": "modelopt_mixed"}


def issue(file: str | None, path: str, message: str, value: Any = None, allowed: Any = None) -> ConfigError:
    return ConfigError([InputIssue(path, message, value, allowed, file)])


def modelopt_algo(doc: Mapping[str, Any]) -> str | None:
    inner = doc.get("quantization")
    algo = inner.get("quant_algo") if isinstance(inner, dict) else doc.get("quant_algo")
    return str(algo).upper() if algo is not None else None


B12X_BLOCK_CODECS = {"IQ2_XS": (256, 74), "IQ2_XXS": (256, 66), "Q8_0": (32, 34)}
