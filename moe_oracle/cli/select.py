"""``moe-oracle explain`` and ``moe-oracle select``: which kernel one MoE layer gets, and why."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from typing import Any

from ..core.errors import ConfigError, InputIssue
from .common import EPILOG_INPUT, EXIT_CODES_SELECT, EXIT_NONE, EXIT_OK, add_input_args, add_view_arg, operator_inputs, print_json

__all__ = ["add_parsers", "dead_end_fixes", "decide", "run"]


def add_parsers(sub: Any, filled: Any) -> None:
    """Register ``explain`` and ``select`` (their arguments when ``filled(name)``)."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("explain", help="the ordered candidates with status and every reason", description="Explain which MoE kernel would run and why every other candidate lost.", epilog=EPILOG_INPUT + "\nexample:\n  moe-oracle explain --model deepseek-r1 --gpu B200 --dp 8 --ep --all2all deepep_low_latency\n\n" + EXIT_CODES_SELECT, formatter_class=fmt)
    if filled("explain"):
        add_input_args(p)
        add_view_arg(p)
        p.add_argument("--all", action="store_true", help="also list candidates rejected only for quant/platform/request reasons")
    p = sub.add_parser("select", help="the winner in one line", description="Print the selected experts kernel and prepare/finalize in one line; when nothing is eligible, what blocks and the ranked fixes in a few lines.", epilog=EPILOG_INPUT + "\nexample:\n  moe-oracle select --model qwen3-30b-a3b --gpu H200 --tp 2\n\n" + EXIT_CODES_SELECT, formatter_class=fmt)
    if filled("select"):
        add_input_args(p)
        add_view_arg(p)
        p.add_argument("--full", action="store_true", help="with --json (refused without it): the whole Decision record (as explain --json) instead of the compact one")


def decide(args: argparse.Namespace, catalog: Any) -> tuple[Any, Any]:
    """(decision, fixes): the selection with the input notes attached, and for a dead end the
    ranked fixes (why-not for any kernel, or for the requested backend; ``None`` otherwise).

    Raises:
        ConfigError: bad input, or a deployment vLLM refuses at start (``--eplb`` without ``--ep``).
    """
    from ..core.engine import evaluate
    from ..core.errors import ConfigError
    from ..inputs.deployment import build_deployment, merged_notes

    deployment = build_deployment(operator_inputs(args), catalog)
    issues = deployment.refusals()
    if issues:
        raise ConfigError(issues)
    config, env = deployment.config, deployment.environment
    decision = evaluate(catalog, config, env, policy=args.policy)
    if deployment.notes:
        decision = replace(decision, notes=merged_notes(decision.notes, deployment.notes))
    found = dead_end_fixes(deployment, decision, catalog, args.policy) if decision.winner is None else None
    return decision, found


def dead_end_fixes(deployment: Any, decision: Any, catalog: Any, policy: Any, *, keep_device: bool = False) -> Any:
    """The ranked fixes of a dead end (``decision`` has no winner): why-not for any kernel, or for
    the requested backend, from ``deployment``'s inputs, keeping only edits the engine would start
    with. ``explain``/``select`` and ``run`` print them the same way (:func:`render_explain`).
    ``keep_device`` (``run``, which runs on this machine and refuses ``--gpu``): the search keeps
    the device too, so it offers only fixes that can be taken here."""
    from ..explain.whynot import fixes as find_fixes  # a dead end only: the search is not imported for an answer
    from ..explain.whynot_edits import DEFAULT_KEEP
    from ..inputs.admissible import start_refusal

    keep = DEFAULT_KEEP | {"device"} if keep_device else DEFAULT_KEEP
    return find_fixes(catalog, deployment.config, deployment.environment, keep=keep, backends=decision.requested, policy=policy, admissible=start_refusal(deployment, catalog))


def per_candidate_sm(args: argparse.Namespace, catalog: Any) -> list[tuple[int, str]]:
    """With ``--platform cuda`` and no ``--sm`` (no ``--gpu``, ``--config``, ``--environment`` or
    ``--probe`` naming the device): ``(sm, winner)`` per CUDA capability the tables and the
    hardware catalog know (:data:`~moe_oracle.core.fields.CUDA_CAPABILITIES`, the values ``--sm``
    takes) when the winners differ, else ``[]``. A capability whose inputs are refused is left
    out (:func:`sm_note` names it)."""
    from ..core.engine import evaluate
    from ..core.fields import CUDA_CAPABILITIES
    from ..inputs.deployment import build_deployment

    if args.platform != "cuda" or args.sm is not None or args.gpu or args.config or args.probe or args.environment:
        return []
    out = []
    for sm in CUDA_CAPABILITIES:
        try:
            dep = build_deployment(operator_inputs(args, sm=sm), catalog)
        except ConfigError:
            continue
        if dep.refusals():
            continue
        d = evaluate(catalog, dep.config, dep.environment, policy=args.policy)
        out.append((sm, d.kernel or "nothing eligible"))
    return out if len({w for _, w in out}) > 1 else []


