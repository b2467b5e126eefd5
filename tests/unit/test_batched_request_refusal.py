"""``--moe-backend batched_triton`` without a batched all2all: vLLM selects BatchedTritonExperts,
then raises when it builds the kernel.

On the parent commit, ``select --model qwen3-30b-a3b --gpu H100 --tp 2 --moe-backend
batched_triton`` answered ``triton_batched + batched_local_xpu`` (exit 0, one ``unchecked``
warning), pairing the experts with XPU's local batched prepare/finalize. vLLM builds the P/F from
the deployment, not from the experts: ``BatchedPrepareAndFinalize`` only on XPU (0.29.0-0.34.0
P/all2all_utils.py maybe_make_prepare_finalize), elsewhere MoEPrepareAndFinalizeNoDPEPModular
(or the naive DP/EP one, or the all2all's), and building the kernel raises (0.34.0
P/oracle/base.py make_moe_kernel ValueError; 0.29.0-0.33.0 make_unquantized_moe_kernel builds
the experts without max_num_tokens: TypeError).
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from moe_oracle.cli import main
from moe_oracle.core._resources import schema_dir

QWEN = ["--model", "qwen3-30b-a3b", "--moe-backend", "batched_triton"]
RELEASES = ["0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0"]


def _select_json(capsys, *args: str) -> tuple[int, dict]:
    rc = main(["select", *QWEN, *args, "--json"])
    return rc, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize(
    ("parallel", "rule", "built"),
    [
        pytest.param(["--tp", "2"], "triton_batched.standard_prepare_finalize", "no_dp_ep_modular", id="tp2"),
        pytest.param(["--dp", "2"], "triton_batched.standard_prepare_finalize", "naive_dp_ep_modular", id="dp2"),
        pytest.param(["--dp", "2", "--ep", "--all2all", "deepep_high_throughput"], "triton_batched.standard_all2all", "deepep_high_throughput", id="deepep_ht"),
    ],
)
def test_refused_at_construction_on_the_prepare_finalize_vllm_builds(capsys, release, parallel, rule, built):
    rc, out = _select_json(capsys, "--gpu", "H100", "--package", f"vllm=={release}", *parallel)
    jsonschema.validate(out, json.loads((schema_dir() / "bundled" / "select.schema.json").read_text(encoding="utf-8")))
    assert rc == 1 and out["selected"] is None and not [w for w in out["warnings"] if w["code"] == "unchecked"]
    [blocker] = out["blocking"]
    assert (blocker["code"], blocker["rules"], blocker["raised_at"]) == ("pairing_incompatible", [rule], "construction")
    assert main(["select", *QWEN, "--gpu", "H100", "--package", f"vllm=={release}", *parallel]) == 1
    head = capsys.readouterr().out.splitlines()[0]
    assert "then refuses the layer: vLLM raises when it builds the selected kernel" in head and f"it builds here, {built} (" in head


def test_the_batched_all2all_and_xpu_still_build_it(capsys):
    rc, out = _select_json(capsys, "--gpu", "H100", "--dp", "2", "--ep", "--all2all", "deepep_low_latency")
    assert rc == 0 and out["selected"]["kernel"] == "triton_batched" and out["selected"]["prepare_finalize"] == "deepep_low_latency"
    rc, out = _select_json(capsys, "--gpu", "ARC_B580", "--tp", "2")
    assert rc == 0 and out["selected"]["prepare_finalize"] == "batched_local_xpu"


def test_on_xpu_the_all2all_kernels_take_the_local_batched_path_away(capsys):
    """With EP over DP the all2all kernels are on, so vLLM skips the XPU batched path and builds the
    naive DP/EP P/F (P/all2all_utils.py); the parent commit selected it with a warning."""
    rc, out = _select_json(capsys, "--gpu", "ARC_B580", "--dp", "2", "--ep")
    assert rc == 1 and out["selected"] is None
    assert [(b["rules"], b["raised_at"]) for b in out["blocking"]] == [(["triton_batched.xpu_all2all"], "construction")]


def test_a_refusal_after_selection_carries_its_stage(capsys):
    """Every kernel refused after selection names where vLLM raises (``raised_at``), as a refusal
    before selection does: Kimi-K2.5's EPLB gate runs when the layer is built."""
    assert main(["select", "--model", "kimi-k2.5", "--gpu", "B200", "--tp", "8", "--ep", "--eplb", "--json"]) == 1
    [blocker] = json.loads(capsys.readouterr().out)["blocking"]
    assert (blocker["rules"], blocker["raised_at"]) == (["constraint.ct_wna16_eplb"], "layer")


@pytest.mark.parametrize(("release", "rule"), [("0.34.0", "request.unquantized"), ("0.33.0", "request.unquantized"), ("0.32.0", "request.unquantized.v0_29")])
def test_an_unmapped_unquantized_request_cites_the_map_by_a_neutral_id(capsys, release, rule):
    """``--moe-backend deep_gemm`` on an unquantized layer cited ``request.unquantized.marlin_auto``:
    the id of the 0.33.0+ request map named after its difference from the older one (marlin read
    as auto), which read as if Marlin blocked DeepGEMM. The newest map now has the family's plain
    id and the older one a release suffix, as the WNA16 and W4A8 maps do."""
    assert main(["select", "--model", "qwen3-30b-a3b", "--gpu", "H100", "--moe-backend", "deep_gemm", "--package", f"vllm=={release}", "--json"]) == 1
    [blocker] = json.loads(capsys.readouterr().out)["blocking"]
    assert (blocker["field"], blocker["observed"], blocker["rules"]) == ("moe_backend", "deep_gemm", [rule])


@pytest.mark.parametrize("release", RELEASES)
def test_on_xpu_expert_parallelism_over_tp_alone_keeps_the_local_batched_path(capsys, release):
    """EP with one DP rank runs no all2all kernels (P/config.py use_all2all_kernels needs DP, PCP or
    sequence parallelism), so vLLM 0.29.0-0.34.0 P/all2all_utils.py maybe_make_prepare_finalize
    still builds XPU's BatchedPrepareAndFinalize. The parent commit gated the P/F on use_ep and
    answered with an ``unchecked`` warning that the kernel fails when it is built."""
    rc, out = _select_json(capsys, "--gpu", "ARC_B580", "--tp", "2", "--ep", "--package", f"vllm=={release}")
    assert rc == 0 and out["selected"]["kernel"] == "triton_batched" and out["selected"]["prepare_finalize"] == "batched_local_xpu"
    assert not [w for w in out["warnings"] if w["code"] == "unchecked"]
