"""The Python API's contract at its doors: what MoEConfig, Device, Provenance, Environment,
Oracle.select and why_not take, what they refuse, and how their errors are headed."""

from __future__ import annotations

import json

import numpy as np
import pytest

from moe_oracle import ConfigError, Device, Environment, MoEConfig, Oracle, ParallelConfig, Provenance, why_not
from moe_oracle.core.config import grouping_problems
from moe_oracle.core.vocab import Source
from moe_oracle.inputs.bounds import model_config_issues
from moe_oracle.inputs.hardware import GPU_CATALOG

H200 = Device("cuda", capability=90)
BASE = {"num_experts": 8, "top_k": 2, "hidden_size": 4096, "intermediate_size": 14336, "device": H200}


def _cfg(**kw):
    return MoEConfig(**{**BASE, **kw})


def _refused(call) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        call()
    return info.value


# --- Provenance -------------------------------------------------------------------------------


def test_provenance_coerces_a_source_string_and_the_decision_record_builds():
    record = Provenance("num_experts", "user_flag", "x")
    assert record.source is Source.USER_FLAG and record == Provenance("num_experts", Source.USER_FLAG, "x")
    decision = Oracle.default().select(_cfg(provenance=(record,)))
    assert decision.to_dict()["provenance"] == [{"field": "num_experts", "source": "user_flag", "evidence": "x"}]


@pytest.mark.parametrize(("args", "field"), [(("num_experts", "bogus", "x"), "source"), (("num_experts", 3, "x"), "source"),
                                             (("num_experts", "user_flag", 3), "evidence"), ((None, "user_flag"), "field")])
def test_provenance_refuses_what_is_not_a_source_at_construction(args, field):
    error = _refused(lambda: Provenance(*args))
    assert error.title() == f"bad Provenance.{field}"
    if field == "source":
        assert error.issues[0].allowed == [s.value for s in Source]


# --- Device -----------------------------------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "field"), [
    ({"platform": "cuda", "capability": 90, "name": ["H200"]}, "name"),
    ({"platform": "cuda", "capability": 90, "name": 123}, "name"),
    ({"platform": "cuda", "capability": 90, "arch": "gfx942"}, "arch"),
    ({"platform": "rocm", "arch": ""}, "arch"),
    ({"platform": "rocm", "arch": "  "}, "arch"),
    ({"platform": "cuda", "cpu_amx": True}, "cpu_amx"),
    ({"platform": "rocm", "arch": "gfx942", "cpu_amx": False}, "cpu_amx"),
    ({"platform": "rocm", "capability": 90}, "capability"),
])
def test_device_cross_field_rules(kwargs, field):
    error = _refused(lambda: Device(**kwargs))
    assert error.title() == f"bad Device.{field}" and error.issues[0].path == f"$.device.{field}"


def test_every_catalog_device_still_builds():
    for entry in GPU_CATALOG.values():
        d = entry.device
        assert Device(d.platform, d.capability, d.arch, d.cpu_amx, d.name) == d
    assert Device("cpu", arch="x86_64", cpu_amx=True).cpu_amx is True


# --- integer-like values ----------------------------------------------------------------------


def test_numpy_and_torch_integers_are_stored_as_int():
    torch = pytest.importorskip("torch")
    plain = _cfg(parallel=ParallelConfig(tp_size=2), weight_block_size=(128, 128))
    for make in (np.int64, np.int32, torch.tensor, np.array):
        cfg = MoEConfig(num_experts=make(8), top_k=make(2), hidden_size=make(4096), intermediate_size=make(14336),
                        device=Device("cuda", capability=make(90)), parallel=ParallelConfig(tp_size=make(2)),
                        weight_block_size=(make(128), make(128)))
        assert cfg == plain and hash(cfg) == hash(plain)
        assert type(cfg.num_experts) is int and type(cfg.device.capability) is int and type(cfg.parallel.tp_size) is int
        assert all(type(v) is int for v in cfg.weight_block_size)
        assert json.dumps(Oracle.default().select(cfg).to_dict()["inputs"]) == json.dumps(Oracle.default().select(plain).to_dict()["inputs"])


@pytest.mark.parametrize("value", [np.bool_(True), np.float64(8.0), 8.0, True, np.array([8]), "8"])
def test_booleans_floats_and_arrays_are_not_integers(value):
    error = _refused(lambda: _cfg(num_experts=value))
    assert error.issues[0].path == "$.num_experts" and "integer" in error.issues[0].message


def test_a_torch_bool_or_one_element_tensor_is_not_an_integer():
    torch = pytest.importorskip("torch")
    for value in (torch.tensor(True), torch.tensor([8]), torch.tensor(8.0)):
        assert _refused(lambda: _cfg(num_experts=value)).issues[0].path == "$.num_experts"


# --- grouped top-k ----------------------------------------------------------------------------


CPU = GPU_CATALOG["CPU_X86_64"].device


