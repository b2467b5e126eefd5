"""No command-line parser of moe-oracle reads a prefix of a flag as the flag (``allow_abbrev``).

Before, ``plan --model deepseek-r1 --gpu H200 --all`` answered "argument --all2all: expected one
argument" (plan has no ``--all``; argparse took it for ``--all2all``), and ``plan ... --all mori``
silently set the all2all backend. The harness's scripts take whole flags too.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

import pytest

from moe_oracle.cli import build_parser
from tests.cli_capture import cli

MODEL = ("--model", "deepseek-r1", "--gpu", "H200")
_PACKAGE = Path(__file__).resolve().parents[2] / "moe_oracle"


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices


def test_every_parser_and_subparser_refuses_abbreviations() -> None:
    parser = build_parser()
    assert parser.allow_abbrev is False
    subs = _subparsers(parser)
    assert {"explain", "select", "why-not", "plan", "diff", "run", "lint", "verify", "matrix"} <= set(subs)
    assert {name: p.allow_abbrev for name, p in subs.items()} == {name: False for name in subs}


@pytest.mark.parametrize("extra", [("--all",), ("--all", "mori")], ids=["bare", "with-value"])
def test_plan_refuses_all_as_an_unknown_flag(extra: tuple[str, ...]) -> None:
    code, out, err = cli("plan", *MODEL, *extra)
    assert code == 2 and out == ""
    assert f"unrecognized arguments: {' '.join(extra)}" in err and "--all2all" not in err


@pytest.mark.parametrize(
    "argv",
    [("explain", *MODEL), ("select", *MODEL), ("why-not", "--backend", "triton", *MODEL), ("plan", *MODEL), ("diff", *MODEL, "--from", "vllm==0.33.0", "--to", "vllm==0.34.0"), ("run", *MODEL)],
    ids=["explain", "select", "why-not", "plan", "diff", "run"],
)
def test_all2all_is_read_whole_everywhere_and_a_prefix_of_a_flag_is_unknown(argv: tuple[str, ...]) -> None:
    parser = build_parser([argv[0]])
    args, extras = parser.parse_known_args([*argv, "--all2all", "deepep_low_latency"])
    assert args.all2all == "deepep_low_latency" and extras == []
    _, extras = parser.parse_known_args([*("--mod" if a == "--model" else a for a in argv), "--config", "x.yaml"])
    assert extras == ["--mod", "deepseek-r1"]  # not --model


def test_the_harness_scripts_refuse_abbreviations_too() -> None:
    """Every ``argparse.ArgumentParser(...)`` of the package passes ``allow_abbrev=False``, except
    the serve line's, which reads a vLLM command line as vLLM's argparse does (abbreviations on)."""
    missing = []
    for path in sorted(_PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Call) and ast.unparse(node.func) in ("argparse.ArgumentParser", "ArgumentParser", "_Parser"):
                kw = {k.arg: ast.unparse(k.value) for k in node.keywords}
                if kw.get("allow_abbrev") != ("True" if path.name == "serve_argv.py" else "False"):
                    missing.append(f"{path.relative_to(_PACKAGE)}:{node.lineno}")
    assert missing == []
