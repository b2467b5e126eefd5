"""``moe-oracle plan``: every MoE layer of a checkpoint, target and draft, on every rank.

Registered by :mod:`moe_oracle.cli` (one subcommand); reuses its device, deployment and
environment flags. Exit codes as the rest of the CLI: 0 every MoE layer got a kernel,
1 some layer got none (the plan is printed), 2 bad input.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

__all__ = ["add_plan_parser", "cmd_plan"]

_EPILOG = """\
The plan reads the whole config.json (and hf_quant_config.json beside it, when config.json has no
quantization document, as vLLM does): dense layers, routed MoE layers, hash-routed layers,
MTP draft layers, and each MoE layer's quantization after the checkpoint's exclusion lists.
Layers with identical decisions are grouped. With --ep every rank's experts are placed and
every rank's selection is checked; a plan whose ranks would build different kernels says so.

The draft (MTP) layers inherit --moe-backend unless --draft-moe-backend or the --serve line's
--speculative-config '{"moe_backend": ...}' gives one (vLLM 0.33.0 SpeculativeConfig.moe_backend,
matched exactly: marlin, not Marlin);
given both ways, they must agree. --no-draft with a draft backend is refused (nothing to set).

examples:
  moe-oracle plan --model nvidia-qwen3.5-122b-a10b-nvfp4 --gpu B200 --tp 4
  moe-oracle plan --model /path/to/checkpoint --gpu H200 --dp 8 --ep --all2all deepep_low_latency --json
