"""``moe-oracle run``: build and run the selected kernel on this machine with random weights."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from .common import EPILOG_INPUT, EXIT_CODES_RUN, EXIT_NONE, EXIT_OK, add_input_args, operator_inputs, positive_int, print_json

__all__ = ["add_parser", "run"]


def add_parser(sub: Any, filled: Any) -> None:
    """Register ``run`` (its arguments when ``filled("run")``)."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("run", help="build and run the selected kernel with random weights (needs torch)", description="Select among what this package's runtime can build (the runtime view), build and run the kernel for the model's real dimensions with random weights; compare with the plain-torch reference and report time, TFLOP/s, GB/s and max error.", epilog=EPILOG_INPUT + "\nThe device defaults to this machine (--probe is implied).\nexample:\n  moe-oracle run --model qwen3-30b-a3b --tokens 64\n\n" + EXIT_CODES_RUN, formatter_class=fmt)
    if filled("run"):
        add_input_args(p)
        p.add_argument("--tokens", type=positive_int, metavar="N", help=f"tokens per call (default {DEFAULT_TOKENS})")
        p.add_argument("--layers", type=positive_int, default=1, metavar="K", help="layers to run (default 1)")
        p.add_argument("--max-experts", type=positive_int, metavar="N", help="allocate and route among at most N experts to fit in memory (top-k is capped to N; hidden and intermediate sizes stay real)")
        p.add_argument("--all", action="store_true", help="when nothing is eligible: list every candidate, as explain --all (default: the closest few)")
        p.add_argument("--seed", type=seed_int, default=0, metavar="N", help="seed of the random weights and inputs, a 64-bit signed integer (default 0)")


DEFAULT_TOKENS = 32
"""``--tokens`` when not given (``None`` in the namespace, so that a refusal can say it was the default)."""


def run_tokens(args: argparse.Namespace) -> int:
    """The tokens per call of a ``run``: ``--tokens``, else :data:`DEFAULT_TOKENS`."""
    return args.tokens if args.tokens is not None else DEFAULT_TOKENS


# torch.Generator.manual_seed takes [-2**63, 2**64 - 1]; the runner adds the layer index and
# 10_000 (inputs), so a signed 64-bit seed stays inside it.
_SEED_MIN, _SEED_MAX = -(2**63), 2**63 - 1


def seed_int(text: str) -> int:
    """argparse type of ``--seed``: an integer in [-2**63, 2**63 - 1] (torch's generator range,
    less the offsets the runner adds)."""
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer from {_SEED_MIN} to {_SEED_MAX}, got {text!r}") from None
    if not _SEED_MIN <= value <= _SEED_MAX:
        raise argparse.ArgumentTypeError(f"expected an integer from {_SEED_MIN} to {_SEED_MAX} (a 64-bit signed seed), got {value}")
    return value


RUN_LEFT_OUT = ("fixes that change the GPU: run builds the kernel on this machine's own device and takes no --gpu; "
                "moe-oracle explain --view runtime --gpu NAME with these flags considers other GPUs")
"""What ``run``'s dead end says after its fixes: the search kept the device
(:func:`moe_oracle.cli.select.dead_end_fixes` with ``keep_device``), since a fix such as
``--gpu H20`` is one ``run`` refuses."""


