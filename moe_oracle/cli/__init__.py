"""``moe-oracle``: explain, select, why-not, matrix, lint and run from the command line.

Exit codes: 0 a kernel was selected (or the command succeeded), 1 nothing is
eligible (the full record is printed), 2 bad input (config, flags or tables).
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any, Collection, Sequence

from ..core._resources import PACKAGE_VERSION as __version__

__all__ = ["build_parser", "main"]

EXIT_OK, EXIT_NONE, EXIT_BAD_INPUT = 0, 1, 2

_EPILOG_INPUT = """\
inputs:
  Describe the layer with --config FILE (YAML/JSON, schemas/moe_config.schema.json) or with
  --model (a Hugging Face config.json, or a shipped example name: see `moe-oracle examples`)
  plus the device and deployment flags. Flags given with --config override the file.

  --serve "vllm serve MODEL -tp 8 --enable-expert-parallel ..." reads a vLLM command line
  instead, with the flags of the release the answer is for (--package vllm==X, --environment or
  --probe; 0.29.0-0.33.0): model, TP/DP/EP, all2all, EPLB, LoRA, --moe-backend, --quantization,
  --dtype, ...; flags that do not affect MoE selection are ignored with a note.

environment:
  Without --probe the environment is declared: packages you do not name are unknown, so
  predicates on them abstain and the Decision lists them as assumptions. --environment FILE
  reads `pip freeze`, `pip list --format=json`, `uv pip list` or `vllm collect-env` output
  (collect-env also names the GPU). --package NAME==VER (or NAME @ URL) declares an installed
  package, --without NAME an absent one, --env VAR=VALUE an environment variable, parsed as
  vLLM 0.33.0 parses it (VLLM_USE_DEEP_GEMM=true makes vLLM fail at start: exit 2).
  Names no table reads are accepted and listed in a note. --probe reads this machine instead
  and says which interpreter and site-packages it read.

engine release:
  Answers are for one vLLM release: --package vllm==0.31.0 declares it (and the FlashInfer version
  it pins, unless you declare flashinfer-python), --probe reads the installed one, and otherwise the
  newest release the tables model is assumed. Every answer names its release and how it was known;
  a release the tables do not model gets an answer and a warning.

policy:
  --policy faithful (default) answers what vLLM does, including kernels with known bugs and kernels
  an engine path returns without checking them (each with a warning naming the safe alternative).
  --policy safe rejects known-bad kernels (reason known_bad) and applies every check everywhere.

exit codes: 0 selected, 1 nothing eligible (record printed), 2 bad input.
"""


def _positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (argparse reports the flag, the value and exits 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


def _name(text: str) -> str:
    """argparse type: a non-empty name."""
    if not text.strip():
        raise argparse.ArgumentTypeError("expected a non-empty name")
    return text


def _gpu_help() -> str:
    from ..inputs.hardware import GPU_CATALOG

    return "hardware catalog name: " + ", ".join(GPU_CATALOG) + " (moe-oracle examples describes them)"


def _add_input_args(p: argparse.ArgumentParser) -> None:
    src = p.add_argument_group("layer")
    src.add_argument("--config", metavar="FILE", help="MoEConfig YAML/JSON file")
    src.add_argument("--model", type=_name, metavar="CONFIG_JSON", help="Hugging Face config.json path or shipped example name")
    src.add_argument("--serve", type=_name, metavar="'vllm serve MODEL ...'", help="a vllm serve command line (one quoted string): model and deployment flags as the answer's vLLM release (--package vllm==X, --environment, --probe) reads them")
    src.add_argument("--hf-quant-config", metavar="FILE", help="ModelOpt hf_quant_config.json (overrides the model's quantization_config)")
    src.add_argument("--quant", type=_name, metavar="NAME", help="override the quant scheme (e.g. fp8_block, nvfp4, mxfp4_mxfp8, or a reference alias like FP8-Blk)")
    dev = p.add_argument_group("device")
    dev.add_argument("--gpu", type=_name, metavar="NAME", help=_gpu_help())
    dev.add_argument("--platform", choices=["cuda", "rocm", "cpu", "xpu", "tpu"], help="platform, when no --gpu")
    dev.add_argument("--sm", type=int, metavar="N", help="CUDA compute capability as major*10+minor (90 = SM 9.0), with --platform cuda")
    dev.add_argument("--arch", metavar="ARCH", help="ROCm gfx target (gfx942), XPU generation (xe2) or CPU arch (x86_64)")
    dep = p.add_argument_group("deployment")
    dep.add_argument("--tp", type=int, metavar="N", help="tensor-parallel size")
    dep.add_argument("--dp", type=int, metavar="N", help="data-parallel size")
    dep.add_argument("--ep", action=argparse.BooleanOptionalAction, default=None, help="enable expert parallelism")
    dep.add_argument("--all2all", metavar="NAME", help="all2all backend (deepep_low_latency, deepep_high_throughput, allgather_reducescatter, ...)")
    dep.add_argument("--eplb", action=argparse.BooleanOptionalAction, default=None, help="enable the expert-parallel load balancer")
    dep.add_argument("--redundant-experts", type=int, metavar="N", help="redundant experts per EP group (EPLB)")
    dep.add_argument("--moe-backend", type=_name, metavar="NAME", help="request a backend (strict: no fallback); 'auto' = priority order")
    dep.add_argument("--lora", action=argparse.BooleanOptionalAction, default=None, help="LoRA adapters on the experts")
    dep.add_argument("--batch-invariant", action=argparse.BooleanOptionalAction, default=None, help="require batch-invariant kernels")
    dep.add_argument("--max-tokens", type=_positive_int, metavar="N", help="largest number of tokens per call")
    env = p.add_argument_group("environment")
    env.add_argument("--environment", metavar="FILE", help="read installed packages (and, from vllm collect-env, the GPU and env vars) from pip freeze / pip list --format=json / uv pip list / vllm collect-env output; --gpu/--platform (or a --config file's device) win over the file's GPU, with a note")
    env.add_argument("--package", action="append", default=[], metavar="NAME==VERSION", help="declare an installed package (repeatable; NAME @ URL and local versions such as +cu130 accepted)")
    env.add_argument("--without", action="append", default=[], metavar="NAME", help="declare a package absent (repeatable)")
    env.add_argument("--env", action="append", default=[], metavar="VAR=VALUE", help="declare an environment variable (repeatable)")
    env.add_argument("--probe", action="store_true", help="probe this interpreter's packages and this process's env vars (and the device, without --gpu); says which interpreter and site-packages it read")
    p.add_argument("--policy", choices=["faithful", "safe"], default="faithful", help="faithful (default): what vLLM does, known bugs included, with warnings; safe: reject known-bad kernels and unchecked early returns")
    p.add_argument("--tables", metavar="DIR", help="use the tables under DIR (kernels/, prepare_finalize/, rules/) instead of the shipped ones")
    p.add_argument("--json", action="store_true", help="print the machine-readable record")


def _add_view_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--view", choices=["engine", "runtime"], default="engine", help="engine (default): what vLLM runs; runtime: what this package's runtime can build (moe-oracle run)")


_TOP_EPILOG = """\
Describe the deployment the way you run it: a vllm serve line and the machine's packages
give the model, the parallel shape, the backend request and the engine release.

