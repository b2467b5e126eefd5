"""What an operator already has, turned into oracle inputs: a ``vllm serve`` line, an
environment file, package and environment-variable declarations.

The command-line front end (:mod:`moe_oracle.cli`) calls these; each returns its result
plus *notes*: one sentence per input that has no effect or is read in a way the operator
may not expect. Nothing here is fatal unless the engine itself would refuse the input
(then :class:`~moe_oracle.errors.ConfigError`, exit code 2).
"""

from __future__ import annotations

import argparse
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .envfile import PackageSpec, canonical_name, parse_requirement, read_environment_file, unique_specs
from .environment import Environment
from .envvars import env_issues, env_notes
from .errors import ConfigError, InputIssue, did_you_mean
from .serve import ServeArgs, engine_facts, release_values

__all__ = ["SERVE_TO_ARGS", "DeclaredEnvironment", "answer_release", "apply_serve", "blame_hf_overrides", "check_draft_moe_backend", "declare_environment", "load_serve_checkpoint", "quantization_override", "serve_model_path", "verify_checkpoint_quantization"]

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
    through :func:`moe_oracle.inputs.resolve_model_path`; a Hugging Face id resolves to a shipped
    example named after the whole id (``nvidia/Qwen3.5-122B-A10B-NVFP4`` ->
    ``nvidia-qwen3.5-122b-a10b-nvfp4``, as examples/models names a vendor's re-quantized
    checkpoint), else after its last component (``Qwen/Qwen3-30B-A3B-FP8`` -> ``qwen3-30b-a3b-fp8``).

    Raises:
        ConfigError: nothing on this machine or among the examples matches.
    """
    from .inputs import resolve_model_path

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

    vLLM 0.29.0-0.33.0 vllm/config/model.py: ``hf_overrides`` (a dict) updates the HF config; on
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
            if isinstance(value, Mapping) and isinstance(cfg.get(key), Mapping):
                cfg[key] = {**cfg[key], **value}
            else:
                cfg[key] = value
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


def _quant_document_elsewhere(cfg: Mapping[str, Any], path: Path) -> bool:
    """Whether vLLM finds a quantization document for a config.json without
    ``quantization_config``: ``hf_quant_config.json`` beside it (vllm/transformers_utils/config.py
    ``get_config``), ``compression_config`` or ``text_config.quantization_config``
    (vllm/transformers_utils/model_arch_config_convertor.py ``get_quantization_config``)."""
    from .inputs import quant_config_beside

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


def verify_checkpoint_quantization(quant: Any, user: str | None, flag: str, release: str, *, allow_deprecated: bool, allow_flag: str) -> list[str]:
    """Check the checkpoint's quantization document against ``--quantization`` as vLLM
    ``release`` does at start (vllm/config/model.py ``ModelConfig._verify_quantization``,
    the same in 0.29.0-0.33.0), in its order:

    1. Without a quantization document (online quantization), the ``--quantization`` value
       itself is checked (:func:`moe_oracle.serve.quantization_value_issues`).
    2. With one, the override classes run first (:func:`quantization_override`): ``-q marlin``
       on a GPTQ checkpoint becomes ``auto_gptq``, any ``-q`` on a ModelOpt FP8 one ``modelopt``.
       Where none accepts, a ``--quantization`` other than the checkpoint's ``quant_method`` is
       refused ("does not match"); an empty ``quant_method`` counts as ``None`` there, so any
       ``--quantization`` no override takes is refused.
    3. The method this yields must be one of the release's methods and, if deprecated (the
       release's ``DEPRECATED_QUANTIZATION_METHODS``, ``engine_facts/vllm-release-values.yaml``),
       needs ``--allow-deprecated-quantization``. The ``--quantization`` value as given is not
       checked by name: an override has replaced it, or it equals the checkpoint's method.

    ``--quantization humming`` is taken by ``HummingConfig``'s override for every checkpoint
    (Q/humming.py), and the MoE layers then run ``HummingMoEMethod``, whose kernel choice the
    tables do not model: refused as not modelled rather than answered with the checkpoint's own
    selection.

    Args:
        quant: the checkpoint's :class:`~moe_oracle.checkpoint.quant_formats.QuantFormat`.
        user: the ``--quantization`` value (``None``: not given); ``flag`` names where it was given.
        release: the modelled release the answer is for.
        allow_deprecated, allow_flag: whether ``--allow-deprecated-quantization`` was given, and
            how to name it in a refusal.

    Returns:
        notes (a ``--quantization`` an override class replaces).

    Raises:
        ConfigError: a method vLLM refuses (unknown or deprecated), a mismatch no override
            accepts, vLLM's gpt-oss ``--quantization humming`` refusal, ``humming`` (not
            modelled), or a method other than fp8 on an unquantized checkpoint (online
            quantization with it is not modelled).
    """
    from .serve import quantization_value_issues

    config = dict(getattr(quant, "config", None) or {})
    if "quant_method" not in config:  # no quantization document: online quantization, or none
        issues = quantization_value_issues(user, release, allow_deprecated=allow_deprecated, flag=flag) if user is not None else []
        if issues:
            raise ConfigError(issues, headline=f"bad {flag.split()[0]}")
        if user is not None and user != "fp8":
            # vLLM quantizes online with that method (humming: HummingMoEMethod) or fails to build
            # its config; only online fp8 is modelled (load_serve_checkpoint), and answering for
            # the unquantized layer would be wrong.
            raise ConfigError([InputIssue(flag, f"{flag.split()[-1]} {user} on an unquantized checkpoint is not modelled: vLLM {release} quantizes the layer online with that method or refuses it; moe-oracle models online quantization only for fp8", user, ["fp8"])], headline=f"bad {flag.split()[0]}")
        return []
    declared = getattr(quant, "declared", None) or None  # "" -> None, as _verify_quantization does after the override loop
    headline = f"bad {flag.split()[0]}"
    try:
        override = quantization_override({**config, "quant_method": declared or ""}, user, getattr(quant, "model_type", None))
    except ValueError as exc:
        raise ConfigError([InputIssue(flag, f"vLLM {release} refuses the checkpoint at start: {str(exc)!r} (HummingConfig.override_quantization_method, vllm/model_executor/layers/quantization/humming.py)", user, None)], headline=headline) from None
    if override == "humming":
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
    if effective in values["deprecated_quantization"] and not allow_deprecated:
        raise ConfigError([InputIssue(where[0], f"vLLM {release} refuses the deprecated quantization method {effective} at start unless {allow_flag} is given (ModelConfig._verify_quantization, vllm/config/model.py; DEPRECATED_QUANTIZATION_METHODS)", declared, None, where[1])], headline="bad checkpoint")
    return notes


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


def answer_release(catalog: Any, env: Environment) -> str | None:
    """The modelled engine release whose facts an answer for ``env`` states: the declared or
    probed release when the tables model it, else the modelled release standing in for it
    (:meth:`~moe_oracle.versions.EngineRelease.stand_in`), the newest when none is known;
    ``None`` for a catalog without an engine (hand-built in tests)."""
    if getattr(catalog, "source", None) is None:
        return None
    return catalog.release(env).stand_in


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