@pytest.mark.parametrize(("groups", "topk", "field", "device"), [(8, 16, "topk_group", H200), (0, 0, "num_expert_group", H200), (8, 0, "topk_group", H200),
                                                                 (3, 2, "num_expert_group", CPU), (2**40, 1, "num_expert_group", CPU), (8, 16, "topk_group", CPU)],
                         ids=["topk-past-groups", "zero-groups", "topk-0", "cpu-3-groups", "cpu-huge-groups", "cpu-topk-past-groups"])
def test_moe_config_refuses_groups_vllm_grouped_topk_cannot_run(groups, topk, field, device):
    error = _refused(lambda: _cfg(num_experts=128, routing_method="deepseek_v3", num_expert_group=groups, topk_group=topk, device=device))
    assert field in {i.path[2:] for i in error.issues}
    assert ("cpu_router.py" if device is CPU else "grouped_topk_router.py") in error.issues[0].message


@pytest.mark.parametrize(("groups", "topk"), [(3, 2), (3, 9), (2**40, 1), (128, 4)], ids=["3-groups", "3-groups-topk-9", "huge-groups", "as-many-groups-as-experts"])
def test_moe_config_takes_groups_vllms_router_routes_ungrouped(groups, topk):
    # vLLM 0.29.0-0.34.0 GroupedTopKRouter.valid_grouping: groups that do not divide the experts,
    # or not fewer than the experts, are routed with fused_topk (topk_group unread). Before, these
    # were refused ("must divide the experts ... vLLM fails at start").
    assert _cfg(num_experts=128, routing_method="deepseek_v3", num_expert_group=groups, topk_group=topk).num_expert_group == groups


def test_grouped_topk_rule_is_one_rule_for_both_doors():
    cfg_json = {"model_type": "deepseek_v3", "n_routed_experts": 128, "n_group": 8, "topk_group": 9}
    from_checkpoint = [(i.path.split(".")[-1], i.value, i.allowed) for i in model_config_issues(cfg_json)]
    assert from_checkpoint == [("topk_group", v, allowed) for _, _, v, allowed in grouping_problems(128, 8, 9)]
    assert _cfg(num_experts=256, routing_method="deepseek_v3", num_expert_group=8, topk_group=4).num_expert_group == 8


# --- Environment, Oracle.select, why_not -------------------------------------------------------


@pytest.mark.parametrize(("kwargs", "field"), [({"complete": 1}, "complete"), ({"probed": "no"}, "probed")])
def test_environment_flags_must_be_bools(kwargs, field):
    assert _refused(lambda: Environment(**kwargs)).title() == f"bad Environment.{field}"


def test_select_refuses_a_dict_environment_with_a_type_error_saying_how_to_build_one():
    with pytest.raises(TypeError, match=r"Environment\.declared\(packages="):
        Oracle.default().select(_cfg(), {"vllm": "0.31.0"})


def test_why_not_refuses_a_backend_that_is_not_a_string():
    with pytest.raises(TypeError, match=r"why_not\(backend_name\)"):
        why_not(Oracle.default(), _cfg(), None)


def test_api_errors_name_the_api_parameters_and_the_cli_the_flags():
    cases = [
        (lambda: Environment.declared(packages=["vllm==x==y"]), "bad Environment.packages", "bad --package"),
        (lambda: Environment.declared(packages=["vllm==0.10.0", "vllm==0.9.0"]), "bad Environment.packages", "bad --package"),
        (lambda: why_not(Oracle.default(), _cfg(), "nope"), "bad why_not(backend_name)", "bad --backend"),
        (lambda: why_not(Oracle.default(), _cfg(), "triton", keep={"nope"}), "bad why_not(keep)", "bad --keep"),
        (lambda: Device("cuda", capability=999), "bad Device.capability", "bad --sm"),
    ]
    for call, api, cli in cases:
        error = _refused(call)
        assert str(error).startswith(api) and error.title() == api
        assert str(error.naming_flags()).startswith(cli)


def test_an_env_value_the_release_refuses_is_headed_by_environment_env():
    env = Environment.declared(packages=["vllm==0.34.0"], env={"VLLM_MORI_EP_V2": "yes"})
    rocm = _cfg(device=Device("rocm", arch="gfx942"), parallel=ParallelConfig(dp_size=2, use_ep=True, all2all_backend="mori"))
    error = _refused(lambda: Oracle.default().select(rocm, env, strict=False))
    assert error.title() == "bad Environment.env" and error.naming_flags().title() == "bad --env VLLM_MORI_EP_V2"


# --- redundant experts without EPLB -------------------------------------------------------------


@pytest.mark.parametrize("use_ep", [False, True])
def test_redundant_experts_without_eplb_are_refused_and_not_called_ineffective(use_ep):
    decision = Oracle.default().select(_cfg(parallel=ParallelConfig(tp_size=2, use_ep=use_ep, num_redundant_experts=5)), strict=False)
    assert decision.winner is None
    assert all(any(f.rule == "constraint.redundant_experts_need_eplb" for f in c.failures) for c in decision.candidates)
    assert not any("redundant experts" in note for note in decision.notes)