Try:
  moe-oracle explain --model deepseek-r1 --gpu H200 --tp 8
  moe-oracle explain --serve 'vllm serve Qwen/Qwen3-30B-A3B-FP8 -tp 2' --gpu H200 --package vllm==0.31.0
  moe-oracle why-not --backend deep_gemm --model deepseek-r1 --gpu H200 --tp 8
  moe-oracle codes                          (what every reason code means)

Every answer names the engine release it is for (--package vllm==X, --environment FILE with
pip freeze or collect_env output, or --probe; else the newest modelled release, assumed). --json on each command for machines.

exit codes: 0 a kernel was selected (or the command succeeded), 1 nothing eligible (the
full record is printed), 2 bad input (flags, config files, tables).
"""


def build_parser(commands: Collection[str] | None = None) -> argparse.ArgumentParser:
    """The argparse tree (exposed for tests and docs).

    ``commands``: fill in the arguments of these subcommands only (``None``: of all of them).
    Every subcommand is registered either way, with its name, help, description and epilog, so
    the top-level help and every error message are the same; argparse reads the arguments of the
    one subcommand it runs, and nothing else. :func:`main` passes the words of its command line,
    one of which names that subcommand exactly (argparse matches a subcommand name exactly).
    """

    def filled(name: str) -> bool:
        return commands is None or name in commands

    parser = argparse.ArgumentParser(
        prog="moe-oracle",
        description="Choose the fused MoE kernel for a model layer on a given machine, and say why.",
        epilog=_TOP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"moe-oracle {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    fmt = argparse.RawDescriptionHelpFormatter

    p = sub.add_parser("explain", help="the ordered candidates with status and every reason", description="Explain which MoE kernel would run and why every other candidate lost.", epilog=_EPILOG_INPUT + "\nexample:\n  moe-oracle explain --model deepseek-r1 --gpu B200 --dp 8 --ep --all2all deepep_low_latency", formatter_class=fmt)
    if filled("explain"):
        _add_input_args(p)
        _add_view_arg(p)
        p.add_argument("--all", action="store_true", help="also list candidates rejected only for quant/platform/request reasons")
    p = sub.add_parser("select", help="the winner in one line", description="Print the selected experts kernel and prepare/finalize in one line; when nothing is eligible, what blocks and the ranked fixes in a few lines.", epilog=_EPILOG_INPUT + "\nexample:\n  moe-oracle select --model qwen3-30b-a3b --gpu H200 --tp 2", formatter_class=fmt)
    if filled("select"):
        _add_input_args(p)
        _add_view_arg(p)
        p.add_argument("--full", action="store_true", help="with --json: the whole Decision record (as explain --json) instead of the compact one")
    p = sub.add_parser("why-not", help="smallest change that makes a backend eligible", description="Search the smallest, least disruptive changes to the config or environment that make BACKEND eligible (a flag before a redeployment, a redeployment before other hardware).", epilog=_EPILOG_INPUT + "\nexamples:\n  moe-oracle why-not --backend flashinfer_trtllm --model deepseek-r1 --gpu H200 --tp 8        (another GPU)\n  moe-oracle why-not --backend flashinfer_trtllm --model deepseek-r1 --gpu H200 --tp 8 --keep device   (none without one: what blocks)", formatter_class=fmt)
    if filled("why-not"):
        p.add_argument("--backend", required=True, type=_name, metavar="NAME", help="backend id or moe_backend alias")
        p.add_argument("--alternatives", type=_positive_int, default=3, metavar="N", help="show up to N ranked alternatives (default 3; equal costs are marked as ties)")
        p.add_argument("--keep", action="append", default=[], metavar="CATEGORY[,CATEGORY]", help="inputs that must not change, besides the model (always kept): device, parallel, quant, packages, env, flags; repeat or comma-separate")
        _add_input_args(p)
        _add_view_arg(p)
    p = sub.add_parser("matrix", help="support matrix generated from the tables", description="Kernels x device x quant scheme, from the tables: a table that fits the terminal (default), Markdown (--markdown), or a self-contained HTML page (--html FILE).", epilog="example:\n  moe-oracle matrix --gpu H200,B200 --quant fp8_block --backend deep_gemm,triton", formatter_class=fmt)
    if filled("matrix"):
        p.add_argument("--gpu", action="append", default=[], metavar="NAME[,NAME]", help="device columns, one per name (hardware catalog or nvidia-smi names; repeatable)")
        p.add_argument("--quant", action="append", default=[], metavar="SCHEME[,SCHEME]", help="only these quant schemes (repeatable)")
        p.add_argument("--backend", action="append", default=[], metavar="NAME[,NAME]", help="only these backends (ids or --moe-backend names; repeatable)")
        out = p.add_mutually_exclusive_group()
        out.add_argument("--markdown", action="store_true", help="print the Markdown page (a cell lists the schemes a kernel runs on that device)")
        out.add_argument("--html", metavar="FILE", help="write a static HTML page")
        p.add_argument("--width", type=_positive_int, metavar="COLUMNS", help="text table width (default: the terminal's, 100 when not a terminal)")
        p.add_argument("--tables", metavar="DIR", help="tables directory (default: shipped)")
    p = sub.add_parser("lint", help="schema and semantic checks of the tables", description="Validate the tables against their schemas and check them semantically: unknown values, duplicate ids, rules naming unknown backends, candidates that can never win, rules that never fire.", formatter_class=fmt)
    if filled("lint"):
        p.add_argument("--tables", metavar="DIR", help="tables directory (default: shipped)")
        p.add_argument("--json", action="store_true", help="print findings as JSON")
        p.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
        p.add_argument("--drift", action=argparse.BooleanOptionalAction, default=None, help="compare the FlashInfer kernels' SM sets with the installed flashinfer-python (default: when it imports; --drift makes a missing flashinfer an error)")
    p = sub.add_parser("run", help="build and run the selected kernel with random weights (needs torch)", description="Select among what this package's runtime can build (the runtime view), build and run the kernel for the model's real dimensions with random weights; compare with the plain-torch reference and report time, TFLOP/s, GB/s and max error.", epilog=_EPILOG_INPUT + "\nThe device defaults to this machine (--probe is implied).\nexample:\n  moe-oracle run --model qwen3-30b-a3b --tokens 64", formatter_class=fmt)
    if filled("run"):
        _add_input_args(p)
        p.add_argument("--tokens", type=_positive_int, default=32, metavar="N", help="tokens per call (default 32)")
        p.add_argument("--layers", type=_positive_int, default=1, metavar="K", help="layers to run (default 1)")
        p.add_argument("--max-experts", type=_positive_int, metavar="N", help="allocate and route among at most N experts to fit in memory (top-k is capped to N; hidden and intermediate sizes stay real)")
        p.add_argument("--seed", type=int, default=0)
    sub.add_parser("examples", help="list shipped example models and hardware names", description="List the shipped example model configs and the hardware catalog.")
    sub.add_parser("codes", help="every reason code and warning code: what it means and what to change", description="Explain every reason code a failure can carry (the closed set in moe_oracle.core.vocab.ReasonCode), then every warning code a Decision's warnings carry (known_bad, unchecked, engine_release).")
    from .diff import add_parser as _add_diff
    from ..verify.cli import add_parser as _add_verify

    _add_diff(sub, lambda q: (_add_input_args(q), _add_view_arg(q)), arguments=filled("diff"))
    _add_verify(sub, arguments=filled("verify"))
    from .plan import add_plan_parser

    add_plan_parser(sub, _add_input_args, arguments=filled("plan"))
    return parser


def _load_catalog(tables: str | None, view: str = "engine"):
    from ..core.loading import load_catalog, load_runtime_catalog
    from ..core.oracle import catalog_for_view

    if tables is None:
        return catalog_for_view(view)
    root = Path(tables)
    engine = load_catalog([root / "kernels", root / "prepare_finalize", root / "rules"])
    return load_runtime_catalog(engine) if view == "runtime" else engine


def _device_from_args(args: argparse.Namespace):
    from ..core.config import Device
    from ..core.errors import ConfigError, InputIssue
    from ..inputs.hardware import lookup_hardware

    if args.gpu:
        if args.platform or args.sm or args.arch:
            raise ConfigError([InputIssue("--gpu", "give either --gpu or --platform/--sm/--arch, not both", args.gpu, None)])
        return lookup_hardware(args.gpu).device
    if args.platform:
        return Device(args.platform, capability=args.sm, arch=args.arch)
    if args.sm or args.arch:
        raise ConfigError([InputIssue("--sm/--arch", "needs --platform", args.sm or args.arch, ["cuda", "rocm", "cpu", "xpu"])])
    return None


def _unused_gpu_note(args: argparse.Namespace, device: Any, declared: Any, winner: str) -> str | None:
    """A note when an environment file's GPU is not used because ``winner`` (``--gpu H200``, the
    ``--config`` file's device) describes the device; ``None`` when the file names no GPU or
    the same catalog device. A flag (or the layer file) overriding a file's value is noted, not
    refused, as ``--package`` over ``--environment`` is."""
    from ..core.errors import ConfigError
    from ..inputs.hardware import lookup_hardware

    if declared is None or declared.gpu is None:
        return None
    try:
        if device is not None and lookup_hardware(declared.gpu).device == device:
            return None
    except ConfigError:
        pass  # not in the catalog: it is not used either way
    return f"{declared.gpu_source}: its GPU {declared.gpu!r} is not used: {winner} wins"


def _device_flag(args: argparse.Namespace) -> str:
    """How the device was given on the command line (``--gpu H200``, ``--to gpu:B200``, ``--platform cuda``)."""
    given = getattr(args, "gpu_given_as", None)
    if given:
        return given
    return f"--gpu {args.gpu}" if args.gpu else f"--platform {args.platform}"


def _probed_environment(args: argparse.Namespace, catalog: Any, probe_notes: tuple[str, ...]) -> Any:
    """This machine's :class:`~moe_oracle.core.environment.Environment` for ``--probe`` (explain, select, plan, diff).

    Raises:
        ConfigError: packages or variables also declared, or a variable the engine refuses.
    """
    from ..inputs.deployment import answer_release
    from ..core.environment import Environment, probe_environment
    from ..core.envvars import env_issues
    from ..core.errors import ConfigError, InputIssue

    if args.package or args.without or args.env or args.environment:
        raise ConfigError([InputIssue("--probe", "--probe reads this machine; do not also declare --package/--without/--env/--environment", None, None)], headline="bad --probe")
    env = probe_environment(catalog.package_names, [v.name for v in catalog.env_vars])
    issues = env_issues(env.env, catalog.env_vars, path="this process's environment:", release=answer_release(catalog, env))
    if issues:
        raise ConfigError(issues, headline="bad environment variable")
    if probe_notes:
        env = Environment(env.packages, env.absent, env.complete, env.env, env.probed, env.notes + probe_notes)
    return env


def _serve_release(args: argparse.Namespace, catalog: Any) -> str:
    """The vLLM release whose flags parse the ``--serve`` line: the release the answer is for
    (:func:`moe_oracle.inputs.deployment.answer_release`: declared by ``--package``/``--environment``,
    or probed with ``--probe``; the modelled release standing in for an unmodelled one), never
    the serve line's own words, so it is known before the line is parsed.

    Raises:
        ConfigError: a malformed declaration (as the environment is read again afterwards).
    """
    from ..inputs.deployment import answer_release, declare_environment
    from ..inputs.serve import ENGINE_VERSION

    if args.probe:
        env = _probed_environment(args, catalog, ())
    else:
        env = declare_environment(catalog, packages=args.package, without=args.without, env_file=args.environment).environment
    return answer_release(catalog, env) or ENGINE_VERSION


def _build_inputs(args: argparse.Namespace, catalog: Any, *, probe_device_default: bool = False):
    """(config, environment, notes) from the parsed flags; notes are about inputs with no effect."""
    from ..core.config import MoEConfig, ParallelConfig, Provenance
    from ..inputs.deployment import apply_serve, blame_hf_overrides, declare_environment, engine_release, load_serve_checkpoint, serve_model_path
    from ..core.environment import probe_device
    from ..core.errors import ConfigError, InputIssue
    from ..inputs.hf import from_hf_config, load_hf_config
    from ..inputs.files import load_config_file, parse_quant, resolve_all2all
    from ..inputs.models import quant_config_beside, resolve_model_path
    from ..inputs.serve import parse_serve
    from ..core.vocab import DType, Source

    flag = Source.USER_FLAG
    notes: list[str] = []
    serve = None
    if getattr(args, "serve", None):
        serve = parse_serve(args.serve, version=_serve_release(args, catalog))
        apply_serve(args, serve)
        notes += [f"--serve: {n}" for n in serve.notes]
    file_env = None
    file_probe = False
    ck_quant = ck_scheme = None
    if args.config and args.model:
        raise ConfigError([InputIssue("--config/--model", "give either --config or --model, not both", None, None)])
    if args.probe and args.environment:
        raise ConfigError([InputIssue("--probe", "--probe reads this machine; --environment FILE declares another one: give one of them", args.environment, None)], headline="bad --probe")
    device = _device_from_args(args)
    probe_notes: tuple[str, ...] = ()
    declared = None
    if not args.probe:
        declared = declare_environment(catalog, packages=args.package, without=args.without, env=args.env, env_file=args.environment, serve_env=serve.env if serve else ())
        gpu_note = _unused_gpu_note(args, device, declared, _device_flag(args)) if device is not None else None
        notes += [gpu_note] if gpu_note else []
        if device is None and declared.gpu is not None and not args.config:
            from ..inputs.hardware import lookup_hardware

            try:
                device = lookup_hardware(declared.gpu).device
            except ConfigError as exc:
                raise ConfigError([InputIssue(declared.gpu_source or "--environment", f"the GPU {declared.gpu!r} is not in the hardware catalog; give --gpu NAME or --platform cuda --sm N", declared.gpu, exc.issues[0].allowed)], headline="bad --environment") from None
            notes.append(f"device {device.name} from {declared.gpu_source} ({declared.gpu})")
    if device is None and (args.probe or probe_device_default) and not args.config:
        device, probe_notes = probe_device()
    prov: list[Provenance] = []
    answered: dict[str, Any] = {}  # the answer's environment, once known (a --config file's checkpoint needs it first)

    def answer_env(file_env: Any, file_probe: bool) -> Any:
        if "env" not in answered:
            if args.probe and file_env is not None and (file_env.packages or file_env.absent or file_env.env):
                answered["notes"] = [_probe_over_file(args, file_env)]
            if args.probe or file_probe:
                answered["env"] = _probed_environment(args, catalog, probe_notes)
            elif file_env is not None and not (args.package or args.without or args.env or args.environment or (serve and serve.env)):
                answered["env"] = file_env
            else:
                found = declared
                if file_env is not None:
                    found = declare_environment(catalog, packages=args.package, without=args.without, env=args.env, env_file=args.environment, serve_env=serve.env if serve else (), base=file_env)
                assert found is not None
                answered["env"], answered["notes"] = found.environment, list(found.notes)
        return answered["env"]

    if args.config:
        loaded = load_config_file(args.config, catalog, answer_env=answer_env)
        config, file_env, file_probe = loaded.config, loaded.environment, loaded.probe
        ck_quant, ck_scheme = loaded.checkpoint_quant, loaded.checkpoint_scheme
        if device is None:
            gpu_note = _unused_gpu_note(args, config.device, declared, f"the device of --config {args.config}")
            notes += [gpu_note] if gpu_note else []
        changes: dict[str, Any] = {}
        if device is not None:
            changes["device"] = device
    elif args.model or serve is not None:
        quant_cfg = load_hf_config(args.hf_quant_config, "--hf-quant-config") if args.hf_quant_config else None
        if serve is not None:
            path = serve_model_path(serve)
            hf_cfg, serve_notes = load_serve_checkpoint(serve, path, load_hf_config(path))
            notes += [f"--serve: {n}" for n in serve_notes]
        else:
            path = resolve_model_path(args.model)
            hf_cfg = load_hf_config(path)
        beside = quant_config_beside(path)
        # The checkpoint is read as the answer's release reads it: the environment is known here
        # (declared, or probed once and reused below).
        release = engine_release(catalog, answer_env(None, False))
        try:
            ck = from_hf_config(hf_cfg, file=str(path), quant_cfg=quant_cfg, beside=load_hf_config(beside) if beside else None, release=release)
        except ConfigError as exc:
            raise blame_hf_overrides(exc, serve) from None
        if device is None:
            given = "--serve" if serve is not None else "--model"
            raise ConfigError([InputIssue("--gpu", f"the device is required with {given}: give --gpu NAME, --platform (with --sm/--arch), --environment with a vllm collect-env report, or --probe", None, None)])
        kwargs = dict(ck.kwargs)
        ck_quant, ck_scheme = ck.quant, kwargs.get("quant")
        ck_prov = tuple(ck.provenance)
        if serve is not None and serve.dtype not in (None, "auto"):
            kwargs["in_dtype"] = DType({"half": "float16", "float": "float32"}.get(serve.dtype, serve.dtype))
            ck_prov = tuple(p for p in ck_prov if p.field != "in_dtype") + (Provenance("in_dtype", flag, f"--serve --dtype {serve.dtype}"),)
        config = MoEConfig(device=device, provenance=ck_prov + (Provenance("device", Source.HARDWARE, f"--gpu {args.gpu}" if args.gpu else "--platform" if args.platform else "device"),), **kwargs)
        changes = {}
    else:
        raise ConfigError([InputIssue("--model", "describe the layer with --model CONFIG_JSON (or an example name), --serve 'vllm serve MODEL ...' or --config FILE; `moe-oracle examples` lists the shipped models", None, None)])

    par: dict[str, Any] = {}
    if args.tp is not None:
        par["tp_size"] = args.tp
    if args.dp is not None:
        par["dp_size"] = args.dp
    if args.ep is not None:
        par["use_ep"] = args.ep
    if args.eplb is not None:
        par["enable_eplb"] = args.eplb
    if args.redundant_experts is not None:
        par["num_redundant_experts"] = args.redundant_experts
    if args.all2all:
        backend, warning = resolve_all2all(catalog, args.all2all)
        par["all2all_backend"] = backend
        prov.append(Provenance("parallel.all2all_backend", flag, warning or f"--all2all {args.all2all}"))
    if par:
        changes["parallel"] = ParallelConfig(**{**_parallel_dict(config.parallel), **par})
        names = {"tp_size": "--tp", "dp_size": "--dp", "use_ep": "--ep", "enable_eplb": "--eplb", "num_redundant_experts": "--redundant-experts", "all2all_backend": "--all2all"}
        shown = {k: (f"{names[k]} {v}" if v is not False else f"--no-{names[k][2:]}") for k, v in par.items()}
        prov += [Provenance(f"parallel.{k}", flag, shown[k] if serve is None else f"--serve ({shown[k]})") for k in par if not (k == "all2all_backend")]
    if args.quant:
        changes["quant"] = parse_quant(args.quant)
        prov.append(Provenance("quant", flag, f"--quant {args.quant}"))
    for attr, key in (("lora", "lora"), ("batch_invariant", "batch_invariant")):
        if getattr(args, attr) is not None:
            changes[key] = getattr(args, attr)
            prov.append(Provenance(key, flag, f"--{'' if changes[key] else 'no-'}{attr.replace('_', '-')}"))
    if args.moe_backend:
        changes["moe_backend"] = args.moe_backend
        prov.append(Provenance("moe_backend", flag, f"--moe-backend {args.moe_backend}"))
    if args.max_tokens is not None:
        changes["max_num_tokens"] = args.max_tokens
        prov.append(Provenance("max_num_tokens", flag, f"--max-tokens {args.max_tokens}" if serve is None or serve.max_num_batched_tokens is None else f"--serve --max-num-batched-tokens {args.max_tokens}"))
    if changes or prov:
        merged = {p.field: p for p in config.provenance}
        merged.update({p.field: p for p in prov})
        changes["provenance"] = tuple(merged[k] for k in sorted(merged))
        config = replace(config, **changes)

    env = answer_env(file_env, file_probe)
    notes += answered.get("notes", [])
    if serve is not None:
        _check_serve_values(serve, catalog, env)  # --quantization: with the checkpoint, below
    notes += _verify_quantization(args, catalog, config, env, serve, ck_quant, ck_scheme)
    return config, env, tuple(notes)


def _verify_quantization(args: argparse.Namespace, catalog: Any, config: Any, env: Any, serve: Any, ck_quant: Any, ck_scheme: Any) -> list[str]:
    """vLLM's quantization checks at start for the layer :func:`_build_inputs` built, and the
    gate why-not's search holds edits to (``args.checkpoint_gate``, read by :func:`_admissible`).

    A checkpoint (``--model``, ``--serve``, a config file's ``model.hf_config``) is checked as
    vLLM checks it (:func:`moe_oracle.inputs.deployment.verify_checkpoint_quantization`). Under
    experts other than the checkpoint's (``--quant``, the file's ``model.quant``) the answer is
    for another checkpoint of the same format: its own document's platform check is noted, and
    the layer is held to the methods such a checkpoint can have
    (:func:`moe_oracle.inputs.deployment.verify_layer_quantization`), as a config file's layer given
    field by field is; a method the serve line's ``-q`` chose (``moe_wna16`` on GPTQ) is that
    line's for any such checkpoint, and stays checked. A config file cannot give ``--allow-deprecated-quantization``: a
    deprecated method is noted there.

    Returns:
        notes.

    Raises:
        ConfigError: what vLLM refuses at start.
    """
    from ..inputs.deployment import answer_release, checkpoint_quantization, quantization_from_flag, verify_checkpoint_quantization, verify_layer_quantization
    from ..inputs.serve import ENGINE_VERSION, release_values

    release = answer_release(catalog, env) or ENGINE_VERSION
    args.checkpoint_gate = None
    notes: list[str] = []
    if ck_quant is None:
        if args.config:  # a layer without its checkpoint: the methods its quant_method and scheme can come from
            notes += verify_layer_quantization(config, release, path="$.model.quant_method", file=str(args.config))
        return notes
    user_q = serve.quantization if serve is not None else None
    other = None
    if config.quant != ck_scheme:
        other = f"--quant {args.quant}" if args.quant else f"$.model.quant of {args.config}"
    allow = bool(serve is not None and serve.allow_deprecated_quantization)
    if args.config:
        allow = True
        own = checkpoint_quantization(ck_quant, None)
        if own in release_values(release)["deprecated_quantization"] and other is None:  # else verify_layer_quantization notes it
            notes.append(f"$.model.hf_config: vLLM {release} refuses the deprecated quantization method {own} at start unless --allow-deprecated-quantization is given "
                         "(ModelConfig._verify_quantization; DEPRECATED_QUANTIZATION_METHODS); a config file cannot give it: the answer is for a start with it")
    notes += verify_checkpoint_quantization(ck_quant, user_q, "--serve --quantization", release, allow_deprecated=allow, allow_flag="--allow-deprecated-quantization (on the --serve line)", device=config.device,
                                            another_checkpoint=other)
    method = checkpoint_quantization(ck_quant, user_q)
    chosen = quantization_from_flag(ck_quant, user_q)  # the serve line's -q decides whatever the checkpoint (checked above)
    args.checkpoint_gate = (ck_scheme, config.quant_method, (method,) if method else (), (chosen,) if chosen else None)
    if other is not None and chosen is None:
        flagged = other.startswith("--quant")
        notes += verify_layer_quantization(config, release, path="--quant" if flagged else "$.model.quant", file=None if flagged else str(args.config), headline="bad --quant" if flagged else "bad --config")
    return notes


def _probe_over_file(args: argparse.Namespace, file_env: Any) -> str:
    """``--probe`` next to a config file that declares an environment (packages, absent or env):
    the two say which machine the answer is for, as ``--probe`` and ``--environment FILE`` do, so
    the explicit flag is refused as that pair is (:func:`_probed_environment`). ``run`` probes
    without being asked (it executes here): the file's environment is set aside with a note.

    Returns:
        the note (``run``).

    Raises:
        ConfigError: an explicit ``--probe``, naming ``$.environment`` of the file.
    """
    from ..core.errors import ConfigError, InputIssue

    declared = [f"{n}=={v}" for n, v in file_env.packages] + [f"{n} absent" for n in sorted(file_env.absent)] + [f"{n}={v}" for n, v in file_env.env]
    shown = ", ".join(declared[:4]) + (", ..." if len(declared) > 4 else "")
    if getattr(args, "probe_implied", False):
        return f"run executes on this machine: the environment {args.config} declares in $.environment ({shown}) is not used; the answer is for the probed one"
    raise ConfigError([InputIssue("--probe", f"--probe reads this machine; --config {args.config} declares another environment ({shown}) in $.environment: give one of them (drop --probe, or the file's environment)", args.config, None)], headline="bad --probe")


def _admissible(args: argparse.Namespace, catalog: Any, config: Any) -> Any:
    """For why-not's search (dead-end fixes too): whether vLLM starts with an edited deployment,
    held to the platform quantization check that ``select`` with the fix applied runs
    (:func:`_build_inputs`), so every printed fix runs as printed.

    An edit that keeps the checkpoint's experts and format is the checkpoint itself: the method
    vLLM checks for it (:func:`moe_oracle.inputs.deployment.checkpoint_quantization`) must pass the
    edited device's platform in the edited release (:func:`moe_oracle.inputs.deployment.platform_admits`),
    so no fix moves the checkpoint to a GPU whose platform refuses its method. Any other layer
    (``--quant`` or the layer's ``quant_method`` edited, or a ``--config`` layer given field by
    field) is a checkpoint of that format with those experts: one of the methods it can have must
    pass (:func:`moe_oracle.inputs.deployment.layer_gate_methods`), as ``select`` holds it to
    :func:`moe_oracle.inputs.deployment.verify_layer_quantization`, unless the serve line's ``-q`` chose
    the method (:func:`moe_oracle.inputs.deployment.quantization_from_flag`), which then must pass."""
    from ..inputs.deployment import answer_release, layer_gate_methods, platform_admits
    from ..inputs.serve import ENGINE_VERSION

    gate = getattr(args, "checkpoint_gate", None)

    def admissible(c: Any, env: Any) -> bool:
        release = answer_release(catalog, env) or ENGINE_VERSION
        if gate is not None and (c.quant, c.quant_method) == gate[:2]:
            return platform_admits(gate[2], release, c.device)
        if gate is not None and gate[3] is not None and c.quant_method == gate[1]:
            return platform_admits(gate[3], release, c.device)  # the serve line's -q chose it
        return platform_admits(layer_gate_methods(c, release), release, c.device)

    return admissible


def _check_serve_values(serve: Any, catalog: Any, env: Any) -> None:
    """Refuse the serve line's values the answer's engine release refuses at start, the
    checkpoint aside (``--kv-cache-dtype``: :func:`moe_oracle.inputs.serve.serve_value_issues`).
    ``--quantization`` is checked with the checkpoint's quantization document, as vLLM checks it
    (:func:`moe_oracle.inputs.deployment.verify_checkpoint_quantization`: override classes first).

    Raises:
        ConfigError: such a value, naming the flag, the value and the release's allowed values.
    """
    from ..inputs.deployment import answer_release
    from ..core.errors import ConfigError
    from ..inputs.serve import ENGINE_VERSION, serve_value_issues

    issues = serve_value_issues(serve, answer_release(catalog, env) or ENGINE_VERSION, check_quantization=False)
    if issues:
        raise ConfigError(issues, headline="bad --serve")


def _parallel_dict(p: Any) -> dict[str, Any]:
    return {"tp_size": p.tp_size, "dp_size": p.dp_size, "use_ep": p.use_ep, "all2all_backend": p.all2all_backend, "enable_eplb": p.enable_eplb, "num_redundant_experts": p.num_redundant_experts}


def _print_json(obj: Any) -> None:
    print(json.dumps(obj, indent=2, default=str))


def _decide(args: argparse.Namespace, catalog: Any):
    """(decision, fixes): the selection with the input notes attached, and for a dead end the
    ranked fixes (why-not for any kernel, or for the requested backend; ``None`` otherwise).

    Raises:
        ConfigError: bad input, or a deployment vLLM refuses at start (``--eplb`` without ``--ep``).
    """
    from ..core.engine import evaluate
    from ..core.errors import ConfigError

    config, env, notes = _build_inputs(args, catalog)
    issues = _refusals(config, args, catalog, env)
    if issues:
        raise ConfigError(issues)
    decision = evaluate(catalog, config, env, policy=args.policy)
    if notes:
        decision = replace(decision, notes=_merged_notes(decision.notes, notes))
    found = None
    if decision.winner is None:
        from ..explain.whynot import fixes as find_fixes  # a dead end only: the search is not imported for an answer

        found = find_fixes(catalog, config, env, backends=decision.requested, policy=args.policy, admissible=_admissible(args, catalog, config))
    return decision, found


def _cmd_explain(args: argparse.Namespace, catalog: Any) -> int:
    from ..core.render import compact_dict, render_dead_end, render_explain

    decision, found = _decide(args, catalog)
    if args.json:
        _print_json(compact_dict(decision, found) if args.command == "select" and not args.full else decision.to_dict())
    elif args.command == "select":
        if decision.winner is None:
            print(render_dead_end(decision, found, command="explain", serve=bool(args.serve)))
        else:
            print(decision.select_line())
            for warning in decision.warnings:
                print(f"warning: {warning.message}", file=sys.stderr)
    else:
        print(render_explain(decision, show_all=args.all, fixes=found, serve=bool(args.serve)))
    return EXIT_OK if decision.winner is not None else EXIT_NONE


def _cmd_why_not(args: argparse.Namespace, catalog: Any) -> int:
    from ..core.errors import ConfigError
    from ..core.oracle import Oracle
    from ..explain.whynot import why_not

    config, env, notes = _build_inputs(args, catalog)
    issues = _refusals(config, args, catalog, env)
    if issues:
        raise ConfigError(issues)
    keep = [k.strip() for part in args.keep for k in part.split(",") if k.strip()]
    # The model itself is always kept on the command line: an operator cannot change its activation.
    result = why_not(Oracle(catalog, env, policy=args.policy), config, args.backend, n=args.alternatives, keep={*keep, "model"}, admissible=_admissible(args, catalog, config))
    if args.json:
        _print_json(result.to_dict())
    else:
        for note in notes:
            print(f"Note: {note}")
        print(result.render_text(serve=bool(args.serve)))
    return EXIT_OK if (result.found or result.already_eligible) else EXIT_NONE


def _refusals(config: Any, args: argparse.Namespace, catalog: Any, env: Any) -> list[Any]:
    """What the release the answer is for refuses at start, each naming the input that set it
    and advising a change in that input: the flag (``--eplb``; add ``--ep``), the ``--serve``
    line's flag (``--serve --enable-eplb``; add ``--enable-expert-parallel``), or a ``--config``
    file's field (``$.parallel.enable_eplb`` in FILE; set ``$.parallel.use_ep: true`` there)."""
    from ..inputs.deployment import engine_release
    from ..core.refusals import refusals

    return refusals(config, release=engine_release(catalog, env), origins=_origins(args))


