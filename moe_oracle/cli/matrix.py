"""``moe-oracle matrix``: the support matrix, generated from the tables."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from ..inputs.paths import user_path
from .common import EXIT_CODES_ALWAYS, EXIT_OK, comma_list, positive_int

__all__ = ["add_parser", "run"]


def add_parser(sub: Any, filled: Any) -> None:
    """Register ``matrix`` (its arguments when ``filled("matrix")``)."""
    fmt = argparse.RawDescriptionHelpFormatter
    p = sub.add_parser("matrix", help="support matrix generated from the tables", description="Kernels x device x quant scheme, from the tables: a table that fits the terminal (default), Markdown (--markdown), or a self-contained HTML page (--html FILE).", epilog="example:\n  moe-oracle matrix --gpu H200,B200 --quant fp8_block --backend deep_gemm,triton\n\n" + EXIT_CODES_ALWAYS, formatter_class=fmt)
    if filled("matrix"):
        p.add_argument("--gpu", action="append", default=[], type=comma_list("hardware catalog or nvidia-smi names (moe-oracle examples lists them)"), metavar="NAME[,NAME]", help="device columns, one per name (hardware catalog or nvidia-smi names; repeatable)")
        p.add_argument("--quant", action="append", default=[], type=comma_list("quant scheme names (fp8_block, nvfp4, ...)"), metavar="SCHEME[,SCHEME]", help="only these quant schemes (repeatable)")
        p.add_argument("--backend", action="append", default=[], type=comma_list("backend ids or --moe-backend names"), metavar="NAME[,NAME]", help="only these backends (ids or --moe-backend names; repeatable)")
        out = p.add_mutually_exclusive_group()
        out.add_argument("--markdown", action="store_true", help="print the Markdown page (a cell lists the schemes a kernel runs on that device)")
        out.add_argument("--html", metavar="FILE", help="write a static HTML page")
        p.add_argument("--width", type=positive_int, metavar="COLUMNS", help="text table width (default: the terminal's, 100 when not a terminal)")
        p.add_argument("--tables", metavar="DIR", help="tables directory (default: shipped)")


def run(args: argparse.Namespace, catalog: Any) -> int:
    """Run ``matrix``; returns the exit code."""
    import shutil

    from ..explain.matrix import matrix_view, render_html, render_markdown, render_text

    view = matrix_view(catalog, tuple(args.gpu), tuple(args.quant), tuple(args.backend))
    if args.html:
        from ..core.errors import ConfigError, InputIssue

        try:
            user_path(args.html).write_text(render_html(catalog, view), encoding="utf-8")
        except (OSError, ValueError) as exc:  # ValueError: a NUL or unencodable character in the path
            raise ConfigError([InputIssue("--html", f"cannot write: {getattr(exc, 'strerror', None) or exc}", args.html, None)], headline="cannot write --html") from None
        print(f"wrote {args.html}", file=sys.stderr)
    elif args.markdown:
        print(render_markdown(catalog, view))
    else:
        width = args.width or (shutil.get_terminal_size((100, 24)).columns if sys.stdout.isatty() else 100)
        print(render_text(catalog, view, width=width), end="")
    return EXIT_OK
