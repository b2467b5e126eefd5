"""What the subcommands share: their input flags, the exit codes, the catalog a command reads, JSON
output, and the one hand-over from parsed flags to the one door
(:class:`~moe_oracle.inputs.operator_inputs.OperatorInputs`).
"""

from __future__ import annotations

import argparse
import json
import re
from typing import Any, Callable

from ..core.config import EXPERT_PLACEMENTS
from ..inputs.operator_inputs import OperatorInputs
from ..inputs.paths import user_directory

__all__ = ["EPILOG_INPUT", "EXIT_BAD_INPUT", "EXIT_CODES_ALWAYS", "EXIT_CODES_LINT", "EXIT_CODES_PLAN", "EXIT_CODES_RUN", "EXIT_CODES_SELECT", "EXIT_CODES_WHY_NOT", "EXIT_MISSING_DEPENDENCY", "EXIT_NONE", "EXIT_OK", "add_input_args", "add_view_arg", "comma_list", "gpu_help", "load_tables", "name_arg", "operator_inputs", "positive_int", "print_json", "read_stdin_config"]

EXIT_OK, EXIT_NONE, EXIT_BAD_INPUT, EXIT_MISSING_DEPENDENCY = 0, 1, 2, 3

# Each command's --help states the exit codes it returns (an answer's "no" is 1, bad input 2).
EXIT_CODES_SELECT = "exit codes: 0 a kernel was selected, 1 nothing eligible (what blocks and the ranked fixes are printed), 2 bad input."
EXIT_CODES_WHY_NOT = ("exit codes: 0 BACKEND is eligible already or changes that make it eligible were found, 1 no change\n"
                      "  found (what blocks is printed), 2 bad input.")
EXIT_CODES_PLAN = "exit codes: 0 every MoE layer group got a kernel, 1 some group got none (the plan is printed), 2 bad input."
EXIT_CODES_RUN = ("exit codes: 0 the kernel ran, 1 nothing eligible or this runtime cannot build the selected kernel,\n"
                  "  2 bad input, 3 an optional dependency is missing (torch: pip install 'moe-oracle[runtime]').")
EXIT_CODES_LINT = "exit codes: 0 no errors (and, with --strict, no warnings), 1 errors (with --strict, warnings too), 2 bad input (tables that do not load, a --tables that is no directory)."
EXIT_CODES_ALWAYS = "exit codes: 0 printed, 2 bad input."

EPILOG_INPUT = """\
inputs:
  Describe the layer with --config FILE (YAML/JSON, schemas/moe_config.schema.json; --config -
  reads it from standard input) or with
  --model (a Hugging Face config.json or checkpoint directory, a shipped example's name, or the
  Hugging Face id that names one: see `moe-oracle examples`; nothing is downloaded)
  plus the device and deployment flags. Flags given with --config override the file.

  --serve "vllm serve MODEL -tp 8 --enable-expert-parallel ..." reads a vLLM command line
  instead, with the flags of the release the answer is for (--package vllm==X, --environment or
  --probe; 0.29.0-0.34.0): model, TP/DP/EP, all2all, EPLB, LoRA, --moe-backend, --quantization,
  --dtype, ...; flags that do not affect MoE selection are ignored with a note.

environment:
  Without --probe the environment is declared: packages you do not name are unknown, so
  predicates on them abstain and the Decision lists them as assumptions. --environment FILE
  reads `pip freeze`, `pip list --format=json`, `uv pip list` or `vllm collect-env` output
  (collect-env also names the GPU). --package NAME==VER (or NAME @ URL) declares an installed
  package (a bare NAME: installed, version unknown, so the checks on it abstain as if it were
  undeclared), --without NAME an absent one, --env VAR=VALUE an environment variable, parsed as
  the answer's vLLM release parses it (VLLM_USE_DEEP_GEMM=true makes vLLM fail at start: exit 2).
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
"""