def _origins(args: argparse.Namespace) -> dict[str, Any]:
    """Deployment field -> :class:`~moe_oracle.core.refusals.Origin` for the fields given: a value the
    ``--serve`` line filled is the serve line's, one typed as a flag the flag's, any other the
    ``--config`` file's (when there is one); a field given nowhere is left out."""
    from ..core.refusals import FLAG, Origin

    serve_set = getattr(args, "from_serve", frozenset())
    config_file = getattr(args, "config", None)
    origins = {}
    for field, dest in (("parallel.enable_eplb", "eplb"), ("parallel.use_ep", "ep"), ("parallel.num_redundant_experts", "redundant_experts")):
        if dest in serve_set:
            origins[field] = Origin("serve")
        elif getattr(args, dest, None) is not None:
            origins[field] = FLAG
        elif config_file:
            origins[field] = Origin("file", str(config_file))
    return origins


def _merged_notes(decision_notes: tuple[str, ...], input_notes: tuple[str, ...]) -> tuple[str, ...]:
    """The decision's notes then the input notes, each sentence once.

    The engine notes a declared variable's surprising value (``X='yes' is read as false``) and
    the reader of the flags notes the same sentence with where it was declared (``--env: ...``):
    the one naming the source is kept.
    """
    sourced = {n.split(": ", 1)[1] for n in input_notes if ": " in n}
    kept = tuple(n for n in decision_notes if n not in sourced and n not in input_notes)
    return kept + tuple(dict.fromkeys(input_notes))


