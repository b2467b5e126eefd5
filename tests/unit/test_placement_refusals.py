"""Two other refusals of a non-linear expert placement (besides MoE LoRA's, test_lora_expert_placement.py).

* MoonEP (vLLM 0.31.0-0.34.0 vllm/config/vllm.py ``VllmConfig.__post_init__``): with
  ``all2all_backend == "moonep"`` any ``--expert-placement-strategy`` other than ``linear`` is a
  ValueError at start. The check reads the strategy *requested*, before vLLM's round_robin fallbacks,
  so it binds where the layer would have been placed linearly anyway (no expert groups).
* The FlashInfer MoE-EP megakernels (vLLM 0.32.0-0.34.0 P/experts/flashinfer_moe_ep.py
  ``FlashInferMoeEpExperts.process_weights_after_loading`` -> ``validate_flashinfer_moe_ep_layer``)
  raise when the layer *keeps* round_robin (EP without DP, several expert groups): the selected
  kernel refuses at construction, no fallback.

Before these rules both deployments were answered with a kernel.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from moe_oracle.cli import main
from moe_oracle.core._resources import schema_dir

_SELECT_SCHEMA = json.loads((schema_dir() / "bundled" / "select.schema.json").read_text(encoding="utf-8"))
MOONEP = ("--model", "qwen3-30b-a3b", "--gpu", "H100", "--tp", "2", "--dp", "2", "--ep", "--all2all", "moonep")
MOE_EP = ("--model", "deepseek-r1", "--quant", "nvfp4", "--gpu", "B200", "--tp", "4", "--ep", "--moe-backend", "flashinfer_moe_ep_cutedsl")


def _select(capsys, release: str, *flags: str) -> tuple[int, dict]:
    rc = main(["select", "--package", f"vllm=={release}", *flags, "--json"])
    out = json.loads(capsys.readouterr().out)
    jsonschema.validate(out, _SELECT_SCHEMA)
    return rc, out


def _placement_kept(capsys, *flags: str) -> str:
    main(["explain", "--package", "vllm==0.34.0", *flags, "--json"])
    return json.loads(capsys.readouterr().out)["inputs"]["expert_placement"]["value"]


@pytest.mark.parametrize("release", ["0.31.0", "0.34.0"])
def test_moonep_refuses_a_requested_round_robin_at_start(capsys, release):
    rc, out = _select(capsys, release, *MOONEP, "--expert-placement", "round_robin")
    assert rc == 1 and out["selected"] is None
    (b,) = out["blocking"]
    assert (b["field"], b["observed"], b["rules"], b["raised_at"]) == ("expert_placement_strategy", "round_robin", ["constraint.moonep_linear_placement"], "config")
    # The layer itself would be placed linearly (Qwen3 has no expert groups): the request is what vLLM refuses.
    assert _placement_kept(capsys, *MOONEP, "--expert-placement", "round_robin") == "linear"


def test_moonep_with_linear_placement_selects(capsys):
    rc, out = _select(capsys, "0.34.0", *MOONEP)
    assert rc == 0 and out["selected"]["kernel"] == "moonep_experts"


@pytest.mark.parametrize("release", ["0.32.0", "0.34.0"])
def test_moe_ep_megakernel_refuses_a_kept_round_robin_when_built(capsys, release):
    rc, out = _select(capsys, release, *MOE_EP, "--expert-placement", "round_robin")
    assert rc == 1 and out["selected"] is None
    (b,) = out["blocking"]
    assert (b["field"], b["observed"], b["rules"], b["raised_at"]) == ("expert_placement", "round_robin", ["constraint.flashinfer_moe_ep_linear_placement"], "construction")


@pytest.mark.parametrize("dp", ["1", "2"])
def test_moe_ep_megakernel_runs_where_the_placement_is_linear(capsys, dp):
    """Linear requested, or round_robin with DP (passthrough all2all kernels: vLLM falls back to linear)."""
    placement = ("--expert-placement", "round_robin") if dp == "2" else ()
    rc, out = _select(capsys, "0.34.0", *MOE_EP, "--dp", dp, *placement)
    assert rc == 0 and out["selected"]["kernel"] == "flashinfer_moe_ep_cutedsl_nvfp4"
    assert _placement_kept(capsys, *MOE_EP, "--dp", dp, *placement) == "linear"


def test_no_note_calls_the_refused_moonep_flags_without_effect(capsys):
    """Without DP no all2all kernel runs and Qwen3 would be placed linearly, but MoonEP's start-up
    checks run all the same: the notes said both flags had no effect beside the refusal."""
    main(["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--tp", "2", "--ep", "--all2all", "moonep", "--expert-placement", "round_robin"])
    out = capsys.readouterr().out
    assert "has no effect" not in out
    assert "all2all backend moonep runs no kernels here" in out and "vLLM still makes MoonEP's start-up checks" in out
    assert "[constraint.moonep_linear_placement]" in out


def test_the_placement_fix_comes_before_changing_the_all2all_backend(capsys):
    """Among fixes of equal cost the check's own field comes first: ``--expert-placement linear``
    keeps the all2all backend asked for (it was 11th, behind ten tied ``--all2all`` edits)."""
    main(["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--tp", "2", "--ep", "--all2all", "moonep", "--expert-placement", "round_robin"])
    out = capsys.readouterr().out
    assert "  1. --expert-placement linear  [cost 1, tie] -> triton selected" in out
