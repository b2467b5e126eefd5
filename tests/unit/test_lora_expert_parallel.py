"""MoE LoRA under expert parallelism: what vLLM's LoRA wrapper refuses.

With LoRA, vLLM 0.29.0-0.34.0 wraps every MoE layer in ``FusedMoEWithLoRA`` once the model is
loaded (v1/worker model runner ``load_model`` -> ``load_lora_model``), after every kernel is built.
Its constructor (vllm/lora/layers/fused_moe.py ``_ep_check``) asserts, under EP, that the
all2all backend is ``allgather_reducescatter`` and that the layer is not sequence-parallel. The
parent commit answered ``select --model qwen3-30b-a3b --gpu H100 --tp 2 --dp 4 --ep --lora`` with
``triton + naive_dp_ep_modular`` (Qwen3-MoE passes ``use_sequence_parallel_moe``, true there), and
``--tp 2 --ep --all2all deepep_high_throughput --lora`` with ``triton + no_dp_ep_modular``.
"""

from __future__ import annotations

from dataclasses import replace

import json

import jsonschema
import pytest

from moe_oracle.cli import main
from moe_oracle.core._resources import schema_dir
from moe_oracle.verify.cases import Deployment
from moe_oracle.verify.ours import OurSide

RELEASES = ["0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0"]


def _select(capsys, model: str, release: str, *parallel: str) -> tuple[int, dict]:
    rc = main(["select", "--model", model, "--gpu", "H100", "--lora", "--package", f"vllm=={release}", *parallel, "--json"])
    out = json.loads(capsys.readouterr().out)
    jsonschema.validate(out, json.loads((schema_dir() / "bundled" / "select.schema.json").read_text(encoding="utf-8")))
    return rc, out


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize(
    ("parallel", "rule"),
    [
        pytest.param(("--tp", "2", "--dp", "4", "--ep"), "constraint.lora_ep_sequence_parallel", id="sequence_parallel"),
        pytest.param(("--tp", "2", "--ep", "--all2all", "deepep_high_throughput"), "constraint.lora_ep_all2all", id="deepep_ht_over_tp"),
        pytest.param(("--dp", "4", "--ep", "--all2all", "deepep_high_throughput"), "constraint.lora_ep_all2all", id="deepep_ht_over_dp"),
    ],
)
def test_the_lora_wrapper_refuses_the_layer(capsys, release, parallel, rule):
    rc, out = _select(capsys, "qwen3-30b-a3b", release, *parallel)
    assert rc == 1 and out["selected"] is None
    assert [(b["code"], b["rules"], b["raised_at"]) for b in out["blocking"]] == [("lora_unsupported", [rule], "lora")]


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize(
    ("model", "parallel"),
    [
        pytest.param("qwen3-30b-a3b", ("--tp", "2", "--ep"), id="ep_over_tp"),
        pytest.param("qwen3-30b-a3b", ("--dp", "4", "--ep"), id="ep_over_dp"),
        pytest.param("qwen3-30b-a3b", ("--tp", "2", "--dp", "4"), id="no_ep"),
        # gpt_oss.py MLPBlock: is_sequence_parallel = use_sequence_parallel_moe and lora_config is None
        pytest.param("gpt-oss-20b", ("--tp", "2", "--dp", "4", "--ep"), id="gpt_oss_drops_sequence_parallel"),
    ],
)
def test_allgather_reducescatter_without_sequence_parallelism_keeps_lora(capsys, release, model, parallel):
    rc, out = _select(capsys, model, release, *parallel)
    assert rc == 0 and out["selected"] is not None, out


def test_the_harness_compares_the_lora_wrapper_refusal_where_it_runs_the_wrapper_check():
    """The harness's vLLM side runs the LoRA wrapper's _ep_check under every front end but direct
    (moe_oracle/verify/vllm_late_checks.py), so ours answers the refusal at stage lora there; under
    direct it answers the kernel selected before the wrapper (Answer.later), as for the profile run."""
    dep = Deployment(platform="cuda", capability=90, family="unquantized", front_end="unquantized", num_experts=64, top_k=8,
                     tp_size=2, use_ep=True, all2all_backend="deepep_high_throughput", lora=True, packages=("deep_ep",))
    answer = OurSide("0.34.0").answer(dep)
    assert (answer.status, answer.stage, answer.later) == ("error", "lora", None) and "constraint.lora_ep_all2all" in answer.detail
    answer = OurSide("0.34.0").answer(replace(dep, front_end="direct"))
    assert (answer.status, answer.experts, answer.later) == ("ok", "TritonExperts", "lora: constraint.lora_ep_all2all")


def test_the_lora_early_return_raises_before_the_lora_wrapper(capsys):
    """vLLM 0.34.0 P/oracle/unquantized.py, LoRA: _return_or_raise raises for TritonExperts on a
    FlashInfer NVLink all2all in the oracle, before the LoRA wrapper is built; the wrapper's own
    refusal (after_selection) must not move the answer past selection."""
    rc, out = _select(capsys, "qwen3-30b-a3b", "0.34.0", "--dp", "4", "--ep", "--all2all", "flashinfer_nvlink_two_sided")
    assert rc == 1 and out["selected"] is None
    assert [(b["rules"], b["raised_at"]) for b in out["blocking"]] == [(["triton.supports.all2all"], "selection")]