def _cmd_matrix(args: argparse.Namespace, catalog: Any) -> int:
    import shutil

    from ..explain.matrix import matrix_view, render_html, render_markdown, render_text

    view = matrix_view(catalog, tuple(args.gpu), tuple(args.quant), tuple(args.backend))
    if args.html:
        from ..core.errors import ConfigError, InputIssue

        try:
            Path(args.html).write_text(render_html(catalog, view), encoding="utf-8")
        except (OSError, ValueError) as exc:  # ValueError: a NUL or unencodable character in the path
            raise ConfigError([InputIssue("--html", f"cannot write: {getattr(exc, 'strerror', None) or exc}", args.html, None)], headline="cannot write --html") from None
        print(f"wrote {args.html}", file=sys.stderr)
    elif args.markdown:
        print(render_markdown(catalog, view))
    else:
        width = args.width or (shutil.get_terminal_size((100, 24)).columns if sys.stdout.isatty() else 100)
        print(render_text(catalog, view, width=width), end="")
    return EXIT_OK


def _cmd_codes() -> int:
    from ..core.codes import render_codes

    print(render_codes(), end="")
    return EXIT_OK


def _cmd_lint(args: argparse.Namespace) -> int:
    from ..core.errors import TableError
    from ..tools.lint import lint

    try:
        catalog = _load_catalog(args.tables)
    except TableError as exc:
        if args.json:
            _print_json({"ok": False, "errors": [i.to_dict() for i in exc.issues], "findings": []})
        else:
            print(str(exc))
        return EXIT_BAD_INPUT
    findings = lint(catalog, drift=args.drift)
    errors = [f for f in findings if f.severity == "error"]
    warnings = [f for f in findings if f.severity == "warning"]
    if args.json:
        _print_json({"ok": not errors, "errors": [], "findings": [f.to_dict() for f in findings]})
    else:
        print(f"tables {catalog.tables_hash}: {len(catalog.experts)} experts kernels, {len(catalog.prepare_finalize)} prepare/finalize, {len(catalog.orders)} priority orders; schema OK")
        for f in findings:
            print(f.format())
        print(f"{len(errors)} error(s), {len(warnings)} warning(s), {len(findings) - len(errors) - len(warnings)} note(s)")
    if errors or (args.strict and warnings):
        return EXIT_NONE
    return EXIT_OK


