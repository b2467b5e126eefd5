"""``moe-oracle lint``: schema and semantic checks of the tables."""

from __future__ import annotations

import argparse
from typing import Any

from .common import EXIT_BAD_INPUT, EXIT_CODES_LINT, EXIT_NONE, EXIT_OK, load_tables, print_json

__all__ = ["add_parser", "run"]


def add_parser(sub: Any, filled: Any) -> None:
    """Register ``lint`` (its arguments when ``filled("lint")``)."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("lint", help="schema and semantic checks of the tables", description="Validate the tables against their schemas and check them semantically: unknown values, duplicate ids, rules naming unknown backends, candidates that can never win, rules that never fire. The searches for kernels that never win make it the one slow command: about 5 s of CPU on the shipped tables.", epilog=EXIT_CODES_LINT, formatter_class=fmt)
    if filled("lint"):
        p.add_argument("--tables", metavar="DIR", help="tables directory (default: shipped)")
        p.add_argument("--json", action="store_true", help="print findings as JSON")
        p.add_argument("--strict", action="store_true", help="exit 1 on warnings too")
        p.add_argument("--drift", action=argparse.BooleanOptionalAction, default=None, help="compare the FlashInfer kernels' SM sets with the installed flashinfer-python (default: when it imports; --drift makes a missing flashinfer an error)")


def run(args: argparse.Namespace) -> int:
    """Run ``lint``; returns the exit code (1 on errors, or on warnings with ``--strict``)."""
    from ..core.errors import ConfigError, TableError
    from ..tools.lint import lint

    try:
        catalog = load_tables(args.tables)
    except (ConfigError, TableError) as exc:  # ConfigError: --tables names no directory
        if args.json:
            print_json({"ok": False, "errors": [i.to_dict() for i in exc.issues], "findings": []})
        else:
            print(str(exc))
        return EXIT_BAD_INPUT
    findings = lint(catalog, drift=args.drift)
    errors = [f for f in findings if f.severity == "error"]
    warnings = [f for f in findings if f.severity == "warning"]
    if args.json:
        print_json({"ok": not errors, "errors": [], "findings": [f.to_dict() for f in findings]})
    else:
        print(f"tables {catalog.tables_hash}: {len(catalog.experts)} experts kernels, {len(catalog.prepare_finalize)} prepare/finalize, {len(catalog.orders)} priority orders; schema OK")
        for f in findings:
            print(f.format())
        print(f"{len(errors)} error(s), {len(warnings)} warning(s), {len(findings) - len(errors) - len(warnings)} note(s)")
    if errors or (args.strict and warnings):
        return EXIT_NONE
    return EXIT_OK
