"""MoE LoRA under expert parallelism needs linear expert placement from vLLM 0.34.0 on.

vLLM 0.34.0 vllm/lora/layers/fused_moe.py ``FusedMoEWithLoRA._ep_check`` raises ValueError under
EP when the layer's placement (``MoERunner.expert_placement_strategy``, the one its
``ExpertMapManager`` ended with after P/expert_map_manager.py ``determine_expert_placement_strategy``)
is not ``linear``, before its all2all and sequence-parallel assertions; 0.29.0-0.33.0 have no
such check. vLLM keeps a requested ``round_robin`` only for layers with more than one expert group,
no redundant experts or EPLB, and no all2all kernels other than DeepEP low-latency / NIXL EP.

The parent commit read ``--expert-placement`` / the serve line's ``--expert-placement-strategy``
for ``plan``'s rank lines only: ``--serve 'vllm serve deepseek-ai/DeepSeek-R1 -tp 8
--enable-expert-parallel --enable-lora --expert-placement-strategy round_robin'`` was answered
``triton + no_dp_ep_modular`` under 0.34.0, which refuses it when it wraps the layers for LoRA.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from moe_oracle.cli import main
from moe_oracle.core._resources import schema_dir
from moe_oracle.core.config import ParallelConfig
from moe_oracle.core.decision import NoEligibleKernelError
from moe_oracle.core.errors import ConfigError
from moe_oracle.core.oracle import Oracle, default_catalog
from moe_oracle.inputs.deployment import build_deployment
from moe_oracle.inputs.operator_inputs import OperatorInputs

RULE = "constraint.lora_ep_linear_placement"
BEFORE = ["0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"]
DEEPSEEK_RR = "vllm serve deepseek-ai/DeepSeek-R1 -tp 8 --enable-expert-parallel --enable-lora --expert-placement-strategy round_robin"
_SELECT_SCHEMA = json.loads((schema_dir() / "bundled" / "select.schema.json").read_text(encoding="utf-8"))


def _select(capsys, release: str, *flags: str) -> tuple[int, dict]:
    rc = main(["select", "--gpu", "H200", "--package", f"vllm=={release}", *flags, "--json"])
    out = json.loads(capsys.readouterr().out)
    jsonschema.validate(out, _SELECT_SCHEMA)
    return rc, out


def _blocking(out: dict) -> list[tuple[str, str, str, list[str], str]]:
    return [(b["code"], b["field"], b["observed"], b["rules"], b["raised_at"]) for b in out["blocking"]]


REFUSED = [
    pytest.param(("--model", "deepseek-r1", "--tp", "8", "--ep", "--lora", "--expert-placement", "round_robin"), id="flags"),
    pytest.param(("--serve", DEEPSEEK_RR), id="serve_line"),
]


@pytest.mark.parametrize("flags", REFUSED)
def test_0_34_refuses_round_robin_placement_under_lora_and_ep(capsys, flags):
    rc, out = _select(capsys, "0.34.0", *flags)
    assert rc == 1 and out["selected"] is None
    assert _blocking(out)[0] == ("lora_unsupported", "expert_placement", "round_robin", [RULE], "lora")
    hint = out["blocking"][0]["hint"]
    assert "--expert-placement-strategy linear" in hint and "disable expert parallelism" in hint and "disable LoRA" in hint


def test_the_placement_check_is_reported_before_the_all2all_assertion(capsys):
    """_ep_check raises the placement ValueError first; the all2all assertion after it fails too."""
    rc, out = _select(capsys, "0.34.0", "--model", "deepseek-r1", "--tp", "8", "--ep", "--all2all", "deepep_low_latency", "--lora", "--expert-placement", "round_robin")
    assert rc == 1
    assert [b["rules"] for b in out["blocking"]] == [[RULE], ["constraint.lora_ep_all2all"]]


def test_in_a_dead_end_too_the_placement_comes_before_the_all2all(capsys):
    """With DP 8 over DeepEP LL no kernel is eligible (a dead end, not a refusal after selection);
    among its blockers that reject every candidate, ties go in the tables' check order, which is
    vLLM's (the blockers were ordered by field name, all2all_backend first)."""
    rc, out = _select(capsys, "0.34.0", "--model", "deepseek-r1", "--dp", "8", "--ep", "--all2all", "deepep_low_latency", "--lora", "--expert-placement", "round_robin")
    assert rc == 1 and out["selected"] is None
    assert [b["rules"][0] for b in out["blocking"][:2]] == [RULE, "constraint.lora_ep_all2all"]


