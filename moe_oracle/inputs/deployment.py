"""The one door: what an operator gave (:class:`~moe_oracle.inputs.operator_inputs.OperatorInputs`)
turned into the oracle's inputs for one MoE layer, a frozen :class:`Deployment`.

Every front end goes through here: the CLI's ``explain``, ``select``, ``why-not``, ``run`` and
``diff`` of one layer, and Python callers. A ``vllm serve`` line fills the deployment fields
(:func:`~moe_oracle.inputs.serve_apply.apply_serve`), a ``--config`` file or a checkpoint gives the
layer, the environment is declared or probed once, and the answer's vLLM release then checks what
it checks at start. A whole model goes through :mod:`moe_oracle.inputs.model_deployment`, which
shares these pieces.
"""

from __future__ import annotations

import os

from dataclasses import dataclass, replace
from typing import Any

from ..core.catalog import Catalog
from ..core.config import Device, MoEConfig, ParallelConfig, Provenance
from ..core.environment import Environment, probe_device, probe_environment
from ..core.envvars import env_issues
from ..core.errors import ConfigError, InputIssue
from ..core.names import escaped
from ..core.quant import QuantScheme
from ..core.refusals import FLAG, Origin, refusals, where_given
from ..core.versions import EngineRelease
from ..core.vocab import DType, Source
from .eplb_defaults import default_redundant_experts
from .attention_heads import attention_heads_refusal, engine_attention_heads
from .moonep_start import moonep_quantized_model_refusal
from .ep_refusal import engine_num_experts, ep_refusal
from .model_start_refusals import blame_from, model_start_refusal
from .sequence_parallel import with_sequence_parallel
from .declared import answer_release, declare_environment, engine_release, start_issues
from .files import load_config_file, parse_quant, resolve_all2all
from .hardware import check_known_device, device_hint, lookup_hardware
from .hf import QUANT_DOCUMENT, from_hf_config, load_hf_config
from .models import ModelReference, find_model, find_quant_config, quant_config_beside, quant_document, refuse_quant_config_as_model
from .operator_inputs import OperatorInputs
from .placement_note import bound_parallel, placement_note
from .quant_checks import FROM_FLAG, checkpoint_quantization, quantization_from_flag, verify_checkpoint_quantization, verify_layer_quantization
from .serve import ServeArgs, parse_serve, serve_value_issues
from .release_facts import ENGINE_VERSION, release_values
from .serve_apply import apply_serve, blame_hf_overrides, load_serve_checkpoint, serve_model_path
from .serve_config_file import charged_to_config_file

__all__ = ["CheckpointGate", "Deployment", "build_deployment", "check_serve_values", "device_from_inputs", "merged_notes", "origins_of", "probed_environment", "read_model_config", "serve_release", "unused_gpu_note"]

CheckpointGate = tuple[Any, Any, tuple[str, ...], "tuple[str, ...] | None"]
"""(the checkpoint's experts scheme, its quant method, the method vLLM checks for it, the method the
serve line's ``-q`` chose or ``None``): what why-not's search holds an edited layer to
(:func:`moe_oracle.inputs.admissible.start_refusal`)."""


