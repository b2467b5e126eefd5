"""Prefill context parallelism (``-pcp``, vLLM ``ParallelConfig.prefill_context_parallel_size``)
is a deployment input: the MoE layer counts it as it counts DP.

vLLM 0.29.0-0.34.0 P/config.py ``FusedMoEParallelConfig.make``: ``use_ep = dp_size_ * pcp_size_ *
tp_size_ > 1 and enable_expert_parallel``; the TP group is flattened across DP and PCP
(``flatten_tp_across_dp_and_pcp``) and, with EP, ``ep_size`` is that flattened size;
``use_all2all_kernels = use_ep and (dp_size > 1 or pcp_size > 1 or is_sequence_parallel)``.
vllm/config/parallel.py ``ParallelConfig._validate_parallel_config``: EPLB needs
``tensor_parallel_size * prefill_context_parallel_size * data_parallel_size > 1`` (the same in
every modelled release); 0.29.0 alone refuses PCP with DP ("PCP does not support data
parallelism yet.").

On the parent commit PCP was "not modelled, assumed 1": ``select --serve "vllm serve
deepseek-ai/DeepSeek-R1 -pcp 2 --enable-expert-parallel --enable-eplb"`` exited 2 with "refuses
EPLB without tensor, prefill-context or data parallelism (TP=1, DP=1 ...)" although vLLM accepts
it, and without ``--enable-eplb`` one note said EP was off ("vLLM turns EP on only when TP x DP >
1") while another said "PCP > 1 joins the EP group".
"""

from __future__ import annotations

import pytest

from moe_oracle.core.config import MoEConfig, ParallelConfig
from moe_oracle.core.environment import Environment
from moe_oracle.core.oracle import default_catalog
from moe_oracle.core.placement import expert_placement
from moe_oracle.core.refusals import no_effect_notes, refusals
from moe_oracle.core.engine import evaluate
from moe_oracle.inputs.eplb_defaults import default_redundant_experts
from moe_oracle.inputs.hardware import lookup_hardware
from moe_oracle.inputs.serve import parse_serve
from moe_oracle.verify.run import RELEASES
from tests.cli_capture import cli

H200 = lookup_hardware("H200").device
SERVE = "vllm serve deepseek-ai/DeepSeek-R1 -pcp 2 --enable-expert-parallel"


def _config(**parallel) -> MoEConfig:
    return MoEConfig(num_experts=256, top_k=8, hidden_size=7168, intermediate_size=2048, device=H200, parallel=ParallelConfig(**parallel))


def _values(config: MoEConfig) -> dict:
    """The normalized values the engine selects with (vLLM 0.34.0)."""
    return dict(evaluate(default_catalog(), config, Environment(packages=(("vllm", "0.34.0"),))).normalized.values)


def _release(version: str):
    catalog = default_catalog()
    return catalog.release(Environment(packages=(("vllm", version),)))


@pytest.mark.parametrize("release", RELEASES)
def test_every_release_reads_the_pcp_flag(release):
    for spelling in ("-pcp 2", "--prefill-context-parallel-size 2", "--prefill-context-parallel-size=2"):
        s = parse_serve(f"vllm serve m {spelling}", version=release)
        assert s.pcp == 2 and not any("prefill-context" in n for n in s.notes)


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize(("tp", "pcp", "dp", "refused"), [
    (1, 2, 1, False),  # the report's deployment: TP x PCP x DP = 2
    (1, 1, 1, True),   # TP = PCP = DP = 1: still refused
    (2, 1, 1, False),
    (1, 1, 2, False),
], ids=["pcp2", "all-one", "tp2", "dp2"])
def test_eplb_needs_tp_x_pcp_x_dp_above_one(release, tp, pcp, dp, refused):
    issues = refusals(_config(tp_size=tp, pcp_size=pcp, dp_size=dp, use_ep=True, enable_eplb=True), release=_release(release))
    eplb = [i for i in issues if "EPLB without tensor, prefill-context or data parallelism" in i.message]
    assert bool(eplb) is refused, issues
    if refused:
        assert "TP=1, PCP=1, DP=1" in eplb[0].message and eplb[0].message.startswith(f"vLLM {release} ")


@pytest.mark.parametrize("release", RELEASES)
def test_pcp_with_dp_is_refused_in_0_29_0_only(release):
    config = _config(tp_size=1, pcp_size=2, dp_size=2, use_ep=True)
    issues = [i for i in refusals(config, release=_release(release)) if "PCP does not support data parallelism yet." in i.message]
    assert bool(issues) is (release == "0.29.0")
    # The engine's answer says the same (constraint.pcp_with_dp, ranged <0.30.0).
    d = evaluate(default_catalog(), config, Environment(packages=(("vllm", release),)))
    failing = {f.rule for c in d.candidates for f in c.failures}
    assert ("constraint.pcp_with_dp" in failing) is (release == "0.29.0")
    if release != "0.29.0":
        assert d.kernel is not None