def sm_note(per_sm: list[tuple[int, str]], known: tuple[int, ...]) -> str:
    """The ``--platform cuda`` note: each winner once, with the capabilities it wins on, in
    ``known``'s order, then the known capabilities left out (their inputs are refused).

    >>> sm_note([(80, "marlin"), (90, "triton"), (100, "trtllm"), (103, "trtllm")], (70, 80, 90, 100, 103))
    '--platform cuda without --sm: the answer depends on the compute capability: marlin on SM 8.0 (--sm 80); triton on SM 9.0 (--sm 90); trtllm on SM 10.0, 10.3 (--sm 100, 103); these inputs refused on SM 7.0 (--sm 70)'
    """
    by_winner: dict[str, list[int]] = {}
    for sm, winner in per_sm:
        by_winner.setdefault(winner, []).append(sm)
    groups = [*by_winner.items()]
    answered = {sm for sm, _ in per_sm}
    refused = [sm for sm in known if sm not in answered]
    if refused:
        groups.append(("these inputs refused", refused))
    return "--platform cuda without --sm: the answer depends on the compute capability: " + "; ".join(
        f"{winner} on SM {', '.join(f'{sm // 10}.{sm % 10}' for sm in sms)} (--sm {', '.join(str(sm) for sm in sms)})" for winner, sms in groups)


# How a note about the model's checkpoint is labelled: by the input that named it.
_MODEL_LABELS = ("--model: ", "--serve MODEL: ")


def _unlabelled(note: str) -> str:
    """``note`` without the model input's label (select's one-line answer prints it bare)."""
    return next((note[len(label):] for label in _MODEL_LABELS if note.startswith(label)), note)


def run(args: argparse.Namespace, catalog: Any) -> int:
    """Run ``explain`` or ``select`` (``args.command``); returns the exit code."""
    from ..core.render import actionable_notes, compact_dict, render_dead_end, render_explain

    if getattr(args, "full", False) and not args.json:
        # A setting with no effect is an error: --full picks select --json's record.
        raise ConfigError([InputIssue("--full", "has an effect only with --json (the whole Decision record instead of the compact one); add --json, or use explain for every candidate in text", None, ["--json"])], headline="bad --full")
    decision, found = decide(args, catalog)
    per_sm = per_candidate_sm(args, catalog)
    if per_sm:
        from ..core.fields import CUDA_CAPABILITIES

        line = sm_note(per_sm, CUDA_CAPABILITIES)
        decision = replace(decision, notes=(*decision.notes, line))
        if args.command == "select" and not args.json:  # explain prints it among its notes
            print(f"note: {line}", file=sys.stderr)
    if args.json:
        print_json(compact_dict(decision, found) if args.command == "select" and not args.full else decision.to_dict())
    elif args.command == "select":
        if decision.winner is None:
            print(render_dead_end(decision, found, command="explain", serve=bool(args.serve)))
        else:
            print(decision.select_line())
            for warning in decision.warnings:
                print(f"warning: {warning.message}", file=sys.stderr)
            shown = actionable_notes(decision.notes)
            for note in decision.notes:  # the one-layer answer is not the whole model's (see plan)
                if note not in shown and note.startswith(_MODEL_LABELS) and ("moe-oracle plan" in note or "does not model" in note or "does not register" in note or "--hf-quant-config replaces" in note
                                                                   or "without model_type" in note):
                    shown.append(note)
                elif note.startswith("--all2all mori"):  # which MoRI EP and why (the one line names the P/F only), or a deprecated MoRI name
                    shown.append(note)
                elif note.startswith("--quant ") and " replaces the " in note:  # the answer is for another checkpoint (or --quantization)
                    shown.append(note)
            for note in shown:
                print(f"note: {_unlabelled(note)}", file=sys.stderr)
    else:
        print(render_explain(decision, show_all=args.all, fixes=found, serve=bool(args.serve)))
    return EXIT_OK if decision.winner is not None else EXIT_NONE
