"""Run the model-construction tier: one worker per release (vLLM side), our plan per case, compare.

``python -m moe_oracle.verify.model_build.driver --env DIR [--releases 0.33.0 ...] [--full] [--out REPORT.json]``
prints per release: cases built, layers compared, agreement per field, every difference
(collapsed over layers) with the reviewed divergence that explains it, and the run times.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Sequence

from ...inputs.paths import user_path  # a path flag expands a leading ~ as every moe-oracle path does
from ...inputs.model_start_refusals import MODEL_START_REFUSALS, TP_EXCEEDS_EXPERTS
from ..run import RELEASES, VllmEnv
from .compare import Difference, compare_case, explain, load_divergences, summarize
from .corpus import DEPLOYMENTS, QUICK_DEPLOYMENTS, Case, cases

__all__ = ["ReleaseResult", "run_release", "main", "corpus_dirs"]


def corpus_dirs() -> list[Path]:
    """``examples/models`` of this checkout, its ``registry/`` subfolder (one synthetic config per
    registered MoE architecture that no shipped checkpoint covers; not shipped examples), then
    ``../shared/models`` beside it (where present)."""
    from ...core._resources import package_dir

    root = package_dir().parent
    out = [root / "examples" / "models", root / "examples" / "models" / "registry"]
    for shared in (root.parent / "shared" / "models", Path("/work/shared/models")):
        if shared.is_dir() and shared not in out:
            out.append(shared)
    return out


@dataclass
class ReleaseResult:
    release: str
    cases: int = 0
    built: int = 0
    not_built: dict[str, str] = field(default_factory=dict)
    ours_failed: dict[str, str] = field(default_factory=dict)
    draft_not_built: dict[str, str] = field(default_factory=dict)
    layers: int = 0
    compared: Counter = field(default_factory=Counter)
    agree: Counter = field(default_factory=Counter)
    differences: list[Difference] = field(default_factory=list)
    self_check: list[str] = field(default_factory=list)
    timings: dict[str, float] = field(default_factory=dict)
    refusals: dict[str, str] = field(default_factory=dict)

    @property
    def refusals_differ(self) -> dict[str, str]:
        """Cases vLLM refused at selection where our plan did not refuse the same role's layers."""
        return {cid: v for cid, v in self.refusals.items() if v != "agree"}

    @property
    def unexplained(self) -> list[Difference]:
        return [d for d in self.differences if d.divergence is None]

    def layer_agreement(self) -> float:
        """Share of compared layers on which every field agrees."""
        bad = {(d.case, d.role, d.index) for d in self.differences}
        return 1.0 - len(bad) / self.layers if self.layers else 1.0

    def summary(self) -> dict[str, Any]:
        bad = {(d.case, d.role, d.index) for d in self.differences}
        bad_unexplained = {(d.case, d.role, d.index) for d in self.unexplained}
        return {
            "release": self.release, "cases": self.cases, "built": self.built, "not_built": self.not_built,
            "draft_not_built": self.draft_not_built, "ours_failed": self.ours_failed, "layers": self.layers,
            "layers_all_fields_agree": self.layers - len(bad), "layers_with_unexplained": len(bad_unexplained),
            "per_field": {f: f"{self.agree[f]}/{n}" for f, n in sorted(self.compared.items())},
            "differences": len(self.differences), "unexplained": len(self.unexplained),
            "refusals_compared": len(self.refusals), "refusals_differ": self.refusals_differ,
            "self_check": self.self_check, "timings": self.timings,
        }


def _worker(env: VllmEnv, release: str, case_dicts: list[dict[str, Any]], tmp: Path) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    cases_file = tmp / f"cases-{release}.jsonl"
    out_file = tmp / f"out-{release}.jsonl"
    cases_file.write_text("".join(json.dumps(c) + "\n" for c in case_dicts))
    proc_env = dict(os.environ, PYTHONPATH=env.pythonpath(release), VLLM_LOGGING_LEVEL="ERROR")
    cmd = [str(env.python), "-m", "moe_oracle.verify.model_build.worker", "--release", release, "--tree", str(env.tree(release)), "--cases", str(cases_file), "--out", str(out_file)]
    proc = subprocess.run(cmd, env=proc_env, capture_output=True, text=True)
    rows = [json.loads(line) for line in out_file.read_text().splitlines() if line.strip()] if out_file.exists() else []
    summary = next((r["summary"] for r in rows if "summary" in r), {"error": proc.stderr[-2000:], "rc": proc.returncode})
    return [r for r in rows if "summary" not in r], summary