@pytest.mark.parametrize("release", BEFORE)
@pytest.mark.parametrize("flags", REFUSED[:2])
def test_releases_before_0_34_keep_the_layer(capsys, release, flags):
    rc, out = _select(capsys, release, *flags)
    assert rc == 0 and out["selected"] is not None, out


@pytest.mark.parametrize(
    "flags",
    [
        # No expert groups: vLLM places linearly whatever was asked (a note says so).
        pytest.param(("--model", "qwen3-30b-a3b", "--tp", "8", "--ep", "--lora", "--expert-placement", "round_robin"), id="no_expert_groups"),
        # EPLB: round-robin is not supported with it.
        pytest.param(("--model", "deepseek-r1", "--tp", "8", "--ep", "--eplb", "--lora", "--expert-placement", "round_robin"), id="eplb"),
        # All2all kernels run (EP over DP) with allgather_reducescatter, which keeps no round-robin routing tables.
        pytest.param(("--model", "deepseek-r1", "--dp", "8", "--ep", "--lora", "--expert-placement", "round_robin"), id="allgather_all2all_kernels"),
        pytest.param(("--model", "deepseek-r1", "--tp", "8", "--ep", "--lora", "--expert-placement", "linear"), id="linear"),
        pytest.param(("--model", "deepseek-r1", "--tp", "8", "--ep", "--lora"), id="default_linear"),
        pytest.param(("--model", "deepseek-r1", "--tp", "8", "--lora", "--expert-placement", "round_robin"), id="no_ep"),
    ],
)
def test_0_34_keeps_the_layer_where_vllm_places_linearly_or_there_is_no_ep(capsys, flags):
    rc, out = _select(capsys, "0.34.0", *flags)
    assert rc == 0 and out["selected"] is not None, out
    assert RULE not in json.dumps(out)


def test_a_fallback_to_linear_is_noted(capsys):
    rc, out = _select(capsys, "0.34.0", "--model", "qwen3-30b-a3b", "--tp", "8", "--ep", "--lora", "--expert-placement", "round_robin")
    assert rc == 0
    assert any("round_robin has no effect on this layer: vLLM places its experts linearly" in n and "expert group" in n for n in out["notes"]), out["notes"]


def test_the_python_door_refuses_it(capsys):
    """The one door (``build_deployment``) carries the operator's placement into the config."""
    catalog = default_catalog()
    given = OperatorInputs(model="deepseek-r1", gpu="H200", tp=8, ep=True, lora=True, expert_placement="round_robin", package=("vllm==0.34.0",))
    dep = build_deployment(given, catalog)
    assert dep.config.parallel.expert_placement_strategy == "round_robin"
    with pytest.raises(NoEligibleKernelError) as err:
        Oracle(catalog, dep.environment).select(dep.config, dep.environment)
    decision = err.value.decision
    assert decision.normalized.values["expert_placement"] == "round_robin"
    assert decision.refused_kernel == "triton"


def test_why_not_proposes_linear_placement(capsys):
    rc, out = _select(capsys, "0.34.0", "--serve", DEEPSEEK_RR)
    assert rc == 1
    fixes = {f["flags"]: f for f in out["fixes"]}
    fix = fixes["--expert-placement linear"]
    assert fix["serve_line"]["edits"] == "--expert-placement-strategy linear"
    assert fix["winner_after"] == "triton"


