"""A config.json's ``n_group: 0``: no expert groups where vLLM's router skips grouping, refused
naming why where vLLM fails on it; and the model classes that pass their own group counts.

Sources (vLLM 0.29.0-0.34.0, the same in every release): model_executor/layers/fused_moe/router/
router_factory.py ``create_fused_moe_router`` (a degenerate grouping, ``num_expert_group <= 1 and
topk_group <= 1``, routes ungrouped when the router's scale is 1.0 or a correction bias is present),
fused_moe/config.py ``get_routing_method_type`` (``(num_expert_group or 0) > 0``),
router/grouped_topk_router.py ``GroupedTopKRouter._compute_routing`` (``valid_grouping`` takes
the experts modulo the groups), 0.29.0 experts/cpu_moe.py / 0.30.0+ router/cpu_router.py (CPU:
the scores reshaped into the groups).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle import Device, MoEConfig
from moe_oracle.core._resources import examples_dir
from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.hf import from_hf_config
from tests.cli_capture import cli

R1 = json.loads((examples_dir() / "deepseek-r1.json").read_text())  # sigmoid, noaux_tc (a correction bias), routed_scaling_factor 2.5
GENERIC = {"num_hidden_layers": 4, "hidden_size": 256, "moe_intermediate_size": 128, "num_local_experts": 16, "num_experts_per_tok": 2}


@pytest.mark.parametrize("topk_group", [0, 1])
def test_zero_groups_with_a_correction_bias_are_no_groups_on_a_gpu(topk_group):
    """n_group 0 was refused ("must be >= 1 ... vLLM fails at start on 0"), though vLLM's
    router factory routes it ungrouped here and reads the routing method as without groups."""
    ck = from_hf_config({**R1, "n_group": 0, "topk_group": topk_group}, platform="cuda")
    assert ck.kwargs["routing_method"].value == "minimax2"
    assert "num_expert_group" not in ck.kwargs and "topk_group" not in ck.kwargs
    evidence = next(p.evidence for p in ck.provenance if p.field == "routing_method")
    assert "router_factory.py" in evidence and "no expert groups" in evidence


def test_zero_groups_without_bias_at_scale_one_are_no_groups():
    ck = from_hf_config({**GENERIC, "scoring_func": "softmax", "norm_topk_prob": True, "n_group": 0, "topk_group": 0})
    assert ck.kwargs["routing_method"].value == "renormalize_naive" and "num_expert_group" not in ck.kwargs


@pytest.mark.parametrize(
    ("cfg", "platform", "words"),
    [
        ({**R1, "n_group": 0, "topk_group": 0}, "cpu", "CPURouter"),
        ({**R1, "n_group": 0, "topk_group": 4}, "cuda", "GroupedTopKRouter"),
        ({**GENERIC, "scoring_func": "softmax", "routed_scaling_factor": 16.0, "n_group": 0, "topk_group": 0}, "cuda", "routed_scaling_factor 16"),
        ({**GENERIC, "n_group": 0}, "cuda", "must be provided"),
    ],
    ids=["cpu", "topk_group-4", "scale-without-bias", "no-topk_group"],
)
def test_zero_groups_where_vllm_fails_are_refused_naming_why(cfg, platform, words):
    with pytest.raises(ConfigError) as info:
        from_hf_config(cfg, platform=platform)
    issue = info.value.issues[0]
    assert issue.path.endswith("n_group") and issue.value == 0 and words in issue.message


def test_cli_answers_a_zero_group_checkpoint_and_refuses_it_on_cpu(tmp_path: Path):
    model = tmp_path / "config.json"
    model.write_text(json.dumps({**R1, "n_group": 0, "topk_group": 0}), encoding="utf-8")
    code, out, err = cli("explain", "--model", str(model), "--gpu", "H200", "--tp", "8")
    assert code == 0, err
    assert "routing minimax2" in out
    code, out, err = cli("explain", "--model", str(model), "--gpu", "CPU_X86_64_AMX")
    assert code == 2 and "$.n_group" in err and "CPURouter" in err


@pytest.mark.parametrize("name", ["lfm2moeforcausallm-synthetic", "hyv3forcausallm-synthetic", "hyv4forcausallm-synthetic"])
@pytest.mark.parametrize("groups", [(0, 0), (8, 4)], ids=["zero", "eight"])
def test_classes_that_pass_their_own_groups_ignore_config_json(name, groups):
    """LFM2-MoE, HY-V3 and HY-V4 hand FusedMoE num_expert_group=1, topk_group=1 whatever
    config.json says; config.json's counts were read instead (0 was refused, 8 used)."""
    cfg = json.loads((examples_dir() / "registry" / f"{name}.json").read_text())
    ck = from_hf_config({**cfg, "n_group": groups[0], "topk_group": groups[1]})
    plain = from_hf_config(cfg)
    assert (ck.kwargs["num_expert_group"], ck.kwargs["topk_group"]) == (1, 1) == (plain.kwargs["num_expert_group"], plain.kwargs["topk_group"])
    assert ck.kwargs["routing_method"] == plain.kwargs["routing_method"]


def test_a_moe_config_of_zero_groups_is_refused_pointing_at_none():
    with pytest.raises(ConfigError) as info:
        MoEConfig(num_experts=8, top_k=2, hidden_size=1024, intermediate_size=512, device=Device("cuda", capability=90), num_expert_group=0, topk_group=0)
    issue = info.value.issues[0]
    assert issue.path.endswith("num_expert_group") and issue.allowed == {"minimum": 1} and "(None" in issue.message