@dataclass(frozen=True)
class Deployment:
    """One MoE layer's oracle inputs, as the operator's inputs give them.

    Attributes:
        given: the operator's inputs, with the fields a serve line filled (``given.from_serve``).
        config: the layer and its deployment.
        environment: the environment the answer is for (declared, from a file, or probed).
        release: the vLLM release the answer is for (``None``: a table set without an engine).
        notes: one sentence per input with no effect or read in a way the operator may not expect.
        serve: the parsed ``vllm serve`` line, if one was given.
        checkpoint_gate: see :data:`CheckpointGate` (``None`` without a checkpoint).
        engine_num_experts: the expert count vLLM's model config reads from the checkpoint
            (:func:`moe_oracle.inputs.ep_refusal.engine_num_experts`; ``None`` without one).
        architecture: the checkpoint's ``architectures[0]`` (``None`` without one), for the model
            class's own start-up checks (:mod:`.model_start_refusals`).
        attention_heads: the attention-head count vLLM's model config reads from the checkpoint
            (:func:`moe_oracle.inputs.attention_heads.engine_attention_heads`; ``None`` without one).
        model_quantization: vLLM's ``ModelConfig.quantization`` for the checkpoint (its method, or
            ``--quantization``; ``None``: unquantized, or no checkpoint).
    """

    given: OperatorInputs
    config: MoEConfig
    environment: Environment
    release: EngineRelease | None
    notes: tuple[str, ...] = ()
    serve: ServeArgs | None = None
    checkpoint_gate: CheckpointGate | None = None
    engine_num_experts: int | None = None
    architecture: str | None = None
    attention_heads: int | None = None
    model_quantization: str | None = None

    def origins(self) -> dict[str, Origin]:
        """Deployment field -> the input that set it (:func:`origins_of`)."""
        return origins_of(self.given)

    def refusals(self) -> list[InputIssue]:
        """What the answer's release refuses at start (EPLB without EP, ...), each naming the input
        that set it and advising a change there (:func:`moe_oracle.core.refusals.refusals`), a
        tensor-parallel size that does not divide the checkpoint's attention heads
        (:mod:`.attention_heads`), expert parallelism on a checkpoint vLLM finds no experts in (:mod:`.ep_refusal`), and the
        parallel settings the checkpoint's model class refuses (:mod:`.model_start_refusals`). A
        refusal of a flag the serve line's ``--config`` file alone gave names that file."""
        origins = self.origins()
        issues = refusals(self.config, release=self.release, origins=origins)
        who = self.release.facts_named() if self.release else f"vLLM {ENGINE_VERSION}"
        if self.attention_heads:
            origin = origins.get("parallel.tp_size", FLAG)
            heads = attention_heads_refusal(self.attention_heads, self.config.parallel.tp_size, where_given("parallel.tp_size", origin), who, origin.file)
            issues += [heads] if heads is not None else []
        if self.config.quant == QuantScheme(None, None) and self.release is not None:  # a quantized layer: constraint.moonep_unquantized
            origin = origins.get("parallel.all2all_backend", FLAG)
            moonep = moonep_quantized_model_refusal(self.model_quantization, self.config.parallel.all2all_backend.value, self.release.stand_in, where_given("parallel.all2all_backend", origin), origin.file)
            issues += [moonep] if moonep is not None else []
        if self.engine_num_experts == 0 and self.config.parallel.use_ep:
            origin = origins.get("parallel.use_ep", FLAG)
            issues.append(ep_refusal(where_given("parallel.use_ep", origin), who, origin.file))
        if self.architecture is not None:
            blame = blame_from(origins)
            refused = model_start_refusal(self.architecture, self.config.parallel, self.release.stand_in if self.release else ENGINE_VERSION, self.config.device.platform.value, blame,
                                          num_experts=self.config.num_experts)
            issues += [refused] if refused is not None else []
        from_config = self.serve.from_config if self.serve is not None else None
        return from_config.charge_issues(issues) if from_config is not None else issues


def device_required(given: OperatorInputs, model_flag: str | None = None) -> ConfigError:
    """No device from any input. With ``--environment FILE`` given, the file named no GPU (a pip
    freeze never does; a collect-env report without one) and the flag to add is said, not the
    file again (the message once sent the operator back to the collect-env report they gave)."""
    with_flag = f" with {model_flag.split()[0]}" if model_flag else ""
    if given.environment:
        message = (f"the device is required{with_flag}: --environment {given.environment} names no GPU (only a vllm collect-env report "
                   "lists one, under 'GPU models and configuration'): add --gpu NAME, or --platform (with --sm/--arch)")
        return ConfigError([InputIssue("--gpu", message, None, None)])
    return ConfigError([InputIssue("--gpu", f"the device is required{with_flag}: give --gpu NAME, --platform (with --sm/--arch), --environment with a vllm collect-env report, or --probe", None, None)])


def device_from_inputs(given: OperatorInputs):

    if given.gpu:
        if given.platform or given.sm or given.arch:
            raise ConfigError([InputIssue("--gpu", "give either --gpu or --platform/--sm/--arch, not both", given.gpu, None)])
        return lookup_hardware(given.gpu).device
    if given.platform:
        if given.arch and str(given.platform).lower() == "cuda":
            # no table reads an arch on CUDA: the capability decides (--sm), and an arch would be dropped unsaid
            raise ConfigError([InputIssue("--arch", "is read on rocm (gfx942), xpu (xe2) and cpu (x86_64), not on --platform cuda: give the compute capability with --sm (90 for SM 9.0)", given.arch, None)])
        return check_known_device(Device(given.platform, capability=given.sm, arch=given.arch), capability_field="--sm", arch_field="--arch")
    if given.sm or given.arch:
        raise ConfigError([InputIssue("--sm/--arch", "needs --platform", given.sm or given.arch, ["cuda", "rocm", "cpu", "xpu"])])
    return None