def capability(text: str) -> int:
    """argparse type of ``--sm``: major*10+minor as one integer; the spellings other tools print
    (``9.0`` from torch, ``sm_90`` from nvcc) are refused with the one taken here."""
    try:
        return int(text)
    except ValueError:
        match = re.fullmatch(r"\s*(?:sm_?)?(\d+)(?:\.(\d))?\s*", text, re.IGNORECASE | re.ASCII)
        hint = ""
        if match:
            major, minor = match.groups()
            hint = f": write {int(major) * 10 + int(minor) if minor is not None else int(major)}"
        raise argparse.ArgumentTypeError(f"expected the compute capability as one integer, major*10+minor (90 for SM 9.0), got {text!r}{hint}") from None


def positive_int(text: str) -> int:
    """argparse type: an integer >= 1 (argparse reports the flag, the value and exits 2)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {text!r}") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an integer >= 1, got {value}")
    return value


class Once(argparse.Action):
    """Store a flag's value; a second occurrence is an error (as a repeated ``--package NAME`` is),
    never a silent "the last one wins"."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        before = getattr(namespace, self.dest, None)
        if before is not None:
            raise argparse.ArgumentError(self, f"given more than once ({before!r}, then {values!r}): give it once")
        setattr(namespace, self.dest, values)


