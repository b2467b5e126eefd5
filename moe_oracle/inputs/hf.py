"""The one-layer door: a Hugging Face ``config.json`` -> the checkpoint half of one MoEConfig.

``explain``/``select --model`` describe one MoE layer; :func:`from_hf_config` reads the whole
checkpoint with :func:`moe_oracle.inputs.checkpoint.read_checkpoint` (every layer, its kind, its
experts' quantization as the answer's vLLM release matches exclusions) and returns the
representative layer: the first routed target MoE layer. ``moe-oracle plan`` shows every layer.
Every inferred field records its evidence (which keys, which rule).
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from .bounds import check_model_config
from .checkpoint.aliases import routing_method_type
from .checkpoint.model import read_checkpoint
from ..core.config import Provenance
from ..core.errors import ConfigError, InputIssue
from .models import quant_document
from .paths import read_user_file, shown_path, user_path

__all__ = ["QUANT_DOCUMENT", "CheckpointFields", "from_hf_config", "load_hf_config", "routing_method_type"]


@dataclass(frozen=True)
class CheckpointFields:
    """Checkpoint-derived MoEConfig keyword arguments plus their provenance.

    ``kwargs`` can be passed to :class:`~moe_oracle.core.config.MoEConfig` together with the
    deployment fields; ``provenance`` records source and evidence per field.
    """

    kwargs: Mapping[str, Any]
    provenance: tuple[Provenance, ...]
    model_type: str | None
    name: str | None
    quant: Any = None  # the checkpoint's QuantFormat (checked against --quantization once the release is known)
    notes: tuple[str, ...] = ()  # what the one-layer answer should say about the whole model (layer kinds, unmodelled architecture)


MAX_CONFIG_BYTES = 4 * 1024 * 1024

# What a refusal of a quantization document's file calls it (``--hf-quant-config``, a config
# file's ``model.hf_quant_config``, the hf_quant_config.json beside a model config).
QUANT_DOCUMENT = "a quantization document"


def load_hf_config(path: str | Path, flag: str = "--model", *, shown: str | None = None, document: str = "a model config") -> dict[str, Any]:
    """Read a ``config.json`` (or ``hf_quant_config.json``); a checkpoint directory means its
    ``config.json`` (as ``--model DIR`` reads it; the quantization documents beside it are the
    checkpoint reader's, :mod:`.checkpoint`). ``shown``: how messages name ``path`` (default:
    as written, :func:`~moe_oracle.inputs.paths.shown_path`; a caller that resolved the
    operator's reference passes its spelling). ``document``: what the file should be, as a
    refusal names it (:data:`QUANT_DOCUMENT` for a quantization document).

    Raises:
        ConfigError: not a regular file (a pipe, a device), unreadable, not UTF-8, not JSON, or
            not a JSON object; a directory without a ``config.json``.
    """
    written, path = path, user_path(path)
    shown = shown if shown is not None else shown_path(written, path)
    try:
        is_dir = path.is_dir()
    except (OSError, ValueError):  # a name too long, a NUL: the open below says so
        is_dir = False
    if is_dir:
        if not (path / "config.json").is_file():
            raise ConfigError([InputIssue(flag, "the directory has no config.json (give a Hugging Face checkpoint directory or the config file itself)", shown, None, shown)])
        path, shown = path / "config.json", os.path.join(shown, "config.json")
    read = read_user_file(path, flag, MAX_CONFIG_BYTES, shown=shown)
    raw = read.data
    if len(raw) > MAX_CONFIG_BYTES:
        raise ConfigError([InputIssue("$", f"file is larger than {MAX_CONFIG_BYTES} bytes", None, None, shown, keyword="size")])
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError([InputIssue("$", f"not UTF-8 (invalid byte at offset {exc.start})", None, None, shown, keyword="encoding")]) from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError([InputIssue(f"$ (line {exc.lineno}, column {exc.colno})", f"not valid JSON: {exc.msg}", None, None, shown, keyword="json")]) from None
    except RecursionError:
        raise ConfigError([InputIssue("$", "JSON nesting is too deep", None, None, shown, keyword="json")]) from None
    except ValueError as exc:  # not a JSONDecodeError: an integer literal past Python's 4300-digit limit
        raise ConfigError([InputIssue("$", f"not valid JSON: {exc}", None, None, shown, keyword="json")]) from None
    if not isinstance(data, dict):
        raise ConfigError([InputIssue("$", f"{document} ({flag}) must be a JSON object", type(data).__name__, None, shown, keyword="type")])
    return data


def from_hf_config(cfg: Mapping[str, Any], *, file: str | None = None, quant_cfg: Mapping[str, Any] | None = None, beside: Mapping[str, Any] | None = None, release: Any = None, platform: str | None = None,
                   quant_file: str | None = None, beside_file: str | None = None) -> CheckpointFields:
    """Checkpoint fields of the representative MoE layer of a Hugging Face model config.

    Args:
        cfg: parsed ``config.json``; a multimodal config's ``text_config`` is used when present.
        file: path for error messages.
        quant_cfg: an ``hf_quant_config.json`` given explicitly; it replaces ``quantization_config``.
            Read as ``--hf-quant-config`` reads its file
            (:func:`moe_oracle.inputs.models.quant_document`): a whole model config gives its
            ``quantization_config`` (with a note), one without a quantization document is refused.
        beside: an ``hf_quant_config.json`` found beside config.json; read only when config.json
            has no quantization document, as vLLM reads it.
        release: the vLLM release the answer is for (``EngineRelease``, version string or
            ``None`` for the newest modelled; :meth:`moe_oracle.inputs.checkpoint.releases.ReaderRelease.of`).
        platform: the device's platform value, for model classes that differ by platform
            (:func:`moe_oracle.inputs.checkpoint.read_checkpoint`); ``None``: the CUDA class.
        quant_file, beside_file: the files ``quant_cfg`` and ``beside`` came from, named by a
            problem in their document (``--hf-quant-config hq.json``; ``None``: ``file``).

    Raises:
        ConfigError: ``cfg`` is not a mapping (a JSON string, a path); ``quant_cfg`` is not a
            mapping, or a model config without a quantization document; the model has no MoE layers, a field is missing or outside the vocabulary, or
            the release refuses the checkpoint (the message names the release), a count is past
            its bound or vLLM would refuse the config at load (:mod:`moe_oracle.inputs.bounds`).
    """
    if not isinstance(cfg, Mapping):
        what = "a JSON string" if isinstance(cfg, (str, bytes)) and str(cfg if isinstance(cfg, str) else cfg[:1].decode(errors="replace")).lstrip()[:1] in ("{", "[") else type(cfg).__name__
        raise ConfigError([InputIssue("cfg", f"from_hf_config takes the parsed config.json (a dict), not {what}: pass load_hf_config(path) or json.loads(text)", None, None, file, keyword="type")])
    quant_note = None
    if quant_cfg is not None:
        if not isinstance(quant_cfg, Mapping):
            raise ConfigError([InputIssue("quant_cfg", f"from_hf_config takes the parsed quantization document (a dict), not {type(quant_cfg).__name__}: pass load_hf_config(path)", None, None, quant_file, keyword="type")], headline="bad quant_cfg")
        # As --hf-quant-config reads its file: a model config gives its quantization_config (noted), one without any is refused.
        try:
            quant_cfg, quant_note = quant_document(quant_cfg, quant_file, "quant_cfg", quant_file if quant_file is not None else file, "cfg")
        except ConfigError as exc:
            raise ConfigError(exc.issues, headline="bad quant_cfg") from None
    check_model_config(cfg, file)
    ck = read_checkpoint(cfg, file=file, beside=beside, override=quant_cfg, layers_required=False, release=release, platform=platform, override_file=quant_file, beside_file=beside_file)
    layer = ck.representative()
    assert layer.kwargs is not None
    return CheckpointFields(dict(layer.kwargs), layer.provenance, ck.model_type, ck.name, ck.quant, ((quant_note,) if quant_note else ()) + _model_notes(ck, layer))


def _model_notes(ck: Any, layer: Any) -> tuple[str, ...]:
    """Notes a one-layer answer (``select``, ``explain``) carries about the rest of the model.

    * the layer answered is not the only kind of MoE layer (other routing, quantization, expert
      count, hash routing or draft layers): ``moe-oracle plan`` answers every one;
    * the architecture has no family record, or the release does not register it;
    * config.json has no ``model_type``: how the release reads it, or that it refuses it;
    * a wrapper builds the language model its sub-config names (which one, from where);
    * an explicit ``--hf-quant-config`` hid config.json's own quantization document.
    """
    notes = [n for n in ck.notes if n.startswith(("unknown model_type", "model_type ", "--hf-quant-config replaces", "config.json has no model_type")) or "moe-oracle does not model" in n or "does not register" in n
             or "not among the MoE architectures" in n or "refuses a config.json without model_type" in n or "builds its language model from" in n]
    kinds: dict[Any, list[str]] = {}
    for other in ck.moe_layers():
        key = (other.spec.kind, other.spec.role, tuple(sorted((k, str(v)) for k, v in (other.kwargs or {}).items())))
        kinds.setdefault(key, []).append(other.spec.name)
    if len(kinds) > 1:
        def label(key: Any, names: list[str]) -> str:
            kind, role, _ = key
            span = names[0] if len(names) == 1 else f"{names[0]}..{names[-1]} ({len(names)})"
            return f"{span} {'hash-routed ' if kind == 'hash_moe' else ''}{'draft' if role == 'draft' else 'target'}"
        groups = "; ".join(label(k, v) for k, v in kinds.items())
        notes.append(f"this answer is for MoE layer {layer.spec.name} only: the model has {len(kinds)} kinds of MoE layer ({groups}); `moe-oracle plan` answers every layer")
    return tuple(notes)