def _cmd_run(args: argparse.Namespace, catalog: Any) -> int:
    from ..core.engine import evaluate
    from ..core.errors import ConfigError, InputIssue

    try:
        from ..runtime.runner import run_layer
    except ImportError as exc:
        raise ConfigError([InputIssue("run", f"the runtime needs torch: pip install 'moe-oracle[runtime]' ({exc})", None, None)]) from None
    if args.gpu or args.platform or args.sm or args.arch:
        raise ConfigError([InputIssue("--gpu", "run executes on this machine, whose device is probed; drop --gpu/--platform/--sm/--arch (explain or select describe other machines)", args.gpu or args.platform, None)])
    if not args.probe and not (args.package or args.without or args.env or args.environment):
        args.probe = args.probe_implied = True  # a file's declared environment is then noted, not a conflict (_probe_over_file)
    config, env, notes = _build_inputs(args, catalog, probe_device_default=True)

    issues = _refusals(config, args, catalog, env)
    if issues:
        raise ConfigError(issues)
    decision = evaluate(catalog, config, env, policy=args.policy)
    if notes:
        decision = replace(decision, notes=_merged_notes(decision.notes, notes))
    if decision.winner is None:
        print(decision.render_failure())
        return EXIT_NONE
    _check_run_memory(config, args)
    from ..runtime.errors import AdapterContractError, AdapterImportError, CompositionError, UnsupportedConfigError

    try:
        # Progress bars only on a terminal: a log or a pipe gets the report alone.
        report = run_layer(config, decision, tokens=args.tokens, layers=args.layers, seed=args.seed, max_experts=args.max_experts, progress=not args.json and sys.stderr.isatty())
    except (AdapterImportError, AdapterContractError, CompositionError, UnsupportedConfigError) as exc:
        sel = decision.selected
        ours = [b for b in ("torch_grouped_mm", "reference") if b in catalog.backend_names and (sel is None or b != sel.backend)]
        advice = "Run it inside its own engine" if sel is not None and catalog.experts_by_id(sel.kernel).provider != "moe_oracle" else "Its adapter refuses this layer"
        print(f"moe-oracle: selected {sel.kernel if sel else None} [{sel.backend if sel else ''}], which this runtime cannot build: {exc}\n"
              f"{advice}; or try another of ours with " + " or ".join(f"--moe-backend {b}" for b in ours) + ".", file=sys.stderr)
        return EXIT_NONE
    if args.json:
        _print_json({"decision": decision.to_dict(), "run": report.to_dict()})
    else:
        print(report.describe())
    return EXIT_OK