def build_release(env: VllmEnv, release: str, corpus: Sequence[Case], keep: Path | None = None) -> tuple[list[dict[str, Any]], dict[str, Any], float]:
    """The vLLM side: one worker builds every case (thread-safe; the workers are processes)."""
    dicts = [c.to_dict() for c in corpus]
    t0 = time.perf_counter()
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=True)
        built, summary = _worker(env, release, dicts, keep)
    else:
        with tempfile.TemporaryDirectory(prefix="moe_oracle_mb_") as tmp:
            built, summary = _worker(env, release, dicts, Path(tmp))
    return built, summary, time.perf_counter() - t0


def run_release(env: VllmEnv, release: str, corpus: Sequence[Case], divergences: list[dict[str, Any]] | None = None, built_side: tuple[list[dict[str, Any]], dict[str, Any], float] | None = None) -> ReleaseResult:
    """Build every case with ``release`` (or take ``built_side`` from :func:`build_release`) and
    compare with our plan. Our side runs in this thread (not thread-safe: run one at a time)."""
    from .ours import our_layers

    divergences = load_divergences() if divergences is None else divergences
    res = ReleaseResult(release, cases=len(corpus))
    dicts = [c.to_dict() for c in corpus]
    built, summary, seconds = built_side if built_side is not None else build_release(env, release, corpus)
    res.timings["vllm_s"] = round(seconds, 1)
    res.timings["vllm_import_s"] = summary.get("import_s", 0.0)
    res.self_check = list(summary.get("self_check") or ([summary["error"]] if "error" in summary else []))
    by_id = {b["id"]: b for b in built}
    t1 = time.perf_counter()
    for case in dicts:
        theirs = by_id.get(case["id"])
        if theirs is None or theirs["status"] != "ok":
            error = res.not_built[case["id"]] = (theirs or {}).get("error") or "worker produced no record"
            if _REFUSAL.search(error):
                res.refusals[case["id"]] = _refusal_verdict(error, our_layers(case, release))
            continue
        res.built += 1
        if theirs.get("draft_status") == "error":
            res.draft_not_built[case["id"]] = theirs.get("draft_error") or ""
        mine = our_layers(case, release)
        if mine["status"] != "ok":
            res.ours_failed[case["id"]] = mine["error"]
            continue
        compared, agree, diffs = compare_case(release, case, theirs, mine)
        res.layers += compared["kind"]
        res.compared.update(compared)
        res.agree.update(agree)
        for d in diffs:
            res.differences.append(Difference(**{**asdict(d), "divergence": explain(d, divergences)}))
    res.timings["ours_s"] = round(time.perf_counter() - t1, 1)
    return res


_MIXED_SCHEMES = "All MoE projections need to have same quantization scheme but found multiple"
_START_REFUSALS = {"Number of experts in the model must be greater than 0": "finds none (\"Number of experts in the model must be greater than 0",
                   "Should have a `model_type` key": "refuses a config.json without model_type when it reads the config",
                   _MIXED_SCHEMES: _MIXED_SCHEMES,
                   TP_EXCEEDS_EXPERTS: TP_EXCEEDS_EXPERTS,
                   "Unsupported activation": "'Unsupported activation'",
                   **{c.message: f"\"{c.message}\"" for c in MODEL_START_REFUSALS if c.when != "tp_exceeds_experts"}}
"""vLLM's start-up (or config-read) refusal -> what our plan's refusal (exit 2) says for it: the
expert-parallel check (:mod:`moe_oracle.inputs.ep_refusal`), a config without ``model_type``
(``model.py _read_model_type``), the model classes' own checks, quoted
(:mod:`moe_oracle.inputs.model_start_refusals`; a tensor-parallel size above the expert count by the
constant part of vLLM's formatted message; a ``hidden_act`` the model class refuses, which our
checkpoint reader refuses quoting 'Unsupported activation'), and compressed-tensors refusing experts whose
projections fall in different scheme groups (vLLM 0.29.0-0.34.0
Q/compressed_tensors/compressed_tensors_moe/compressed_tensors_moe.py; ours:
``moe_oracle/inputs/checkpoint/formats_ct.py``, which quotes it)."""

_REFUSAL = re.compile(r"^(target|draft): \w+: No \w+ MoE backend supports the deployment configuration"
                      r"|^(target|draft): ValueError: No MXFP8 MoE backends available"
                      r"|^(target|draft): RuntimeError: Trying to create tensor with negative dimension"
                      r"|^(target|draft): ValueError: CompressedTensors WNA16 MoE (with static group scales )?requires|"
                      + "|".join(re.escape(v) for v in _START_REFUSALS))
