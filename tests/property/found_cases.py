"""Cases that broke a property test only beyond CI's derandomized examples (issue 25), kept as
explicit examples: each is replayed every run, by ``@example`` on the property test it broke
and by a plain test (tests/property/test_found_cases.py).

* :data:`MOONEP_SHORTCUT_RAISES` -- vLLM 0.33.0, an unquantized GELU layer on an H200 under the
  MoonEP all2all (DP 2 + EP): the MoonEP shortcut (rules/shortcuts.yaml shortcut.moonep, vLLM
  P/oracle/unquantized.py ``_return_or_raise(MOONEP)``) refuses the layer, yet the record leaves
  ``triton`` ELIGIBLE with ``outranked_by: null`` (schemas/decision.schema.json requires a string
  for an eligible candidate) and ``NoEligibleKernelError`` blames the request's own checks. The fix
  is in moe_oracle/engine.py (out of this change's reach; /work/notes/dt25.md gives the patch):
  the example is ``xfail(strict=True)`` until it lands.
* :data:`CT_W4A8_FP8_OLD_RELEASE` -- int4 weights with FP8 per-token dynamic inputs,
  compressed-tensors, group 32, ``--moe-backend aiter``, A100, ``vllm==0.28.9``: the engine applies
  frontends.yaml ``frontend.ct_w4a8_fp8_to_int8_off_sm90_g32`` (vLLM < 0.31.0), the reference model
  did not (it did not derive ``weight_group_size`` / ``weight_zero_point`` from the config, so the
  rewrite's condition was unknown). Fixed in tests/property/reference_model.py.
* :data:`ADDED_KERNEL_OUTRANKS_WINNER` -- an unquantized 8-expert top-1 layer on an A100 with
  ``--moe-backend batched_triton``; a copy of ``triton_batched`` inserted ahead of it wins, and the
  old winner's prepare/finalize failure (``batched_local_xpu.platform``), waived while it was the
  winner (an ``unchecked`` warning), is a failure again. The invariant compared failures without
  the winner's waived ones; fixed in tests/property/invariants.py. Since batched_triton without a
  batched all2all is refused after selection (vLLM raises at construction), the case is a dead end
  for both; the same bite is kept on :data:`ONE_SIDED_PAYLOAD_AT_CONSTRUCTION` with a copy of
  ``flashinfer_cutlass`` (its waived payload failure).
* :data:`MARLIN_COPY_REORDERS_ASSUMPTIONS` -- FP8 per-tensor weights and dynamic activations on an
  A100, ``vllm==0.28.9`` (the deep tier's seed 20261203): a copy of ``marlin`` at the head of
  kernels/aiter.yaml won (since family files rank by family, the copy goes at the head of marlin's own
  file, where it wins as before), and ``marlin``'s assumptions came out in another order as an eligible
  candidate (read from the whole bit set) than as the winner (read row by row). Candidate records
  now list assumptions in table order, as failures (moe_oracle/core/decision.py).
* :data:`ONE_SIDED_PAYLOAD_AT_CONSTRUCTION` -- FP8 per-tensor static weights and activations on an
  H20 under the FlashInfer one-sided all2all (DP 2 + EP), ``vllm==0.28.9``: the engine selects
  ``flashinfer_cutlass`` with rules/constraints.yaml ``flashinfer_nvlink_one_sided.payload``
  (``checked: construction``) waived, as vLLM checks it only when it builds the P/F; the reference
  model did not read ``checked`` and said ``marlin`` (``failures_complete`` failed in CI's own
  examples at 8f64919). Fixed in tests/property/reference_model.py ``construction_rules``.
* :data:`MORI_EP_V2_BEFORE_034` -- ``VLLM_MORI_EP_V2=''`` on an unquantized A100 layer,
  ``vllm==0.28.9`` (answered for 0.29.0): the engine accepts it, rightly (vLLM reads the variable
  from 0.34.0 only), while the refused-value invariant expected every ``int``-parsed variable of
  the catalog refused whatever the release. Met by CI's own examples once the draws took the
  front ends' rules (``quant_method: fp8``) in; fixed in tests/property/invariants.py
  ``check_refused_env_value``.
* :data:`TRTLLM_LLAMA4_TOP_2_REFUSED` -- an unquantized 8-expert top-2 layer with Llama4 routing on a
  B200, ``vllm==0.28.9``: the engine selects ``flashinfer_trtllm_bf16_monolithic`` and refuses the
  layer after selection (rules/constraints.yaml ``constraint.trtllm_llama4_top_1``: FlashInfer's
  Llama4 routing takes top-1 only), while ``winner_is_first_eligible`` expected the first eligible
  candidate (``flashinfer_cutlass``) to win: the invariant knew only a shortcut's refusal. Fixed in
  tests/property/invariants.py ``check_winner_is_first_eligible``.
* :data:`LORA_ON_A_BATCHED_ALL2ALL` -- an unquantized LoRA layer on an A100 with DeepEP low-latency
  (DP 2, EP), ``vllm==0.28.9`` (read as 0.29.0): the LoRA shortcut returns ``triton``, which fails
  ``triton.lora_batched_all2all_v0_33`` (after selection: building TritonExperts on the batched P/F
  asserts), so the engine refuses the layer, while the reference model waived every failure of a
  shortcut's returned kernel but those binding every kernel. Fixed in
  tests/property/reference_model.py ``Model.selection``.
* :data:`AWQ_LAYER_ON_XPU` -- an AWQ int4 layer given field by field (``--config``) on an Arc B580,
  vLLM 0.34.0 (found by a helper's property run of 2026-12-06): the config-file door notes that
  vLLM refuses one of the methods such a layer's checkpoint can have on XPU
  (inputs/quant_checks.py ``verify_layer_quantization``); the API, given the config alone, has no
  such note, and ``check_cli_agrees`` knew only the door's sequence-parallel note. Fixed there.
"""

