"""The speculative-decoding draft a ``vllm serve`` line makes vLLM build, per modelled release.

vLLM 0.29.0-0.33.0 vllm/engine/arg_utils.py ``EngineArgs.create_speculative_config`` merges
``--spec-method``/``--spec-model``/``--spec-tokens`` into ``--speculative-config`` (a key given
both ways raises "... are mutually exclusive"), turns dashes in the keys into underscores and
builds ``SpeculativeConfig``; without either there is no speculative decoding (``None``).
``SpeculativeConfig.__post_init__`` (vllm/config/speculative.py) then resolves the method: none
given means ``draft_model`` (``ngram`` when the model is ``ngram``), every ``MTPModelTypes`` alias
(``deepseek_mtp``, ``qwen3_next_mtp``, ...) becomes ``mtp``, and ``mtp`` without a model drafts
with the target checkpoint itself, i.e. its MTP layers. ``ngram``, ``ngram_gpu``, ``suffix``,
``custom_class`` and ``extract_hidden_states`` run no draft model; the other methods (``eagle``,
``eagle3``, ``dflash``, ``dspark``, ``draft_model``, ...) load the draft named by ``model``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..core.errors import ConfigError, InputIssue

__all__ = ["Draft", "merge_spec_flags", "resolve_draft", "speculative_methods"]

_MTP_COMMON = (
    "bailing_hybrid_mtp", "bailing_hybrid_v3_mtp", "deepseek_mtp", "dots3_note_mtp", "ernie_mtp", "exaone4_5_mtp", "exaone_moe_mtp",
    "gemma4_mtp", "glm4_moe_lite_mtp", "glm4_moe_mtp", "glm_ocr_mtp", "hy_v3_mtp", "hy_v4_mtp", "inkling_mtp", "kimi_k3_mtp",
    "longcat_flash_mtp", "mimo_mtp", "mimo_v2_mtp", "minimax_m3_mtp", "mtp", "nemotron_h_mtp", "pangu_ultra_moe_mtp",
    "qwen3_5_mtp", "qwen3_next_mtp", "qwen4_exp_mtp", "step3p5_mtp",
)
_OTHER_COMMON = ("custom_class", "dflash", "draft_model", "dspark", "eagle", "eagle3", "extract_hidden_states", "ngram", "ngram_gpu", "suffix")

# vllm/config/speculative.py of each release: MTPModelTypes, and the other members of SpeculativeMethod.
_MTP: Mapping[str, frozenset[str]] = {
    "0.29.0": frozenset(_MTP_COMMON),
    "0.30.0": frozenset(_MTP_COMMON + ("glm5_next_mtp",)),
    "0.31.0": frozenset(_MTP_COMMON + ("glm5_next_mtp",)),
    "0.32.0": frozenset(_MTP_COMMON + ("glm5_next_mtp",)),
    "0.33.0": frozenset(_MTP_COMMON + ("glm5_next_mtp", "step5_mtp")),
    "0.34.0": frozenset(_MTP_COMMON + ("glm5_next_mtp", "step5_mtp", "nemotron3_5_transcribe_mtp")),
}
_OTHER: Mapping[str, frozenset[str]] = {
    "0.29.0": frozenset(_OTHER_COMMON + ("medusa", "mlp_speculator")),
    "0.30.0": frozenset(_OTHER_COMMON + ("medusa", "mlp_speculator")),
    "0.31.0": frozenset(_OTHER_COMMON + ("medusa", "mlp_speculator")),
    "0.32.0": frozenset(_OTHER_COMMON + ("medusa", "mlp_speculator")),
    "0.33.0": frozenset(_OTHER_COMMON),
    # vLLM 0.34.0 vllm/config/speculative.py: SpeculativeMethod no longer lists custom_class
    "0.34.0": frozenset(m for m in _OTHER_COMMON if m != "custom_class"),
}
_NO_DRAFT_MODEL = frozenset({"ngram", "ngram_gpu", "suffix", "custom_class", "extract_hidden_states"})


_NEEDS_DRAFT_MODEL = frozenset({"draft_model", "eagle", "eagle3", "dflash", "medusa", "mlp_speculator"})
"""Methods whose draft vLLM cannot default when the config names none: with
``num_speculative_tokens`` and no ``model``, vLLM 0.29.0-0.33.0 ``SpeculativeConfig.__post_init__``
reaches its last branch and 0.34.0 ``DraftModelSpeculatorConfig.default_model`` (the classes of
these methods, v1/worker/gpu/spec_decode/) raises "num_speculative_tokens was provided but without
speculative model." (MTP drafts with the target, DSpark and the no-model methods default theirs)."""

_NO_REGISTRY = frozenset({"0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"})
"""Releases without ``registered_speculative_methods`` (vLLM 0.34.0 added it: vllm/config/speculative.py)."""


def speculative_methods(release: str) -> tuple[frozenset[str], frozenset[str]]:
    """(MTP aliases, other methods) of ``SpeculativeMethod`` in vLLM ``release``.

    >>> "step5_mtp" in speculative_methods("0.33.0")[0], "step5_mtp" in speculative_methods("0.32.0")[0]
    (True, False)

    Raises:
        KeyError: a release that is not modelled.
    """
    return _MTP[release], _OTHER[release]


