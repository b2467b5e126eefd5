"""``moe-oracle why-not``: the smallest, least disruptive changes that make a backend eligible."""

from __future__ import annotations

import argparse
from typing import Any

from .common import EPILOG_INPUT, EXIT_CODES_WHY_NOT, EXIT_NONE, EXIT_OK, add_input_args, add_view_arg, comma_list, name_arg, operator_inputs, positive_int, print_json, release_warnings

__all__ = ["add_parser", "run"]


def add_parser(sub: Any, filled: Any) -> None:
    """Register ``why-not`` (its arguments when ``filled("why-not")``)."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("why-not", help="smallest change that makes a backend eligible", description="Search the smallest, least disruptive changes to the config or environment that make BACKEND eligible (a flag before a redeployment, a redeployment before other hardware).", epilog=EPILOG_INPUT + "\nexamples:\n  moe-oracle why-not --backend flashinfer_trtllm --model deepseek-r1 --gpu H200 --tp 8        (another GPU)\n  moe-oracle why-not --backend flashinfer_trtllm --model deepseek-r1 --gpu H200 --tp 8 --keep device   (none without one: what blocks)\n\n" + EXIT_CODES_WHY_NOT, formatter_class=fmt)
    if filled("why-not"):
        from ..explain.whynot_edits import CATEGORIES

        p.add_argument("--backend", required=True, type=name_arg, metavar="NAME", help="backend id or moe_backend alias")
        p.add_argument("--alternatives", type=positive_int, default=3, metavar="N", help="show up to N ranked alternatives (default 3; equal costs are marked as ties)")
        p.add_argument("--keep", action="append", default=[], type=comma_list(", ".join(CATEGORIES)), metavar="CATEGORY[,CATEGORY]", help="inputs that must not change, besides the model (always kept): device, parallel, quant, packages, env, flags; repeat or comma-separate")
        add_input_args(p)
        add_view_arg(p)


def run(args: argparse.Namespace, catalog: Any) -> int:
    """Run ``why-not``; returns the exit code (0 found or already eligible, 1 nothing found:
    :data:`~.common.EXIT_CODES_WHY_NOT`)."""
    from ..core.errors import ConfigError
    from ..core.oracle import Oracle
    from ..explain.whynot import why_not
    from ..inputs.declared import engine_release
    from ..inputs.admissible import start_refusal
    from ..inputs.deployment import build_deployment

    deployment = build_deployment(operator_inputs(args), catalog)
    config, env, notes = deployment.config, deployment.environment, deployment.notes
    issues = deployment.refusals()
    if issues:
        raise ConfigError(issues)
    keep = [k.strip() for part in args.keep for k in part.split(",") if k.strip()]
    # The model itself is always kept on the command line: an operator cannot change its activation.
    result = why_not(Oracle(catalog, env, policy=args.policy), config, args.backend, n=args.alternatives, keep={*keep, "model"}, admissible=start_refusal(deployment, catalog))
    warnings = release_warnings(catalog, [(None, env)])
    release = engine_release(catalog, env)
    if args.json:
        print_json({**result.to_dict(), "engine": release.to_dict() if release is not None else None, "notes": list(notes), "warnings": warnings})
    else:
        # The release line explain prints: which vLLM the fixes are for, and how it was known.
        print(f"Answer for: {release.label() if release is not None else 'engine release unknown'}; {args.view} view, {args.policy} policy")
        for warning in warnings:
            print(f"WARNING: {warning}")
        for note in notes:
            print(f"Note: {note}")
        text = result.render_text(serve=bool(args.serve))
        if not result.found and result.blocking:
            from ..core.engine import evaluate

            text = with_why_lines(text, evaluate(catalog, config, env, policy=args.policy))
        print(text)
    return EXIT_OK if (result.found or result.already_eligible) else EXIT_NONE


def with_why_lines(text: str, decision: Any) -> str:
    """``text`` with a ``why:`` line (the check's hint and source, as ``select``'s dead end gives
    it) under each blocking line ``  - code: field [rule]``, from ``decision`` (the deployment as
    given, before any edit)."""
    why = {}
    for c in decision.candidates:
        for f in c.failures:
            if f.hint and f.rule not in why:
                why[f.rule] = f"{f.hint} ({f.reference})" if f.reference else f.hint
    out = []
    for line in text.splitlines():
        out.append(line)
        if line.startswith("  - ") and line.endswith("]"):
            rule = line.rsplit("[", 1)[-1][:-1]
            if rule in why:
                out.append(f"      why: {why[rule]}")
    return "\n".join(out)