def _check_run_memory(config: Any, args: argparse.Namespace) -> None:
    """Refuse a `run` whose weights cannot fit in this machine's memory, naming the fix."""
    from ..core.errors import ConfigError, InputIssue

    experts = min(config.num_experts, args.max_experts or config.num_experts)
    rows = (2 if config.activation.is_gated else 1) * config.intermediate_size
    per_expert = (rows + config.intermediate_size) * config.hidden_size
    storage = 4 if config.in_dtype.value == "float32" else (1 if config.quant.weight is not None else 2)
    # Stored weights of every layer, plus the float32 w13 that random initialization draws first,
    # plus float32 activations of the kernel and of the reference (tokens x top-k x (w13 rows + hidden)).
    activations = 2 * args.tokens * config.top_k * (rows + config.hidden_size) * 4 + args.tokens * (config.hidden_size + config.num_experts) * 4
    needed = args.layers * experts * per_expert * storage + experts * rows * config.hidden_size * 4 + activations
    from ..runtime.runner import available_memory_bytes

    available = available_memory_bytes()
    if available is None:
        return
    if needed > 0.6 * available:
        if activations > 0.3 * available:
            raise ConfigError([InputIssue("--tokens", f"{args.tokens} tokens need {activations / 2**30:.1f} GiB of activations and {available / 2**30:.1f} GiB is free; use fewer tokens", args.tokens, None)])
        per = args.layers * per_expert * storage + rows * config.hidden_size * 4
        fit = int((0.6 * available - activations) / per)
        if fit < 1:
            raise ConfigError([InputIssue("--max-experts", f"one expert of this layer needs {per / 2**30:.1f} GiB and {available / 2**30:.1f} GiB is free: it cannot run on this machine", experts, None)])
        raise ConfigError([InputIssue("--max-experts", f"the layer's weights need {needed / 2**30:.1f} GiB and {available / 2**30:.1f} GiB is free; cap the experts allocated, e.g. --max-experts {min(fit, config.num_experts)}", experts, {"maximum": fit})])


