"""Drive worker processes (one vLLM release each) and tally agreement.

A *vLLM environment* is a directory laid out by :mod:`moe_oracle.verify.setup_env`::

    DIR/venv/bin/python        an interpreter with CPU torch and what vLLM's import chain needs
    DIR/src/<release>/vllm/    each release's Python source, unzipped from its wheel
    DIR/fi/<version>/          each FlashInfer version a release pins (installed --target)

For each release the cases are split into chunks; each chunk runs in
``python -m moe_oracle.verify.worker`` with ``PYTHONPATH=<release tree>:<flashinfer>:<our
source>``, at most ``jobs`` at a time. The result is a :class:`Report`.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess

import tempfile
import time
from collections import Counter, defaultdict
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from ..core._resources import package_dir
from .cases import PF_UNASKED, Answer, Deployment
from .divergences import Divergence, load_divergences, match_divergence
from .ours import flashinfer_installed
from .releases import harness_releases

__all__ = ["Record", "ReleaseReport", "Report", "VllmEnv", "run_release", "setup_command", "verify"]

RELEASES: tuple[str, ...] = harness_releases()
"""The vLLM releases the tables model and the harness verifies (``rules/engine.yaml``, oldest first)."""


def setup_command(directory: Path, releases: Sequence[str] = ()) -> str:
    """The shell command that builds (or completes) a vLLM environment in ``directory``.

    >>> setup_command(Path("/tmp/my env"), ["0.33.0"])
    "python -m moe_oracle.verify.setup_env --dir '/tmp/my env' --releases 0.33.0"
    """
    return f"python -m moe_oracle.verify.setup_env --dir {shlex.quote(str(directory))}" + (f" --releases {' '.join(releases)}" if releases else "")


@dataclass(frozen=True)
class VllmEnv:
    """Where the interpreter, the release trees and the FlashInfer versions are.

    Raises (``from_dir``):
        FileNotFoundError: the directory does not have the expected layout.
    """

    python: Path
    trees: Path
    flashinfer: Path

    @classmethod
    def from_dir(cls, directory: Path, releases: Sequence[str] = ()) -> "VllmEnv":
        """The environment laid out under ``directory``, with a source tree for each of ``releases``.

        Raises:
            FileNotFoundError: no interpreter, or no tree for one of ``releases``; the message
                gives the ``setup_env`` command that makes what is missing.
        """
        python = directory / "venv" / "bin" / "python"
        env = cls(python, directory / "src", directory / "fi")
        if not python.exists():
            raise FileNotFoundError(f"{python} not found: create the environment with `{setup_command(directory, releases)}`")
        missing = [r for r in releases if not (env.trees / r / "vllm").is_dir()]
        if missing:
            have = sorted(p.name for p in env.trees.glob("*") if (p / "vllm").is_dir()) if env.trees.is_dir() else []
            trees = ", ".join(f"{env.trees / r}/vllm" for r in missing)
            raise FileNotFoundError(f"no vLLM {', '.join(missing)} source tree{'s' if len(missing) > 1 else ''} ({trees} not found; the environment has {', '.join(have) or 'none'}): add {'it' if len(missing) == 1 else 'them'} with `{setup_command(directory, missing)}`")
        return env

    def tree(self, release: str) -> Path:
        path = self.trees / release
        if not (path / "vllm").is_dir():
            raise FileNotFoundError(f"vLLM {release} source tree not found at {path}/vllm")
        return path

    def pythonpath(self, release: str) -> str:
        parts = [str(self.tree(release))]
        pin = flashinfer_installed(release)
        if pin and (self.flashinfer / pin).is_dir():
            parts.append(str(self.flashinfer / pin))
        parts.append(str(package_dir().parent))
        return os.pathsep.join(parts)


@dataclass(frozen=True)
class Record:
    """One deployment answered by both sides."""

    case: Deployment
    vllm: Answer
    ours: Answer
    agree: bool
    why: tuple[Any, ...] = ()
    divergence: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "case": self.case.to_dict(),
            "vllm": self.vllm.to_dict(),
            "ours": self.ours.to_dict(),
            "agree": self.agree,
            "divergence": self.divergence,
            "why": list(self.why),
        }


@dataclass
class ReleaseReport:
    """Agreement of one release."""

    release: str
    records: list[Record] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    import_errors: dict[str, str] = field(default_factory=dict)

    @property
    def compared(self) -> list[Record]:
        """Records both sides could answer (``unsupported``: the harness cannot drive that case)."""
        return [r for r in self.records if r.vllm.status != "unsupported"]

    @property
    def agreement(self) -> float:
        rows = self.compared
        return sum(r.agree for r in rows) / len(rows) if rows else 1.0

    @property
    def unexplained(self) -> list[Record]:
        return [r for r in self.compared if not r.agree and r.divergence is None]

    @property
    def pf_unexplained(self) -> list[Record]:
        """Deployments whose selection agrees but whose prepare/finalize differs, unreviewed."""
        return [r for r in self.compared if r.agree and not r.vllm.same_pf(r.ours) and r.divergence is None]

    def by_family(self) -> dict[str, tuple[int, int, int]]:
        """family -> (agreeing, compared, agreeing on the full comparison)."""
        out: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])
        for r in self.compared:
            out[r.case.family][0] += r.agree
            out[r.case.family][1] += 1
            out[r.case.family][2] += self._full(r)
        return {k: (v[0], v[1], v[2]) for k, v in sorted(out.items())}

    @staticmethod
    def _full(r: Record) -> bool:
        return r.agree and r.vllm.same_stage(r.ours) and r.vllm.same_pf(r.ours)

    def stages(self) -> dict[str, Any]:
        """Refusals on both sides by (vLLM's stage, ours) and how many name the same stage."""
        both = [r for r in self.compared if r.vllm.status == "error" and r.ours.status == "error"]
        pairs = Counter(f"{r.vllm.stage}|{r.ours.stage}" for r in both)
        same = sum(r.vllm.same_stage(r.ours) for r in both)
        return {"both_refuse": len(both), "same_stage": same, "agreement": round(same / len(both), 5) if both else 1.0, "pairs": dict(pairs.most_common())}

    def prepare_finalize(self) -> dict[str, Any]:
        """The prepare/finalize comparison (:meth:`.cases.Answer.same_pf`): over the deployments
        where both sides select and vLLM's front end built a method to ask with, how many name the
        same class; per family, and the (vLLM, ours) pairs that differ."""
        rows = [r for r in self.compared if r.vllm.pf_compared(r.ours)]
        both_ok = [r for r in self.compared if r.vllm.status == r.ours.status == "ok"]
        unasked = Counter(r.case.front_end for r in both_ok if (r.vllm.prepare_finalize or "").startswith(PF_UNASKED))
        no_method = sum(r.vllm.prepare_finalize is None for r in both_ok)
        fam: dict[str, list[int]] = defaultdict(lambda: [0, 0])
        for r in rows:
            fam[r.case.family][0] += r.vllm.same_pf(r.ours)
            fam[r.case.family][1] += 1
        same = sum(a for a, _ in fam.values())
        pairs = Counter(f"{r.vllm.prepare_finalize[:90]}|{r.ours.prepare_finalize}" for r in rows if not r.vllm.same_pf(r.ours) and r.divergence is None)
        reviewed = Counter(r.divergence for r in rows if not r.vllm.same_pf(r.ours) and r.divergence is not None)
        classes = Counter(r.vllm.prepare_finalize for r in rows if r.vllm.same_pf(r.ours))
        return {
            "compared": len(rows),
            "both_select": len(both_ok),
            "no_method": no_method,
            "not_asked": dict(unasked.most_common()),
            "same": same,
            "agreement": round(same / len(rows), 5) if rows else 1.0,
            "by_family": {k: {"agree": a, "compared": n, "agreement": round(a / n, 5) if n else 1.0} for k, (a, n) in sorted(fam.items())},
            "reviewed_divergences": dict(reviewed.most_common()),
            "unreviewed": sum(pairs.values()),
            "classes": dict(classes.most_common()),
            "pairs": dict(pairs.most_common()),
        }

    def full_agreement(self) -> float:
        """Agreement on the full comparison: status, class, format, backend member, the refusal
        stage and the prepare/finalize."""
        rows = self.compared
        return sum(self._full(r) for r in rows) / len(rows) if rows else 1.0

    def summary(self) -> dict[str, Any]:
        rows = self.compared
        return {
            "full_agreement": round(self.full_agreement(), 5),
            "refusal_stages": self.stages(),
            "prepare_finalize": self.prepare_finalize(),
            "differs_in": dict(Counter(",".join(r.vllm.differs_in(r.ours)) for r in rows if not (r.agree and r.vllm.same_pf(r.ours)))),
            "release": self.release,
            "cases": len(self.records),
            "compared": len(rows),
            "agree": sum(r.agree for r in rows),
            "agreement": round(self.agreement, 5),
            "reviewed_divergences": dict(Counter(r.divergence for r in rows if r.divergence)),
            "unexplained": len(self.unexplained),
            "not_driven": len(self.records) - len(rows),
            "not_driven_at_start": sum(r.vllm.status == "unsupported" and r.vllm.stage == "config" for r in self.records),
            # Our refusals past what the vLLM side reaches (Answer.later): compared as selections.
            "refused_later": dict(Counter(r.ours.later.split(":")[0] for r in rows if r.ours.later)),
            "by_family": {k: {"agree": a, "compared": n, "agreement": round(a / n, 5) if n else 1.0, "full_agreement": round(f / n, 5) if n else 1.0}
                          for k, (a, n, f) in self.by_family().items()},
            "timings": self.timings,
        }


@dataclass
class Report:
    releases: list[ReleaseReport]

    def summary(self) -> dict[str, Any]:
        return {"releases": [r.summary() for r in self.releases]}


def _run_chunk(env: VllmEnv, release: str, cases: Sequence[Deployment], tables: Sequence[Path] | None) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="moe-oracle-verify-") as tmp:
        inp = Path(tmp) / "cases.jsonl"
        out = Path(tmp) / "out.jsonl"
        inp.write_text("".join(json.dumps(c.to_dict()) + "\n" for c in cases))
        cmd = [str(env.python), "-m", "moe_oracle.verify.worker", "--release", release, "--tree", str(env.tree(release)), "--cases", str(inp), "--out", str(out)]
        for t in tables or ():
            cmd += ["--tables", str(t)]
        child_env = dict(os.environ, PYTHONPATH=env.pythonpath(release), PYTHONHASHSEED="0")
        for key in [k for k in child_env if k.startswith("VLLM_")]:
            del child_env[key]
        proc = subprocess.run(cmd, env=child_env, capture_output=True, text=True)
        if proc.returncode != 0 or not out.exists():
            tail = "\n".join(proc.stderr.strip().splitlines()[-25:])
            raise RuntimeError(f"worker for vLLM {release} failed (exit {proc.returncode}):\n{tail}")
        lines = [json.loads(line) for line in out.read_text().splitlines() if line.strip()]
    return [x for x in lines if "case" in x], next(x["summary"] for x in lines if "summary" in x)