def declared_gpu_device(declared: Any) -> Device:
    """The catalog device of the GPU an environment file names (``vllm collect-env``'s
    ``nvidia-smi -L`` line), for ``explain`` and ``plan`` alike.

    Raises:
        ConfigError: not in the catalog, charged to the file (``bad --environment``), with the
            flags that describe it when its capability or gfx target is known.
    """
    try:
        return lookup_hardware(declared.gpu).device
    except ConfigError as exc:
        advice = device_hint(declared.gpu) or "give --gpu NAME or --platform cuda --sm N"
        raise ConfigError([InputIssue(declared.gpu_source or "--environment", f"the GPU {declared.gpu!r} is not in the hardware catalog; {advice}", declared.gpu, exc.issues[0].allowed)], headline="bad --environment") from None


THIS_MACHINE = "this machine's device (run builds the kernel here)"
"""What wins over a file's device in ``run`` (:func:`build_deployment` ``probe_device_default``)."""


def device_words(device: Device) -> str:
    """A device as the explain header names it: ``H200 (cuda SM 90)``, ``this host (cpu x86_64)``."""
    detail = f" SM {device.capability}" if device.capability is not None else f" {device.arch}" if device.arch else ""
    return f"{device.name + ' ' if device.name else ''}({device.platform.value}{detail})"


def unused_gpu_note(given: OperatorInputs, device: Any, declared: Any, winner: str) -> str | None:
    """A note when an environment file's GPU is not used because ``winner`` (``--gpu H200``, the
    ``--config`` file's device) describes the device; ``None`` when the file names no GPU or
    the same catalog device. A flag (or the layer file) overriding a file's value is noted, not
    refused, as ``--package`` over ``--environment`` is."""

    if declared is None or declared.gpu is None:
        return None
    try:
        if device is not None and lookup_hardware(declared.gpu).device == device:
            return None
    except ConfigError:
        pass  # not in the catalog: it is not used either way
    return f"{declared.gpu_source}: its GPU {declared.gpu!r} is not used: {winner} wins"


def probed_environment(given: OperatorInputs, catalog: Any, probe_notes: tuple[str, ...]) -> Any:
    """This machine's :class:`~moe_oracle.core.environment.Environment` for ``--probe`` (explain, select, plan, diff).

    Raises:
        ConfigError: packages or variables also declared, or a variable the engine refuses.
    """

    declared = [f"{by} {text}" for text, by in given.packages_given()] + [f"{flag} {value}" for flag, values in (("--without", given.without), ("--env", given.env), ("--tool", given.tool), ("--environment", (given.environment,) if given.environment else ())) for value in values]
    if declared:
        raise ConfigError([InputIssue("--probe", f"--probe reads this machine; do not also declare packages, absent packages, variables, host tools or an environment file ({', '.join(declared)})", None, None)], headline="bad --probe")
    env = probe_environment(catalog.package_names, [v.name for v in catalog.env_vars])
    release = answer_release(catalog, env)
    issues = env_issues(env.env, catalog.env_vars, path="this process's environment:", release=release)
    # The release's start-up check reads every variable of the process, not only those the tables read.
    issues += start_issues(((n, v) for n, v in os.environ.items()), "this process's environment:", release)
    if issues:
        raise ConfigError(issues, headline="bad environment variable")
    if probe_notes:
        env = replace(env, notes=env.notes + probe_notes)
    return env


def serve_release(given: OperatorInputs, catalog: Any) -> str:
    """The vLLM release whose flags parse the ``--serve`` line: the release the answer is for
    (:func:`moe_oracle.inputs.declared.answer_release`: declared by ``--package``/``--environment``,
    or probed with ``--probe``; the modelled release standing in for an unmodelled one), never
    the serve line's own words, so it is known before the line is parsed.

    Raises:
        ConfigError: a malformed declaration (as the environment is read again afterwards).
    """

    if given.probe:
        env = probed_environment(given, catalog, ())
    else:
        env = declare_environment(catalog, packages=given.package, package_given_by=given.package_given_by, without=given.without, env_file=given.environment, tools=given.tool).environment
    return answer_release(catalog, env) or ENGINE_VERSION