class LastWins(argparse.Action):
    """Store a flag's value; a later occurrence replaces it, said on stderr (``why-not``'s fixes
    are flags appended to the command, ``--gpu B200`` after ``--gpu H200``, so a repeat is allowed
    here, never silent)."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace, values: Any, option_string: str | None = None) -> None:
        before = getattr(namespace, self.dest, None)
        if before is not None and before != values:
            repeated = list(getattr(namespace, "repeated_flags", None) or [])
            repeated.append(f"{option_string} given more than once: the last ({values!r}) is used, not {before!r}")
            setattr(namespace, "repeated_flags", repeated)
        setattr(namespace, self.dest, values)


def name_arg(text: str) -> str:
    """argparse type: a non-empty name."""
    if not text.strip():
        raise argparse.ArgumentTypeError(f"expected a non-empty name, got {text!r}")
    return text


def comma_list(allowed: str) -> Callable[[str], str]:
    """argparse type of a repeatable ``NAME[,NAME]`` flag: the value as given, once every
    comma-separated item is non-empty (``--gpu ,`` and ``--keep ""`` selected nothing and were
    silently ignored); ``allowed`` says what the items may be (argparse names the flag and exits 2).

    >>> comma_list("a, b")("a,b")
    'a,b'
    >>> comma_list("a, b")("a,")
    Traceback (most recent call last):
    argparse.ArgumentTypeError: empty item in 'a,': expected NAME[,NAME] with no empty item; allowed: a, b
    """

    def items(text: str) -> str:
        if not all(item.strip() for item in text.split(",")):
            raise argparse.ArgumentTypeError(f"empty item in {text!r}: expected NAME[,NAME] with no empty item; allowed: {allowed}")
        return text

    return items


def gpu_help() -> str:
    from ..inputs.hardware import GPU_CATALOG

    return "hardware catalog name: " + ", ".join(GPU_CATALOG) + " (moe-oracle examples describes them)"


def add_input_args(p: argparse.ArgumentParser, *, whole_model: bool = False) -> None:
    """The shared input flags. ``whole_model`` (``plan``): ``--config`` and ``--quant`` describe
    one layer and are always refused there, naming ``explain``; they are parsed for that message
    but left out of ``--help``."""
    src = p.add_argument_group("layer")
    src.add_argument("--config", action=Once, metavar="FILE", help=argparse.SUPPRESS if whole_model else "MoEConfig YAML/JSON file; - reads it from standard input (./- names a file called -)")
    src.add_argument("--model", action=Once, type=name_arg, metavar="CONFIG_JSON", help="a Hugging Face config.json or checkpoint directory, a shipped example's name, or the Hugging Face id that names one (nothing is downloaded)")
    src.add_argument("--serve", action=Once, type=name_arg, metavar="'vllm serve MODEL ...'", help="a vllm serve command line (one quoted string): model and deployment flags as the answer's vLLM release (--package vllm==X, --environment, --probe) reads them")
    src.add_argument("--hf-quant-config", action=Once, metavar="FILE", help="hf_quant_config.json, or a config.json carrying quantization_config, or a shipped example's name (overrides the model's quantization_config)")
    src.add_argument("--quant", action=LastWins, type=name_arg, metavar="NAME", help=argparse.SUPPRESS if whole_model else "override the quant scheme (e.g. fp8_block, nvfp4, mxfp4_mxfp8, or a reference alias like FP8-Blk; case and -/_ ignored); a note says when it replaces the checkpoint's quantization or --hf-quant-config's")
    dev = p.add_argument_group("device")
    dev.add_argument("--gpu", action=LastWins, type=name_arg, metavar="NAME", help=gpu_help())
    dev.add_argument("--platform", action=Once, choices=["cuda", "rocm", "cpu", "xpu", "tpu"], help="platform, when no --gpu")
    dev.add_argument("--sm", action=Once, type=capability, metavar="N", help="CUDA compute capability as major*10+minor (90 = SM 9.0), with --platform cuda")
    dev.add_argument("--arch", action=Once, metavar="ARCH", help="ROCm gfx target (gfx942), XPU generation (xe2) or CPU arch (x86_64)")
    dep = p.add_argument_group("deployment")
    dep.add_argument("--tp", action=LastWins, type=int, metavar="N", help="tensor-parallel size")
    dep.add_argument("--dp", action=LastWins, type=int, metavar="N", help="data-parallel size")
    dep.add_argument("--pcp", action=LastWins, type=int, metavar="N", help="prefill-context-parallel size (vLLM -pcp); the MoE layer counts it as it counts DP: it joins the EP group")
    dep.add_argument("--ep", action=argparse.BooleanOptionalAction, default=None, help="enable expert parallelism")
    dep.add_argument("--all2all", action=LastWins, metavar="NAME", help="all2all backend (deepep_low_latency, deepep_high_throughput, allgather_reducescatter, ...)")
    dep.add_argument("--expert-placement", action=LastWins, choices=list(EXPERT_PLACEMENTS), help="EP expert placement requested (vLLM --expert-placement-strategy; default: the --serve line's, else linear); vLLM falls back to linear where a layer cannot use round_robin; MoonEP (0.31.0+) refuses any but linear requested, MoE LoRA under EP (0.34.0) and the FlashInfer MoE-EP kernels (0.32.0+) a round_robin the layer keeps")
    dep.add_argument("--eplb", action=argparse.BooleanOptionalAction, default=None, help="enable the expert-parallel load balancer")
    dep.add_argument("--redundant-experts", action=LastWins, type=int, metavar="N", help="redundant experts per EP group (EPLB)")
    dep.add_argument("--moe-backend", action=LastWins, type=name_arg, metavar="NAME", help="request a backend (strict: no fallback); 'auto' = priority order")
    dep.add_argument("--lora", action=argparse.BooleanOptionalAction, default=None, help="LoRA adapters on the experts")
    dep.add_argument("--batch-invariant", action=argparse.BooleanOptionalAction, default=None, help="require batch-invariant kernels")
    dep.add_argument("--max-tokens", action=Once, type=positive_int, metavar="N", help="largest number of tokens per call")
    env = p.add_argument_group("environment")
    env.add_argument("--environment", action=Once, metavar="FILE", help="read installed packages (and, from vllm collect-env, the GPU and env vars) from pip freeze / pip list --format=json / uv pip list / vllm collect-env output; --gpu/--platform (or a --config file's device) win over the file's GPU, with a note")
    env.add_argument("--package", action="append", default=[], metavar="NAME==VERSION", help="declare an installed package (repeatable; NAME @ URL and local versions such as +cu130 accepted). A bare NAME, as why-not's fixes write it, declares it installed at an unknown version: the checks on it abstain as for an undeclared package (listed as assumptions, with a note)")
    env.add_argument("--without", action="append", default=[], metavar="NAME", help="declare a package absent (repeatable)")
    env.add_argument("--env", action="append", default=[], metavar="VAR=VALUE", help="declare an environment variable (repeatable)")
    env.add_argument("--tool", action="append", default=[], metavar="NAME[=yes|no]", help="declare a host tool found or not (repeatable): nvcc (on PATH; also the nvcc FlashInfer's JIT runs unless jit_nvcc is declared), jit_nvcc, ninja. Without flashinfer-cubin, vLLM's FlashInfer kernels need them (unknown: assumed found)")
    env.add_argument("--probe", action="store_true", help="probe this interpreter's packages and this process's env vars (and the device, without --gpu); says which interpreter and site-packages it read")
    p.add_argument("--policy", choices=["faithful", "safe"], default="faithful", help="faithful (default): what vLLM does, known bugs included, with warnings; safe: reject known-bad kernels and unchecked early returns")
    p.add_argument("--tables", action=Once, metavar="DIR", help="use the tables under DIR (kernels/, prepare_finalize/, rules/) instead of the shipped ones")
    p.add_argument("--json", action="store_true", help="print the machine-readable record")


def add_view_arg(p: argparse.ArgumentParser) -> None:
    p.add_argument("--view", choices=["engine", "runtime"], default="engine", help="engine (default): what vLLM runs; runtime: what this package's runtime can build (moe-oracle run)")


def load_tables(tables: str | None, view: str = "engine") -> Any:
    """The catalog a command reads: the shipped tables' view, or the tables under ``tables``.

    Raises:
        ConfigError: ``tables`` is no directory (missing, a file), said once for ``--tables``.
        TableError: the tables under ``tables`` do not load.
    """
    from ..core.loading import load_catalog, load_runtime_catalog
    from ..core.oracle import catalog_for_view

    if tables is None:
        return catalog_for_view(view)
    root = user_directory(tables, "--tables")
    engine = load_catalog([root / "kernels", root / "prepare_finalize", root / "rules"])
    return load_runtime_catalog(engine) if view == "runtime" else engine


def print_json(obj: Any) -> None:
    """Print ``obj`` as indented JSON (values JSON does not know as their ``str``)."""
    print(json.dumps(obj, indent=2, default=str))


def read_stdin_config(args: argparse.Namespace, stdin: Any = None) -> None:
    """``--config -``: read the document from standard input once (at most ``MAX_TABLE_BYTES + 1``
    bytes, so the size check refuses a larger one as it refuses a file's) into ``args.config_data``,
    which :func:`operator_inputs` carries to the reader that validates a file's bytes.

    Raises:
        ConfigError: standard input cannot be read (closed, a directory).
    """
    if getattr(args, "config", None) != "-":
        return
    import sys

    from ..core.errors import ConfigError, InputIssue
    from ..core.tables import MAX_TABLE_BYTES

    stream = stdin if stdin is not None else sys.stdin
    try:
        if stream is None:  # the process was started with standard input closed
            raise OSError("standard input is closed")
        args.config_data = stream.buffer.read(MAX_TABLE_BYTES + 1)
    except (OSError, ValueError) as exc:  # ValueError: a closed stream
        raise ConfigError([InputIssue("--config", f"- reads the config from standard input, which cannot be read: {exc}; give a FILE", "-", None)], headline="bad --config") from None


def operator_inputs(args: argparse.Namespace, **changes: Any) -> OperatorInputs:
    """The operator's inputs from parsed flags: every :class:`OperatorInputs` field the command has
    a flag for (a command without a flag keeps the field's default), then ``changes``."""
    values = {name: getattr(args, name) for name in OperatorInputs.field_names() if hasattr(args, name)}
    for name in ("package", "without", "env", "tool"):
        if name in values:
            values[name] = tuple(values[name])
    values.update(changes)
    return OperatorInputs(**values)


def release_warnings(catalog: Any, sides: "list[tuple[str | None, Any]]") -> list[str]:
    """The engine-release warnings of each answer (an unmodelled release, one registered
    ``verified: false``, a pinned package newer than the tables know), as ``select``, ``explain``
    and ``plan`` show them; ``sides``: (label or ``None``, the answer's Environment). A warning
    that every side shares is given once, without a label."""
    from ..inputs.declared import engine_release

    per_side = []
    for label, env in sides:
        release = engine_release(catalog, env)
        per_side.append((label, release.warnings if release is not None else ()))
    shared = set.intersection(*(set(w) for _, w in per_side)) if per_side else set()
    out: list[str] = []
    for label, warnings in per_side:
        for w in warnings:
            text = w if (w in shared or label is None) else f"{label}: {w}"
            if text not in out:
                out.append(text)
    return out