from __future__ import annotations

from moe_oracle.core.environment import Environment
from moe_oracle.inputs.hardware import GPU_CATALOG
from moe_oracle.core.quant import QuantScheme
from moe_oracle.core.vocab import Activation, All2AllBackend, RoutingMethod
from tests.property.strategies import Case, pinned

__all__ = ["ADDED_KERNEL_OUTRANKS_WINNER", "AWQ_LAYER_ON_XPU", "CT_W4A8_FP8_OLD_RELEASE", "MARLIN_COPY_REORDERS_ASSUMPTIONS", "MOONEP_SHORTCUT_RAISES", "MORI_EP_V2_BEFORE_034", "ONE_SIDED_PAYLOAD_AT_CONSTRUCTION", "LORA_ON_A_BATCHED_ALL2ALL", "TRTLLM_LLAMA4_TOP_2_REFUSED", "added_kernel_mutation"]

MOONEP_SHORTCUT_RAISES: Case = pinned(
    Environment.declared(packages=["moonep==1.0", "vllm==0.33.0"]),
    device=GPU_CATALOG["H200"].device,
    activation=Activation.GELU,
    moe_backend="triton",
    parallel__dp_size=2,
    parallel__use_ep=True,
    parallel__all2all_backend=All2AllBackend.MOONEP,
)

CT_W4A8_FP8_OLD_RELEASE: Case = pinned(
    Environment.declared(packages=["vllm==0.28.9"]),
    device=GPU_CATALOG["A100"].device,
    quant=QuantScheme("int4_static", "fp8_dynamic_token"),
    quant_method="compressed-tensors",
    weight_group_size=32,
    moe_backend="aiter",
)

ADDED_KERNEL_OUTRANKS_WINNER: Case = pinned(
    Environment.declared(env={"VLLM_ROCM_USE_AITER_MOE": "0", "VLLM_USE_DEEP_GEMM": "0"}),
    device=GPU_CATALOG["A100"].device,
    num_experts=8,
    top_k=1,
    hidden_size=1024,
    intermediate_size=96,
    routing_method=RoutingMethod.RENORMALIZE_NAIVE,
    situ_linear_beta=0.0,
    model_type="deepseek_v3",
    architecture="DeepseekV3ForCausalLM",
    moe_backend="batched_triton",
)


MARLIN_COPY_REORDERS_ASSUMPTIONS: Case = pinned(
    Environment.declared(packages=["vllm==0.28.9"], env={"VLLM_BATCH_INVARIANT": "0", "VLLM_ROCM_USE_AITER_MOE": "0", "VLLM_USE_FLASHINFER_MOE_INT4": "0"}),
    device=GPU_CATALOG["A100"].device,
    num_experts=8,
    top_k=1,
    hidden_size=1024,
    intermediate_size=96,
    routing_method=RoutingMethod.RENORMALIZE_NAIVE,
    quant=QuantScheme("fp8_static_tensor", "fp8_dynamic_tensor"),
    architecture="DeepseekV3ForCausalLM",
)