def build_deployment(given: OperatorInputs, catalog: Catalog, *, probe_device_default: bool = False) -> Deployment:
    """The one door for one MoE layer: ``given`` read into a :class:`Deployment` (config,
    environment, release, notes), checked as the answer's vLLM release checks it at start.

    ``probe_device_default``: the device is this machine's, probed, when no flag gives one
    (``run``, which builds the kernel here and refuses the device flags): an environment file's
    GPU or a ``--config`` file's device is then not used, and a note says so.

    Raises:
        ConfigError: bad input, naming the input it came from, or what the release refuses at
            start (the serve line's values, the checkpoint's quantization on the device's platform).
            A problem in a flag the serve line's ``--config`` file gave names that file.
    """
    serve = parse_serve(given.serve, version=serve_release(given, catalog)) if given.serve else None
    with charged_to_config_file(serve.from_config if serve is not None else None):
        return _build_deployment(given, catalog, serve, probe_device_default)


def _build_deployment(given: OperatorInputs, catalog: Catalog, serve: ServeArgs | None, probe_device_default: bool) -> Deployment:
    flag = Source.USER_FLAG
    notes: list[str] = []
    if serve is not None:
        given = apply_serve(given, serve)
        notes += [f"--serve: {n}" for n in serve.notes]
    file_env = None
    file_probe = False
    ck_quant = ck_scheme = None
    online_quant = None  # the serve line's --quantization where it quantizes an unquantized checkpoint at load
    if given.config and given.model:
        raise ConfigError([InputIssue("--config/--model", "give either --config or --model, not both", None, None)])
    if given.probe and given.environment:
        raise ConfigError([InputIssue("--probe", "--probe reads this machine; --environment FILE declares another one: give one of them", given.environment, None)], headline="bad --probe")
    device = device_from_inputs(given)
    probe_notes: tuple[str, ...] = ()
    this_machine = device is None and probe_device_default
    if this_machine:  # run: built here, whatever device an environment or --config file names
        device, probe_notes = probe_device()
    winner = THIS_MACHINE if this_machine else given.device_flag()
    declared = None
    if not given.probe:
        declared = declare_environment(catalog, packages=given.package, package_given_by=given.package_given_by, without=given.without, env=given.env, env_file=given.environment, serve_env=serve.env if serve else (), tools=given.tool)
        gpu_note = unused_gpu_note(given, device, declared, winner) if device is not None else None
        notes += [gpu_note] if gpu_note else []
        if device is None and declared.gpu is not None and not given.config:
            device = declared_gpu_device(declared)
            notes.append(f"device {device.name} from {declared.gpu_source} ({declared.gpu})")
    if device is None and given.probe and not given.config:
        device, probe_notes = probe_device()
    prov: list[Provenance] = []
    answered: dict[str, Any] = {}  # the answer's environment, once known (a --config file's checkpoint needs it first)

    def answer_env(file_env: Any, file_probe: bool) -> Any:
        if "env" not in answered:
            if given.probe and file_env is not None and (file_env.packages or file_env.absent or file_env.env):
                answered["notes"] = [_probe_over_file(given, file_env)]
            if given.probe or file_probe:
                answered["env"] = probed_environment(given, catalog, probe_notes)
            elif file_env is not None and not (given.package or given.without or given.env or given.tool or given.environment or (serve and serve.env)):
                answered["env"] = file_env
            else:
                found = declared
                if file_env is not None:
                    found = declare_environment(catalog, packages=given.package, package_given_by=given.package_given_by, without=given.without, env=given.env, env_file=given.environment, serve_env=serve.env if serve else (), base=file_env, tools=given.tool)
                assert found is not None
                answered["env"], answered["notes"] = found.environment, list(found.notes)
        return answered["env"]

    engine_experts: int | None = None  # a checkpoint's count as vLLM's model config reads it
    architecture: str | None = None
    heads: int | None = None
    if given.config:
        loaded = load_config_file(given.config, catalog, answer_env=answer_env, data=given.config_data)
        config, file_env, file_probe = loaded.config, loaded.environment, loaded.probe
        ck_quant, ck_scheme = loaded.checkpoint_quant, loaded.checkpoint_scheme
        notes += loaded.notes
        if device is None:
            gpu_note = unused_gpu_note(given, config.device, declared, f"the device of --config {given.config}")
            notes += [gpu_note] if gpu_note else []
        changes: dict[str, Any] = {}
        if device is not None:
            changes["device"] = device
            if this_machine and replace(config.device, name=None) != replace(device, name=None):
                notes.append(f"--config {given.config}: its device {device_words(config.device)} is not used: {winner} wins")
    elif given.model or serve is not None:
        model_flag = "--serve MODEL" if serve is not None else "--model"  # the input as the operator gave it
        quant_ref = find_quant_config(given.hf_quant_config) if given.hf_quant_config else None
        quant_file = quant_ref.shown_as() if quant_ref else None  # as written: a leading ~ stays in messages
        quant_cfg, quant_note = quant_document(load_hf_config(quant_ref.path, "--hf-quant-config", shown=quant_file, document=QUANT_DOCUMENT), quant_file, "--hf-quant-config", model_flag=model_flag) if quant_ref else (None, None)
        notes += [quant_note] if quant_note else []
        ref, hf_cfg, model_notes = read_model_config(given, serve)
        path = ref.path
        notes += model_notes
        beside = quant_config_beside(path)
        beside_file = ref.shown_as(beside) if beside else None
        # The checkpoint is read as the answer's release reads it: the environment is known here
        # (declared, or probed once and reused below).
        release = engine_release(catalog, answer_env(None, False))
        beside_cfg = load_hf_config(beside, model_flag, shown=beside_file, document=QUANT_DOCUMENT) if beside else None
        platform = device.platform.value if device is not None else None
        try:
            ck = from_hf_config(hf_cfg, file=ref.shown_as(), quant_cfg=quant_cfg, beside=beside_cfg, release=release, platform=platform, quant_file=quant_file, beside_file=beside_file)
        except ConfigError as exc:
            raise blame_hf_overrides(exc, serve, lambda: from_hf_config(load_hf_config(path, model_flag, shown=ref.shown_as()), file=ref.shown_as(), quant_cfg=quant_cfg, beside=beside_cfg, release=release, platform=platform, quant_file=quant_file, beside_file=beside_file)) from None
        if device is None:
            raise device_required(given, model_flag)
        kwargs = dict(ck.kwargs)
        ck_quant, ck_scheme = ck.quant, kwargs.get("quant")
        doc = hf_cfg.get("quantization_config")
        online_quant = doc.get(FROM_FLAG) if isinstance(doc, dict) and quant_cfg is None else None
        ck_prov = tuple(ck.provenance)
        notes += [f"{model_flag}: {n}" for n in ck.notes]
        if serve is not None and serve.dtype not in (None, "auto"):
            kwargs["in_dtype"] = DType({"half": "float16", "float": "float32"}.get(serve.dtype, serve.dtype))
            ck_prov = tuple(p for p in ck_prov if p.field != "in_dtype") + (Provenance("in_dtype", flag, f"--serve --dtype {serve.dtype}"),)
        config = MoEConfig(device=device, provenance=ck_prov + (Provenance("device", Source.HARDWARE, f"--gpu {given.gpu}" if given.gpu else "--platform" if given.platform else "device"),), **kwargs)
        changes = {}
        engine_experts = engine_num_experts(hf_cfg)
        heads = engine_attention_heads(hf_cfg)
        archs = hf_cfg.get("architectures")
        architecture = archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else None
    else:
        raise ConfigError([InputIssue("--model", "describe the layer with --model CONFIG_JSON (or an example name), --serve 'vllm serve MODEL ...' or --config FILE; `moe-oracle examples` lists the shipped models", None, None)])

    par: dict[str, Any] = {}
    if given.tp is not None:
        par["tp_size"] = given.tp
    if given.dp is not None:
        par["dp_size"] = given.dp
    if given.pcp is not None:
        par["pcp_size"] = given.pcp
    if given.ep is not None:
        par["use_ep"] = given.ep
    if given.eplb is not None:
        par["enable_eplb"] = given.eplb
    if given.redundant_experts is not None:
        par["num_redundant_experts"] = given.redundant_experts
    if given.all2all is not None:  # '' is refused by name, not read as "not given"
        backend, warning = resolve_all2all(catalog, given.all2all)
        par["all2all_backend"] = backend
        prov.append(Provenance("parallel.all2all_backend", flag, warning or f"--all2all {given.all2all}"))
    if given.expert_placement is not None:
        par["expert_placement_strategy"] = given.expert_placement
    if par:
        kept = {} if _SP_TERMS & par.keys() else {"sequence_parallel": config.parallel.sequence_parallel}  # a changed term: derived again below
        changes["parallel"] = ParallelConfig(**{**_parallel_dict(config.parallel), **kept, **par})
        names = {"tp_size": "--tp", "dp_size": "--dp", "pcp_size": "--pcp", "use_ep": "--ep", "enable_eplb": "--eplb", "num_redundant_experts": "--redundant-experts", "all2all_backend": "--all2all",
                 "expert_placement_strategy": "--expert-placement"}
        shown = {k: (f"{names[k]} {v}" if v is not False else f"--no-{names[k][2:]}") for k, v in par.items()}
        prov += [Provenance(f"parallel.{k}", flag, shown[k] if serve is None else f"--serve ({shown[k]})") for k in par if not (k == "all2all_backend")]
    if given.quant:
        changes["quant"] = parse_quant(given.quant)
        prov.append(Provenance("quant", flag, f"--quant {given.quant}"))
        if ck_quant is not None or ck_scheme is not None or given.model or serve is not None:
            replaced = _quant_replaced(given, changes["quant"], ck_scheme, online_quant)
            notes += [replaced] if replaced else []
    for attr, key in (("lora", "lora"), ("batch_invariant", "batch_invariant")):
        if getattr(given, attr) is not None:
            changes[key] = getattr(given, attr)
            prov.append(Provenance(key, flag, f"--{'' if changes[key] else 'no-'}{attr.replace('_', '-')}"))
    if given.moe_backend:
        changes["moe_backend"] = given.moe_backend
        prov.append(Provenance("moe_backend", flag, f"--moe-backend {given.moe_backend}"))
    if given.max_tokens is not None:
        changes["max_num_tokens"] = given.max_tokens
        prov.append(Provenance("max_num_tokens", flag, f"--max-tokens {given.max_tokens}" if serve is None or serve.max_num_batched_tokens is None else f"--serve --max-num-batched-tokens {given.max_tokens}"))
    if changes or prov:
        merged = {p.field: p for p in config.provenance}
        merged.update({p.field: p for p in prov})
        changes["provenance"] = tuple(merged[k] for k in sorted(merged))
        config = replace(config, **changes)

    env = answer_env(file_env, file_probe)
    notes += answered.get("notes", [])
    config, eplb_note = default_redundant_experts(config, answer_release(catalog, env))
    if eplb_note:
        notes.append(eplb_note)
    config, sp_note = with_sequence_parallel(config, architecture or config.architecture, answer_release(catalog, env) or ENGINE_VERSION)
    notes += [sp_note] if sp_note else []
    placement = placement_note(given, bound_parallel(catalog, config), config.num_expert_group)
    notes += [placement] if placement else []
    if serve is not None:
        check_serve_values(serve, catalog, env)  # --quantization: with the checkpoint, below
    quant_notes, gate = _verify_quantization(given, catalog, config, env, serve, ck_quant, ck_scheme)
    model_quant = checkpoint_quantization(ck_quant, serve.quantization if serve is not None else None) if ck_quant is not None else None
    # Notes echo values from input files and flags (config.json's architectures): escaped as errors echo them.
    return Deployment(given, config, env, engine_release(catalog, env), tuple(escaped(n) for n in notes + quant_notes), serve, gate, engine_experts, architecture, heads, model_quant)


