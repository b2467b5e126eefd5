"""Build the environment the differential harness runs vLLM releases in (CPU only).

    python -m moe_oracle.verify.setup_env --dir DIR [--releases 0.31.0 0.33.0] [--pip-arg=--index-url=URL]

Lays out what :class:`moe_oracle.verify.run.VllmEnv` expects::

    DIR/venv/                  a virtual environment: CPU torch 2.13.0 and the pinned closure
                               (moe_oracle/verify/requirements-vllm.txt, installed --no-deps)
    DIR/src/<release>/         each vLLM release's wheel, unzipped without its compiled parts
                               (Python sources, JSON/YAML/template data, dist-info), and
                               compiled_ops.json: which of COMPILED_OP_PROBES the wheel's
                               compiled extensions name (the facts the tables state of the binary)
    DIR/fi/<version>/          each flashinfer-python version a release pins, installed --target --no-deps
                               (a pin the index does not serve: its documented substitute,
                               ``moe_oracle.verify.ours.FLASHINFER_SUBSTITUTES``, recorded in
                               ``DIR/setup.json`` under ``flashinfer_substitutions``)

Each step is skipped when its result is already there, so the command can be re-run to add a
release. vLLM itself is never installed into the venv: the worker puts the release's tree first
on ``PYTHONPATH`` (see :mod:`moe_oracle.verify.run`). About 1 GB of downloads per release (the
wheel is deleted after unzipping unless ``--keep-wheels``); about 1 GB on disk for the venv and
roughly 60 MB per release tree.

Exit codes: 0 done, 2 bad arguments, 1 a pip or venv step failed (its output is shown).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import venv
import zipfile
from pathlib import Path
from typing import Sequence

from ..core._resources import package_dir
from ..inputs.paths import user_path  # a path flag expands a leading ~ as every moe-oracle path does
from .ours import FLASHINFER_PINS, FLASHINFER_SUBSTITUTES, flashinfer_installed
from .run import RELEASES

__all__ = ["COMPILED_OP_PROBES", "main", "extract_release", "REQUIREMENTS", "scan_compiled_ops"]

REQUIREMENTS = package_dir() / "verify" / "requirements-vllm.txt"
"""The pinned closure vLLM's selection code imports (``pip freeze`` of the validated environment)."""

TORCH = "torch==2.13.0"
"""CPU torch: vLLM 0.33.0 pins 2.14.0, but no compiled vLLM op is ever loaded, so the 2.13 CPU build serves."""

# What a release tree keeps from the wheel: sources and the data files imports read. Compiled
# extensions (*.so), the Rust sidecar and C/C++/CUDA headers are left out.
_KEEP_SUFFIXES = (".py", ".json", ".yaml", ".yml", ".jinja", ".txt", ".typed")


COMPILED_OP_PROBES: tuple[str, ...] = ("lut_b_moe_gemm", "moe_align_block_size")
"""Compiled op names whose presence in a release's binary the tables state: ``lut_b_moe_gemm``
(vLLM 0.34.0 vllm/_custom_ops.py ``lut_b_moe_gemm_supported``; kernels/lut_b.yaml
``lut_b_sm107.compiled_op`` says the released wheel lacks it), and ``moe_align_block_size``, which
every release's ``_moe_C`` registers: the control that shows the search finds a registered op."""

COMPILED_OPS_FILE = "compiled_ops.json"


class SetupError(RuntimeError):
    """A venv or pip step failed."""


def _run(cmd: Sequence[str], what: str) -> None:
    print(f"setup_env: {what}", file=sys.stderr, flush=True)
    proc = subprocess.run(list(cmd), capture_output=True, text=True)
    if proc.returncode != 0:
        tail = "\n".join((proc.stdout + proc.stderr).strip().splitlines()[-30:])
        raise SetupError(f"{what} failed (exit {proc.returncode}): {' '.join(cmd)}\n{tail}")


def _venv(directory: Path, pip_args: Sequence[str]) -> Path:
    python = directory / "venv" / "bin" / "python"
    marker = directory / "venv" / ".moe-oracle-closure"
    wanted = REQUIREMENTS.read_text(encoding="utf-8")
    if python.exists() and marker.exists() and marker.read_text(encoding="utf-8") == wanted:
        return python
    if not python.exists():
        print(f"setup_env: creating {directory / 'venv'}", file=sys.stderr, flush=True)
        venv.EnvBuilder(with_pip=True, clear=False).create(directory / "venv")
    pip = [str(python), "-m", "pip", "install", "-q", *pip_args]
    _run([*pip, TORCH], f"installing {TORCH} (CPU build)")
    _run([*pip, "--no-deps", "-r", str(REQUIREMENTS)], f"installing the pinned closure ({REQUIREMENTS.name})")
    marker.write_text(wanted, encoding="utf-8")
    return python


def extract_release(wheel: Path, target: Path) -> int:
    """Unzip a vLLM wheel's sources, data and dist-info (no compiled parts) into ``target``.

    Returns:
        the number of files written.
    """
    count = 0
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            name = info.filename
            if info.is_dir():
                continue
            top = name.split("/", 1)[0]
            keep = top.endswith(".dist-info") or (top == "vllm" and name.endswith(_KEEP_SUFFIXES))
            if keep:
                zf.extract(info, target)
                count += 1
    return count