ONE_SIDED_PAYLOAD_AT_CONSTRUCTION: Case = pinned(
    Environment.declared(packages=["vllm==0.28.9"], env={"VLLM_BATCH_INVARIANT": "0", "VLLM_MOE_USE_DEEP_GEMM": "0", "VLLM_ROCM_USE_AITER": "0", "VLLM_ROCM_USE_AITER_MOE": "0", "VLLM_USE_DEEP_GEMM": "0"}),
    device=GPU_CATALOG["H20"].device,
    num_experts=8,
    top_k=1,
    hidden_size=1024,
    intermediate_size=96,
    routing_method=RoutingMethod.RENORMALIZE_NAIVE,
    quant=QuantScheme("fp8_static_tensor", "fp8_static_tensor"),
    parallel__dp_size=2,
    parallel__use_ep=True,
    parallel__all2all_backend=All2AllBackend.FLASHINFER_NVLINK_ONE_SIDED,
)

TRTLLM_LLAMA4_TOP_2_REFUSED: Case = pinned(
    Environment.declared(packages=["vllm==0.28.9"], env={"VLLM_BATCH_INVARIANT": "0", "VLLM_MOE_USE_DEEP_GEMM": "0", "VLLM_ROCM_USE_AITER": "0", "VLLM_USE_DEEP_GEMM": "0"}),
    device=GPU_CATALOG["B200"].device,
    num_experts=8,
    top_k=2,
    hidden_size=1024,
    intermediate_size=96,
    routing_method=RoutingMethod.LLAMA4,
)

LORA_ON_A_BATCHED_ALL2ALL: Case = pinned(
    Environment.declared(packages=["vllm==0.28.9"], env={"VLLM_BATCH_INVARIANT": "0", "VLLM_MOE_USE_DEEP_GEMM": "0", "VLLM_ROCM_USE_AITER": "0", "VLLM_ROCM_USE_AITER_MOE": "0", "VLLM_USE_DEEP_GEMM": "0"}),
    device=GPU_CATALOG["A100"].device,
    num_experts=8,
    top_k=1,
    hidden_size=1024,
    intermediate_size=96,
    routing_method=RoutingMethod.RENORMALIZE_NAIVE,
    parallel__dp_size=2,
    parallel__use_ep=True,
    parallel__all2all_backend=All2AllBackend.DEEPEP_LOW_LATENCY,
    lora=True,
    moe_backend="aiter",
)

AWQ_LAYER_ON_XPU: Case = pinned(
    Environment.declared(packages=["vllm==0.34.0"]),
    device=GPU_CATALOG["ARC_B580"].device,
    quant=QuantScheme("int4_static_asym", None),
    quant_method="awq",
    weight_group_size=128,
)

MORI_EP_V2_BEFORE_034: tuple[Case, tuple[str, str]] = (
    pinned(
        Environment.declared(packages=["vllm==0.28.9"]),
        device=GPU_CATALOG["A100"].device,
        num_experts=1,
        top_k=1,
        hidden_size=1024,
        intermediate_size=96,
    ),
    ("VLLM_MORI_EP_V2", ""),
)
"""(case, (variable, value)) of ``test_env_values_the_engine_refuses_are_bad_input``."""


def added_kernel_mutation(source: str = "triton_batched"):  # noqa: ANN201 - table_mutations.Mutation
    """The edit of :data:`ADDED_KERNEL_OUTRANKS_WINNER` (``source`` ``triton_batched``) and of
    :data:`MARLIN_COPY_REORDERS_ASSUMPTIONS` (``marlin``): ``source`` copied as
    ``<source>_fuzz_copy`` (same backend) at the head of ``source``'s own file, so it ranks just
    ahead of ``source`` (within a backend, kernels of one family file rank in file order; a copy in
    another family's file would rank after the backend's own family, core/ranking.py)."""
    from tests.property.table_mutations import _finish, _fresh, _site, shipped_files

    path, j = _site(source)
    doc = _fresh(next(tf for tf in shipped_files() if tf.path == path).data)
    entry = _fresh(doc["entries"][j])
    new_id = entry["id"] = f"{source}_fuzz_copy"
    doc["entries"].insert(0, entry)
    return _finish(f"copy of {source} as {new_id} (backend {entry['backend']}) at {path}[0]", {path: doc}, source, new_id)