def test_pcp_counts_as_dp_in_the_moe_layer():
    ep = _values(_config(pcp_size=2, use_ep=True))
    assert (ep["use_ep"], ep["ep_size"], ep["moe_tp_size"], ep["all2all"], ep["dispatch"]) == (True, 2, 1, "allgather_reducescatter", "allgather_reducescatter")
    assert ep["intermediate_size_per_partition"] == 2048 and ep["pcp_size"] == 2 and ep["dp_size"] == 1
    tp = _values(_config(pcp_size=2))  # no EP: the experts are sharded over TP x PCP
    assert (tp["use_ep"], tp["ep_size"], tp["moe_tp_size"], tp["all2all"], tp["dispatch"]) == (False, 1, 2, "none", "none")
    assert tp["intermediate_size_per_partition"] == 1024
    mixed = _values(_config(tp_size=2, pcp_size=2, dp_size=2, use_ep=True, all2all_backend="deepep_low_latency"))
    assert (mixed["ep_size"], mixed["dispatch"], mixed["activation_format"]) == (8, "deepep_low_latency", "batched_experts")


def test_the_ep_notes_agree_with_each_other():
    catalog = default_catalog()
    pcp = _config(pcp_size=2, use_ep=True)
    assert not any("no effect" in n for n in no_effect_notes(pcp, _values(pcp), catalog))
    alone = _config(use_ep=True)
    notes = no_effect_notes(alone, _values(alone), catalog)
    assert "expert parallelism has no effect at world size 1: vLLM turns EP on only when TP x PCP x DP > 1" in notes


def test_placement_and_the_default_redundant_count_span_pcp():
    placement = expert_placement(256, ParallelConfig(pcp_size=2, use_ep=True))
    assert placement is not None and placement.ep_size == 2 and [len(r.physical) for r in placement.ranks] == [128, 128]
    config = MoEConfig(num_experts=256, top_k=8, hidden_size=7168, intermediate_size=2048, device=H200, parallel=ParallelConfig(pcp_size=3, use_ep=True, enable_eplb=True))
    new, note = default_redundant_experts(config, "0.34.0")
    assert new.parallel.num_redundant_experts == 2 and "EP=3" in note  # (3 - 256 % 3) % 3


def test_the_reported_serve_line_is_answered():
    code, out, err = cli("select", "--gpu", "H200", "--serve", SERVE + " --enable-eplb")
    assert code == 0 and "refuses EPLB" not in err, (out, err)
    code, out, err = cli("explain", "--gpu", "H200", "--serve", SERVE)
    assert code == 0
    assert "tp=1 dp=1 pcp=2 ep=2 dispatch=allgather_reducescatter" in out
    assert "no effect at world size 1" not in out + err and "PCP > 1 joins" not in out + err
    # TP = PCP = DP = 1 is still refused, naming the serve flag.
    code, out, err = cli("select", "--gpu", "H200", "--serve", "vllm serve deepseek-ai/DeepSeek-R1 --enable-expert-parallel --enable-eplb")
    assert code == 2 and "--serve --enable-eplb: vLLM 0.34.0 refuses EPLB without tensor, prefill-context or data parallelism" in err and "PCP=1" in err


def test_a_config_file_names_pcp(tmp_path):
    layer = "model: {num_experts: 64, top_k: 4, hidden_size: 1024, intermediate_size: 512, activation: silu, quant: fp8_block}\ndevice: {gpu: H200}\n"
    (tmp_path / "pcp.yaml").write_text(layer + "parallel: {pcp_size: 2, use_ep: true, enable_eplb: true}\n", encoding="utf-8")
    code, out, err = cli("explain", "--config", str(tmp_path / "pcp.yaml"))
    assert code == 0 and "pcp=2 ep=2" in out, (out, err)
    (tmp_path / "one.yaml").write_text(layer + "parallel: {use_ep: true, enable_eplb: true}\n", encoding="utf-8")
    code, _, err = cli("select", "--config", str(tmp_path / "one.yaml"))
    assert code == 2 and "$.parallel.enable_eplb" in err and "PCP=1" in err


def test_the_pcp_flag():
    assert cli("select", "--model", "deepseek-r1", "--gpu", "H200", "--pcp", "2", "--ep", "--eplb")[0] == 0
    code, _, err = cli("select", "--model", "deepseek-r1", "--gpu", "H200", "--pcp", "0")
    assert code == 2 and "--pcp" in err
    code, _, err = cli("select", "--model", "deepseek-r1", "--gpu", "H200", "--pcp", "2", "--dp", "2", "--package", "vllm==0.29.0")
    assert code == 2 and "--pcp: vLLM 0.29.0 refuses prefill context parallelism with data parallelism" in err


def test_ep_rank_is_bounded_by_the_whole_ep_group():
    ParallelConfig(pcp_size=2, use_ep=True, ep_rank=1)
    with pytest.raises(Exception, match="tp_size \\* pcp_size \\* dp_size"):
        ParallelConfig(use_ep=True, ep_rank=1)
