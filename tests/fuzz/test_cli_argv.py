"""moe_oracle.cli.main with random argv: it returns 0, 1 or 2, or argparse exits (2, or 0 for
--help/--version); it never raises. The options and their kinds come from build_parser(), so a
new flag is fuzzed without touching this file.

Not fuzzed: `run` (it allocates and runs the model's real layer) and `lint` over a valid table
set (seconds per call); `lint` is fuzzed with bad --tables only.
"""

from __future__ import annotations

import argparse
import atexit
import contextlib
import io
import shutil
import sys
import tempfile
from pathlib import Path

from hypothesis import given, note
from hypothesis import strategies as st

from moe_oracle.core._resources import package_dir
from moe_oracle.cli import build_parser, main
from moe_oracle.inputs.hardware import GPU_CATALOG
from moe_oracle.inputs.models import example_names
from moe_oracle.core.quant import SCHEME_ALIASES, SCHEMES
from moe_oracle.core.vocab import All2AllBackend
from tests.property import tally
from tests.property.profiles import budget
from tests.property.strategies import ARCHES, CATALOG, cases, text_values

PARSER = build_parser()
SUBPARSERS = next(a for a in PARSER._actions if isinstance(a, argparse._SubParsersAction)).choices
COMMANDS = tuple(c for c in SUBPARSERS if c != "run")
OPTIONS = {cmd: [a for a in SUBPARSERS[cmd]._actions if a.option_strings and not isinstance(a, argparse._HelpAction)] for cmd in COMMANDS}


def _workdir() -> Path:
    root = Path(tempfile.mkdtemp(prefix="moe-oracle-fuzz-cli-"))
    atexit.register(shutil.rmtree, root, True)
    (root / "garbage.json").write_bytes(b"\x00\xff{[")
    (root / "list.json").write_text("[1]")
    (root / "empty.yaml").write_text("")
    (root / "tables").mkdir()
    for sub in ("kernels", "prepare_finalize", "rules"):
        (root / "tables" / sub).mkdir()
    (root / "tables" / "rules" / "priority.yaml").write_text("kind: priority\nfallback: 5\n")
    return root


WORK = _workdir()
SCRATCH = WORK / "cwd"
SCRATCH.mkdir()
_CASE_FILES = [WORK / f"case{i}.yaml" for i in range(3)]

_BAD_PATHS = (str(WORK), str(WORK / "missing.json"), str(WORK / "garbage.json"), str(WORK / "list.json"), str(WORK / "empty.yaml"), "/dev/null", "", "a\x00b", "x" * 400, "\udcff.json")
_INTS = st.one_of(st.sampled_from(("0", "-1", "1", "2", "8", "90", "100", "1048577", str(2**41), "1e3", "0x10", "", " 4", "٣")), st.integers().map(str))
_JUNK = text_values(20).filter(lambda t: not t.startswith("--h"))
_SURROGATE = st.sampled_from(("\udcff", "sm\udc80", "\ud800"))


def _values(action: argparse.Action, command: str) -> st.SearchStrategy[str]:
    name = action.option_strings[-1]
    files = st.sampled_from(_BAD_PATHS + tuple(map(str, _CASE_FILES)))
    pools = {
        "--config": files,
        "--model": st.one_of(st.sampled_from(example_names()), files),
        "--hf-quant-config": st.one_of(st.sampled_from([str(p) for p in package_dir().parent.glob("examples/models/*.json")]), files),
        "--quant": st.sampled_from((*SCHEMES, *SCHEME_ALIASES, "FP8-BLK", "fp8-block")),
        "--gpu": st.sampled_from((*GPU_CATALOG, "h200", "rtx-pro-6000", "5090", "GB10", "TPUv5")),
        "--arch": st.sampled_from(ARCHES),
        "--all2all": st.sampled_from((*[b.value for b in All2AllBackend], *CATALOG.all2all_aliases, "DeepEP-Low-Latency")),
        "--moe-backend": st.sampled_from((*CATALOG.backend_names, "auto", "AUTO", "FlashInfer-TRTLLM")),
        "--backend": st.sampled_from((*CATALOG.backend_names, "auto", "Triton")),
        "--package": st.one_of(st.sampled_from([f"{n}==1.0" for n in CATALOG.package_names]), st.sampled_from(("vllm==abc", "==1.0", "torch", "torch==", "torch==2.9=="))),
        "--without": st.sampled_from((*CATALOG.package_names, "Flashinfer_Python", "")),
        "--env": st.one_of(st.sampled_from([f"{v.name}={x}" for v in CATALOG.env_vars for x in ("1", "0", "grouped")]), st.sampled_from(("NOT_READ=1", "VLLM_BATCH_INVARIANT", "=1"))),
        "--tables": st.sampled_from((str(WORK / "tables"), str(WORK), str(WORK / "missing"), str(WORK / "garbage.json"), "") + (() if command == "lint" else (str(package_dir()),))),
        "--html": st.sampled_from((str(WORK / "matrix.html"), str(WORK / "no" / "such" / "dir" / "m.html"), str(WORK), "")),
    }
    if action.choices:
        base = st.sampled_from(list(action.choices))
    elif name in pools:
        base = pools[name]
    else:
        base = _INTS
    return st.one_of(base, base, base, base, _JUNK, _SURROGATE)