def test_explain_shows_the_placement_the_layer_uses(capsys):
    assert main(["explain", "--gpu", "H200", "--package", "vllm==0.34.0", "--model", "deepseek-r1", "--tp", "8", "--ep", "--lora", "--expert-placement", "round_robin"]) == 1
    text = capsys.readouterr().out
    assert "Device: H200 (cuda SM 90); tp=8 dp=1 ep=8 dispatch=none format=standard placement=round_robin lora" in text
    assert f"expert_placement = round_robin, allowed one of [linear]: the engine selects triton (TritonExperts), then refuses the layer (lora_unsupported) [{RULE}]" in text


def test_plan_refuses_every_moe_group_and_still_places_round_robin(capsys):
    rc = main(["plan", "--gpu", "H200", "--package", "vllm==0.34.0", "--model", "deepseek-r1", "--tp", "8", "--ep", "--lora", "--expert-placement", "round_robin", "--json"])
    plan = json.loads(capsys.readouterr().out)
    assert rc == 1 and plan["ok"] is False
    moe = [g for g in plan["groups"] if g.get("kernel") is not None or g.get("blocking")]
    assert moe and all(RULE in {r for b in g["blocking"] for r in b["rules"]} for g in moe)
    assert plan["deployment"]["expert_placement"] == "round_robin" and plan["placement"]["256"]["strategy"] == "round_robin"


def test_a_config_file_gives_the_placement(tmp_path, capsys):
    doc = {"model": {"num_experts": 64, "top_k": 4, "hidden_size": 2048, "intermediate_size": 768, "num_expert_group": 8, "topk_group": 4, "routing_method": "deepseek_v3"},
           "device": {"gpu": "H200"}, "parallel": {"tp_size": 4, "use_ep": True, "expert_placement_strategy": "round_robin"}, "lora": True}
    path = tmp_path / "layer.json"
    path.write_text(json.dumps(doc))
    rc, out = _select(capsys, "0.34.0", "--config", str(path))
    assert rc == 1 and [b["rules"] for b in out["blocking"]] == [[RULE]]
    doc["parallel"]["expert_placement_strategy"] = "striped"
    path.write_text(json.dumps(doc))
    assert main(["select", "--config", str(path), "--package", "vllm==0.34.0"]) == 2
    assert "expert_placement_strategy" in capsys.readouterr().err


def test_the_config_refuses_an_unknown_placement():
    with pytest.raises(ConfigError) as err:
        ParallelConfig(expert_placement_strategy="striped")
    issue = err.value.issues[0]
    assert (issue.path, issue.value, issue.allowed) == ("$.parallel.expert_placement_strategy", "striped", ["linear", "round_robin"])


@pytest.mark.parametrize("groups", [None, 1, 8])
@pytest.mark.parametrize(
    "parallel",
    [
        ParallelConfig(tp_size=8, use_ep=True),
        ParallelConfig(tp_size=8),
        ParallelConfig(dp_size=8, use_ep=True),
        ParallelConfig(dp_size=8, use_ep=True, all2all_backend="deepep_low_latency"),
        ParallelConfig(tp_size=8, use_ep=True, enable_eplb=True),
        ParallelConfig(tp_size=2, pcp_size=2, use_ep=True, all2all_backend="nixl_ep"),
    ],
    ids=["ep_over_tp", "no_ep", "ep_over_dp", "deepep_ll", "eplb", "nixl_ep_over_pcp"],
)
@pytest.mark.parametrize("requested", ["linear", "round_robin"])
def test_the_rules_read_the_placement_plan_shows(parallel, groups, requested):
    """The normalized ``expert_placement`` is the strategy of the per-rank placement (linear without EP)."""
    from dataclasses import replace

    from moe_oracle.core.config import Device, MoEConfig
    from moe_oracle.core.environment import Environment
    from moe_oracle.core.normalize import normalize
    from moe_oracle.core.placement import expert_placement

    par = replace(parallel, expert_placement_strategy=requested)
    config = MoEConfig(num_experts=64, top_k=4, hidden_size=2048, intermediate_size=768, device=Device("cuda", capability=90), num_expert_group=groups, parallel=par)
    placement = expert_placement(64, par, num_expert_group=groups)
    assert normalize(config, Environment(), (), ()).values["expert_placement"] == (placement.strategy if placement is not None else "linear")