def scan_compiled_ops(wheel: Path) -> dict[str, object]:
    """Which of :data:`COMPILED_OP_PROBES` each compiled extension (``*.so``) of ``wheel`` names
    (a byte search for the op's name: an op registered with torch appears in its schema string).

    Returns:
        ``{"wheel": file name, "probes": [...], "found": {probe: [extension paths]}}``.
    """
    found: dict[str, list[str]] = {probe: [] for probe in COMPILED_OP_PROBES}
    with zipfile.ZipFile(wheel) as zf:
        for info in zf.infolist():
            if not info.filename.endswith(".so"):
                continue
            data = zf.read(info)
            for probe in COMPILED_OP_PROBES:
                if probe.encode() in data:
                    found[probe].append(info.filename)
    return {"wheel": wheel.name, "probes": list(COMPILED_OP_PROBES), "found": found}


def _compiled_ops_current(tree: Path) -> bool:
    path = tree / COMPILED_OPS_FILE
    return path.exists() and json.loads(path.read_text(encoding="utf-8")).get("probes") == list(COMPILED_OP_PROBES)


def _release(directory: Path, release: str, python: Path, pip_args: Sequence[str], keep_wheels: bool) -> None:
    tree = directory / "src" / release
    if (tree / "vllm" / "__init__.py").exists() and _compiled_ops_current(tree):
        return
    wheels = directory / "wheels"
    wheels.mkdir(parents=True, exist_ok=True)
    _run([str(python), "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:", *pip_args, "-d", str(wheels), f"vllm=={release}"], f"downloading vllm=={release}")
    matches = sorted(wheels.glob(f"vllm-{release}-*.whl"))
    if not matches:
        raise SetupError(f"pip downloaded no vllm-{release} wheel into {wheels}")
    if not (tree / "vllm" / "__init__.py").exists():
        partial = tree.with_name(tree.name + ".partial")
        n = extract_release(matches[-1], partial)
        partial.rename(tree)
        print(f"setup_env: vLLM {release}: {n} files in {tree}", file=sys.stderr, flush=True)
    (tree / COMPILED_OPS_FILE).write_text(json.dumps(scan_compiled_ops(matches[-1]), indent=1) + "\n", encoding="utf-8")
    if not keep_wheels:
        matches[-1].unlink()


def _flashinfer(directory: Path, version: str, python: Path, pip_args: Sequence[str]) -> None:
    target = directory / "fi" / version
    if (target / "flashinfer" / "__init__.py").exists():
        return
    _run([str(python), "-m", "pip", "install", "-q", "--no-deps", *pip_args, "--target", str(target), f"flashinfer-python=={version}"], f"installing flashinfer-python=={version} into {target}")


def _write_manifest(directory: Path, releases: Sequence[str]) -> None:
    """``DIR/setup.json``: every release unpacked so far (a re-run with ``--releases`` adds to it),
    the FlashInfer versions installed, and each substitution of a pin the index does not serve."""
    path = directory / "setup.json"
    old = json.loads(path.read_text(encoding="utf-8")) if path.exists() else {}
    present = sorted({*old.get("releases", ()), *releases, *(p.name for p in (directory / "src").iterdir() if (p / "vllm").is_dir())}, key=lambda v: tuple(int(x) for x in v.split(".")))
    known = [r for r in present if r in FLASHINFER_PINS]
    substitutions = {r: {"pinned": FLASHINFER_PINS[r], "installed": FLASHINFER_SUBSTITUTES[FLASHINFER_PINS[r]][0], "why": FLASHINFER_SUBSTITUTES[FLASHINFER_PINS[r]][1]} for r in known if FLASHINFER_PINS[r] in FLASHINFER_SUBSTITUTES}
    doc = {
        "releases": present,
        "flashinfer": sorted({v for r in known if (v := flashinfer_installed(r))}),
        "flashinfer_substitutions": substitutions,
        "torch": TORCH,
    }
    path.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m moe_oracle.verify.setup_env", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dir", type=user_path, required=True, help="where to build the environment (MOE_ORACLE_VLLM_ENV then points here)")
    parser.add_argument("--releases", nargs="+", choices=RELEASES, default=list(RELEASES), metavar="X.Y.Z", help=f"vLLM releases to unpack (default: all of {', '.join(RELEASES)})")
    parser.add_argument("--pip-arg", action="append", default=[], metavar="ARG", help="extra argument for every pip call (repeatable), e.g. --pip-arg=--index-url=URL")
    parser.add_argument("--keep-wheels", action="store_true", help="keep the downloaded vLLM wheels in DIR/wheels")
    args = parser.parse_args(argv)
    directory = args.dir.resolve()
    directory.mkdir(parents=True, exist_ok=True)
    try:
        python = _venv(directory, args.pip_arg)
        for release in args.releases:
            _release(directory, release, python, args.pip_arg, args.keep_wheels)
        for version in sorted({flashinfer_installed(r) for r in args.releases}):
            _flashinfer(directory, version, python, args.pip_arg)
    except SetupError as exc:
        print(f"setup_env: error: {exc}", file=sys.stderr)
        return 1
    _write_manifest(directory, args.releases)
    print(f"setup_env: done; export MOE_ORACLE_VLLM_ENV={directory}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
