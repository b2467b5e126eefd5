"""Is a FlashInfer substitute honest? Compare what a vLLM release's selection reads of FlashInfer.

vLLM 0.34.0 pins ``flashinfer-python==0.7.3``, which the package index does not serve; the
differential environment installs 0.7.4 instead (:data:`~moe_oracle.verify.ours.FLASHINFER_SUBSTITUTES`).
The 0.7.3 source is not available here either, so the check brackets it: the nearest served
versions below and above the pin (0.7.2.post1 and 0.7.4) are compared on what the release's
selection reads of FlashInfer. A fact equal in both neighbours is taken to hold for the pin (an
assumption: a fact could change in 0.7.3 and change back in 0.7.4, which nothing here can see);
a fact that differs between them is undetermined for the pin and fails the check.

Two comparisons, each run by the release's own code in the differential environment:

1. **Probes**: every argument-less ``has_flashinfer*`` function of the release's
   ``vllm/utils/flashinfer.py`` (what the oracles and the all2all code ask), on a simulated
   CUDA SM 10.0 machine with FlashInfer present, plus the members of FlashInfer's
   ``ActivationType`` enum (what ``TrtLlm*`` experts test for SwigluStep). Run in one worker
   process per FlashInfer version (``--probe``).
2. **Selection**: the release's vLLM side (:class:`~moe_oracle.verify.vllm_side.VllmSide`) answers
   the same sampled deployments with FlashInfer present under each version; every answer
   (status, experts class, format, backend) must be equal.

    python -m moe_oracle.verify.flashinfer_substitute --vllm-env DIR [--release 0.34.0] [--cases 5000] [--json]

Exit codes: 0 the substitute gives the same facts as both neighbours of the pin, 1 a fact or a
selection differs (listed), 2 bad input (no environment, no substitute for that release).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

from packaging.version import Version

from ..inputs.paths import user_path  # a path flag expands a leading ~ as every moe-oracle path does
from .ours import FLASHINFER_PINS, FLASHINFER_SUBSTITUTES, flashinfer_installed

__all__ = ["SubstituteReport", "bracket", "check_substitute", "main"]


def bracket(pin: str, available: Sequence[str]) -> tuple[str | None, str | None]:
    """The nearest versions below and above ``pin`` among ``available``.

    >>> bracket("0.7.3", ["0.6.18", "0.7.2.post1", "0.7.4"])
    ('0.7.2.post1', '0.7.4')
    """
    v = Version(pin)
    below = [a for a in available if Version(a) < v]
    above = [a for a in available if Version(a) > v]
    return (max(below, key=Version) if below else None, min(above, key=Version) if above else None)


@dataclass
class SubstituteReport:
    """Outcome of :func:`check_substitute`.

    Attributes:
        release: the vLLM release.
        pin, substitute: the pinned and the installed FlashInfer versions.
        neighbours: the versions compared (below and above the pin).
        probes: version -> probe name -> value.
        probe_differences: probe names whose values differ between the neighbours.
        cases: deployments answered under each version.
        selection_differences: (deployment key, answer per version) for each differing answer.
    """

    release: str
    pin: str
    substitute: str
    neighbours: tuple[str, str]
    probes: dict[str, dict[str, Any]]
    probe_differences: list[str]
    cases: int
    selection_differences: list[tuple[str, dict[str, Any]]]

    @property
    def ok(self) -> bool:
        return not self.probe_differences and not self.selection_differences

    def to_dict(self) -> dict[str, Any]:
        return {**dataclasses.asdict(self), "ok": self.ok}

    def render(self) -> str:
        lo, hi = self.neighbours
        lines = [
            f"FlashInfer substitute for vLLM {self.release}: pin {self.pin} (not served), installed {self.substitute}; compared {lo} and {hi}",
            f"  probes: {len(self.probes[lo])} read by the release; differing between {lo} and {hi}: {', '.join(self.probe_differences) or 'none'}",
            f"  selection: {self.cases} deployments with FlashInfer present; differing answers: {len(self.selection_differences)}",
        ]
        for key, answers in self.selection_differences[:10]:
            lines.append(f"    {key}: " + " | ".join(f"{v}: {a}" for v, a in answers.items()))
        lines.append("  verdict: " + ("the substitute reads as the pin would (as far as both neighbours agree)" if self.ok else "NOT equivalent: the facts above are undetermined for the pin"))
        return "\n".join(lines)


def _probe_in_worker(release: str) -> dict[str, Any]:
    """Run inside the environment: the release's probes on a simulated SM 10.0 with FlashInfer."""
    import importlib
    import inspect

    from .cases import Deployment
    from .vllm_sim import Simulation

    sim = Simulation(release, None)
    sim.apply(Deployment(platform="cuda", capability=100, packages=("flashinfer", "flashinfer_cubin")))
    fi_utils = importlib.import_module("vllm.utils.flashinfer")
    out: dict[str, Any] = {}
    for name, fn in sorted(vars(fi_utils).items()):
        if not name.startswith("has_flashinfer") or not callable(fn):
            continue
        try:
            params = [p for p in inspect.signature(fn).parameters.values() if p.default is inspect.Parameter.empty]
        except (TypeError, ValueError):
            continue
        if params:
            continue
        try:
            out[name] = bool(fn())
        except Exception as exc:  # noqa: BLE001 - a probe that raises reads as its exception type
            out[name] = f"raises {type(exc).__name__}"
    try:
        core = importlib.import_module("flashinfer.fused_moe.core")
        members = {m.name for m in core.ActivationType}
        # Only the members the release's source names matter to it (ActivationType.X, or a
        # hasattr/getattr(ActivationType, "X") probe); a member it never reads cannot change selection.
        import re
        from pathlib import Path

        import vllm

        named: set[str] = set()
        for f in Path(vllm.__file__).parent.rglob("*.py"):
            text = f.read_text(encoding="utf-8", errors="replace")
            if "ActivationType" in text:
                named |= set(re.findall(r"ActivationType\.(\w+)", text)) | set(re.findall(r"ActivationType,\s*\"(\w+)\"", text))
        out["ActivationType (members the release names)"] = sorted(n for n in named if n in members)
        out["ActivationType (members the release names, absent)"] = sorted(n for n in named if n not in members)
        out["ActivationType (all members; informational)"] = sorted(members)
    except Exception as exc:  # noqa: BLE001
        out["ActivationType (members the release names)"] = f"unreadable: {type(exc).__name__}"
    return out


