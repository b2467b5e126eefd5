"""``run``'s text dead end is ``explain``'s for the same inputs (the runtime view, the probed host).

Before, ``run`` printed the exception trail (``render_failure``: what blocks, then every
candidate on one line each) with no ranked fixes, while ``select`` and ``explain`` ranked them.
"""

from __future__ import annotations

import pytest

from moe_oracle.cli.run import RUN_LEFT_OUT
from moe_oracle.core.config import Device
from moe_oracle.core.vocab import Platform
from tests.cli_capture import cli

pytest.importorskip("torch")  # run refuses to start without the runtime

# gpt-oss-20b's MXFP4 layer: no kernel of our runtime takes mxfp4_w16 (see test_cli's run --json case).
LAYER = ("--model", "gpt-oss-20b")


@pytest.mark.parametrize("extra", [(), ("--all",), ("--moe-backend", "triton")], ids=["closest", "all", "unmapped-request"])
def test_run_prints_what_explain_prints_for_a_dead_end(extra: tuple[str, ...]) -> None:
    code, run_out, run_err = cli("run", *LAYER, "--tokens", "2", *extra)
    assert code == 1, run_err
    code, explain_out, explain_err = cli("explain", "--view", "runtime", "--probe", *LAYER, *extra)
    assert code == 1, explain_err
    # run adds one line: the fixes it left out (none of this layer's fixes changes the GPU).
    assert run_out.replace(f"  Left out: {RUN_LEFT_OUT}\n", "") == explain_out
    assert f"\n  Left out: {RUN_LEFT_OUT}\n" in run_out
    assert "\nFixes, fewest and least disruptive first (each re-checked):\n  1. " in run_out
    assert "\nCandidates (" in run_out


@pytest.fixture()
def cpu_host(monkeypatch: pytest.MonkeyPatch) -> None:
    """This host probed as a CPU, whatever the machine running the test has."""
    monkeypatch.setattr("moe_oracle.inputs.deployment.probe_device", lambda: (Device(Platform.CPU, arch="x86_64", name="this host"), ()))


# torch_grouped_mm runs on CUDA only: on a CPU host, explain's fixes for the request are other GPUs.
GPU_ONLY = ("--model", "qwen3-30b-a3b", "--moe-backend", "torch_grouped_mm")


def test_run_leaves_out_fixes_that_change_the_gpu_and_says_why(cpu_host: None) -> None:
    """Before, run printed explain's ranked fixes, the first of them ``--gpu H20``, which run
    refuses (it runs on this machine). Its search now keeps the device, and the dead end says so."""
    code, explain_out, err = cli("explain", "--view", "runtime", "--probe", *GPU_ONLY)
    assert code == 1, err
    assert "\n  1. --moe-backend auto " in explain_out  # the request is the dead end: dropping it is the smallest change
    assert "\n  2. --gpu " in explain_out  # explain (another machine's answer) offers other GPUs
    code, run_out, err = cli("run", *GPU_ONLY, "--tokens", "2")
    assert code == 1, err
    fixes = run_out.split("Fixes", 1)[1].split("\nRequested backends:", 1)[0]
    assert "--gpu" not in fixes.replace(RUN_LEFT_OUT, "")
    assert fixes.endswith(f"\n  Left out: {RUN_LEFT_OUT}")
    assert "moe-oracle explain --view runtime --gpu NAME" in RUN_LEFT_OUT  # where the GPU fixes are


def test_run_dead_end_fixes_keep_the_device(cpu_host: None) -> None:
    """No fix ``run`` is offered edits the device, with or without a backend request."""
    from moe_oracle.cli.select import dead_end_fixes
    from moe_oracle.core.engine import evaluate
    from moe_oracle.core.oracle import catalog_for_view
    from moe_oracle.inputs.deployment import build_deployment
    from moe_oracle.inputs.operator_inputs import OperatorInputs

    runtime = catalog_for_view("runtime")
    for given in (OperatorInputs(model="qwen3-30b-a3b", moe_backend="torch_grouped_mm", probe=True), OperatorInputs(model="gpt-oss-20b", probe=True)):
        deployment = build_deployment(given, runtime, probe_device_default=True)
        decision = evaluate(runtime, deployment.config, deployment.environment)
        assert decision.winner is None
        for keep_device, may_change_gpu in ((False, given.moe_backend is not None), (True, False)):
            found = dead_end_fixes(deployment, decision, runtime, decision.policy, keep_device=keep_device)
            assert any(e.target == "device" for a in found for e in a.edits) == may_change_gpu, (given, keep_device)


def test_run_all_lists_every_candidate() -> None:
    _, closest, _ = cli("run", *LAYER, "--tokens", "2")
    _, every, _ = cli("run", *LAYER, "--tokens", "2", "--all")
    assert "more further from this problem" in closest and "--all lists them" in closest
    assert "--all lists them" not in every and every.count(" REJECTED") > closest.count(" REJECTED")


# A dead end on any device (768 / 16 = 48, no multiple of the 128-wide FP8 block): run prints the
# Device line and its notes without allocating anything.
SHARD = ("--model", "qwen3-30b-a3b-fp8", "--tp", "16", "--tokens", "2")


def test_run_builds_on_this_machine_not_on_an_environment_files_gpu(cpu_host: None, tmp_path) -> None:
    """``run --environment collect-env.txt`` answered for the report's GPU (``Device: H200``) on a
    CPU host: an eligible kernel then failed to build ("device='cpu' is not supported"), and a
    dead end's fixes were for the H200 while saying run builds on this machine's own device."""
    from tests.unit.test_envfile import COLLECT_ENV

    report = tmp_path / "collect.txt"
    report.write_text(COLLECT_ENV, encoding="utf-8")
    code, out, err = cli("run", *SHARD, "--environment", str(report))
    assert code == 1, err
    assert "\nDevice: this host (cpu" in out and "Device: H200" not in out
    assert f"Note: --environment {report}: its GPU 'NVIDIA H200' is not used: this machine's device (run builds the kernel here) wins" in out


def test_run_builds_on_this_machine_not_on_a_config_files_device(cpu_host: None, tmp_path) -> None:
    """A ``--config`` file must name a device; ``run`` (which refuses --gpu) used it instead of
    this machine's, as for the environment file's GPU above."""
    layer = tmp_path / "layer.yaml"
    layer.write_text("model:\n  hf_config: qwen3-30b-a3b-fp8\ndevice:\n  gpu: H200\nparallel:\n  tp_size: 16\n", encoding="utf-8")
    code, out, err = cli("run", "--config", str(layer), "--tokens", "2")
    assert code == 1, err
    assert "\nDevice: this host (cpu" in out and "Device: H200" not in out
    assert f"Note: --config {layer}: its device H200 (cuda SM 90) is not used: this machine's device (run builds the kernel here) wins" in out
