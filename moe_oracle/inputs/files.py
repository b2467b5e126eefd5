"""The untrusted doors: MoEConfig files, Hugging Face configs plus deployment flags.

Everything a user types arrives here and leaves as a frozen :class:`MoEConfig`
(and, when declared, an :class:`Environment`), or as one
:class:`~moe_oracle.core.errors.ConfigError` listing every problem with its JSON path,
the value and what is allowed. Files go through ``yaml.safe_load`` (JSON is YAML; a repeated key is refused: :func:`~moe_oracle.core.tables.safe_load`)
and ``schemas/moe_config.schema.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Mapping

from ..core.catalog import Catalog
from ..core.config import Device, MoEConfig, ParallelConfig, Provenance
from ..core.environment import Environment
from ..core.envvars import env_issues
from ..core.errors import ConfigError, InputIssue
from .file_hints import explain_schema_issues
from .hardware import check_known_device, lookup_hardware
from .hf import QUANT_DOCUMENT, from_hf_config, load_hf_config
from .models import ModelReference, find_model, find_quant_config, quant_config_beside, quant_document
from .paths import read_user_file
from ..core.quant import QUANT_FORMS, SCHEME_ALIASES, SCHEMES, QuantScheme, scheme_by_name, scheme_name, unknown_scheme_issue
from ..core.tables import MAX_TABLE_BYTES, Schemas, load_schemas, parse_yaml_bytes, validate_document
from ..core.names import ascii_lower, non_ascii_message
from ..core.vocab import All2AllBackend, Source

__all__ = [
    "LoadedConfig",
    "config_document",
    "load_config_file",
    "parse_quant",
    "resolve_all2all",
]


AnswerEnv = Callable[[Environment | None, bool], Environment | None]
"""The environment an answer is for, from a config file's declared one (``None``: not declared)
and whether the file asks to probe this machine (``environment.probe``)."""


@dataclass(frozen=True)
class LoadedConfig:
    """A config file's content: the layer, and the environment it declares (if any).

    Attributes:
        config: the layer and deployment.
        environment: the declared environment (``None``: none declared, or ``probe``).
        probe: ``environment.probe``: answer for this machine.
        checkpoint_quant: for ``model.hf_config``, the checkpoint's quantization document
            (:class:`~moe_oracle.inputs.checkpoint.quant_formats.QuantFormat`), which vLLM checks at
            start as for ``--model`` (:func:`moe_oracle.inputs.quant_checks.verify_checkpoint_quantization`);
            ``None`` for a layer given field by field.
        checkpoint_scheme: the experts' scheme as the checkpoint has it (before ``model.quant``).
        notes: what the answer carries from the file (a shipped example standing in for
            ``model.hf_config``'s Hugging Face id).
    """

    config: MoEConfig
    environment: Environment | None
    probe: bool
    checkpoint_quant: Any = None
    checkpoint_scheme: QuantScheme | None = None
    notes: tuple[str, ...] = ()


_HF_KEYS = ("architectures", "model_type", "num_hidden_layers", "hidden_size", "quantization_config", "text_config")


def _looks_like_hf_config(doc: Mapping[str, Any]) -> bool:
    return "model" not in doc and sum(1 for k in _HF_KEYS if k in doc) >= 2


def resolve_all2all(catalog: Catalog, name: str) -> tuple[All2AllBackend, str | None]:
    """An all2all backend name, with removed/renamed aliases rewritten (and a warning).

    Raises:
        ConfigError: neither a backend nor an alias (a name holding a character outside ASCII
            is told so, with its code point).
    """
    key = ascii_lower(name.strip()).replace("-", "_")  # ASCII letters only: no lookalike folds onto a name
    try:
        return All2AllBackend(key), None
    except ValueError:
        pass
    alias = catalog.all2all_aliases.get(key)
    if alias is None:
        allowed = [b.value for b in All2AllBackend] + sorted(catalog.all2all_aliases)
        raise ConfigError([InputIssue("$.parallel.all2all_backend", non_ascii_message("all2all backend", name) or "unknown all2all backend", name, allowed)])
    warning = f"warning: all2all backend {name!r} is {alias.status} upstream and was rewritten to {alias.to!r} ({alias.note or alias.reference})"
    return All2AllBackend(alias.to), warning


def parse_quant(value: Any, path: str = "--quant") -> QuantScheme:
    """A scheme name (or reference alias such as ``FP8-Blk``), or ``{weight, activation}``.

    An empty value (``""``, ``{}``) names no scheme and is refused, never read as unquantized
    (``unquantized`` is the name for none; ``{weight: null}`` says it key by key).

    Raises:
        ConfigError: unknown name or key; an empty value, or a mapping with keys other than
            ``weight`` and ``activation``, listing the accepted forms (:data:`QUANT_FORMS`).
    """
    if isinstance(value, QuantScheme):
        return value
    if isinstance(value, str):
        if not value.strip():
            raise ConfigError([InputIssue(path, "must not be empty: it names no quant scheme", value, list(QUANT_FORMS))])
        try:
            return scheme_by_name(value)
        except KeyError:
            raise ConfigError([unknown_scheme_issue(path, value)]) from None
    if isinstance(value, Mapping):
        if not value:
            raise ConfigError([InputIssue(path, "must not be an empty mapping: it names no quant scheme (it is not read as unquantized; write unquantized, or {weight: null})", {}, list(QUANT_FORMS))])
        other = sorted(str(k) for k in value if k not in ("weight", "activation"))
        if other:
            raise ConfigError([InputIssue(path, f"a quant mapping has the keys weight and activation, not {', '.join(other)}", dict(value), list(QUANT_FORMS))])
        try:
            return QuantScheme(value.get("weight"), value.get("activation"))
        except ValueError as exc:
            raise ConfigError([InputIssue(path, str(exc), dict(value), None)]) from None
    raise ConfigError([InputIssue(path, "must be a scheme name or {weight, activation}", value, [*SCHEMES, *SCHEME_ALIASES])])


def _platform_of(doc: Any) -> str | None:
    """The platform of the file's device for the checkpoint reader, ``None`` when the device
    is malformed (its error is raised where the device is read)."""
    try:
        return _device(doc).platform.value if isinstance(doc, Mapping) else None
    except ConfigError:
        return None


def _device(doc: Mapping[str, Any]) -> Device:
    """The file's ``device``: a catalog ``gpu``, or a platform with a capability or arch the
    tables know (:func:`~moe_oracle.inputs.hardware.check_known_device`, as for the flags).

    Raises:
        ConfigError: issues whose paths are the file's (``$.device.capability``), or ``--gpu``
            for a ``gpu`` the catalog does not hold (the caller charges it to ``$.device.gpu``).
    """
    if "gpu" in doc:
        return lookup_hardware(doc["gpu"]).device
    device = Device(doc["platform"], capability=doc.get("capability"), arch=doc.get("arch"), cpu_amx=doc.get("cpu_amx"), name=doc.get("name"))
    return check_known_device(device, capability_field="$.device.capability", arch_field="$.device.arch")


STDIN_NAME = "<stdin>"
"""How messages name a ``--config -`` document (``--config -`` reads standard input)."""


def load_config_file(path: str | Path, catalog: Catalog, schemas: Schemas | None = None, *, answer_env: AnswerEnv | None = None, data: bytes | None = None) -> LoadedConfig:
    """Load and validate a MoEConfig YAML/JSON file, or ``data`` (``--config -``: the bytes the
    command line read from standard input, at most ``MAX_TABLE_BYTES + 1``), validated exactly
    as a file's; messages name it ``<stdin>``, and its relative paths are the working directory's.

    Raises:
        ConfigError: unreadable, malformed, schema-invalid or semantically invalid; every
            problem names the file and the JSON path.
    """
    if data is not None:
        shown, base = STDIN_NAME, None
    else:
        read = read_user_file(path, "--config", MAX_TABLE_BYTES)  # a regular file only; a leading ~ stays in messages
        shown, base, data = read.shown, read.path.parent, read.data
    doc, problems = parse_yaml_bytes(shown, data)
    if problems:
        raise ConfigError(problems)
    return config_from_document(doc, catalog, file=shown, base=base, schemas=schemas, answer_env=answer_env)


def config_from_document(doc: Any, catalog: Catalog, *, file: str | None = None, base: Path | None = None, schemas: Schemas | None = None, answer_env: AnswerEnv | None = None) -> LoadedConfig:
    """Build a config from a parsed document (see ``schemas/moe_config.schema.json``).

    A ``model.hf_config`` checkpoint is read as the answer's vLLM release reads it
    (``Catalog.release`` of the environment): the document's own ``environment``, or what
    ``answer_env`` makes of it and of ``environment.probe`` (the command line's
    ``--package``/``--environment`` declared over it, or the probed machine).

    Raises:
        ConfigError: every schema problem at once, then the first semantic one.
    """
    schemas = schemas or load_schemas()
    if not isinstance(doc, dict):
        raise ConfigError([InputIssue("$", "a MoE config file must be a mapping", type(doc).__name__ if doc is not None else "empty file", None, file, keyword="type")])
    if _looks_like_hf_config(doc):
        raise ConfigError([InputIssue("--config", "this is a Hugging Face config.json, not a MoEConfig file: use --model " + (file or "PATH") + " (with --gpu and the deployment flags); --config takes the schemas/moe_config.schema.json format", file, None, file, keyword="format")])
    doc = _canonical_quant(doc)
    issues = validate_document(schemas.for_kind("moe_config"), doc, file)
    if issues:
        raise ConfigError(explain_schema_issues(issues, doc))
    env_doc = doc.get("environment")
    environment = None
    probe = False
    if env_doc is not None:
        probe = bool(env_doc.get("probe", False))
        if probe and any(env_doc.get(k) for k in ("packages", "absent", "env", "tools")):
            raise ConfigError([InputIssue("$.environment.probe", "probe reads this machine; do not also declare packages, absent, env or tools", True, None, file)])
        if not probe:
            pkgs = tuple((name, version) for name, version in (env_doc.get("packages") or {}).items())
            try:
                # tools: exactly as written (a document is exact; the --tool flag's nvcc -> jit_nvcc shorthand does not apply).
                environment = Environment(pkgs, frozenset(env_doc.get("absent") or ()), False, tuple((env_doc.get("env") or {}).items()), tools=tuple((env_doc.get("tools") or {}).items()))
            except ConfigError as exc:
                # Environment names command-line flags (--package NAME) and its fields (env NAME); here the input is this file.
                raise ConfigError([replace(i, path=_environment_path(i.path), file=file) for i in exc.issues]) from None
            from .declared import answer_release, start_issues

            release = answer_release(catalog, environment)
            issues = env_issues(environment.env, catalog.env_vars, "$.environment.env", file, release=release)
            issues += start_issues(environment.env, "$.environment.env", release, file)
            if issues:
                raise ConfigError(issues)
    src = Source.CONFIG_FILE
    model = doc["model"]
    prov: list[Provenance] = []
    if "hf_config" in model:
        try:
            found = find_model(model["hf_config"], base, "$.model.hf_config")
        except ConfigError as exc:
            raise ConfigError([replace(i, file=file) for i in exc.issues]) from None
        hf_path, hf_file = found.path, found.shown_as()  # as the file wrote it: a leading ~ stays in messages
        notes = (f"--config {file}: {found.note}",) if found.note else ()
        quant_ref = _quant_config_reference(model, base, file) if "hf_quant_config" in model else None
        quant_file = quant_ref.shown_as() if quant_ref else None
        quant_cfg, quant_note = quant_document(load_hf_config(quant_ref.path, "$.model.hf_quant_config", shown=quant_file, document=QUANT_DOCUMENT), quant_file, "$.model.hf_quant_config", file, "$.model.hf_config") if quant_ref else (None, None)
        notes += (f"--config {file}: {quant_note}",) if quant_note else ()
        beside_path = quant_config_beside(hf_path)
        beside_file = found.shown_as(beside_path) if beside_path else None
        from .declared import engine_release

        answer = answer_env(environment, probe) if answer_env is not None else environment
        release = engine_release(catalog, answer) if answer is not None else None
        ck = from_hf_config(load_hf_config(hf_path, "$.model.hf_config", shown=hf_file), file=hf_file, quant_cfg=quant_cfg, beside=load_hf_config(beside_path, shown=beside_file, document=QUANT_DOCUMENT) if beside_path else None, quant_file=quant_file, beside_file=beside_file,
                            release=release, platform=_platform_of(doc.get("device")))
        kwargs = dict(ck.kwargs)
        prov += list(ck.provenance)
        checkpoint = (ck.quant, kwargs.get("quant"))
        if "quant" in model:
            kwargs["quant"] = parse_quant(model["quant"], "$.model.quant")
            prov.append(Provenance("quant", src, "config file overrides the checkpoint's quantization"))
    else:
        checkpoint = (None, None)
        notes = ()
        kwargs = {k: v for k, v in model.items() if k != "quant"}
        if "quant" in model:
            kwargs["quant"] = parse_quant(model["quant"], "$.model.quant")
        prov += [Provenance(k, src, "") for k in model]
        if model.get("quant_method") is not None:
            _check_quant_method(catalog, model["quant_method"], answer_env(environment, probe) if answer_env is not None else environment, file)
            from ..core.normalize import table_quant_method

            read_as = table_quant_method(model["quant_method"])
            if read_as != model["quant_method"]:
                prov.append(Provenance("quant_method", src, f"{model['quant_method']}: the name vLLM's override ends with; the tables read the checkpoint format {read_as}"))
    try:
        device = _device(doc["device"])
    except ConfigError as exc:
        # replace() keeps the issue's class (a hardware name's did-you-mean never crosses architectures).
        # Device's own and check_known_device's issues carry the file's paths already; the catalog's name --gpu.
        raise ConfigError([replace(i, path=i.path if i.path.startswith("$.") else f"$.device.{i.path.replace('--gpu', 'gpu')}", file=file) for i in exc.issues]) from None
    prov.append(Provenance("device", Source.HARDWARE if "gpu" in doc["device"] else src, f"device {doc['device']}"))
    par = dict(doc.get("parallel") or {})
    if "all2all_backend" in par:
        try:
            backend, warning = resolve_all2all(catalog, par["all2all_backend"])
        except ConfigError as exc:
            raise ConfigError([replace(i, file=file) for i in exc.issues]) from None
        par["all2all_backend"] = backend
        prov.append(Provenance("parallel.all2all_backend", src, warning or ""))
    if par:
        prov.append(Provenance("parallel", src, ""))
        prov += [Provenance(f"parallel.{k}", src, "") for k in par if k != "all2all_backend"]
    for key in ("lora", "batch_invariant", "moe_backend", "max_num_tokens"):
        if key in doc:
            kwargs[key] = doc[key]
            prov.append(Provenance(key, src, ""))
    if par.get("sequence_parallel") is True and not ParallelConfig(**{k: v for k, v in par.items() if k != "sequence_parallel"}).sequence_parallel_possible:
        raise ConfigError([InputIssue("$.parallel.sequence_parallel", "true needs use_ep true, tp_size > 1 and dp_size > 1 (vLLM's use_sequence_parallel_moe; no model class passes it otherwise)", True, [False, None], file)])
    try:
        config = MoEConfig(device=device, parallel=ParallelConfig(**par), provenance=_dedupe(prov), **kwargs)
    except ConfigError as exc:
        raise ConfigError([InputIssue(_document_path(i.path, "hf_config" in model), i.message, i.value, i.allowed, file, i.entry, i.keyword) for i in exc.issues]) from None
    if "moe_backend" in doc:
        _check_moe_backend(catalog, doc["moe_backend"], environment, file)
    return LoadedConfig(config, environment, probe, *checkpoint, notes=notes)


def _canonical_quant(doc: dict[str, Any]) -> dict[str, Any]:
    """``doc`` with ``model.quant`` written as the scheme name it spells
    (:func:`moe_oracle.core.quant.scheme_name`: case and ``-``/``_`` ignored, as ``--quant``
    reads it), so that the schema's enum, which lists each name in one spelling, takes every
    spelling the flag takes (``FP8_Block``, ``Fp8-Blk``). A name that spells no scheme stays as
    written, for the schema's error and its did-you-mean. ``doc`` itself is not changed.

    >>> _canonical_quant({"model": {"quant": "FP8_Block"}}), _canonical_quant({"model": {"quant": "fp8_blok"}})
    ({'model': {'quant': 'fp8_block'}}, {'model': {'quant': 'fp8_blok'}})
    """
    model = doc.get("model")
    if not isinstance(model, Mapping):
        return doc
    name = scheme_name(model.get("quant"))
    if name is None or name == model["quant"]:
        return doc
    return {**doc, "model": {**model, "quant": name}}


def _check_quant_method(catalog: Catalog, value: str, environment: Environment | None, file: str | None) -> None:
    """Refuse a layer's ``quant_method`` that vLLM (the answer's release) does not know, or whose
    MoE method moe-oracle does not model (:func:`moe_oracle.inputs.quant_checks.config_quant_method_issue`);
    the platform's check of the method comes later, once the device is final (a ``--gpu`` flag
    may replace the file's).

    Raises:
        ConfigError: naming ``$.model.quant_method``, the value and the allowed names.
    """
    from .quant_checks import config_quant_method_issue
    from .declared import answer_release
    from .release_facts import ENGINE_VERSION

    issue = config_quant_method_issue(value, answer_release(catalog, environment or Environment()) or ENGINE_VERSION, file=file)
    if issue is not None:
        raise ConfigError([issue])


def _check_moe_backend(catalog: Catalog, name: str, environment: Environment | None, file: str | None) -> None:
    """Refuse a ``moe_backend`` no modelled release accepts, with the message the ``--moe-backend``
    flag gets (the names the file's release accepts, a did-you-mean); a name only some release
    accepts is left to selection, which knows the release the answer is for.

    Raises:
        ConfigError: the name is unknown to every release; the issue names the file.
    """
    from ..core.requests import check_request, resolve_request

    try:
        resolve_request(catalog, name)
        return
    except ConfigError as exc:
        error = exc
    try:
        check_request(catalog, name, environment if environment is not None else Environment())
    except ConfigError as exc:
        error = exc
    raise ConfigError([replace(i, file=file) for i in error.issues]) from None


def _environment_path(path: str) -> str:
    """An :class:`Environment` issue's path (``--package NAME``, ``env NAME``, ``absent``) as a path of this document."""
    head, _, name = path.partition(" ")
    key = {"--package": "packages", "packages": "packages", "env": "env", "absent": "absent", "tools": "tools"}.get(head, "packages")
    return f"$.environment.{key}" + (f".{name}" if name else "")


def _quant_config_reference(model: Mapping[str, Any], base: Path | None, file: str | None) -> ModelReference:
    """``model.hf_quant_config`` of a config file, read as ``--hf-quant-config`` reads it (a file or
    a shipped example's name, never a checkpoint directory; :func:`~moe_oracle.inputs.models.find_quant_config`);
    its error names the file and key."""
    try:
        return find_quant_config(model["hf_quant_config"], base, "$.model.hf_quant_config")
    except ConfigError as exc:
        raise ConfigError([replace(i, path="$.model.hf_quant_config", file=file) for i in exc.issues]) from None


_TOP_LEVEL = ("$.lora", "$.batch_invariant", "$.moe_backend", "$.max_num_tokens", "$.device", "$.parallel")


def _document_path(path: str, from_checkpoint: bool) -> str:
    """A MoEConfig field path (``$.top_k``) as the path of this document (``$.model.top_k``)."""
    if not path.startswith("$.") or path.startswith(_TOP_LEVEL):
        return path
    return ("$.model.hf_config -> " if from_checkpoint else "$.model.") + path[2:]


def _dedupe(prov: list[Provenance]) -> tuple[Provenance, ...]:
    by_field: dict[str, Provenance] = {}
    for p in prov:
        if p.field in by_field and not p.evidence:
            continue
        by_field[p.field] = p
    return tuple(by_field[k] for k in sorted(by_field))


def config_document(config: MoEConfig, env: Environment | None = None) -> dict[str, Any]:
    """A document that :func:`config_from_document` turns back into an equal config (provenance aside).

    Used to print replayable failing examples (``moe-oracle explain --config``).
    """
    d = config.device
    model: dict[str, Any] = {
        "num_experts": config.num_experts,
        "top_k": config.top_k,
        "hidden_size": config.hidden_size,
        "intermediate_size": config.intermediate_size,
        "activation": config.activation.value,
        "routing_method": config.routing_method.value,
        "quant": config.quant.name if config.quant.name in SCHEMES else {"weight": config.quant.weight, "activation": config.quant.activation},
        "quant_method": config.quant_method,
        "in_dtype": config.in_dtype.value,
        "router_logits_dtype": config.router_logits_dtype.value if config.router_logits_dtype else None,
        "has_bias": config.has_bias,
        "swiglu_alpha": config.swiglu_alpha,
        "swiglu_limit": config.swiglu_limit,
        "swiglu_beta": config.swiglu_beta,
        "num_expert_group": config.num_expert_group,
        "topk_group": config.topk_group,
        "routed_scaling_factor": config.routed_scaling_factor,
        "has_correction_bias": config.has_correction_bias,
        "situ_beta": config.situ_beta,
        "situ_linear_beta": config.situ_linear_beta,
        "model_type": config.model_type,
        "architecture": config.architecture,
        "has_hash_routing": config.has_hash_routing,
        "require_decomposed": config.require_decomposed,
        "weight_block_size": list(config.weight_block_size) if config.weight_block_size else None,
        "weight_group_size": config.weight_group_size,
        "act_order": config.act_order,
        "weight_zero_point": config.weight_zero_point,
    }
    p = config.parallel
    doc: dict[str, Any] = {
        "model": model,
        "device": {"platform": d.platform.value, "capability": d.capability, "arch": d.arch, "cpu_amx": d.cpu_amx, "name": d.name},
        "parallel": {
            "tp_size": p.tp_size,
            "dp_size": p.dp_size,
            "pcp_size": p.pcp_size,
            "use_ep": p.use_ep,
            "all2all_backend": p.all2all_backend.value,
            "enable_eplb": p.enable_eplb,
            "num_redundant_experts": p.num_redundant_experts,
            "ep_rank": p.ep_rank,
            "sequence_parallel": p.sequence_parallel,
            "expert_placement_strategy": p.expert_placement_strategy,
        },
        "lora": config.lora,
        "batch_invariant": config.batch_invariant,
        "moe_backend": config.moe_backend,
        "max_num_tokens": config.max_num_tokens,
    }
    if env is not None:
        doc["environment"] = {"probe": False, "packages": dict(env.packages), "absent": sorted(env.absent), "env": dict(env.env), **({"tools": dict(env.tools)} if env.tools else {})}
    return doc


def dump_document(doc: Mapping[str, Any]) -> str:
    """YAML text of a config document (``yaml.safe_dump``)."""
    import yaml  # here only: reading a config goes through tables.safe_load, which imports it

    return yaml.safe_dump(dict(doc), sort_keys=False)
