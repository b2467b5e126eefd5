"""Run ``moe-oracle`` in-process and capture what it prints (the operator-trial tests share it)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

from moe_oracle.cli import main
from moe_oracle.inputs.models import examples_dir

__all__ = ["cli"]


def cli(*argv: str) -> tuple[int, str, str]:
    """(exit code, stdout, stderr) of ``moe-oracle *argv``; argparse's ``SystemExit`` is its code."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(list(argv))
        except SystemExit as exc:
            code = int(exc.code or 0)
    return code, out.getvalue(), err.getvalue()


def edited_example(tmp_path: Path, name: str = "deepseek-r1.json", **changes: object) -> str:
    """The path of a copy of the shipped example ``name`` (a config.json) with ``changes`` applied at its top level."""
    cfg = json.loads((examples_dir() / name).read_text(encoding="utf-8"))
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**cfg, **changes}), encoding="utf-8")
    return str(path)


def select_json(*argv: str) -> tuple[int, dict, str]:
    """``moe-oracle select ARGV --json``: exit code, the printed record ({} when none), stderr."""
    code, out, err = cli("select", *argv, "--json")
    return code, json.loads(out) if out.strip() else {}, err
