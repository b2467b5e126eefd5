"""Expert groups as vLLM 0.29.0-0.34.0 route them, per path.

* vLLM's router (``GroupedTopKRouter._compute_routing``, router/grouped_topk_router.py) checks
  ``valid_grouping()`` first: groups that do not divide the experts (or are not fewer than them)
  are routed ungrouped (``fused_topk`` / ``fused_topk_bias``), so the modular kernels on CUDA,
  ROCm and XPU run them. Before, moe-oracle refused every such config ("must divide the experts
  ... vLLM fails at start").
* A FlashInfer TRT-LLM monolithic kernel hands the groups to FlashInfer's routing, which checks
  ``num_experts % n_group == 0`` for DeepSeekV3 routing when vLLM's start-up profile run first
  routes: the layer is refused after selection (``constraint.trtllm_groups_divide``).
* CPU's grouped top-k (0.29.0 experts/cpu_moe.py, 0.30.0+ router/cpu_router.py) reshapes with no
  fallback: refused, naming the config.json key.
* ``n_group: null`` (or ``topk_group: null``): the config class keeps ``None`` and the DeepSeek
  model class hands it to ``create_fused_moe_router``, which raises; before, moe-oracle read the
  config class's default 8.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle.inputs.models import examples_dir
from tests.cli_capture import cli
from tests.cli_capture import edited_example as _model, select_json as _select

RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0")






@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("groups", [7, 256], ids=["7-groups", "as-many-as-experts"])
def test_groups_the_router_routes_ungrouped_select_a_modular_kernel(tmp_path: Path, release: str, groups: int) -> None:
    code, record, err = _select("--model", _model(tmp_path, n_group=groups), "--gpu", "H200", "--tp", "8", "--package", f"vllm=={release}")
    assert code == 0, err
    assert record["selected"]["interface"] == "modular"


def test_a_trtllm_monolithic_kernel_is_refused_after_selection_and_a_modular_one_runs(tmp_path: Path) -> None:
    model = _model(tmp_path, n_group=7)
    code, record, err = _select("--model", model, "--gpu", "B200", "--tp", "8")
    assert code == 1, err
    assert record["selected"] is None and [b["rules"] for b in record["blocking"]] == [["constraint.trtllm_groups_divide"]]
    code, record, err = _select("--model", model, "--gpu", "B200", "--tp", "8", "--moe-backend", "triton")
    assert code == 0 and record["selected"]["kernel"] == "triton", err
    # 8 groups divide the 256 experts: the same kernel runs.
    code, record, _ = _select("--model", _model(tmp_path), "--gpu", "B200", "--tp", "8")
    assert code == 0 and record["selected"]["kernel"] == "flashinfer_trtllm_fp8_monolithic"


def test_groups_that_do_not_divide_the_experts_are_refused_on_cpu(tmp_path: Path) -> None:
    code, record, err = _select("--model", _model(tmp_path, n_group=7), "--gpu", "CPU_X86_64")
    assert code == 2
    issue = record["issues"][0]
    assert issue["path"].endswith("$.n_group") and issue["value"] == 7 and "cpu_router.py" in issue["message"]


@pytest.mark.parametrize("key", ["n_group", "topk_group"])
@pytest.mark.parametrize("gpu", ["H200", "CPU_X86_64"])
def test_a_null_group_count_is_refused_as_vllm_raises(tmp_path: Path, key: str, gpu: str) -> None:
    code, record, err = _select("--model", _model(tmp_path, **{key: None}), "--gpu", gpu)
    assert code == 2, err
    issue = record["issues"][0]
    assert issue["path"].endswith(f"$.{key}") and issue["value"] is None
    assert "num_expert_group and topk_group must be provided when use_grouped_topk is True" in issue["message"]


def test_an_absent_group_count_is_the_config_class_default(tmp_path: Path) -> None:
    cfg = json.loads((examples_dir() / "deepseek-r1.json").read_text(encoding="utf-8"))
    del cfg["n_group"]
    path = tmp_path / "absent.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    code, out, err = cli("explain", "--model", str(path), "--gpu", "H200", "--json")
    assert code == 0, err
    provenance = {p["field"]: p for p in json.loads(out)["provenance"]}
    assert "n_group = 8 (absent" in provenance["num_expert_group"]["evidence"]