def read_model_config(given: OperatorInputs, serve: ServeArgs | None) -> tuple[ModelReference, dict[str, Any], list[str]]:
    """(where the reference led, config.json as vLLM reads it, notes) of the model the serve line
    or ``--model`` names; a serve line's ``--hf-overrides`` applied
    (:func:`~moe_oracle.inputs.serve_apply.load_serve_checkpoint`). Messages name the files as
    the operator wrote the reference (:meth:`ModelReference.shown_as`).

    Raises:
        ConfigError: no such model, an unreadable config, or a quantization document given as the model.
    """
    if serve is not None:
        ref = serve_model_path(serve)
        hf_cfg, serve_notes = load_serve_checkpoint(serve, ref.path, load_hf_config(ref.path, "--serve MODEL", shown=ref.shown_as()), ref.shown_as())
        return ref, hf_cfg, ([ref.note] if ref.note else []) + [f"--serve: {n}" for n in serve_notes]
    ref = find_model(given.model)
    hf_cfg = load_hf_config(ref.path, shown=ref.shown_as())
    refuse_quant_config_as_model(hf_cfg, ref.shown_as())
    return ref, hf_cfg, [ref.note] if ref.note else []


def _quant_replaced(given: OperatorInputs, scheme: Any, ck_scheme: Any, online: str | None = None) -> str | None:
    """The note that ``--quant`` replaced the checkpoint's quantization (``None`` when it names the
    checkpoint's own scheme): the answer is then for another checkpoint, which the flag alone says.
    ``online``: the serve line's ``--quantization X`` where it quantizes a checkpoint without a
    quantization document at load (inputs/serve_apply.py marks that document ``FROM_FLAG``)."""
    if scheme == ck_scheme:
        return None
    if online is not None and ck_scheme is not None:
        return f"--quant {given.quant} replaces the quantization {ck_scheme.name} that {online} applies at load to the unquantized checkpoint: the answer is for the layer quantized as {scheme.name}, another --quantization or checkpoint than the one given"
    source = f"--hf-quant-config {given.hf_quant_config}" if given.hf_quant_config else "the checkpoint's quantization_config"
    quantized = ck_scheme is not None and ck_scheme.weight is not None
    had = f"{ck_scheme.name} ({source})" if quantized else "(none: the checkpoint is not quantized)"
    return f"--quant {given.quant} replaces the checkpoint's quantization {had}: the answer is for the layer quantized as {scheme.name}, a checkpoint other than the one given"


