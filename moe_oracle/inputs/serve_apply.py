"""A ``vllm serve`` line applied to the operator's other inputs: the deployment flags it fills,
the checkpoint it names (with ``--hf-overrides`` applied as vLLM applies them) and the blame for a
bad override.
"""

from __future__ import annotations

import json
import re
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core.errors import ConfigError, InputIssue
from .models import ModelReference, find_model, resolve_model_path
from .paths import shown_path, user_path
from .operator_inputs import OperatorInputs
from .checkpoint.formats_float import ONLINE_FP8 as _ONLINE_FP8
from .ep_refusal import TEXT_CONFIG_KEYS
from .quant_checks import FROM_FLAG
from .serve import ServeArgs
from .release_facts import engine_facts

__all__ = ["SERVE_TO_ARGS", "TEXT_CONFIG_NAMES", "apply_serve", "blame_hf_overrides", "check_draft_moe_backend", "load_serve_checkpoint", "serve_model_path"]


# ServeArgs attribute -> (OperatorInputs field, flag as the user types it for moe-oracle)
SERVE_TO_ARGS = {
    "tp": ("tp", "--tp"),
    "dp": ("dp", "--dp"),
    "pcp": ("pcp", "--pcp"),
    "ep": ("ep", "--ep"),
    "all2all": ("all2all", "--all2all"),
    "eplb": ("eplb", "--eplb"),
    "redundant_experts": ("redundant_experts", "--redundant-experts"),
    "lora": ("lora", "--lora"),
    "moe_backend": ("moe_backend", "--moe-backend"),
    "draft_moe_backend": ("draft_moe_backend", "--draft-moe-backend"),  # read by plan (and diff of a whole model)
    "max_num_batched_tokens": ("max_tokens", "--max-tokens"),
    "expert_placement": ("expert_placement", "--expert-placement"),  # read by plan (each rank's experts)
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


def apply_serve(given: OperatorInputs, serve: ServeArgs) -> OperatorInputs:
    """``given`` with the deployment fields a parsed ``vllm serve`` line fills.

    A flag given both ways must agree: ``--draft-moe-backend`` and the serve line's
    ``--speculative-config`` ``moe_backend`` too (both set the draft's backend, vLLM 0.33.0-0.34.0
    ``SpeculativeConfig.moe_backend``; only ``plan`` and ``diff`` of a whole model read it:
    explain and select answer for the target layer). ``--draft-moe-backend`` is checked first
    (:func:`check_draft_moe_backend`, for the release that parsed the serve line), so a
    spelling vLLM refuses is named as such, not as a disagreement. Boolean vLLM flags given as off
    (``--no-enable-eplb``) leave the oracle's field unset, which means off.

    The result's ``from_serve`` names the fields the serve line filled (a flag the operator also
    typed is the flag's), so that messages name the input a value came from.

    Raises:
        ConfigError: ``--model``/``--config`` together with ``--serve``, or a flag given both
            ways with different values.
    """
    if given.model or given.config:
        raise ConfigError([InputIssue("--serve", "the vllm serve line names the model; drop --model/--config", given.model or given.config, None)], headline="bad --serve")
    if given.draft_moe_backend is not None and serve.draft_moe_backend is not None:
        check_draft_moe_backend(given.draft_moe_backend, serve.version)
    issues = []
    filled: dict[str, Any] = {}
    for attr, (dest, flag) in SERVE_TO_ARGS.items():
        value = getattr(serve, attr)
        if value is None or value is False:
            continue
        current = getattr(given, dest)
        if current is not None and current != value:
            issues.append(InputIssue(flag, f"given as {flag} {current} and in --serve as {serve.flag_for(attr)} {value}", current, None))
            continue
        if current is None:
            filled[dest] = value
    if issues:
        raise ConfigError(issues, headline="bad --serve")
    return replace(given, **filled, from_serve=frozenset(filled))


def serve_model_path(serve: ServeArgs, base: Path | None = None) -> ModelReference:
    """The ``config.json`` a serve line's model resolves to, with the note
    :func:`moe_oracle.inputs.models.find_model` attaches when a shipped example stands in.

    ``--hf-config-path`` wins when given. A checkpoint directory gives its config.json; anything
    else resolves as ``--model`` does (:func:`moe_oracle.inputs.models.find_model`: a path that does not
    exist is refused; a shipped example's name or Hugging Face id finds it, ``Qwen/Qwen3-30B-A3B-FP8``
    -> ``qwen3-30b-a3b-fp8``).

    Raises:
        ConfigError: nothing on this machine or among the examples matches.
    """

    ref = serve.hf_config_path or serve.model
    assert ref is not None
    local = user_path(ref, base)
    try:
        if local.is_dir():
            # A checkpoint directory: its config.json, never a shipped example of the same name.
            try:
                return ModelReference(resolve_model_path(str(local / "config.json")), shown=ref)
            except ConfigError:
                raise ConfigError([InputIssue("--serve MODEL", "the checkpoint directory has no config.json", shown_path(ref, local), None)], headline="bad --serve") from None
    except OSError:
        pass
    try:
        return find_model(ref, base, "--serve MODEL")
    except ConfigError as exc:
        raise ConfigError(exc.issues, headline="bad --serve") from None


def load_serve_checkpoint(serve: ServeArgs, path: Path, hf_cfg: dict[str, Any], shown: str | None = None) -> tuple[dict[str, Any], list[str]]:
    """Apply the serve line's ``--hf-overrides`` and ``--quantization`` to a parsed config.json
    (``path``; ``shown``: how notes name it, as the serve line wrote it, default ``path``).

    vLLM 0.29.0-0.33.0 vllm/config/model.py: ``hf_overrides`` (a dict) updates the HF config
    (``ModelConfig._apply_dict_overrides``: a dict value for a nested config such as
    ``text_config`` is merged into it, recursively, :func:`_update_nested`; any other value,
    a dict-valued parameter such as ``quantization_config`` included, replaces); on
    an unquantized checkpoint ``-q fp8`` quantizes online (Q/fp8.py: static per-tensor weights,
    dynamic per-tensor activations), and so do the online FP8 shorthands ``fp8_per_tensor``,
    ``fp8_per_block`` and ``fp8_per_channel`` (``formats_float.ONLINE_FP8``; their document names
    the shorthand as its ``quant_method``), but only where vLLM finds no quantization document at all
    (``hf_quant_config.json`` beside config.json, ``compression_config`` and
    ``text_config.quantization_config`` count). Whether a ``--quantization`` that differs from a quantized
    checkpoint's method is taken or refused is :func:`verify_checkpoint_quantization`'s
    question (it needs the whole quantization document, ``hf_quant_config.json`` included).

    An override that gives a text-only config one of the names transformers takes the text
    config from (:data:`TEXT_CONFIG_NAMES`) makes that value the text config, which no dict
    passes: refused (:func:`_text_config_override`).

    Returns:
        (the config to read, notes).

    Raises:
        ConfigError: an override vLLM refuses when it reads the text config.
    """
    notes = []
    cfg = dict(hf_cfg)
    if serve.hf_overrides:
        _text_config_override(hf_cfg, serve.hf_overrides)
        for key, value in serve.hf_overrides.items():
            current = cfg.get(key)
            held = _text_config_held(cfg) if key == "text_config" and not isinstance(current, Mapping) else None
            if held is not None:
                # The config's text_config object is the one vLLM built from another key: the override merges into it.
                if held != "thinker_config" and isinstance(value, Mapping):
                    cfg[held] = _update_nested(cfg[held], value)
                else:  # Qwen3-Omni: transformers reads thinker_config.text_config, never the attribute the override sets
                    notes.append(f"--hf-overrides text_config has no effect on {shown if shown is not None else path}: its text config is thinker_config.text_config (transformers get_text_config)")
            elif isinstance(value, Mapping) and isinstance(current, Mapping) and _is_sub_config(key, current):
                cfg[key] = _update_nested(current, value)
            else:
                cfg[key] = value  # a dict-valued parameter (quantization_config, rope_scaling) is replaced whole
        notes.append(f"--hf-overrides applied to {shown if shown is not None else path}: {', '.join(sorted(serve.hf_overrides))}")
    q = serve.quantization
    if q and not isinstance(cfg.get("quantization_config"), Mapping) and _quant_document_elsewhere(cfg, path):
        return cfg, notes  # a quantized checkpoint after all: verify_checkpoint_quantization checks -q against it
    if q:
        current = cfg.get("quantization_config")
        method = current.get("quant_method") if isinstance(current, Mapping) else None
        if method is None:
            if q == "fp8":  # another method is refused by verify_checkpoint_quantization (not modelled)
                cfg["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic", FROM_FLAG: "--quantization fp8"}
                notes.append("--quantization fp8 on an unquantized checkpoint: vLLM quantizes the experts online (static per-tensor FP8 weights, dynamic per-tensor activations)")
            elif q == "w4afp8":  # vLLM 0.34.0 get_quant_config: W4AFP8Config() (no config file names)
                cfg["quantization_config"] = {"quant_method": "w4afp8", FROM_FLAG: "--quantization w4afp8"}
                notes.append("--quantization w4afp8 on a checkpoint without a quantization document: vLLM builds W4AFP8Config() with its defaults (INT4 group-128 experts with dynamic FP8 per-token activations, CompressedTensorsW4A8Fp8MoEMethod); the checkpoint's BF16 weights would not load into that layout")
            elif q in _ONLINE_FP8:  # vLLM 0.29.0-0.34.0 _ONLINE_SHORTHANDS: linear and routed experts
                cfg["quantization_config"] = {"quant_method": q, FROM_FLAG: f"--quantization {q}"}
                notes.append(f"--quantization {q} on an unquantized checkpoint: {_ONLINE_FP8[q][1]}")
            elif q == "lut_b_moe":  # vLLM 0.34.0 _ONLINE_SHORTHANDS: the routed experts only
                cfg["quantization_config"] = {"quant_method": "lut_b_moe", FROM_FLAG: "--quantization lut_b_moe"}
                notes.append("--quantization lut_b_moe on an unquantized checkpoint: vLLM quantizes the routed experts online to LUT-B with MXFP8 activations (LutBOnlineMoEMethod); the other layers stay unquantized")
        elif q == method:
            notes.append(f"--quantization {q} matches the checkpoint's quant_method: no effect")
    return cfg, notes


TEXT_CONFIG_NAMES: tuple[str, ...] = ("text_encoder", "decoder", "generator", "text_config")
"""The attributes transformers 5.x ``PreTrainedConfig.get_text_config`` takes the text config from
(the first not None; several: ValueError), which vLLM 0.29.0-0.34.0 reads at start
(vllm/transformers_utils/config.py ``get_hf_text_config``); every release pins transformers 5."""


def _text_config_held(cfg: Mapping[str, Any]) -> str | None:
    """The key of a config without a ``text_config`` whose text config vLLM holds as its
    ``text_config`` all the same (:data:`moe_oracle.inputs.ep_refusal.TEXT_CONFIG_KEYS`:
    ``thinker_config``'s, ``language_config``, ``llm_config``), or ``None``."""
    return next((outer for outer, _ in TEXT_CONFIG_KEYS[1:] if isinstance(cfg.get(outer), Mapping)), None)


def _text_config_override(hf_cfg: Mapping[str, Any], overrides: Mapping[str, Any]) -> None:
    """Refuse an ``--hf-overrides`` key of :data:`TEXT_CONFIG_NAMES` that the checkpoint has no
    sub-config under: ``ModelConfig._apply_dict_overrides`` sets the value as a plain attribute
    (only an existing nested config is merged into), ``get_text_config`` returns that value, and
    ``get_hf_text_config`` raises "The text_config extracted from the model config does not have
    `num_attention_heads` attribute" (a dict has no attributes), or "Multiple valid text configs"
    beside an existing one: vLLM does not start.

    >>> _text_config_override({"text_config": {"model_type": "x"}}, {"text_config": {"num_experts": 64}}) is None
    True
    """
    for key in TEXT_CONFIG_NAMES:
        value = overrides.get(key)
        if value is None or isinstance(hf_cfg.get(key), Mapping) or (key == "text_config" and _text_config_held(hf_cfg) is not None):
            continue
        raise ConfigError([InputIssue(f"--serve --hf-overrides {key}", f"the checkpoint has no {key} sub-config, so vLLM sets this value as its {key} attribute and reads "
                                      "it as the text config (transformers get_text_config), where it finds no attributes: vLLM refuses at start (\"The text_config extracted "
                                      "from the model config does not have `num_attention_heads` attribute\", vllm/transformers_utils/config.py get_hf_text_config); "
                                      "give the override's keys at the top level of --hf-overrides", json.dumps(value)[:200], None, keyword="engine_refuses")], headline="bad --serve")


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


def _reads(read: Callable[[], object]) -> bool:
    try:
        read()
    except ConfigError:
        return False
    return True


def blame_hf_overrides(exc: ConfigError, serve: ServeArgs | None, read_file_alone: Callable[[], object] | None = None) -> ConfigError:
    """``exc`` with each problem in a field the serve line's ``--hf-overrides`` set charged to that
    flag (``--serve --hf-overrides KEY``, with the value given and what is allowed) instead of the
    checkpoint file. A problem in a field of the file's own is charged to the overrides too when
    the file alone reads without error (``read_file_alone`` raises no ConfigError: an override of ``num_experts`` below
    the file's ``num_experts_per_tok``); else it is the file's, kept as it is.

    Returns ``exc`` itself when no problem is the overrides'.
    """
    overrides = serve.hf_overrides if serve is not None else None
    if not overrides:
        return exc
    model = serve.hf_config_path or serve.model  # the model as written, not where its example is installed
    alone_ok: list[bool] = []
    issues = []
    for issue in exc.issues:
        hit = _override_at(overrides, issue.path)
        if hit is None:
            if read_file_alone is not None and not alone_ok:
                alone_ok.append(_reads(read_file_alone))
            if alone_ok and alone_ok[0]:
                given = json.dumps(dict(overrides), sort_keys=True)
                given = given if len(given) <= 80 else given[:77] + "..."
                issues.append(replace(issue, path="--serve --hf-overrides", file=None, message=f"with --hf-overrides {given} applied, the config of {model} fails: {issue.path}: {issue.message}"))
            else:
                issues.append(issue)
            continue
        key, value = hit
        shown = json.dumps(value) if isinstance(value, (Mapping, list)) else repr(value)
        where = f" (applied to the config of {model})" if issue.file else ""
        issues.append(replace(issue, path=f"--serve --hf-overrides {key}", file=None, message=f"--hf-overrides sets {key} to {shown}{where}: {issue.message}"))
    if all(a is b for a, b in zip(issues, exc.issues)):
        return exc
    return ConfigError(issues, headline="bad --serve" if all(i.path.startswith("--serve") for i in issues) else None)
