"""Model references: a ``config.json`` path, a checkpoint directory, or a shipped example's name,
and the ``hf_quant_config.json`` that may sit beside it."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from ..core._resources import examples_dir
from ..core.errors import ConfigError, InputIssue
from .paths import read_user_file, refuse_special_file, shown_path, user_path

__all__ = ["EXAMPLE_HF_IDS", "ModelReference", "example_names", "find_model", "find_quant_config", "looks_like_path", "quant_config_beside", "quant_document", "resolve_model_path", "refuse_quant_config_as_model"]


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
    candidate = user_path(ref, base)
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


EXAMPLE_HF_IDS: dict[str, tuple[str, ...]] = {
    "deepseek-r1": ("deepseek-ai/DeepSeek-R1",),
    "deepseek-v3.2": ("deepseek-ai/DeepSeek-V3.2",),
    "deepseek-v4-flash": ("deepseek-ai/DeepSeek-V4-Flash",),
    "gemma-4-26b-a4b": ("google/gemma-4-26B-A4B",),
    "glm-5": ("zai-org/GLM-5",),
    "glm-5-fp8": ("zai-org/GLM-5-FP8",),
    "gpt-oss-120b": ("openai/gpt-oss-120b",),
    "gpt-oss-20b": ("openai/gpt-oss-20b",),
    "kimi-k2-instruct": ("moonshotai/Kimi-K2-Instruct",),
    "kimi-k2.5": ("moonshotai/Kimi-K2.5",),
    "kimi-k3": ("moonshotai/Kimi-K3",),
    "llama-4-maverick-17b-128e-instruct-fp8": ("meta-llama/Llama-4-Maverick-17B-128E-Instruct-FP8",),
    "llama-4-scout-17b-16e-instruct": ("meta-llama/Llama-4-Scout-17B-16E-Instruct",),
    "minimax-m2": ("MiniMaxAI/MiniMax-M2",),
    "minimax-m2.7": ("MiniMaxAI/MiniMax-M2.7",),
    "minimax-m3": ("MiniMaxAI/MiniMax-M3",),
    "mixtral-8x22b-v0.1": ("mistral-community/Mixtral-8x22B-v0.1", "mistralai/Mixtral-8x22B-v0.1"),
    "mixtral-8x7b-instruct-v0.1": ("mistralai/Mixtral-8x7B-Instruct-v0.1",),
    "nvidia-deepseek-v4-flash-nvfp4": ("nvidia/DeepSeek-V4-Flash-NVFP4",),
    "nvidia-nemotron-3-nano-30b-a3b-bf16": ("nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16",),
    "nvidia-nemotron-3-super-120b-a12b": ("nvidia/NVIDIA-Nemotron-3-Super-120B-A12B",),
    "nvidia-qwen3.5-122b-a10b-nvfp4": ("nvidia/Qwen3.5-122B-A10B-NVFP4",),
    "qwen3-235b-a22b": ("Qwen/Qwen3-235B-A22B",),
    "qwen3-235b-a22b-fp8": ("Qwen/Qwen3-235B-A22B-FP8",),
    "qwen3-30b-a3b": ("Qwen/Qwen3-30B-A3B",),
    "qwen3-30b-a3b-fp8": ("Qwen/Qwen3-30B-A3B-FP8",),
    "qwen3.5-122b-a10b": ("Qwen/Qwen3.5-122B-A10B",),
    "redhatai-deepseek-v4-flash-nvfp4-fp8": ("RedHatAI/DeepSeek-V4-Flash-NVFP4-FP8",),
}
"""The Hugging Face id each shipped example's config.json was published under
(``examples/models/SOURCES.md``; a test keeps the two and the folder in step)."""


@dataclass(frozen=True)
class ModelReference:
    """Where a model reference led.

    Attributes:
        path: the config.json read.
        note: set when the path stands in for what was named (a Hugging Face id of another
            organisation whose name is a shipped example's): says which example answers.
        shown: the reference as the operator wrote it, when it named a local path (``~/ck``);
            ``None`` for a shipped example.
    """

    path: Path
    note: str | None = None
    shown: str | None = None

    def shown_as(self, path: Path | None = None) -> str:
        """How messages name ``path`` (default: :attr:`path`), a file found from this reference
        (the ``hf_quant_config.json`` beside it): as the operator wrote the reference
        (:func:`~moe_oracle.inputs.paths.shown_path`: a leading ``~`` kept), else the path."""
        path = self.path if path is None else path
        return shown_path(self.shown, path) if self.shown is not None else str(path)


def looks_like_path(ref: str) -> bool:
    """Whether ``ref`` can only be a filesystem path, never a Hugging Face id: absolute, ``./``,
    ``../``, ``~``, more than one ``/``, or a trailing ``/`` (an id is ``name`` or ``org/name``).

    >>> [looks_like_path(r) for r in ("/m/x", "./x", "~/x", "a/b/c", "x/", "Qwen/Qwen3-30B-A3B", "x")]
    [True, True, True, True, True, False, False]
    """
    return ref.startswith(("/", "./", "../", "~")) or ref in (".", "..") or ref.count("/") > 1 or ref.endswith("/")


def _example_by_hf_id(ref: str) -> tuple[str, str, bool] | None:
    """(example, its Hugging Face id, exact) for an ``org/name`` id: the example published under
    that id (exact), else the one whose id's name is ``name`` under another organisation."""
    wanted = ref.lower()
    for name, ids in EXAMPLE_HF_IDS.items():
        for hf_id in ids:
            if hf_id.lower() == wanted:
                return name, hf_id, True
    tail = _example_key(ref.rsplit("/", 1)[-1])
    for name, ids in EXAMPLE_HF_IDS.items():
        for hf_id in ids:
            if _example_key(hf_id.rsplit("/", 1)[-1]) == tail or _example_key(name) == tail:
                return name, hf_id, False
    return None


def find_model(ref: str, base: Path | None = None, flag: str = "--model") -> ModelReference:
    """A model reference as ``--model``, a serve line's MODEL and a config file's
    ``model.hf_config`` take it. This tool downloads nothing.

    In order: a local config.json or checkpoint directory (relative to ``base``); a reference
    that can only be a path (:func:`looks_like_path`) and is none is refused, never read as a
    shipped example of the same last name; a shipped example's name, or its file name
    (``qwen3-30b-a3b-fp8.json``); a Hugging Face ``org/name`` id the example was published
    under (:data:`EXAMPLE_HF_IDS`); an id of another organisation whose name is an example's
    (``someone/Qwen3-30B-A3B-FP8``) resolves to that example with a note saying so.

    Raises:
        ConfigError: none of these (charged to ``flag``), or a directory without config.json.
    """
    local = user_path(ref, base)
    refuse_special_file(local, flag, ref, directory=True)  # a pipe is read once; diff reads each side's config
    if _is_file(local) or _is_dir(local):
        try:
            return ModelReference(resolve_model_path(ref, base), shown=ref)
        except ConfigError as exc:
            raise ConfigError([replace_path(i, flag) for i in exc.issues]) from None
    if looks_like_path(ref):
        raise ConfigError([InputIssue(flag, "no such file or checkpoint directory (a path is never read as a shipped example of the same name; this tool does not download models)", ref, None)])
    stem = ref[: -len(".json")] if ref.lower().endswith(".json") and "/" not in ref else ref
    wanted = _example_key(stem)
    for name in example_names():
        if _example_key(name) == wanted:
            return ModelReference(examples_dir() / f"{name}.json")
    if ref.count("/") == 1:
        found = _example_by_hf_id(ref)
        if found is not None:
            name, hf_id, exact = found
            path = examples_dir() / f"{name}.json"
            if exact:
                return ModelReference(path)
            return ModelReference(path, f"{flag}: {ref} is not on this machine and this tool downloads nothing: the answer is for the shipped example {name} "
                                        f"({hf_id}'s config.json) in its place; give your checkpoint's directory or config.json if its config differs")
    tail = ref.rsplit("/", 1)[-1]
    raise ConfigError([InputIssue(flag, f"{ref!r} is not a local checkpoint or config.json, and {tail!r} is not a shipped example (this tool does not download models; pass the checkpoint directory or its config.json)", ref, list(example_names()))])


def replace_path(issue: InputIssue, flag: str) -> InputIssue:
    from dataclasses import replace

    return replace(issue, path=flag)


def find_quant_config(ref: str, base: Path | None = None, flag: str = "--hf-quant-config") -> ModelReference:
    """An ``--hf-quant-config`` reference (or a config file's ``model.hf_quant_config``, relative
    to ``base``): a regular file, or a shipped example's name (with or without
    ``.hf_quant_config`` / ``.json``): its ``hf_quant_config.json``
    (``nvidia-nemotron-3-nano-30b-a3b-nvfp4``), else its model config, whose quantization
    document is read as a config.json file's is (``qwen3-30b-a3b-fp8``,
    :func:`quant_document`; an example without one is refused there).

    Raises:
        ConfigError: neither (lists the shipped examples that carry a quantization document), or
            a path that exists and is no regular file (a directory, a pipe, a device), charged to ``flag``.
    """
    path = user_path(ref, base)
    refuse_special_file(path, flag, ref)
    if _is_file(path):
        return ModelReference(path, shown=ref)
    shipped = sorted(p.name[: -len(".hf_quant_config.json")] for p in examples_dir().glob("*.hf_quant_config.json"))
    key = _example_key(ref.removesuffix(".json").removesuffix(".hf_quant_config"))
    for name in shipped:
        if _example_key(name) == key:
            return ModelReference(examples_dir() / f"{name}.hf_quant_config.json")
    if not looks_like_path(ref):  # a path is never read as an example of its last name (find_model)
        for name in example_names():
            if _example_key(name) == key:
                return ModelReference(examples_dir() / f"{name}.json")
    allowed = sorted({*shipped, *(name for name in example_names() if _carries_quant_document(examples_dir() / f"{name}.json"))})
    raise ConfigError([InputIssue(flag, f"no such file, and not the name of a shipped example that carries a quantization document; {flag} takes a file's path "
                                        "(an hf_quant_config.json, or a config.json that carries quantization_config) or one of these names", ref, allowed)])


def _carries_quant_document(path: Path) -> bool:
    """Whether the shipped model config at ``path`` holds a quantization document that
    :func:`quant_document` reads."""
    import json

    doc = json.loads(read_user_file(path, "--hf-quant-config", 4 * 1024 * 1024).data)  # a shipped file, through the one door
    text = doc.get("text_config")
    return any(isinstance(found, Mapping) for found in (doc.get("quantization_config"), text.get("quantization_config") if isinstance(text, Mapping) else None, doc.get("compression_config")))


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


_QUANT_DOCUMENT_ALLOWED = ["an hf_quant_config.json (a quant_method, or ModelOpt's producer and quantization)", "a config.json that carries quantization_config"]


def quant_document(doc: Mapping[str, Any], shown: str | None, flag: str, file: str | None = None, model_flag: str = "--model") -> tuple[Mapping[str, Any], str | None]:
    """The quantization document of a file given as ``flag`` (``--hf-quant-config``, a config
    file's ``$.model.hf_quant_config``, the Python API's ``from_hf_config(quant_cfg=...)``), and
    a note when it is not the whole file. ``shown``: how messages name the file (as the
    operator wrote it; ``None``: a document given without a file).

    A quantization document (``quant_method``, ModelOpt's ``quantization``) is itself. A model
    config (``architectures`` or ``model_type``) gives the document vLLM would read from it:
    ``quantization_config``, ``text_config.quantization_config``, then ``compression_config``
    (:func:`moe_oracle.inputs.checkpoint.quant_formats.read_quant_format`'s order). Anything
    else must name its method: a document with neither ``quant_method`` nor a non-empty ModelOpt
    ``quantization`` object (``{}``, a ``producer`` alone) names no scheme and is refused, where it
    used to answer "unquantized" for a quantized model.

    Raises:
        ConfigError: a model config that carries no quantization document, or a document that
            names no method, charged to ``flag`` (and ``file``, a config file), naming ``shown``,
            what the flag takes and where a model config goes (``model_flag``).
    """
    is_model = "architectures" in doc or "model_type" in doc
    if "quant_method" in doc or ("quantization" in doc and doc["quantization"] != {}):
        return doc, None
    if not is_model:
        what = repr(shown) if shown is not None else "the document"
        raise ConfigError([InputIssue(flag, f"{what} names no quantization method (no quant_method, and no ModelOpt quantization object with its quant_algo): "
                                            f"{flag} takes the quantization document a quantized checkpoint ships", shown, _QUANT_DOCUMENT_ALLOWED, file)])
    named = f"{flag} {shown}" if shown is not None else flag
    text = doc.get("text_config")
    for key, found in (("quantization_config", doc.get("quantization_config")), ("text_config.quantization_config", text.get("quantization_config") if isinstance(text, Mapping) else None),
                       ("compression_config", doc.get("compression_config"))):
        if isinstance(found, Mapping):
            return found, f"{named} is a model config: its {key} is the document read"
    what = repr(shown) if shown is not None else "the document"
    raise ConfigError([InputIssue(flag, f"{what} is a model config (architectures/model_type) with no quantization document (no quant_method, quantization or quantization_config): "
                                        f"{flag} takes the quantization document; a model config goes in {model_flag}", shown, _QUANT_DOCUMENT_ALLOWED, file)])


def refuse_quant_config_as_model(doc: dict, shown: str) -> None:
    """Refuse a ModelOpt ``hf_quant_config.json`` given where a model config belongs (it has a
    ``quantization`` object and no ``model_type``/``architectures``), pointing at ``--hf-quant-config``.

    Raises:
        ConfigError: ``doc`` is a quantization document, not a model config; names ``shown``
            (the file as the operator wrote it).
    """
    if isinstance(doc.get("quantization"), dict) and not any(k in doc for k in ("model_type", "architectures", "num_hidden_layers")):
        raise ConfigError([InputIssue("--model", "this is a ModelOpt hf_quant_config.json, not a model config: give the model's config.json as --model and this file as --hf-quant-config (or put it beside config.json, where vLLM reads it)", shown, None)])