def run(args: argparse.Namespace, catalog: Any) -> int:
    """Run ``run``; returns the exit code (1: nothing eligible or the runtime cannot build it).

    Raises:
        MissingDependencyError: torch is not installed (exit code 3: the input is fine).
        ConfigError: bad input.
    """
    from ..core.engine import evaluate
    from ..core.errors import ConfigError, InputIssue, MissingDependencyError
    from ..core.render import render_explain
    from ..inputs.deployment import build_deployment, merged_notes
    from .select import dead_end_fixes

    try:
        from ..runtime.runner import run_layer
    except ImportError as exc:
        raise MissingDependencyError([InputIssue("run", f"the runtime needs torch: pip install 'moe-oracle[runtime]' ({exc})", None, None)], headline="moe-oracle run needs torch") from None
    if args.gpu or args.platform or args.sm or args.arch:
        raise ConfigError([InputIssue("--gpu", "run executes on this machine, whose device is probed; drop --gpu/--platform/--sm/--arch (explain or select describe other machines)", args.gpu or args.platform, None)])
    given = operator_inputs(args)
    if not given.probe and not given.declares_environment():
        given = replace(given, probe=True, probe_implied=True)  # a file's declared environment is then noted, not a conflict
    deployment = build_deployment(given, catalog, probe_device_default=True)
    config, env = deployment.config, deployment.environment
    issues = deployment.refusals()
    if issues:
        raise ConfigError(issues)
    decision = evaluate(catalog, config, env, policy=args.policy)
    if deployment.notes:
        decision = replace(decision, notes=merged_notes(decision.notes, deployment.notes))
    if decision.winner is None:
        if args.json:
            print_json({"decision": decision.to_dict(), "run": None})
        else:  # what explain prints for these inputs (what blocks, the ranked fixes, the closest candidates), but fixes run can take
            found = dead_end_fixes(deployment, decision, catalog, args.policy, keep_device=True)
            print(render_explain(decision, show_all=args.all, fixes=found, serve=bool(args.serve), left_out=RUN_LEFT_OUT))
        return EXIT_NONE
    _check_run_memory(config, args)
    if config.device.platform.value == "cpu" and not args.json:
        print(f"run: {run_cost(config, args)}", file=sys.stderr)
    from ..runtime.errors import AdapterContractError, AdapterImportError, CompositionError, UnsupportedConfigError

    try:
        # Progress bars only on a terminal: a log or a pipe gets the report alone.
        report = run_layer(config, decision, tokens=run_tokens(args), layers=args.layers, seed=args.seed, max_experts=args.max_experts, progress=not args.json and sys.stderr.isatty())
    except (AdapterImportError, AdapterContractError, CompositionError, UnsupportedConfigError) as exc:
        sel = decision.selected
        ours = [b for b in ("torch_grouped_mm", "reference") if b in catalog.backend_names and (sel is None or b != sel.backend)]
        advice = "Run it inside its own engine" if sel is not None and catalog.experts_by_id(sel.kernel).provider != "moe_oracle" else "Its adapter refuses this layer"
        print(f"moe-oracle: selected {sel.kernel if sel else None} [{sel.backend if sel else ''}], which this runtime cannot build: {exc}\n"
              f"{advice}; or try another of ours with " + " or ".join(f"--moe-backend {b}" for b in ours) + ".", file=sys.stderr)
        return EXIT_NONE
    if args.json:
        print_json({"decision": decision.to_dict(), "run": report.to_dict()})
    else:
        print(report.describe())
    return EXIT_OK


# Weights drawn and built per second by `run` on CPU, measured on the 2-core CI machine under load
# (issue 24: Qwen3-30B-A3B, 128 experts x 3 x 768 x 2048 = 604 M weights, 16 tokens: 58 s, 3.4 GB).
_CPU_WEIGHTS_PER_S = 10e6


def _run_sizes(config: Any, args: argparse.Namespace) -> tuple[int, int, int, int, int]:
    """(experts allocated, w13 rows, weights per expert, bytes per stored weight, bytes of
    activations) of a ``run``: the float32 activations of the kernel and of the reference
    (tokens x top-k x (w13 rows + hidden), plus the input and router logits)."""
    experts = min(config.num_experts, args.max_experts or config.num_experts)
    rows = (2 if config.activation.is_gated else 1) * config.intermediate_size
    per_expert = (rows + config.intermediate_size) * config.hidden_size
    storage = 4 if config.in_dtype.value == "float32" else (1 if config.quant.weight is not None else 2)
    return experts, rows, per_expert, storage, run_tokens(args) * _activation_bytes_per_token(config, rows)


def _activation_bytes_per_token(config: Any, rows: int) -> int:
    return 2 * config.top_k * (rows + config.hidden_size) * 4 + (config.hidden_size + config.num_experts) * 4


def run_memory_bytes(config: Any, args: argparse.Namespace) -> tuple[int, int]:
    """(bytes ``run`` allocates, weights it draws): stored weights of every layer, the float32 w13
    random initialization draws first, and the float32 activations of kernel and reference."""
    experts, rows, per_expert, storage, activations = _run_sizes(config, args)
    return args.layers * experts * per_expert * storage + experts * rows * config.hidden_size * 4 + activations, args.layers * experts * per_expert


