"""Model references: a ``config.json`` path, a checkpoint directory, or a shipped example's name,
and the ``hf_quant_config.json`` that may sit beside it."""

from __future__ import annotations

from pathlib import Path

from ..core._resources import examples_dir
from ..core.errors import ConfigError, InputIssue

__all__ = ["example_names", "hf_id_candidates", "quant_config_beside", "resolve_model_path", "resolve_model_reference", "resolve_quant_config_path", "refuse_quant_config_as_model"]


def example_names() -> tuple[str, ...]:
    """Names of the shipped example model configs (file stems)."""
    return tuple(sorted(p.name[:-5] for p in examples_dir().glob("*.json") if not p.name.endswith(".hf_quant_config.json")))


def _example_key(name: str) -> str:
    return name.strip().lower().replace("_", "-")


def resolve_model_path(ref: str, base: Path | None = None) -> Path:
    """A model reference: a config.json path, a checkpoint directory holding ``config.json``
    (relative to ``base``), or a shipped example name (matched case- and ``_``/``-``-insensitively).

    Raises:
        ConfigError: none of these (lists the examples), or a directory without config.json.
    """
    candidate = Path(ref)
    if base is not None and not candidate.is_absolute():
        candidate = base / candidate
    if _is_file(candidate):
        return candidate
    if _is_dir(candidate):
        inside = candidate / "config.json"
        if _is_file(inside):
            return inside
        raise ConfigError([InputIssue("--model", "the directory has no config.json (a Hugging Face checkpoint directory holds config.json and, for ModelOpt exports, hf_quant_config.json)", ref, None)])
    example = examples_dir() / f"{ref}.json"
    if _is_file(example):
        return example
    wanted = _example_key(ref)
    for name in example_names():
        if _example_key(name) == wanted:
            return examples_dir() / f"{name}.json"
    raise ConfigError([InputIssue("--model", "no such file or checkpoint directory, and not the name of a shipped example", ref, list(example_names()))])


def hf_id_candidates(ref: str) -> list[str]:
    """The shipped example names a Hugging Face id may stand for: the whole id
    (``nvidia/Qwen3.5-122B-A10B-NVFP4`` -> ``nvidia-qwen3.5-122b-a10b-nvfp4``, as examples/models
    names a vendor's re-quantized checkpoint), then its last component (``Qwen/Qwen3-30B-A3B-FP8``
    -> ``Qwen3-30B-A3B-FP8``, matched case-insensitively)."""
    tail = ref.rstrip("/").rsplit("/", 1)[-1]
    whole = ref.strip("/").replace("/", "-").lower() if ref.count("/") == 1 and not ref.startswith((".", "/")) else ""
    return [c for c in dict.fromkeys([whole, tail, tail.lower()]) if c and c != ref]


def resolve_model_reference(ref: str, base: Path | None = None, flag: str = "--model") -> Path:
    """:func:`resolve_model_path`, then a Hugging Face id as a shipped example
    (:func:`hf_id_candidates`): ``--model`` and a serve line's MODEL resolve alike. This tool
    downloads nothing.

    Raises:
        ConfigError: nothing on this machine or among the examples matches (charged to ``flag``),
            or a directory without config.json.
    """
    try:
        return resolve_model_path(ref, base)
    except ConfigError as first:
        local = Path(ref) if base is None or Path(ref).is_absolute() else base / ref
        if _is_dir(local):
            raise ConfigError([replace_path(i, flag) for i in first.issues]) from None
        for candidate in hf_id_candidates(ref):
            try:
                return resolve_model_path(candidate, base)
            except ConfigError:
                continue
        tail = ref.rstrip("/").rsplit("/", 1)[-1]
        raise ConfigError([InputIssue(flag, f"{ref!r} is not a local checkpoint or config.json, and {tail!r} is not a shipped example (this tool does not download models; pass the checkpoint directory or its config.json)", ref, first.issues[0].allowed)]) from None


def replace_path(issue: InputIssue, flag: str) -> InputIssue:
    from dataclasses import replace

    return replace(issue, path=flag)


def resolve_quant_config_path(ref: str) -> Path:
    """An ``--hf-quant-config`` reference: a file, or a shipped example's name (with or without
    ``.hf_quant_config`` / ``.json``: ``nvidia-nemotron-3-nano-30b-a3b-nvfp4``).

    Raises:
        ConfigError: neither (lists the shipped hf_quant_config.json examples).
    """
    path = Path(ref)
    if _is_file(path):
        return path
    shipped = sorted(p.name[: -len(".hf_quant_config.json")] for p in examples_dir().glob("*.hf_quant_config.json"))
    key = _example_key(ref.removesuffix(".json").removesuffix(".hf_quant_config"))
    for name in shipped:
        if _example_key(name) == key:
            return examples_dir() / f"{name}.hf_quant_config.json"
    raise ConfigError([InputIssue("--hf-quant-config", "no such file, and not the name of a shipped hf_quant_config.json example", ref, shipped)])


def quant_config_beside(model_path: Path) -> Path | None:
    """The ``hf_quant_config.json`` beside a model config, if there is one.

    ``DIR/config.json`` -> ``DIR/hf_quant_config.json`` (a checkpoint directory);
    ``NAME.json`` -> ``NAME.hf_quant_config.json`` (the shipped examples' naming).
    vLLM reads it only when config.json carries no quantization document.
    """
    if model_path.name == "config.json":
        beside = model_path.with_name("hf_quant_config.json")
    else:
        beside = model_path.with_name(model_path.name[: -len(".json")] + ".hf_quant_config.json") if model_path.name.endswith(".json") else None
    return beside if beside is not None and _is_file(beside) else None


def _is_file(path: Path) -> bool:
    # Path.is_file() raises for some unusable names (ENAMETOOLONG, EACCES); those are no file either.
    try:
        return path.is_file()
    except OSError:
        return False


def _is_dir(path: Path) -> bool:
    try:
        return path.is_dir()
    except OSError:
        return False


def refuse_quant_config_as_model(doc: dict, path: Path) -> None:
    """Refuse a ModelOpt ``hf_quant_config.json`` given where a model config belongs (it has a
    ``quantization`` object and no ``model_type``/``architectures``), pointing at ``--hf-quant-config``.

    Raises:
        ConfigError: ``doc`` is a quantization document, not a model config.
    """
    if isinstance(doc.get("quantization"), dict) and not any(k in doc for k in ("model_type", "architectures", "num_hidden_layers")):
        raise ConfigError([InputIssue("--model", "this is a ModelOpt hf_quant_config.json, not a model config: give the model's config.json as --model and this file as --hf-quant-config (or put it beside config.json, where vLLM reads it)", str(path), None)])