def _verify_quantization(given: OperatorInputs, catalog: Catalog, config: MoEConfig, env: Environment, serve: ServeArgs | None, ck_quant: Any, ck_scheme: Any) -> tuple[list[str], CheckpointGate | None]:
    """vLLM's quantization checks at start for the layer :func:`build_deployment` built, and the
    gate why-not's search holds edits to (:attr:`Deployment.checkpoint_gate`).

    A checkpoint (``--model``, ``--serve``, a config file's ``model.hf_config``) is checked as
    vLLM checks it (:func:`moe_oracle.inputs.quant_checks.verify_checkpoint_quantization`). Under
    experts other than the checkpoint's (``--quant``, the file's ``model.quant``) the answer is
    for another checkpoint of the same format: its own document's platform check is noted, and
    the layer is held to the methods such a checkpoint can have
    (:func:`moe_oracle.inputs.quant_checks.verify_layer_quantization`), as a config file's layer given
    field by field is; a method the serve line's ``-q`` chose (``moe_wna16`` on GPTQ) is that
    line's for any such checkpoint, and stays checked. A config file cannot give ``--allow-deprecated-quantization``: a
    deprecated method is noted there.

    Returns:
        (notes, the checkpoint gate; ``None`` without a checkpoint).

    Raises:
        ConfigError: what vLLM refuses at start.
    """

    release = answer_release(catalog, env) or ENGINE_VERSION
    notes: list[str] = []
    if ck_quant is None:
        if given.config:  # a layer without its checkpoint: the methods its quant_method and scheme can come from
            notes += verify_layer_quantization(config, release, path="$.model.quant_method", file=str(given.config))
        return notes, None
    user_q = serve.quantization if serve is not None else None
    other = None
    if config.quant != ck_scheme:
        other = f"--quant {given.quant}" if given.quant else f"$.model.quant of {given.config}"
    allow = bool(serve is not None and serve.allow_deprecated_quantization)
    if given.config:
        allow = True
        own = checkpoint_quantization(ck_quant, None)
        if own in release_values(release)["deprecated_quantization"] and other is None:  # else verify_layer_quantization notes it
            notes.append(f"$.model.hf_config: vLLM {release} refuses the deprecated quantization method {own} at start unless --allow-deprecated-quantization is given "
                         "(ModelConfig._verify_quantization; DEPRECATED_QUANTIZATION_METHODS); a config file cannot give it: the answer is for a start with it")
    notes += verify_checkpoint_quantization(ck_quant, user_q, "--serve --quantization", release, allow_deprecated=allow, allow_flag="--allow-deprecated-quantization (on the --serve line)", device=config.device,
                                            another_checkpoint=other, online_moe=serve.online_moe_target if serve is not None else None, experts_quantized=config.quant.weight is not None)
    method = checkpoint_quantization(ck_quant, user_q)
    chosen = quantization_from_flag(ck_quant, user_q)  # the serve line's -q decides whatever the checkpoint (checked above)
    gate = (ck_scheme, config.quant_method, (method,) if method else (), (chosen,) if chosen else None)
    if other is not None and chosen is None:
        flagged = other.startswith("--quant")
        notes += verify_layer_quantization(config, release, path="--quant" if flagged else "$.model.quant", file=None if flagged else str(given.config), headline="bad --quant" if flagged else "bad --config")
    return notes, gate