"""A build that stopped on a verdict our plan can be compared with: the release's selector found
no backend for a layer (vLLM 0.29.0-0.34.0 ``P/oracle/*.py`` ``select_*_moe_backend``; the MXFP8
selector says "No MXFP8 MoE backends available"), the release refused the deployment at start
(:data:`_START_REFUSALS`: its model config refused expert parallelism,
``_verify_with_expert_parallelism``; transformers' AutoConfig found no ``model_type``, vLLM
0.29.0-0.34.0 transformers_utils/config.py ``HFConfigParser.parse``; or the model class refused a
parallel setting), or a method's ``create_weights`` refused every backend and the release cannot
start (``MoeWNA16Method`` with a per-channel group size of -1 divides the hidden size by it and asks
for a negative shape: Q/moe_wna16.py; ``CompressedTensorsWNA16MoEMethod`` with a group size that
does not divide the hidden size or the intermediate size per TP partition, whose scale groups would
cross TP shards: Q/compressed_tensors/compressed_tensors_moe/compressed_tensors_moe_wna16.py;
0.29.0-0.34.0)."""


def _refusal_verdict(error: str, mine: dict[str, Any]) -> str:
    """``agree`` when our plan also selects no kernel for some MoE layer of the refused role (or,
    for a start-up refusal, refuses the deployment the same way), else what it does instead."""
    ours = next((o for v, o in _START_REFUSALS.items() if v in error), None)
    if ours is not None:
        return "agree" if mine["status"] != "ok" and ours in (mine["error"] or "") else f"ours does not refuse at start: {mine['status']} {mine['error'] or ''}"[:300]
    role = error.split(":", 1)[0]
    if mine["status"] != "ok":
        return f"our plan failed: {mine['error']}"[:300]
    picks = Counter(l["experts_class"] for l in mine["layers"] if l["role"] == role)
    if None in picks:
        return "agree"
    return "ours selects " + ", ".join(f"{k} ({n} layers)" for k, n in sorted(picks.items()))


def render(res: ReleaseResult) -> str:
    s = res.summary()
    lines = [f"vLLM {res.release}: {s['built']}/{s['cases']} cases built, {s['layers']} layers compared, "
             f"{s['layers_all_fields_agree']} agree on every field ({100 * res.layer_agreement():.2f} %), "
             f"{s['unexplained']} unexplained differences; times {s['timings']}"]
    lines += [f"  self-check: {p}" for p in res.self_check]
    lines.append("  per field: " + ", ".join(f"{f} {v}" for f, v in s["per_field"].items()))
    for cid, err in sorted(res.not_built.items()):
        verdict = res.refusals.get(cid)
        tag = "" if verdict is None else (" [refused by vLLM; our plan refuses too]" if verdict == "agree" else f" [refused by vLLM; DIFFERS: {verdict}]")
        lines.append(f"  NOT BUILT {cid}{tag}: {err[:300]}")
    for cid, err in sorted(res.draft_not_built.items()):
        lines.append(f"  DRAFT NOT BUILT {cid}: {err[:300]}")
    for cid, err in sorted(res.ours_failed.items()):
        lines.append(f"  OURS FAILED {cid}: {err[:300]}")
    for key, rows in sorted(summarize(res.differences).items()):
        d = rows[0]
        idx = sorted({r.index for r in rows if r.index is not None})
        span = f"{idx[0]}..{idx[-1]}" if len(idx) > 1 else (str(idx[0]) if idx else "-")
        lines.append(f"  DIFF {d.model} @ {d.deployment} [{d.role} layers {span}, {len(rows)}x] {d.field}: vLLM {d.vllm!r} | ours {d.ours!r}" + (f"  (reviewed: {d.divergence})" if d.divergence else ""))
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(allow_abbrev=False, prog="python -m moe_oracle.verify.model_build.driver", description=__doc__)
    parser.add_argument("--env", type=user_path, default=os.environ.get("MOE_ORACLE_VLLM_ENV"))
    parser.add_argument("--releases", nargs="*", default=list(RELEASES))
    parser.add_argument("--full", action="store_true", help="every deployment (default: the CI subset)")
    parser.add_argument("--models", nargs="*", help="only these model names")
    parser.add_argument("--jobs", type=int, default=1)
    parser.add_argument("--out", type=user_path)
    parser.add_argument("--keep", type=user_path, help="keep the workers' case and output files here")
    args = parser.parse_args(argv)
    env = VllmEnv.from_dir(args.env)
    corpus = cases(corpus_dirs(), DEPLOYMENTS if args.full else QUICK_DEPLOYMENTS)
    if args.models:
        corpus = [c for c in corpus if c.model in args.models]
    with ThreadPoolExecutor(max_workers=args.jobs) as pool:
        sides = list(pool.map(lambda r: build_release(env, r, corpus, args.keep), args.releases))
    results = [run_release(env, r, corpus, built_side=side) for r, side in zip(args.releases, sides)]
    report = []
    for res in results:
        print(render(res), flush=True)
        report.append({"summary": res.summary(), "differences": [asdict(d) for d in res.differences]})
    if args.out:
        args.out.write_text(json.dumps(report, indent=1, default=str))
    return 0 if all(not r.unexplained and not r.self_check for r in results) else 1


if __name__ == "__main__":
    sys.exit(main())
