"""benchmarks/runtime_bench.py --dry-run: the GPU benchmark's whole flow on CPU, in a subprocess.

A GPU session lost a device call to a NameError in the benchmark's numerics check; the dry run
(Triton's interpreter, tiny stand-in layers, fixed stand-in limits, host timer) runs every line the
GPU run runs, so such a bug fails here. Negative controls run the dry run on a copy of the script
with a name broken in the numerics check and in a timed variant, and require it to fail. The peer
path (--peer, vLLM's Triton kernel) needs the folder benchmarks/prepare_peer.py unpacks (git-ignored,
downloaded from the package index): its test runs where ``MOE_ORACLE_PEER`` names one or the
checkout has ``.peer/vllm-*``, and is skipped otherwise.
"""

from __future__ import annotations

import ast
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("triton")

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "benchmarks" / "runtime_bench.py"
# One layer per scheme and adapter: bf16 with biases and swigluoai, fp8 128x128 blocks (with its bf16
# comparison), per-channel fp8 (torch._scaled_grouped_mm emulated on CPU).
MODELS = ["gpt-oss-120b", "deepseek-v3-ep8-fp8", "llama-4-maverick-fp8"]


def _run(script: Path, *args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    return subprocess.run([sys.executable, str(script), "--dry-run", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout)


def _numerics(stdout: str) -> list[dict]:
    """The dicts of the ``numerics ...: {...}`` lines (a nan or inf fails to parse: not finite)."""
    found = []
    for line in stdout.splitlines():
        if line.lstrip().startswith("numerics"):
            found.append(ast.literal_eval(line[line.index("{"):]))
    return found


def _summary_rows(stdout: str, header: str) -> list[list[str]]:
    lines = stdout.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith(header)) + 1
    return [line.split() for line in lines[start:] if line and not line.startswith("#")]


def _assert_finite_numerics(stdout: str, count: int) -> None:
    numerics = _numerics(stdout)
    assert len(numerics) == count, stdout
    for values in numerics:
        errors = {k: v for k, v in values.items() if k != "tokens"}
        assert errors and all(math.isfinite(v) and 0 <= v < 0.1 for v in errors.values()), values


def test_dry_run_runs_the_whole_bench(tmp_path):
    out = tmp_path / "dry.json"
    proc = _run(BENCH, "--models", *MODELS, "--tokens", "8", "--check-tokens", "16", "--portable", "--json", str(out))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    stdout = proc.stdout
    # What cannot run on CPU is named, not skipped silently.
    assert "CUDA graphs and CUDA events not run on CPU" in stdout and "torch._scaled_grouped_mm (CUDA only): not run on CPU" in stdout
    assert "limits before (DRY RUN: fixed stand-ins, not measured)" in stdout
    assert stdout.count("# DRY RUN stand-in of ") == len(MODELS)
    _assert_finite_numerics(stdout, len(MODELS))
    assert "normwise_vs_reference_gemm1_bf16" in stdout  # the per-channel fp8 branch of the check ran
    assert "# DRY RUN summary" in stdout and "# DRY RUN passed" in stdout
    rows = _summary_rows(stdout, "model ")
    assert {(r[0], int(r[1])) for r in rows} == {(m, t) for m in MODELS for t in (8, 16)}
    assert all(math.isfinite(float(r[2])) and float(r[2]) > 0 for r in rows)  # ours ms
    record = json.loads(out.read_text())
    assert record["dry_run"] is True and record["device"].startswith("CPU (DRY RUN")
    assert [m["model"] for m in record["models"]] == MODELS
    kernels = {r["kernel"] for m in record["models"] for r in m["rows"]}
    assert {"ours", "gemms+act", "gemms", "portable", "bf16 ours", "bf16 gemms+act", "bf16 gemms"} <= kernels


def _broken_copy(tmp_path: Path, old: str, new: str) -> Path:
    text = BENCH.read_text()
    assert text.count(old) >= 1, old
    bad = tmp_path / "runtime_bench.py"
    bad.write_text(text.replace(old, new, 1))
    return bad


def test_dry_run_catches_a_dangling_name_in_the_numerics_check(tmp_path):
    # negative control: the bug that cost a GPU session (the numerics check reading router logits under a name nothing binds)
    bad = _broken_copy(tmp_path, "ref = reference_moe(x, logits, weights, spec)", "ref = reference_moe(x, router_logits, weights, spec)")
    proc = _run(bad, "--models", "mixtral-8x7b", "--tokens", "8", "--check-tokens", "8")
    assert proc.returncode != 0
    assert "NameError" in proc.stderr and "router_logits" in proc.stderr, proc.stderr[-2000:]


def test_dry_run_fails_when_a_timed_variant_fails(tmp_path):
    # negative control: a variant's error is caught and reported (not fatal on the GPU); a dry run must still exit non-zero
    bad = _broken_copy(tmp_path, "h = torch._grouped_mm(buf, experts._w13_t, offs=offs)", "h = torch._grouped_mm(buff, experts._w13_t, offs=offs)")
    proc = _run(bad, "--models", "mixtral-8x7b", "--tokens", "8", "--check-tokens", "8")
    assert proc.returncode == 1, proc.stdout[-2000:] + proc.stderr[-2000:]
    assert re.search(r"DRY RUN FAILED: mixtral-8x7b 8 gemms\+act: NameError: name 'buff'", proc.stdout), proc.stdout[-2000:]


def _peer_folder() -> Path | None:
    named = os.environ.get("MOE_ORACLE_PEER")
    if named:
        return Path(named).expanduser()
    found = sorted((ROOT / ".peer").glob("vllm-*/fused_moe.py"))
    return found[-1].parent if found else None


def test_dry_run_of_the_peer_bench(tmp_path):
    folder = _peer_folder()
    if folder is None:
        pytest.skip("no peer folder (run benchmarks/prepare_peer.py, or set MOE_ORACLE_PEER to its output)")
    out, csv = tmp_path / "peer.json", tmp_path / "peer.csv"
    models = ["mixtral-8x7b", "qwen3-30b-a3b-fp8"]
    proc = _run(BENCH, "--peer", str(folder), "--models", *models, "--tokens", "8", "--check-tokens", "8", "--rounds", "1", "--json", str(out), "--csv", str(csv))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    stdout = proc.stdout
    assert "peer (DRY RUN): vLLM's kernel under the interpreter" in stdout
    _assert_finite_numerics(stdout, len(models))
    assert "# DRY RUN peer summary" in stdout and "# DRY RUN passed" in stdout
    rows = _summary_rows(stdout, "layer ")
    assert [(r[0], int(r[1])) for r in rows] == [(m, 8) for m in models]
    assert all(math.isfinite(float(r[2])) and math.isfinite(float(r[3])) for r in rows)  # ours ms, peer ms
    record = json.loads(out.read_text())
    assert record["dry_run"] is True and "dry_run_patch" in record["peer"]
    assert len(csv.read_text().splitlines()) == 1 + sum(len(m["rows"]) for m in record["models"])
