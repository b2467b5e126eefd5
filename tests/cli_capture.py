"""Run ``moe-oracle`` in-process and capture what it prints (the operator-trial tests share it)."""

from __future__ import annotations

import contextlib
import io

from moe_oracle.cli import main

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