def _probe_over_file(given: OperatorInputs, file_env: Any) -> str:
    """``--probe`` next to a config file that declares an environment (packages, absent or env):
    the two say which machine the answer is for, as ``--probe`` and ``--environment FILE`` do, so
    the explicit flag is refused as that pair is (:func:`probed_environment`). ``run`` probes
    without being asked (it executes here): the file's environment is set aside with a note.

    Returns:
        the note (``run``).

    Raises:
        ConfigError: an explicit ``--probe``, naming ``$.environment`` of the file.
    """

    declared = [f"{n}=={v}" for n, v in file_env.packages] + [f"{n} absent" for n in sorted(file_env.absent)] + [f"{n}={v}" for n, v in file_env.env]
    shown = ", ".join(declared[:4]) + (", ..." if len(declared) > 4 else "")
    if given.probe_implied:
        return f"run executes on this machine: the environment {given.config} declares in $.environment ({shown}) is not used; the answer is for the probed one"
    raise ConfigError([InputIssue("--probe", f"--probe reads this machine; --config {given.config} declares another environment ({shown}) in $.environment: give one of them (drop --probe, or the file's environment)", given.config, None)], headline="bad --probe")


def check_serve_values(serve: Any, catalog: Any, env: Any) -> None:
    """Refuse the serve line's values the answer's engine release refuses at start, the
    checkpoint aside (``--kv-cache-dtype``: :func:`moe_oracle.inputs.serve.serve_value_issues`).
    ``--quantization`` is checked with the checkpoint's quantization document, as vLLM checks it
    (:func:`moe_oracle.inputs.quant_checks.verify_checkpoint_quantization`: override classes first).

    Raises:
        ConfigError: such a value, naming the flag, the value and the release's allowed values.
    """

    issues = serve_value_issues(serve, answer_release(catalog, env) or ENGINE_VERSION, check_quantization=False)
    if issues:
        raise ConfigError(issues, headline="bad --serve")


