"""The ``moe-oracle`` command line: one module per subcommand (:mod:`.select` for ``explain`` and
``select``, :mod:`.why_not`, :mod:`.plan`, :mod:`.diff`, :mod:`.matrix`, :mod:`.lint`, :mod:`.run`,
:mod:`.info` for ``examples`` and ``codes``; ``verify`` is the harness's own), the flags they share
in :mod:`.common`. Every subcommand hands its flags to the one door
(:mod:`moe_oracle.inputs.deployment`) as :class:`~moe_oracle.inputs.operator_inputs.OperatorInputs`.

Exit codes: 0 selected (or the command succeeded), 1 the answer is no (nothing eligible, no change
found, a layer group without a kernel, lint findings), 2 bad input, 3 an optional dependency is
missing (``run`` without torch). Each subcommand's ``--help`` states its own (``common.EXIT_CODES_*``).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any, Collection, Sequence

from ..core._resources import PACKAGE_VERSION as __version__
from ..verify import cli as verify_cli
from . import diff, info, lint, matrix, plan, run, select, why_not
from .common import EXIT_BAD_INPUT, EXIT_MISSING_DEPENDENCY, EXIT_NONE, EXIT_OK, add_input_args, add_view_arg, load_tables, print_json, read_stdin_config

__all__ = ["EXIT_BAD_INPUT", "EXIT_MISSING_DEPENDENCY", "EXIT_NONE", "EXIT_OK", "JsonErrorParser", "Parser", "build_parser", "main"]

_TOP_EPILOG = """\
Describe the deployment the way you run it: a vllm serve line and the machine's packages
give the model, the parallel shape, the backend request and the engine release.

Try:
  moe-oracle explain --model deepseek-r1 --gpu H200 --tp 8
  moe-oracle explain --serve 'vllm serve Qwen/Qwen3-30B-A3B-FP8 -tp 2' --gpu H200 --package vllm==0.31.0
  moe-oracle why-not --backend deep_gemm --model deepseek-r1 --gpu H200 --tp 8
  moe-oracle codes                          (what every reason code means)

Every answer names the engine release it is for (--package vllm==X, --environment FILE with
pip freeze or collect_env output, or --probe; else the newest modelled release, assumed). --json on explain, select, why-not,
diff, plan, lint and run for machines.

exit codes: 0 a kernel was selected (or the command succeeded), 1 the answer is no (nothing
eligible, no change found, a layer group without a kernel, lint findings; the record is printed),
2 bad input (flags, config files, tables), 3 an optional dependency is missing (run without
torch). COMMAND --help states the codes of each command.
"""


class Parser(argparse.ArgumentParser):
    """argparse's parser without prefix abbreviations (``allow_abbrev=False``), for the top level
    and, as ``add_subparsers`` makes its parsers of the top parser's class, for every subcommand.

    With abbreviations, a prefix of one flag was read as that flag: ``plan --all`` (a flag of
    explain, select and run only) was ``--all2all`` and answered "expected one argument", and
    ``plan --all mori`` silently set the all2all backend. Now an unknown word is unknown.
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["allow_abbrev"] = False
        super().__init__(*args, **kwargs)