def _env_for(directory: Path, fi_version: str):
    from .run import VllmEnv

    base = VllmEnv.from_dir(directory)

    @dataclass(frozen=True)
    class _Pinned(VllmEnv):
        """The environment with one FlashInfer version on the path for every release."""

        version: str = fi_version

        def pythonpath(self, release: str) -> str:
            from ..core._resources import package_dir

            return os.pathsep.join([str(self.tree(release)), str(self.flashinfer / self.version), str(package_dir().parent)])

    return _Pinned(base.python, base.trees, base.flashinfer)


def check_substitute(directory: Path, release: str, cases: int = 5000, seed: int = 0, jobs: int = 2) -> SubstituteReport:
    """Compare the pin's two served neighbours on what ``release`` reads of FlashInfer.

    Raises:
        KeyError: ``release`` has no FlashInfer pin, or its pin no substitute.
        FileNotFoundError: a neighbour is not installed under ``DIR/fi``.
        RuntimeError: a worker failed.
    """
    from .run import run_release
    from .space import random_deployments

    pin = FLASHINFER_PINS[release]
    substitute = FLASHINFER_SUBSTITUTES[pin][0]
    installed = sorted(p.name for p in (directory / "fi").iterdir() if (p / "flashinfer").is_dir())
    lo, hi = bracket(pin, installed)
    if lo is None or hi is None:
        raise FileNotFoundError(f"FlashInfer versions on both sides of {pin} are needed under {directory / 'fi'} (installed: {installed}); install the nearest lower one with setup_env")
    probes: dict[str, dict[str, Any]] = {}
    for version in (lo, hi):
        env = _env_for(directory, version)
        proc = subprocess.run(
            [str(env.python), "-m", "moe_oracle.verify.flashinfer_substitute", "--probe", release],
            env=dict(os.environ, PYTHONPATH=env.pythonpath(release), PYTHONHASHSEED="0", VLLM_LOGGING_LEVEL="ERROR"),
            capture_output=True, text=True,
        )
        if proc.returncode != 0:
            raise RuntimeError(f"probe worker (FlashInfer {version}) failed: {proc.stderr.strip()[-2000:]}")
        probes[version] = json.loads(proc.stdout.strip().splitlines()[-1])
    differing = sorted(k for k in set(probes[lo]) | set(probes[hi]) if probes[lo].get(k) != probes[hi].get(k) and "informational" not in k)
    sample = [d for d in random_deployments(cases * 3, seed) if d.platform == "cuda"]
    sample = [dataclasses.replace(d, packages=tuple(sorted({*d.packages, "flashinfer", "flashinfer_cubin"}))) for d in sample][:cases]
    answers = {}
    for version in (lo, hi):
        rep = run_release(_env_for(directory, version), release, sample, jobs=jobs)
        answers[version] = {r.case.key(): r.vllm for r in rep.records}
    diffs = []
    for key, a in answers[lo].items():
        b = answers[hi].get(key)
        if b != a:
            diffs.append((key, {lo: a.to_dict(), hi: b.to_dict() if b else None}))
    return SubstituteReport(release, pin, substitute, (lo, hi), probes, differing, len(sample), diffs)


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m moe_oracle.verify.flashinfer_substitute", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--vllm-env", type=user_path, help="the differential environment (default: $MOE_ORACLE_VLLM_ENV)")
    parser.add_argument("--release", default="0.34.0", help="vLLM release whose pin was substituted (default 0.34.0)")
    parser.add_argument("--cases", type=int, default=5000, help="deployments for the selection comparison (default 5000)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--probe", metavar="RELEASE", help=argparse.SUPPRESS)  # worker mode
    args = parser.parse_args(argv)
    if args.probe:
        print(json.dumps(_probe_in_worker(args.probe)))
        return 0
    directory = args.vllm_env or (user_path(os.environ["MOE_ORACLE_VLLM_ENV"]) if os.environ.get("MOE_ORACLE_VLLM_ENV") else None)
    if directory is None:
        print("flashinfer_substitute: error: no environment: pass --vllm-env DIR or set MOE_ORACLE_VLLM_ENV", file=sys.stderr)
        return 2
    pin = FLASHINFER_PINS.get(args.release)
    if pin is None or pin not in FLASHINFER_SUBSTITUTES:
        print(f"flashinfer_substitute: error: --release {args.release}: no substituted FlashInfer pin (pins with a substitute: {sorted(r for r, p in FLASHINFER_PINS.items() if p in FLASHINFER_SUBSTITUTES)})", file=sys.stderr)
        return 2
    assert flashinfer_installed(args.release) == FLASHINFER_SUBSTITUTES[pin][0]
    report = check_substitute(directory, args.release, args.cases, args.seed, args.jobs)
    print(json.dumps(report.to_dict(), indent=1) if args.json else report.render())
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
