"""The one door for a whole model (``plan``, ``diff`` of a model): what an operator gave read into
a :class:`ModelDeployment`, the checkpoint as the answer's release builds it with the device,
parallel shape, environment and draft (MTP) layers it is planned for.

It shares its pieces with the one-layer door (:mod:`moe_oracle.inputs.deployment`);
:func:`moe_oracle.explain.plan.plan_deployment` turns the record into a plan.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..core.catalog import Catalog
from ..core.config import Device, ParallelConfig, Provenance
from ..core.environment import Environment, probe_device
from ..core.errors import ConfigError, InputIssue
from ..core.names import escaped
from ..core.placement import places_experts
from ..core.refusals import FLAG, Origin, where_given
from ..core.requests import check_request, resolve_request
from ..core.versions import EngineRelease
from ..core.vocab import Source
from .bounds import check_model_config
from .checkpoint import Checkpoint, read_checkpoint
from .declared import DeclaredEnvironment, answer_release, declare_environment, engine_release
from .deployment import check_serve_values, declared_gpu_device, device_from_inputs, device_required, origins_of, probed_environment, read_model_config, serve_release, unused_gpu_note
from .files import resolve_all2all
from .hf import QUANT_DOCUMENT, load_hf_config
from .models import find_quant_config, quant_config_beside, quant_document
from .operator_inputs import OperatorInputs
from .placement_note import placement_note
from .quant_checks import checkpoint_quantization, verify_checkpoint_quantization
from .serve import ServeArgs, parse_serve
from .eplb_defaults import default_redundant_parallel
from .attention_heads import attention_heads_refusal, engine_attention_heads
from .ep_refusal import ep_without_experts
from .moonep_start import moonep_quantized_model_refusal
from .model_start_refusals import blame_from, model_start_refusal
from .sequence_parallel import parallel_with_sequence_parallel
from .release_facts import ENGINE_VERSION
from .serve_apply import apply_serve, blame_hf_overrides, check_draft_moe_backend
from .serve_config_file import ConfigFileFlags, charged_to_config_file
from .speculative import resolve_draft

__all__ = ["ModelDeployment", "build_model_deployment"]


@dataclass(frozen=True)
class ModelDeployment:
    """A whole model's oracle inputs.

    Attributes:
        given: the operator's inputs, with the fields a serve line filled.
        checkpoint: every layer as the answer's release builds it.
        environment, release: what the answer is for.
        device, parallel: where and how it is deployed.
        moe_backend: the target layers' request (``auto``: none); draft_moe_backend, draft_source:
            the draft (MTP) layers' request and the flag that gave it (``None``: inherited).
        include_draft: plan the MTP draft layers; draft_by_serve: a serve line decided that.
        provenance: where deployment fields came from; notes: inputs with no effect.
        config_file: what the serve line's ``--config`` YAML file gave (``None``: none), so that
            a start refusal found later (``plan``) names that file.
    """

    given: OperatorInputs
    checkpoint: Checkpoint
    environment: Environment
    release: EngineRelease | None
    device: Device
    parallel: ParallelConfig
    moe_backend: str = "auto"
    draft_moe_backend: str | None = None
    draft_source: str | None = None
    include_draft: bool = True
    draft_by_serve: bool = False
    provenance: tuple[Provenance, ...] = ()
    notes: tuple[str, ...] = ()
    config_file: ConfigFileFlags | None = None

    def origins(self) -> dict[str, Origin]:
        """Deployment field -> the input that set it (:func:`moe_oracle.inputs.deployment.origins_of`)."""
        return origins_of(self.given)


def _environment(given: OperatorInputs, catalog: Catalog, serve: ServeArgs | None, probe_notes: tuple[str, ...]) -> tuple[Environment, tuple[str, ...], DeclaredEnvironment | None]:
    """(Environment, notes, declared) from --probe or --environment/--package/--without/--env and the serve line."""

    if given.probe:
        return probed_environment(given, catalog, probe_notes), (), None
    declared = declare_environment(catalog, packages=given.package, package_given_by=given.package_given_by, without=given.without, env=given.env, env_file=given.environment, serve_env=serve.env if serve else (), tools=given.tool)
    return declared.environment, tuple(declared.notes), declared


def build_model_deployment(given: OperatorInputs, catalog: Catalog) -> ModelDeployment:
    """The one door for a whole model: ``given`` read into a :class:`ModelDeployment` (``plan``,
    and ``diff`` of a whole model per side; inputs a command lacks keep their defaults).

    Raises:
        ConfigError: a missing or invalid model, device or flag (one the serve line's
            ``--config`` file gave names that file).
    """

    if given.config:
        raise ConfigError([InputIssue("--config", "plan reads a whole model: give --model CONFIG_JSON, a checkpoint directory or an example name (--config describes one layer; use explain)", given.config, None)])
    if given.quant:
        raise ConfigError([InputIssue("--quant", "plan takes each layer's quantization from the checkpoint and its exclusion lists; --quant overrides one layer (use explain)", given.quant, None)])
    if given.no_draft and given.draft_moe_backend:
        raise ConfigError([InputIssue("--no-draft", "--no-draft leaves the MTP draft layers out, so --draft-moe-backend would have nothing to set: give one of them", given.draft_moe_backend, None)], headline="bad --no-draft")
    serve = parse_serve(given.serve, version=serve_release(given, catalog)) if given.serve else None
    with charged_to_config_file(serve.from_config if serve is not None else None):
        return _build_model_deployment(given, catalog, serve)


def _build_model_deployment(given: OperatorInputs, catalog: Catalog, serve: ServeArgs | None) -> ModelDeployment:
    notes: list[str] = []
    if serve is not None:
        given = apply_serve(given, serve)
        notes += [f"--serve: {n}" for n in serve.notes]
        if given.no_draft and serve.draft_moe_backend is not None:
            raise ConfigError([InputIssue("--no-draft", "--no-draft leaves the MTP draft layers out, but the --serve line's --speculative-config sets the draft's moe_backend: drop one of them", serve.draft_moe_backend, None)], headline="bad --no-draft")
    if not given.model and serve is None:
        raise ConfigError([InputIssue("--model", "describe the model with --model CONFIG_JSON, a checkpoint directory, an example name (`moe-oracle examples`), or --serve 'vllm serve MODEL ...'", None, None)])
    if given.probe and given.environment:
        raise ConfigError([InputIssue("--probe", "--probe reads this machine; --environment FILE declares another one: give one of them", given.environment, None)], headline="bad --probe")
    device = device_from_inputs(given)
    probe_notes: tuple[str, ...] = ()
    if device is None and given.probe:
        device, probe_notes = probe_device()
    env, env_notes, declared = _environment(given, catalog, serve, probe_notes)
    notes += env_notes
    if serve is not None:
        check_serve_values(serve, catalog, env)
    if device is not None:
        gpu_note = unused_gpu_note(given, device, declared, given.device_flag())
        notes += [gpu_note] if gpu_note else []
    elif declared is not None and declared.gpu is not None:
        device = declared_gpu_device(declared)
        notes.append(f"device {device.name} from {declared.gpu_source} ({declared.gpu})")
    if device is None:
        raise device_required(given)
    ref, hf_cfg, model_notes = read_model_config(given, serve)
    model_flag = "--serve MODEL" if serve is not None else "--model"  # the input as the operator gave it
    path, model_file = ref.path, ref.shown_as()  # as written: a leading ~ stays in messages
    notes += model_notes
    flag_q = given.quantization
    serve_q = serve.quantization if serve is not None else None
    if flag_q and serve_q and flag_q != serve_q:
        raise ConfigError([InputIssue("--quantization", f"given as --quantization {flag_q} and in --serve as --quantization {serve_q}: give one method", flag_q, [serve_q])], headline="bad --quantization")
    user_q = flag_q or serve_q
    q_flag = "--quantization" if flag_q else "--serve --quantization"
    override_ref = find_quant_config(given.hf_quant_config) if given.hf_quant_config else None
    override_file = override_ref.shown_as() if override_ref else None
    override, override_note = quant_document(load_hf_config(override_ref.path, "--hf-quant-config", shown=override_file, document=QUANT_DOCUMENT), override_file, "--hf-quant-config", model_flag=model_flag) if override_ref else (None, None)
    notes += [override_note] if override_note else []
    beside_path = quant_config_beside(path)
    beside_file = ref.shown_as(beside_path) if beside_path else None
    beside = load_hf_config(beside_path, model_flag, shown=beside_file, document=QUANT_DOCUMENT) if beside_path else None
    def read(cfg: dict[str, Any]) -> Any:
        check_model_config(cfg, model_file)
        return read_checkpoint(cfg, file=model_file, beside=beside, override=override, user_quantization=user_q if user_q == "moe_wna16" else None, release=engine_release(catalog, env), platform=device.platform.value,
                               override_file=override_file, beside_file=beside_file)

    try:
        checkpoint = read(hf_cfg)
    except ConfigError as exc:
        raise blame_hf_overrides(exc, serve, lambda: read(load_hf_config(path, model_flag, shown=model_file))) from None
    release = answer_release(catalog, env) or ENGINE_VERSION
    notes += verify_checkpoint_quantization(checkpoint.quant, user_q, q_flag, release, allow_deprecated=bool(serve is not None and serve.allow_deprecated_quantization), allow_flag="--allow-deprecated-quantization (on the --serve line)", device=device,
                                            online_moe=serve.online_moe_target if serve is not None else None,
                                            experts_quantized=any(getattr(layer.kwargs.get("quant"), "weight", None) is not None for layer in checkpoint.moe_layers()))
    if flag_q and not serve_q and not checkpoint.quant.declared:
        notes.append(f"--quantization {flag_q} on an unquantized checkpoint is not modelled: the answer is for the unquantized layers")
    include_draft, draft_notes = _draft_layers(given, serve, checkpoint, release)
    notes += draft_notes
    prov: list[Provenance] = []
    par: dict[str, Any] = {}
    for flag, key in (("tp", "tp_size"), ("dp", "dp_size"), ("pcp", "pcp_size"), ("redundant_experts", "num_redundant_experts")):
        if getattr(given, flag) is not None:
            par[key] = getattr(given, flag)
    if given.ep is not None:
        par["use_ep"] = given.ep
    if given.eplb is not None:
        par["enable_eplb"] = given.eplb
    if given.all2all is not None:  # '' is refused by name, not read as "not given"
        backend, warning = resolve_all2all(catalog, given.all2all)
        par["all2all_backend"] = backend
        prov.append(Provenance("parallel.all2all_backend", Source.USER_FLAG, warning or f"--all2all {given.all2all}"))
    if given.expert_placement is not None:
        par["expert_placement_strategy"] = given.expert_placement
    if par:
        prov.append(Provenance("parallel", Source.USER_FLAG, "deployment flags"))
    parallel = ParallelConfig(**par)
    parallel, sp_note = parallel_with_sequence_parallel(parallel, checkpoint.architecture, release, bool(given.lora), device.platform.value)
    notes += [sp_note] if sp_note else []
    # vLLM's start checks of the model, in its order: ModelConfig's head split, MoonEP on a quantized
    # model (VllmConfig), EP without experts (ModelConfig), then the model class's own.
    origins = origins_of(given)
    tp_origin, a2a_origin, ep_origin = (origins.get(f, FLAG) for f in ("parallel.tp_size", "parallel.all2all_backend", "parallel.use_ep"))
    for refused in (attention_heads_refusal(engine_attention_heads(hf_cfg), parallel.tp_size, where_given("parallel.tp_size", tp_origin), f"vLLM {release}", tp_origin.file),
                    moonep_quantized_model_refusal(checkpoint_quantization(checkpoint.quant, user_q), parallel.all2all_backend.value, release,
                                                   where_given("parallel.all2all_backend", a2a_origin), a2a_origin.file),
                    ep_without_experts(hf_cfg, parallel.use_ep, where_given("parallel.use_ep", ep_origin), f"vLLM {release}", ep_origin.file)):
        if refused is not None:
            raise ConfigError([refused])
    blame = blame_from(origins)
    experts = min((layer.kwargs["num_experts"] for layer in checkpoint.moe_layers() if layer.spec.role == "target" and "num_experts" in layer.kwargs), default=None)
    refused = model_start_refusal(checkpoint.architecture, parallel, release, device.platform.value, blame, num_experts=experts)
    if refused is not None:
        raise ConfigError([refused])
    targets = {layer.kwargs["num_experts"] for layer in checkpoint.moe_layers() if layer.spec.role == "target" and "num_experts" in layer.kwargs}
    if len(targets) == 1:
        parallel, eplb_note = default_redundant_parallel(parallel, targets.pop(), answer_release(catalog, env), given=given.redundant_experts is not None)
        if eplb_note:
            notes.append(eplb_note)
            prov.append(Provenance("parallel.num_redundant_experts", Source.DERIVED, eplb_note))
    if not places_experts(parallel):  # with EP the plan's rank lines say where vLLM falls back, per layer group
        placement = placement_note(given, parallel, None)
        notes += [placement] if placement else []
    draft_flag = given.draft_moe_backend is not None and "draft_moe_backend" not in given.from_serve
    if draft_flag:
        check_draft_moe_backend(given.draft_moe_backend, answer_release(catalog, env) or ENGINE_VERSION)
    for flag, name in (("moe_backend", "--moe-backend"), ("draft_moe_backend", "--draft-moe-backend")):
        value = getattr(given, flag, None)
        if value:
            try:
                resolve_request(catalog, value)
                check_request(catalog, value, env)  # the release's accepted names, as the plan's selection reads them
            except ConfigError as exc:
                raise ConfigError([InputIssue(name, i.message, i.value, i.allowed) for i in exc.issues]) from None
    for flag, key in (("lora", "lora"), ("batch_invariant", "batch_invariant")):
        if getattr(given, flag):
            prov.append(Provenance(key, Source.USER_FLAG, f"--{flag.replace('_', '-')}"))
    if given.max_tokens is not None:
        prov.append(Provenance("max_num_tokens", Source.USER_FLAG, f"--max-tokens {given.max_tokens}"))
    return ModelDeployment(
        given=given, checkpoint=checkpoint, environment=env, release=engine_release(catalog, env), device=device, parallel=parallel,
        moe_backend=given.moe_backend or "auto", draft_moe_backend=given.draft_moe_backend if include_draft else None, draft_source="--draft-moe-backend" if draft_flag else None,
        include_draft=include_draft, draft_by_serve=serve is not None and include_draft, provenance=tuple(prov), notes=tuple(escaped(n) for n in notes),  # as Deployment's: echoed values escaped
        config_file=serve.from_config if serve is not None else None,
    )


def _draft_layers(given: OperatorInputs, serve: Any, checkpoint: Any, release: str) -> tuple[bool, list[str]]:
    """(plan the checkpoint's MTP draft layers?, notes).

    Without a serve line the MTP layers are planned unless ``--no-draft`` (what they would run
    under speculative decoding). With one, they are planned only when its speculative config makes
    vLLM ``release`` draft with them (:func:`moe_oracle.inputs.speculative.resolve_draft`: method ``mtp``
    or an alias, no other model); otherwise a note says what the draft is.

    Raises:
        ConfigError: ``--no-draft`` while the serve line drafts with the MTP layers.
    """

    mtp = sum(1 for layer in checkpoint.layers if layer.spec.role == "draft")
    no_draft = bool(given.no_draft)
    backend = given.draft_moe_backend
    backend_from = "the --serve line's --speculative-config moe_backend" if "draft_moe_backend" in given.from_serve else "--draft-moe-backend"
    notes: list[str] = []
    draft = resolve_draft(serve.speculative, serve.model, release) if serve is not None else None
    if draft is not None and draft.target_mtp and no_draft:
        raise ConfigError([InputIssue("--no-draft", f"--no-draft leaves the MTP draft layers out, but the --serve line makes vLLM draft with them ({draft.why}): drop one of them", True, None)], headline="bad --no-draft")
    if not mtp:
        if no_draft:
            notes.append("--no-draft: the checkpoint has no MTP layers, so there is nothing to leave out (no effect)")
        if draft is not None and draft.target_mtp:
            notes.append(f"the --serve line drafts with the target's MTP layers ({draft.why}), but the checkpoint has no MTP layers: no draft layer is planned (what vLLM does then is not modelled)")
        elif draft is not None and draft.method is not None:
            notes.append(f"draft not planned: {draft.why}")
        if backend and not (draft is not None and draft.separate_model):
            notes.append(f"{backend_from} {backend} has no effect on the plan: the checkpoint has no MTP draft layers" + (f", and {draft.method} runs no draft model" if draft is not None and draft.method is not None and not draft.target_mtp else ""))
        elif backend:
            notes.append(f"{backend_from} {backend} applies to that draft, whose MoE layers are not planned")
        return False, notes
    if draft is None:
        return not no_draft, notes
    if draft.target_mtp:
        return True, [f"draft: {draft.why}"]
    if no_draft:
        notes.append("--no-draft has no effect: the --serve line makes vLLM build no MTP draft layers")
    notes.append(f"draft not planned: {draft.why}; the checkpoint's {mtp} MTP layer{'s are' if mtp != 1 else ' is'} not built" + (" and the draft's MoE layers are not planned" if draft.separate_model else ""))
    if backend and draft.separate_model:
        notes.append(f"{backend_from} {backend} applies to that draft, not to the checkpoint's MTP layers: not planned")
    elif backend:
        notes.append(f"{backend_from} {backend} has no effect: {draft.method or 'no speculative decoding'} builds no draft MoE layer")
    return False, notes