def _cmd_examples() -> int:
    from ..inputs.hardware import GPU_CATALOG
    from ..inputs.models import example_names

    print("Example models (--model NAME):")
    for name in example_names():
        print(f"  {name}")
    print("Hardware (--gpu NAME):")
    for name, hw in GPU_CATALOG.items():
        d = hw.device
        arch = f"SM {d.capability}" if d.capability else (d.arch or "")
        print(f"  {name:<16} {d.platform.value:<5} {arch:<8} {hw.description}")
    return EXIT_OK


def _escape_unencodable_output() -> None:
    # Arguments that are not valid UTF-8 reach Python as lone surrogates (PEP 383) and are echoed
    # in messages (a --tables path, an --arch); a strict stdout would raise UnicodeEncodeError.
    for stream in (sys.stdout, sys.stderr):
        if getattr(stream, "errors", None) == "strict" and hasattr(stream, "reconfigure"):
            stream.reconfigure(errors="backslashreplace")


def _freeze_at_exit() -> None:
    """At interpreter exit, move every object to the collector's permanent generation
    (``gc.freeze``) before the final collection.

    The process is ending: that collection would walk everything a command loaded (the compiled
    catalog alone is ~40,000 objects) and free the cycles among it, memory the operating system
    takes back anyway (~20 ms of a warm ``select``). ``atexit`` hooks still run and the standard
    streams are still flushed; only objects left in reference cycles are not finalized, which
    Python does not promise at exit either. Registered once, however often ``main`` runs.
    """
    import atexit
    import gc

    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``moe-oracle`` script; returns the exit code.

    Without ``argv`` (the script, ``python -m moe_oracle``) the command line is the process's:
    :func:`_freeze_at_exit`.
    """
    from ..core.errors import ConfigError, TableError

    _escape_unencodable_output()
    if argv is None:
        _freeze_at_exit()
    words = sys.argv[1:] if argv is None else argv
    parser = build_parser(commands=frozenset(words))  # the arguments of the command run, not of all ten
    args = parser.parse_args(words)
    try:
        if args.command == "lint":
            return _cmd_lint(args)
        if args.command == "examples":
            return _cmd_examples()
        if args.command == "codes":
            return _cmd_codes()
        if args.command == "verify":
            from ..verify.cli import run as _verify

            return _verify(args)
        view = "runtime" if args.command == "run" else getattr(args, "view", "engine")
        catalog = _load_catalog(getattr(args, "tables", None), view)
        if args.command in ("explain", "select"):
            return _cmd_explain(args, catalog)
        if args.command == "diff":
            from .diff import run as _diff

            return _diff(args, catalog, _build_inputs, _print_json)
        if args.command == "why-not":
            return _cmd_why_not(args, catalog)
        if args.command == "matrix":
            return _cmd_matrix(args, catalog)
        if args.command == "run":
            return _cmd_run(args, catalog)
        if args.command == "plan":
            from .plan import cmd_plan

            return cmd_plan(args, catalog)
    except (ConfigError, TableError) as exc:
        if getattr(args, "json", False):
            _print_json(exc.to_dict())
        else:
            print(f"moe-oracle: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        return EXIT_OK
    parser.error(f"unknown command {args.command!r}")
    return EXIT_BAD_INPUT


if __name__ == "__main__":
    sys.exit(main())
