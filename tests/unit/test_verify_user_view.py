"""What the selection tier compares (issue 25): the backend member and the refusal stage, not only the class."""

from __future__ import annotations

from moe_oracle.verify.backend_names import vllm_backend_name
from moe_oracle.verify.cases import Answer
from moe_oracle.verify.ours import rule_stage


def test_one_class_two_activation_variants_disagree():
    bf16 = Answer("ok", "TrtLlmMxfp4ExpertsMonolithic", "standard", vllm_backend_name("mxfp4", "flashinfer_trtllm", "flashinfer_trtllm_mxfp4_monolithic"))
    mxfp8 = Answer("ok", "TrtLlmMxfp4ExpertsMonolithic", "standard", vllm_backend_name("mxfp4", "flashinfer_trtllm_afp8", "flashinfer_trtllm_mxfp4_mxfp8_monolithic"))
    assert (bf16.backend, mxfp8.backend) == ("FLASHINFER_TRTLLM_MXFP4_BF16", "FLASHINFER_TRTLLM_MXFP4_MXFP8")
    assert not bf16.agrees(mxfp8) and bf16.differs_in(mxfp8) == ("backend",)


def test_the_compressed_tensors_mxfp4_early_return_reports_marlin():
    assert vllm_backend_name("mxfp4", "vllm_cutlass", "vllm_cutlass_mxfp4", "shortcut.ct_mxfp4_cutlass") == "MARLIN"
    assert vllm_backend_name("mxfp4", "vllm_cutlass", "vllm_cutlass_mxfp4") == "CUTLASS_MXFP4_MXFP4"


def test_every_release_variant_of_the_ct_mxfp4_early_return_reports_marlin():
    """Each release's copy of the shortcut (``.old``, ``.deep_gemm`` for 0.34.0, ...) keeps vLLM's
    MARLIN member: a new variant without a translation was 15 of 380 MXFP4 disagreements on 0.34.0."""
    import yaml

    from moe_oracle.core._resources import package_dir

    doc = yaml.safe_load((package_dir() / "rules" / "shortcuts.yaml").read_text())
    ids = [e["id"] for e in doc["shortcuts"] if e["id"].startswith(("shortcut.ct_mxfp4_cutlass", "shortcut.ct_mxfp4_marlin"))]
    assert len(ids) >= 6
    assert {i: vllm_backend_name("mxfp4", "vllm_cutlass", "vllm_cutlass_mxfp4", i) for i in ids} == {i: "MARLIN" for i in ids}


def test_refusals_at_different_stages_are_told_apart():
    config = Answer("error", detail="ValidationError", stage="config")
    weights = Answer("error", detail="nothing eligible", stage="construction")
    assert config.agrees(weights)  # both refuse: the status comparison alone cannot tell
    assert not config.same_stage(weights) and config.same_stage(Answer("error", stage="config"))


def test_rule_stage_reads_the_cited_vllm_code():
    assert rule_stage("vLLM 0.29.0-0.33.0 Q/moe_wna16.py MoeWNA16Method.create_weights") == "construction"
    assert rule_stage("vLLM 0.31.0-0.33.0 vllm/config/parallel.py ParallelConfig") == "config"
    assert rule_stage("vLLM 0.29.0-0.33.0 P/layer.py (EPLB even distribution)") == "layer"
    assert rule_stage("vLLM 0.29.0-0.33.0 Q/auto_gptq.py, Q/moe_wna16.py (supports_eplb False); P/routed_experts.py EPLB gate") == "layer"
    assert rule_stage("vLLM 0.33.0 P/oracle/mxfp4.py map_mxfp4_backend") == "selection"