_LAYER_COMMANDS = ("explain", "select", "why-not")


@st.composite
def argvs(draw: st.DrawFn) -> list[str]:
    """A command with a valid layer (a config file, or an example model and a GPU), then a few
    more options with mostly valid values, some junk and some stray tokens."""
    command = draw(st.sampled_from(COMMANDS + _LAYER_COMMANDS * 3 + ("", "nonsense")))
    argv = [command] if command else []
    if command in _LAYER_COMMANDS and draw(st.integers(0, 5)):
        if draw(st.booleans()):
            argv += ["--config", str(draw(st.sampled_from(_CASE_FILES)))]
        else:
            argv += ["--model", draw(st.sampled_from(example_names())), "--gpu", draw(st.sampled_from(sorted(GPU_CATALOG)))]
        if command == "why-not":
            argv += ["--backend", draw(st.sampled_from(sorted(CATALOG.backend_names)))]
    options = OPTIONS.get(command, OPTIONS["explain"])
    chosen = draw(st.lists(st.sampled_from(options), max_size=4)) if options else []
    if command == "lint":
        chosen.append(next(a for a in options if "--tables" in a.option_strings))
    for action in chosen:
        flag = draw(st.sampled_from(action.option_strings))
        if action.nargs == 0:
            argv.append(flag)
        else:
            value = draw(_values(action, command))
            argv += [f"{flag}={value}"] if draw(st.integers(0, 4)) == 0 else [flag, value]
    if draw(st.integers(0, 4)) == 0:
        argv.insert(draw(st.integers(0, len(argv))), draw(st.one_of(_JUNK, st.sampled_from(("--json", "-h", "--version", "--", "-")))))
    tally.bump("bad inputs: cli argv")
    return argv


def _write_case_files(data: st.DataObject) -> None:
    for path in _CASE_FILES:
        path.write_text(data.draw(cases(), label=path.name).replay(), encoding="utf-8")


def run_main(argv: list[str]) -> tuple[int, str, str]:
    """main(argv) with process-like streams (stdout strict UTF-8, stderr backslashreplace), run in a
    scratch directory: a junk relative path (`matrix --html 日本`) is written there, not in the checkout."""
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")
    err = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="backslashreplace")
    saved = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = out, err
    try:
        with contextlib.chdir(SCRATCH):
            try:
                code: int = main(argv)
            except SystemExit as exc:
                assert exc.code in (0, 2), f"argparse exited with {exc.code!r}"
                code = -1
        out.flush()
        err.flush()
    finally:
        sys.stdout, sys.stderr = saved
    text = lambda stream: stream.buffer.getvalue().decode("utf-8", "replace")  # noqa: E731
    return code, text(out), text(err)


@budget(1.0)
@given(argvs(), st.data())
def test_cli_never_raises(argv, data):
    _write_case_files(data)
    note(f"argv = {argv!r}")
    code, out, err = run_main(argv)
    note(f"exit {code}\nstdout: {out[-2000:]}\nstderr: {err[-2000:]}")
    assert code in (-1, 0, 1, 2)
    assert "Traceback" not in out + err
