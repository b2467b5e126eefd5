"""run_layer: a selected kernel at given dimensions, timed and compared with the float32 reference.

Tolerances: FP32_ATOL for the float32 reference kernel (it *is* the reference math, so the
error must be ~0); BF16_REL_TOL (normwise) for torch_grouped_mm in bf16 (helpers.py).
"""

from __future__ import annotations

import json

import pytest

from helpers import BF16_REL_TOL, FP32_ATOL
from moe_oracle import Device, MoEConfig, Oracle
from moe_oracle.runtime.runner import RunReport, run_layer


@pytest.fixture(scope="module")
def oracle() -> Oracle:
    return Oracle.default(view="runtime")


def _config(**kw) -> MoEConfig:  # noqa: ANN003
    base = dict(num_experts=16, top_k=4, hidden_size=64, intermediate_size=32, device=Device("cpu", arch="x86_64"), routing_method="renormalize", in_dtype="float32", moe_backend="reference")
    base.update(kw)
    return MoEConfig(**base)


def test_run_layer_reports_time_rates_and_errors(oracle):
    config = _config()
    decision = oracle.select(config)
    report = run_layer(config, decision, tokens=8, layers=2, device="cpu", warmup=1, iters=3, progress=True)
    assert isinstance(report, RunReport)
    assert (report.kernel, report.prepare_finalize) == (decision.kernel, decision.prepare_finalize)
    assert report.experts_adapter == decision.rows[decision.winner].entry.adapter
    assert report.device == "cpu" and report.tokens == 8 and report.layers == 2
    assert len(report.times_ms) == 3 and report.time_ms > 0
    # FLOPs = 2 * T * K * (H * 2I + I * H) = 2 * 8 * 4 * (64 * 64 + 32 * 64)
    assert report.flops == 2 * 8 * 4 * (64 * 64 + 32 * 64)
    # bytes = touched experts * (w13 + w2 in fp32) + input + output (fp32) + logits (fp32)
    assert report.bytes == report.experts_touched * (64 * 64 + 64 * 32) * 4 + 2 * 8 * 64 * 4 + 8 * 16 * 4
    assert 1 <= report.experts_touched <= 16
    assert report.tflops == pytest.approx(report.flops / (report.time_ms * 1e-3) / 1e12)
    assert report.gbps == pytest.approx(report.bytes / (report.time_ms * 1e-3) / 1e9)
    assert report.max_abs_error <= FP32_ATOL and report.max_rel_error <= FP32_ATOL
    json.dumps(report.to_dict())
    assert decision.kernel in report.describe()


def test_run_layer_builds_a_gpu_decision_on_cpu(oracle):
    """torch_grouped_mm is selected for an SM 90 config; its CPU fallback runs here."""
    config = _config(device=Device("cuda", capability=90), in_dtype="bfloat16", moe_backend="torch_grouped_mm", hidden_size=128, intermediate_size=64)
    report = run_layer(config, oracle.select(config), tokens=16, device="cpu", warmup=0, iters=1, progress=False)
    assert report.kernel == "torch_grouped_mm" and report.dtype == "bfloat16"
    assert 0 < report.max_rel_error <= BF16_REL_TOL


def test_max_experts_caps_allocation_and_says_so(oracle):
    config = _config(num_experts=64, top_k=8)
    report = run_layer(config, oracle.select(config), tokens=4, device="cpu", warmup=0, iters=1, progress=False, max_experts=6)
    assert report.num_experts == 6 and report.top_k == 6
    assert any("capped" in note for note in report.notes)
    assert report.max_abs_error <= FP32_ATOL


def test_run_layer_rejects_bad_requests(oracle):
    config = _config()
    decision = oracle.select(config)
    with pytest.raises(ValueError, match="tokens"):
        run_layer(config, decision, tokens=0, device="cpu")
    empty = oracle.select(_config(moe_backend="torch_grouped_mm"), strict=False)  # nothing eligible on CPU
    assert empty.winner is None
    with pytest.raises(ValueError, match="no kernel"):
        run_layer(config, empty, tokens=4, device="cpu")


def test_cli_run_selects_among_what_our_runtime_builds(capsys):
    import json

    from moe_oracle.cli import main

    code = main(["run", "--model", "qwen3-30b-a3b", "--package", "torch==2.13.0", "--max-experts", "2", "--tokens", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["decision"]["view"] == "runtime" and out["decision"]["engine"]["label"] == "vLLM 0.34.0 (assumed: newest modelled)"
    assert out["decision"]["selected"]["adapter"].startswith("moe_oracle.") and out["run"]["kernel"] == out["decision"]["selected"]["kernel"]


def _report(time_ms: float, tflops: float, gbps: float) -> RunReport:
    return RunReport("k", "pf", "a:A", "b:B", "cpu", "bfloat16", "unquantized", 4, 1, 8, 8, 2048, 768, time_ms, (time_ms,), 1, 1, 8, tflops, gbps, 0.0, 0.0)


@pytest.mark.parametrize(("time_ms", "tflops", "gbps", "shown"), [
    (240.0, 0.00126, 0.3, "240.000 ms, 1.26 GFLOP/s, 300 MB/s,"),  # a CPU run: it read "0.00 TFLOP/s"
    (4.697, 307.24, 2366.7, "4.697 ms, 307.24 TFLOP/s, 2366.7 GB/s,"),  # a GPU run reads as before
    (0.0, 0.0, 0.0, "0.000 ms, no FLOP/s or GB/s (the timed calls took less than the timer resolves),"),
], ids=["cpu", "gpu", "unmeasured"])
def test_describe_never_prints_a_rate_rounded_to_zero(time_ms, tflops, gbps, shown):
    text = _report(time_ms, tflops, gbps).describe()
    assert shown in text and "0.00 TFLOP/s" not in text
