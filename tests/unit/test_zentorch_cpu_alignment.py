"""The portable CPU experts accept any shape where vLLM's zentorch fused-MoE op is registered.

vLLM 0.29.0-0.34.0 P/experts/cpu_moe.py ``CPUUnquantizedExperts.is_supported_config`` returns
supported when ``is_zentorch_moe_config_supported`` holds (ZenCpuPlatform: an AMD Zen CPU with
zentorch; an act-and-mul activation of gelu, gelu_tanh, silu, swigluoai) before it checks the
grouped GEMM's alignment. The differential tier found the case below (0.29.0, case 64dc56f68349:
an x86_64 CPU without AMX with zentorch, hidden 1000, 375 intermediate per partition, swigluoai):
vLLM ran CPUUnquantizedExperts where we refused every kernel on the alignment rules.
"""

from __future__ import annotations

import pytest

from moe_oracle.core.config import Device, MoEConfig, ParallelConfig
from moe_oracle.core.engine import evaluate
from moe_oracle.core.environment import Environment
from moe_oracle.core.oracle import default_catalog


def _layer(cpu_amx: bool | None = False, arch: str = "x86_64") -> MoEConfig:
    return MoEConfig(num_experts=8, top_k=2, hidden_size=1000, intermediate_size=3000, activation="swigluoai",
                     device=Device("cpu", arch=arch, cpu_amx=cpu_amx), parallel=ParallelConfig(tp_size=8))


def _env(release: str, zentorch: bool | None) -> Environment:
    packages = (("vllm", release),) + ((("zentorch", "5.0.2"),) if zentorch else ())
    return Environment(packages=packages, absent=frozenset({"zentorch"}) if zentorch is False else frozenset())


@pytest.mark.parametrize("release", ["0.29.0", "0.34.0"])
def test_zen_cpu_with_zentorch_runs_the_portable_experts(release):
    d = evaluate(default_catalog(), _layer(), _env(release, True))
    assert d.normalized.values["zentorch_moe"] is True
    assert d.winner is not None and d.selected.kernel.startswith("cpu_unquantized")
    assert not d.selected.assumptions


@pytest.mark.parametrize("release", ["0.29.0", "0.34.0"])
def test_without_zentorch_the_alignment_refuses(release):
    d = evaluate(default_catalog(), _layer(), _env(release, False))
    assert d.normalized.values["zentorch_moe"] is False
    assert d.winner is None
    rules = {f.rule for c in d.candidates if c.kernel.startswith("cpu_unquantized") for f in c.failures}
    assert rules == {"cpu_unquantized.hidden_alignment", "cpu_unquantized.intermediate_alignment"}


def test_an_amx_cpu_is_intel_and_never_zen():
    """With AMX the CPU is Intel: plain CpuPlatform even with zentorch installed."""
    d = evaluate(default_catalog(), _layer(cpu_amx=True), _env("0.34.0", True))
    assert d.normalized.values["zentorch_moe"] is False and d.winner is None


def test_unknown_zentorch_is_an_assumption_about_the_condition():
    """An undeclared zentorch abstains; the record names the unknown field (the condition's), not
    the checked one, which is known (1000) and outside what the rule allows."""
    d = evaluate(default_catalog(), _layer(), Environment(packages=(("vllm", "0.34.0"),)))
    assert d.normalized.values["zentorch_moe"] is None
    assert d.selected is not None
    by_rule = {a.rule: a for a in d.selected.assumptions}
    a = by_rule["cpu_unquantized.hidden_alignment"]
    assert a.field == "zentorch_moe"
    assert a.hint.startswith("zentorch_moe is unknown; assumed it is true, so this rule does not check hidden_size") and a.assumed is True
    record = d.to_dict()
    (sel,) = [c for c in record["candidates"] if c["status"] == "selected"]
    assert {x["field"] for x in sel["assumptions"]} == {"zentorch_moe"}


def test_a_cpu_whose_amx_is_unknown_may_be_intel():
    """The catalog's CPU_X86_64 does not say whether it has AMX: with zentorch installed the op is
    still unknown (an AMX CPU is Intel, never ZenCpuPlatform), so the answer rests on an assumption
    instead of taking the CPU for a Zen one silently."""
    d = evaluate(default_catalog(), _layer(cpu_amx=None), _env("0.34.0", True))
    assert d.normalized.values["zentorch_moe"] is None
    assert "zentorch_moe" in {a.field for a in d.selected.assumptions}
