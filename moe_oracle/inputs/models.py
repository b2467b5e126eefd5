"""Model references: a ``config.json`` path, a checkpoint directory, or a shipped example's name,
and the ``hf_quant_config.json`` that may sit beside it."""

from __future__ import annotations

from pathlib import Path

from ..core._resources import examples_dir
from ..core.errors import ConfigError, InputIssue

__all__ = ["example_names", "quant_config_beside", "resolve_model_path"]


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