"""


def add_plan_parser(sub: Any, add_input_args: Any, *, arguments: bool = True) -> None:
    """Register ``plan`` on the CLI's subparsers, with the shared input flags (its arguments only
    when ``arguments``: see :func:`moe_oracle.cli.build_parser`)."""
    p = sub.add_parser("plan", help="every layer of a model: kinds, quantization, kernel per layer group and per rank",
                       description="Plan a whole model: every decoder layer (dense, MoE, hash-routed, MTP draft), each MoE layer's quantization, the kernel each group of identical layers gets, and each rank's experts.",
                       epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    if not arguments:
        return
    add_input_args(p)
    plan = p.add_argument_group("plan")
    plan.add_argument("--draft-moe-backend", metavar="NAME", help="MoE backend of the draft (MTP) layers, as vLLM's --speculative-config moe_backend: a name of the release's MoEBackend, matched exactly (marlin, not Marlin); default: the --serve line's, else inherit --moe-backend")
    plan.add_argument("--no-draft", action="store_true", help="leave out the MTP draft layers (no speculative decoding); refused with a draft backend")
    plan.add_argument("--expert-placement", choices=["linear", "round_robin"], default="linear", help="EP expert placement (vLLM --expert-placement-strategy; default linear)")
    plan.add_argument("--quantization", metavar="METHOD", choices=["moe_wna16"], help="vLLM --quantization override for the checkpoint (moe_wna16 over a GPTQ/AWQ checkpoint)")


def _environment(args: argparse.Namespace, catalog: Any, serve: Any, probe_notes: tuple[str, ...]) -> tuple[Any, tuple[str, ...], Any]:
    """(Environment, notes, declared) from --probe or --environment/--package/--without/--env and the serve line."""
    from . import _probed_environment
    from ..inputs.deployment import declare_environment

    if args.probe:
        return _probed_environment(args, catalog, probe_notes), (), None
    declared = declare_environment(catalog, packages=args.package, without=args.without, env=args.env, env_file=args.environment, serve_env=serve.env if serve else ())
    return declared.environment, tuple(declared.notes), declared


def cmd_plan(args: argparse.Namespace, catalog: Any) -> int:
    """Run ``moe-oracle plan``; returns the exit code (0 all layers selected, 1 some not)."""
    from . import EXIT_NONE, EXIT_OK

    plan = plan_from_args(args, catalog)
    if args.json:
        print(json.dumps(plan.to_dict(), indent=2, default=str))
    else:
        print(plan.render_text())
    return EXIT_OK if plan.ok else EXIT_NONE


def plan_from_args(args: argparse.Namespace, catalog: Any) -> Any:
    """The whole-model :class:`~moe_oracle.explain.plan.Plan` the ``plan`` flags describe (``diff`` reuses it
    per side; flags a command lacks take their defaults).

    Raises:
        ConfigError: a missing or invalid model, device or flag.
    """
    from ..inputs.checkpoint import read_checkpoint
    from . import _check_serve_values, _device_flag, _device_from_args, _origins, _serve_release, _unused_gpu_note
    from ..core.config import ParallelConfig, Provenance
    from ..inputs.deployment import answer_release, apply_serve, blame_hf_overrides, check_draft_moe_backend, engine_release, load_serve_checkpoint, serve_model_path, verify_checkpoint_quantization
    from ..core.requests import check_request, resolve_request
    from ..core.environment import probe_device
    from ..core.errors import ConfigError, InputIssue
    from ..inputs.hf import load_hf_config
    from ..inputs.files import resolve_all2all
    from ..inputs.models import quant_config_beside, resolve_model_path
    from ..core.oracle import Oracle
    from ..explain.plan import build_plan
    from ..inputs.serve import ENGINE_VERSION, parse_serve
    from ..core.vocab import Source

    if args.config:
        raise ConfigError([InputIssue("--config", "plan reads a whole model: give --model CONFIG_JSON, a checkpoint directory or an example name (--config describes one layer; use explain)", args.config, None)])
    if args.quant:
        raise ConfigError([InputIssue("--quant", "plan takes each layer's quantization from the checkpoint and its exclusion lists; --quant overrides one layer (use explain)", args.quant, None)])
    notes: list[str] = []
    serve = None
    if getattr(args, "no_draft", False) and getattr(args, "draft_moe_backend", None):
        raise ConfigError([InputIssue("--no-draft", "--no-draft leaves the MTP draft layers out, so --draft-moe-backend would have nothing to set: give one of them", args.draft_moe_backend, None)], headline="bad --no-draft")
    if args.serve:
        serve = parse_serve(args.serve, version=_serve_release(args, catalog))
        apply_serve(args, serve)
        notes += [f"--serve: {n}" for n in serve.notes]
        if getattr(args, "no_draft", False) and serve.draft_moe_backend is not None:
            raise ConfigError([InputIssue("--no-draft", "--no-draft leaves the MTP draft layers out, but the --serve line's --speculative-config sets the draft's moe_backend: drop one of them", serve.draft_moe_backend, None)], headline="bad --no-draft")
    if not args.model and serve is None:
        raise ConfigError([InputIssue("--model", "describe the model with --model CONFIG_JSON, a checkpoint directory, an example name (`moe-oracle examples`), or --serve 'vllm serve MODEL ...'", None, None)])
    if args.probe and args.environment:
        raise ConfigError([InputIssue("--probe", "--probe reads this machine; --environment FILE declares another one: give one of them", args.environment, None)], headline="bad --probe")
    device = _device_from_args(args)
    probe_notes: tuple[str, ...] = ()
    if device is None and args.probe:
        device, probe_notes = probe_device()
    env, env_notes, declared = _environment(args, catalog, serve, probe_notes)
    notes += env_notes
    if serve is not None:
        _check_serve_values(serve, catalog, env)
    if device is not None:
        gpu_note = _unused_gpu_note(args, device, declared, _device_flag(args))
        notes += [gpu_note] if gpu_note else []
    elif declared is not None and declared.gpu is not None:
        from ..inputs.hardware import lookup_hardware

        device = lookup_hardware(declared.gpu).device
        notes.append(f"device {device.name} from {declared.gpu_source} ({declared.gpu})")
    if device is None:
        raise ConfigError([InputIssue("--gpu", "the device is required: give --gpu NAME, --platform (with --sm/--arch), --environment with a vllm collect-env report, or --probe", None, None)])
    if serve is not None:
        path = serve_model_path(serve)
        hf_cfg, serve_notes = load_serve_checkpoint(serve, path, load_hf_config(path))
        notes += [f"--serve: {n}" for n in serve_notes]
    else:
        path = resolve_model_path(args.model)
        hf_cfg = load_hf_config(path)
    flag_q = getattr(args, "quantization", None)
    serve_q = serve.quantization if serve is not None else None
    if flag_q and serve_q and flag_q != serve_q:
        raise ConfigError([InputIssue("--quantization", f"given as --quantization {flag_q} and in --serve as --quantization {serve_q}: give one method", flag_q, [serve_q])], headline="bad --quantization")
    user_q = flag_q or serve_q
    q_flag = "--quantization" if flag_q else "--serve --quantization"
    override = load_hf_config(args.hf_quant_config, "--hf-quant-config") if args.hf_quant_config else None
    beside_path = quant_config_beside(path)
    beside = load_hf_config(beside_path, "--model") if beside_path else None
    try:
        checkpoint = read_checkpoint(hf_cfg, file=str(path), beside=beside, override=override, user_quantization=user_q if user_q == "moe_wna16" else None, release=engine_release(catalog, env))
    except ConfigError as exc:
        raise blame_hf_overrides(exc, serve) from None
    release = answer_release(catalog, env) or ENGINE_VERSION
    notes += verify_checkpoint_quantization(checkpoint.quant, user_q, q_flag, release, allow_deprecated=bool(serve is not None and serve.allow_deprecated_quantization), allow_flag="--allow-deprecated-quantization (on the --serve line)", device=device)
    if flag_q and not serve_q and not checkpoint.quant.declared:
        notes.append(f"--quantization {flag_q} on an unquantized checkpoint is not modelled: the answer is for the unquantized layers")
    include_draft, draft_notes = _draft_layers(args, serve, checkpoint, release)
    notes += draft_notes
    prov: list[Provenance] = []
    par: dict[str, Any] = {}
    for flag, key in (("tp", "tp_size"), ("dp", "dp_size"), ("redundant_experts", "num_redundant_experts")):
        if getattr(args, flag) is not None:
            par[key] = getattr(args, flag)
    if args.ep is not None:
        par["use_ep"] = args.ep
    if args.eplb is not None:
        par["enable_eplb"] = args.eplb
    if args.all2all:
        backend, warning = resolve_all2all(catalog, args.all2all)
        par["all2all_backend"] = backend
        prov.append(Provenance("parallel.all2all_backend", Source.USER_FLAG, warning or f"--all2all {args.all2all}"))
    if par:
        prov.append(Provenance("parallel", Source.USER_FLAG, "deployment flags"))
    parallel = ParallelConfig(**par)
    draft_flag = getattr(args, "draft_moe_backend", None) is not None and "draft_moe_backend" not in getattr(args, "from_serve", ())
    if draft_flag:
        check_draft_moe_backend(args.draft_moe_backend, answer_release(catalog, env) or ENGINE_VERSION)
    for flag, name in (("moe_backend", "--moe-backend"), ("draft_moe_backend", "--draft-moe-backend")):
        value = getattr(args, flag, None)
        if value:
            try:
                resolve_request(catalog, value)
                check_request(catalog, value, env)  # the release's accepted names, as the plan's selection reads them
            except ConfigError as exc:
                raise ConfigError([InputIssue(name, i.message, i.value, i.allowed) for i in exc.issues]) from None
    for flag, key in (("lora", "lora"), ("batch_invariant", "batch_invariant")):
        if getattr(args, flag):
            prov.append(Provenance(key, Source.USER_FLAG, f"--{flag.replace('_', '-')}"))
    if args.max_tokens is not None:
        prov.append(Provenance("max_num_tokens", Source.USER_FLAG, f"--max-tokens {args.max_tokens}"))
    return build_plan(
        checkpoint, Oracle(catalog, env, policy=args.policy), device=device, parallel=parallel,
        moe_backend=args.moe_backend or "auto", draft_moe_backend=getattr(args, "draft_moe_backend", None) if include_draft else None, draft_source="--draft-moe-backend" if draft_flag else None, include_draft=include_draft, draft_by_serve=serve is not None and include_draft,
        lora=bool(args.lora), batch_invariant=bool(args.batch_invariant), max_num_tokens=args.max_tokens,
        expert_placement_strategy=getattr(args, "expert_placement", "linear"), environment=env, provenance=prov, notes=notes, origins=_origins(args),
    )


def _draft_layers(args: argparse.Namespace, serve: Any, checkpoint: Any, release: str) -> tuple[bool, list[str]]:
    """(plan the checkpoint's MTP draft layers?, notes).

    Without a serve line the MTP layers are planned unless ``--no-draft`` (what they would run
    under speculative decoding). With one, they are planned only when its speculative config makes
    vLLM ``release`` draft with them (:func:`moe_oracle.inputs.speculative.resolve_draft`: method ``mtp``
    or an alias, no other model); otherwise a note says what the draft is.

    Raises:
        ConfigError: ``--no-draft`` while the serve line drafts with the MTP layers.
    """
    from ..core.errors import ConfigError, InputIssue
    from ..inputs.speculative import resolve_draft

    mtp = sum(1 for layer in checkpoint.layers if layer.spec.role == "draft")
    no_draft = bool(getattr(args, "no_draft", False))
    backend = getattr(args, "draft_moe_backend", None)
    backend_from = "the --serve line's --speculative-config moe_backend" if "draft_moe_backend" in getattr(args, "from_serve", ()) else "--draft-moe-backend"
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