class JsonErrorParser(Parser):
    """:class:`Parser` for a command line with ``--json``: what argparse refuses (``--tp 1e3``,
    ``--max-tokens -5``, a missing ``--backend``, an unknown flag) prints the bad-input record
    (``schemas/error.schema.json``) on stdout, as every other bad input does, instead of usage on
    stderr; the exit code is still 2. Its subcommand parsers are of this class too
    (``add_subparsers`` makes them of the top parser's class).
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs["exit_on_error"] = False  # ArgumentError reaches parse_known_args, naming its flag
        super().__init__(*args, **kwargs)

    def parse_known_args(self, args: Any = None, namespace: Any = None) -> Any:  # type: ignore[override]
        try:
            return super().parse_known_args(args, namespace)
        except argparse.ArgumentError as err:
            self._refuse(err.argument_name, err.message)

    def error(self, message: str) -> Any:  # type: ignore[override]
        self._refuse(None, message)

    def _refuse(self, flag: str | None, message: str) -> Any:
        from ..core.errors import ConfigError, InputIssue

        issue = InputIssue(path=flag or self.prog, message=message, keyword="argparse")
        headline = None if flag else f"bad arguments of {self.prog}"
        try:
            print_json(ConfigError([issue], headline).naming_flags().to_dict())
        except BrokenPipeError:
            pass
        self.exit(EXIT_BAD_INPUT)


def build_parser(commands: Collection[str] | None = None, *, json_errors: bool = False) -> argparse.ArgumentParser:
    """The argparse tree (exposed for tests and docs).

    ``commands``: fill in the arguments of these subcommands only (``None``: of all of them).
    Every subcommand is registered either way, with its name, help, description and epilog, so
    the top-level help and every error message are the same; argparse reads the arguments of the
    one subcommand it runs, and nothing else. :func:`main` passes the words of its command line,
    one of which names that subcommand exactly (argparse matches a subcommand name exactly).
    ``json_errors``: argparse's refusals print the bad-input record (:class:`JsonErrorParser`).
    """

    def filled(name: str) -> bool:
        return commands is None or name in commands

    parser = (JsonErrorParser if json_errors else Parser)(
        prog="moe-oracle",
        description="Choose the fused MoE kernel for a model layer on a given machine, and say why.",
        epilog=_TOP_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"moe-oracle {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)

    select.add_parsers(sub, filled)
    why_not.add_parser(sub, filled)
    matrix.add_parser(sub, filled)
    lint.add_parser(sub, filled)
    run.add_parser(sub, filled)
    info.add_parsers(sub)
    diff.add_parser(sub, lambda q: (add_input_args(q), add_view_arg(q)), arguments=filled("diff"))
    verify_cli.add_parser(sub, arguments=filled("verify"))
    plan.add_plan_parser(sub, add_input_args, arguments=filled("plan"))
    return parser


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


# vLLM's own flags, which an operator types from habit: moe-oracle's flag for each (or --serve).
_VLLM_FLAGS = {
    "--tensor-parallel-size": "--tp", "-tp": "--tp", "--data-parallel-size": "--dp", "-dp": "--dp",
    "--enable-expert-parallel": "--ep", "-ep": "--ep", "--all2all-backend": "--all2all",
    "--enable-eplb": "--eplb", "--enable-lora": "--lora", "--max-num-batched-tokens": "--max-tokens", "--expert-placement-strategy": "--expert-placement",
    "--quantization": "--quant SCHEME (or -q inside --serve)", "-q": "--quant SCHEME (or -q inside --serve)",
}


def _unrecognized(extras: Sequence[str]) -> str:
    """argparse's "unrecognized arguments" message, with moe-oracle's spelling of a vLLM flag."""
    message = f"unrecognized arguments: {' '.join(extras)}"
    hints = [f"{w.split('=', 1)[0]} is vLLM's; moe-oracle's is {_VLLM_FLAGS[w.split('=', 1)[0]]}" for w in extras if w.split("=", 1)[0] in _VLLM_FLAGS]
    if hints:
        message += " (" + "; ".join(dict.fromkeys(hints)) + "; or give the whole line as --serve 'vllm serve MODEL ...')"
    return message


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``moe-oracle`` script; returns the exit code.

    Without ``argv`` (the script, ``python -m moe_oracle``) the command line is the process's:
    :func:`_freeze_at_exit`.
    """
    from ..core.errors import ConfigError, MissingDependencyError, TableError

    _escape_unencodable_output()
    if argv is None:
        _freeze_at_exit()
    words = sys.argv[1:] if argv is None else argv
    # the arguments of the command run, not of all ten; with --json, argparse's refusals as JSON too
    parser = build_parser(commands=frozenset(words), json_errors="--json" in words)
    args, extras = parser.parse_known_args(words)
    if extras:
        parser.error(_unrecognized(extras))
    for line in getattr(args, "repeated_flags", None) or ():
        print(f"warning: {line}", file=sys.stderr)
    try:
        if args.command == "lint":
            return lint.run(args)
        if args.command == "examples":
            return info.run_examples()
        if args.command == "codes":
            return info.run_codes()
        if args.command == "verify":
            return verify_cli.run(args)
        if args.command != "plan":  # plan refuses --config (one layer): say so before waiting on stdin
            read_stdin_config(args)
        view = "runtime" if args.command == "run" else getattr(args, "view", "engine")
        catalog = load_tables(getattr(args, "tables", None), view)
        if args.command in ("explain", "select"):
            return select.run(args, catalog)
        if args.command == "diff":
            return diff.run(args, catalog)
        if args.command == "why-not":
            return why_not.run(args, catalog)
        if args.command == "matrix":
            return matrix.run(args, catalog)
        if args.command == "run":
            return run.run(args, catalog)
        if args.command == "plan":
            return plan.cmd_plan(args, catalog)
    except (ConfigError, TableError, MissingDependencyError) as exc:
        exc = exc.naming_flags()  # the API's headline names Device.capability; the command line's --sm
        code = EXIT_MISSING_DEPENDENCY if isinstance(exc, MissingDependencyError) else EXIT_BAD_INPUT
        try:
            if getattr(args, "json", False):
                print_json(exc.to_dict())
            else:
                print(f"moe-oracle: error: {exc}", file=sys.stderr)
        except BrokenPipeError:  # the reader stopped reading (| head); the exit code still says bad input
            pass
        return code
    except BrokenPipeError:
        return EXIT_OK
    parser.error(f"unknown command {args.command!r}")
    return EXIT_BAD_INPUT