def run_cost(config: Any, args: argparse.Namespace) -> str:
    """What a CPU ``run`` will cost, said before it starts: memory, weights drawn, an estimate of
    the time (:data:`_CPU_WEIGHTS_PER_S`), and how to size it down (``--max-experts``)."""
    needed, weights = run_memory_bytes(config, args)
    seconds = weights / _CPU_WEIGHTS_PER_S
    experts = min(config.num_experts, args.max_experts or config.num_experts)
    smaller = max(1, min(experts, config.top_k * 2))
    hint = f"; --max-experts {smaller} runs it in about {seconds * smaller / experts:.0f} s" if seconds > 10 and smaller < experts else ""
    return f"on CPU this allocates about {needed / 2**30:.1f} GiB and draws {weights / 1e6:.0f} M random weights ({experts} experts x {args.layers} layer(s)): about {seconds:.0f} s at ~{_CPU_WEIGHTS_PER_S / 1e6:.0f} M weights/s{hint}"


def _check_run_memory(config: Any, args: argparse.Namespace) -> None:
    """Refuse a `run` whose weights cannot fit in this machine's memory, naming the fix.

    Too many experts is charged to ``--max-experts`` when the operator gave it, else to the
    layer's ``num_experts`` (the model's count, which ``--max-experts`` can cap).

    Raises:
        ConfigError: naming ``--tokens``, ``--layers``, ``--max-experts`` or the layer's
            ``num_experts``, the value and the largest that fits.
    """
    from ..core.errors import ConfigError, InputIssue

    experts, rows, per_expert, storage, activations = _run_sizes(config, args)
    needed, _ = run_memory_bytes(config, args)
    from ..runtime.runner import available_memory_bytes

    available = available_memory_bytes()
    if available is None or needed <= 0.6 * available:
        return
    if activations > 0.3 * available:
        tokens, fit = run_tokens(args), int(0.3 * available / _activation_bytes_per_token(config, rows))
        default = "" if args.tokens is not None else " (the default of --tokens)"
        advice = f"use --tokens {fit} or fewer" if fit >= 1 else "one token does not fit: this layer cannot run on this machine"
        raise ConfigError([InputIssue("--tokens", f"{tokens} tokens{default} need {activations / 2**30:.1f} GiB of activations and {available / 2**30:.1f} GiB is free; {advice}", tokens,
                                      {"maximum": fit} if fit >= 1 else None)])
    per = args.layers * per_expert * storage + rows * config.hidden_size * 4
    fit = int((0.6 * available - activations) / per)
    given = args.max_experts is not None
    if fit < 1:
        layers_fit = int((0.6 * available - activations - rows * config.hidden_size * 4) / (per_expert * storage))
        if args.layers > 1 and layers_fit >= 1:
            raise ConfigError([InputIssue("--layers", f"{args.layers} layers need {per / 2**30:.1f} GiB even with one expert each and {available / 2**30:.1f} GiB is free; use --layers {layers_fit} or fewer", args.layers, {"maximum": layers_fit})])
        if given:
            raise ConfigError([InputIssue("--max-experts", f"one expert of this layer needs {per / 2**30:.1f} GiB and {available / 2**30:.1f} GiB is free: it cannot run on this machine", args.max_experts, None)])
        raise ConfigError([InputIssue("$.num_experts", f"one expert of this layer needs {per / 2**30:.1f} GiB and {available / 2**30:.1f} GiB is free: it cannot run on this machine, even with --max-experts 1", config.num_experts, None)],
                          headline="the layer does not fit in this machine's memory")
    if given:
        raise ConfigError([InputIssue("--max-experts", f"the layer's weights need {needed / 2**30:.1f} GiB and {available / 2**30:.1f} GiB is free; cap the experts allocated, e.g. --max-experts {min(fit, config.num_experts)}", args.max_experts, {"maximum": fit})])
    raise ConfigError([InputIssue("$.num_experts", f"the model's {config.num_experts} experts need {needed / 2**30:.1f} GiB and {available / 2**30:.1f} GiB is free; allocate fewer with --max-experts {min(fit, config.num_experts)}",
                                  config.num_experts, {"maximum": fit})], headline="the layer does not fit in this machine's memory")