def merge_spec_flags(speculative_config: Mapping[str, Any] | None, flags: Mapping[str, Any]) -> dict[str, Any] | None:
    """The speculative config ``create_speculative_config`` builds (keys with underscores), or
    ``None`` when the line asks for no speculative decoding.

    ``flags``: ``--spec-method``/``--spec-model``/``--spec-tokens`` values by ``method``,
    ``model``, ``num_speculative_tokens`` (absent or ``None``: not given).

    >>> merge_spec_flags({"num-speculative-tokens": 2}, {"method": "mtp"})
    {'num_speculative_tokens': 2, 'method': 'mtp'}

    Raises:
        ConfigError: a key given both by its flag and in ``--speculative-config`` (vLLM raises
            "--spec-method and --speculative-config['method'] are mutually exclusive").
    """
    spec = dict(speculative_config) if speculative_config is not None else None
    names = {"method": "--spec-method", "model": "--spec-model", "num_speculative_tokens": "--spec-tokens"}
    for key, flag in names.items():
        value = flags.get(key)
        if value is None:
            continue
        if spec is None:
            spec = {}
        if key in spec:  # vLLM checks before turning dashes into underscores
            raise ConfigError([InputIssue(f"--serve {flag}", f"{flag} and --speculative-config['{key}'] are mutually exclusive: vLLM refuses the command line (EngineArgs.create_speculative_config, vllm/engine/arg_utils.py); give the value once", value, None)], headline="bad --serve")
        spec[key] = value
    if spec is None:
        return None
    return {str(k).replace("-", "_"): v for k, v in spec.items()}


@dataclass(frozen=True)
class Draft:
    """What vLLM drafts with.

    Attributes:
        method: the resolved method (``mtp`` for every MTP alias); ``None``: no speculative decoding.
        target_mtp: vLLM builds the target checkpoint's MTP layers as the draft.
        model: the draft model the config names (``None``: none named).
        why: one sentence: what the draft is, and the source of that fact.
    """

    method: str | None
    target_mtp: bool
    model: str | None
    why: str

    @property
    def separate_model(self) -> bool:
        """vLLM builds a draft model apart from the target checkpoint (``eagle``, ``draft_model``,
        ``mtp`` of another checkpoint); not for ``ngram``-like methods, which run none."""
        return self.method is not None and not self.target_mtp and self.method not in _NO_DRAFT_MODEL


def resolve_draft(spec: Mapping[str, Any] | None, target_model: str | None, release: str) -> Draft:
    """The draft of a serve line's merged speculative config (:func:`merge_spec_flags`) in vLLM
    ``release``, as ``SpeculativeConfig.__post_init__`` resolves it.

    >>> resolve_draft({"method": "deepseek_mtp", "num_speculative_tokens": 1}, "m", "0.33.0").target_mtp
    True
    >>> resolve_draft({"method": "ngram", "prompt_lookup_max": 4}, "m", "0.33.0").target_mtp
    False

    Raises:
        ConfigError: a method the release's ``SpeculativeMethod`` lacks (vLLM refuses the config).
    """
    where = f"vLLM {release} SpeculativeConfig.__post_init__, vllm/config/speculative.py"
    if spec is None:
        return Draft(None, False, None, f"the --serve line has no --speculative-config: vLLM {release} builds no draft (EngineArgs.create_speculative_config returns None)")
    mtp, other = speculative_methods(release)
    method = spec.get("method")
    model = spec.get("model")
    model = str(model) if model is not None else None
    if method is not None and (not isinstance(method, str) or (method not in mtp and method not in other)):
        plugins = "; a method a vLLM plugin registers is not modelled" if release not in _NO_REGISTRY else ""
        raise ConfigError([InputIssue("--serve --speculative-config method", f"vLLM {release} knows no such speculative method (SpeculativeMethod, vllm/config/speculative.py){plugins}", method, sorted(mtp | other))], headline="bad --serve")
    if method is None:
        method = "ngram" if model in ("ngram", "[ngram]") else "draft_model"
    if model is None and method in _NEEDS_DRAFT_MODEL and spec.get("num_speculative_tokens") is not None:
        named = "names no method (vLLM takes it as draft_model) and" if spec.get("method") is None else f"names method {method!r} but"
        raise ConfigError([InputIssue("--serve --speculative-config model", f"vLLM {release} refuses it at start: the config {named} no draft model, so \"num_speculative_tokens was provided "
                                      f"but without speculative model.\" ({where}); name the draft model, or give \"method\": \"mtp\" to draft with the checkpoint's own MTP layers",
                                      None, None, keyword="engine_refuses")], headline="bad --serve")
    if spec.get("method") is None:
        if method == "draft_model":
            return Draft(method, False, model, f"--speculative-config names no method, so vLLM detects it from the draft model {model!r} ({where}); moe-oracle does not model that detection: give \"method\": \"mtp\" to plan the checkpoint's MTP layers")
    if method in mtp:
        alias = f" ({method!r} is an alias vLLM replaces with 'mtp')" if method != "mtp" else ""
        if model is None or model == target_model:
            return Draft("mtp", True, model, f"speculative method mtp{alias}: vLLM drafts with the target checkpoint's own MTP layers ({where})")
        return Draft("mtp", False, model, f"speculative method mtp{alias} with model {model!r}: the draft is that checkpoint's MTP module, a separate model")
    if method in _NO_DRAFT_MODEL:
        return Draft(method, False, model, f"speculative method {method}: vLLM runs no draft model, so there are no draft MoE layers ({where})")
    return Draft(method, False, model, f"speculative method {method}: the draft is a separate model ({model!r})" if model else f"speculative method {method} names no draft model")