def run_release(
    env: VllmEnv,
    release: str,
    cases: Sequence[Deployment],
    *,
    divergences: Sequence[Divergence] = (),
    jobs: int = 2,
    tables: Sequence[Path] | None = None,
    progress: Callable[[str], None] | None = None,
) -> ReleaseReport:
    """Answer ``cases`` with vLLM ``release`` and our tables.

    Raises:
        RuntimeError: a worker failed (its stderr tail is in the message).
        FileNotFoundError: the release tree is missing.
    """
    t0 = time.perf_counter()
    n = max(1, min(jobs, len(cases) // 500 or 1))
    if progress:  # the only line before the release's answer, which can take hours (an exhaustive product)
        progress(f"vLLM {release}: answering {len(cases)} deployments in {n} worker process{'es' if n != 1 else ''} ...")
    chunks = [list(cases[i::n]) for i in range(n)]
    with ThreadPoolExecutor(max_workers=n) as pool:
        parts = list(pool.map(lambda c: _run_chunk(env, release, c, tables), chunks))
    report = ReleaseReport(release)
    for raw, summary in parts:
        for x in raw:
            dep = Deployment.from_dict(x["case"])
            theirs, mine = Answer.from_dict(x["vllm"]), Answer.from_dict(x["ours"])
            differs = not x["agree"] or not theirs.same_pf(mine)
            div = match_divergence(divergences, release, dep, theirs, mine) if differs else None
            report.records.append(Record(dep, theirs, mine, x["agree"], tuple(x.get("why", ())), div.id if div else None))
        for key in ("import_s", "vllm_s", "ours_s"):
            report.timings[key] = round(report.timings.get(key, 0.0) + summary[key], 3)
        report.import_errors.update(summary.get("import_errors", {}))
    report.timings["wall_s"] = round(time.perf_counter() - t0, 2)
    if progress:
        s = report.summary()
        progress(f"vLLM {release}: {s['agree']}/{s['compared']} agree ({100 * s['agreement']:.2f} %), {s['unexplained']} unexplained, {report.timings['wall_s']} s")
    return report


def verify(
    env: VllmEnv,
    releases: Sequence[str],
    cases: Sequence[Deployment],
    *,
    divergences_path: Path | None = None,
    jobs: int = 2,
    tables: Sequence[Path] | None = None,
    progress: Callable[[str], None] | None = None,
) -> Report:
    """Run every release over the same cases."""
    divergences = load_divergences(divergences_path)
    return Report([run_release(env, r, cases, divergences=divergences, jobs=jobs, tables=tables, progress=progress) for r in releases])


def write_disagreements(report: Report, directory: Path, limit: int = 200) -> list[Path]:
    """Write each unexplained disagreement (prepare/finalize ones included) as a small replayable
    JSON file (at most ``limit`` per release)."""
    directory.mkdir(parents=True, exist_ok=True)
    paths = []
    for rel in report.releases:
        for rec in (rel.unexplained + rel.pf_unexplained)[:limit]:
            path = directory / f"{rel.release}-{rec.case.family}-{rec.case.key()}.json"
            path.write_text(json.dumps({"release": rel.release, **rec.to_dict()}, indent=1) + "\n")
            paths.append(path)
    return paths