_SP_TERMS = frozenset({"tp_size", "dp_size", "use_ep", "all2all_backend"})
"""The parallel fields vLLM's ``use_sequence_parallel_moe`` reads."""


def _parallel_dict(p: Any) -> dict[str, Any]:
    return {"tp_size": p.tp_size, "dp_size": p.dp_size, "pcp_size": p.pcp_size, "use_ep": p.use_ep, "all2all_backend": p.all2all_backend, "enable_eplb": p.enable_eplb, "num_redundant_experts": p.num_redundant_experts,
            "expert_placement_strategy": p.expert_placement_strategy}


def origins_of(given: OperatorInputs) -> dict[str, Any]:
    """Deployment field -> :class:`~moe_oracle.core.refusals.Origin` for the fields given: a value the
    ``--serve`` line filled is the serve line's, one typed as a flag the flag's, any other the
    ``--config`` file's (when there is one); a field given nowhere is left out."""

    serve_set = given.from_serve
    config_file = given.config
    origins = {}
    for field, dest in (("parallel.enable_eplb", "eplb"), ("parallel.use_ep", "ep"), ("parallel.num_redundant_experts", "redundant_experts"), ("parallel.pcp_size", "pcp"), ("parallel.tp_size", "tp"),
                        ("parallel.all2all_backend", "all2all")):
        if dest in serve_set:
            origins[field] = Origin("serve")
        elif getattr(given, dest, None) is not None:
            origins[field] = FLAG
        elif config_file:
            origins[field] = Origin("file", str(config_file))
    return origins


def merged_notes(decision_notes: tuple[str, ...], input_notes: tuple[str, ...]) -> tuple[str, ...]:
    """The decision's notes then the input notes, each sentence once.

    The engine notes a declared variable's surprising value (``X='yes' is read as false``) and
    the reader of the flags notes the same sentence with where it was declared (``--env: ...``):
    the one naming the source is kept.
    """
    sourced = {n.split(": ", 1)[1] for n in input_notes if ": " in n}
    kept = tuple(n for n in decision_notes if n not in sourced and n not in input_notes)
    return kept + tuple(dict.fromkeys(input_notes))
