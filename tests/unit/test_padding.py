"""The sizes vLLM builds a MoE layer's weights with (moe_oracle/core/padding.py): the all2all kernels'
hidden-size round-up, each backend's branch of the MXFP4 and unquantized round-ups per release, the
normalized fields create_weights' checks read, and the plan's ``layer_sizes``.

Every expected number is worked out from the vLLM function the test names (release and path), not
read from our tables."""

from __future__ import annotations

import pytest
from packaging.version import Version

from moe_oracle.core.config import Device, MoEConfig, ParallelConfig
from moe_oracle.core.environment import Environment
from moe_oracle.core.normalize import normalize
from moe_oracle.core.oracle import Oracle, default_catalog
from moe_oracle.core.padding import COMPILED_HIDDEN_SIZES, MXFP4_RULES, UNQUANTIZED_RULES, all2all_hidden_size, decision_layer_sizes, layer_sizes, rules_version
from moe_oracle.core.quant import QuantScheme

H200 = Device("cuda", capability=90)
B200 = Device("cuda", capability=100)


# ------------------------------------------------------------------ step 1: the all2all kernels
# vLLM 0.29.0-0.34.0 P/prepare_finalize/deepep_ht.py and deepep_v2.py maybe_roundup_layer_hidden_size:
# hidden * itemsize rounded up to 512 bytes; deepep_ll.py and nixl_ep.py: the first of
# SUPPORTED_HIDDEN_SIZES at or above the hidden size.


@pytest.mark.parametrize(
    ("hidden", "dtype", "all2all", "expected"),
    [
        (2880, "bfloat16", "deepep_high_throughput", 3072),  # 5760 B -> 6144 B (the docstring's own example)
        (2688, "bfloat16", "deepep_high_throughput", 2816),  # Nemotron-3: 5376 B -> 5632 B
        (7168, "bfloat16", "deepep_high_throughput", 7168),  # 14336 B = 28 atoms: unchanged
        (2880, "float16", "deepep_v2", 3072),
        (2880, "float32", "deepep_v2", 2944),  # 11520 B -> 11776 B = 2944 floats
        (1000, "bfloat16", "deepep_high_throughput", 1024),
        (2880, "bfloat16", "deepep_low_latency", 3072),
        (1000, "bfloat16", "deepep_low_latency", 2048),
        (8192, "bfloat16", "nixl_ep", 8192),
        (2688, "bfloat16", "nixl_ep", 3072),
        (9000, "bfloat16", "deepep_low_latency", 9000),  # vLLM raises; the P/F tables refuse it (max_hidden)
        (2880, "bfloat16", "none", 2880),
        (2880, "bfloat16", "mori_high_throughput", 2880),  # P/all2all_utils.py pads only DeepEP and NIXL
        (2880, "bfloat16", "allgather_reducescatter", 2880),
    ],
    ids=lambda v: str(v),
)
def test_all2all_round_up(hidden, dtype, all2all, expected):
    assert all2all_hidden_size(hidden, dtype, all2all) == expected


def test_compiled_hidden_sizes_are_sorted_as_vllm_asserts():
    assert list(COMPILED_HIDDEN_SIZES) == sorted(set(COMPILED_HIDDEN_SIZES))


def _config(hidden: int = 2880, intermediate: int = 2880, *, quant=(None, None), device=B200, tp=1, dp=8, ep=True, a2a="deepep_high_throughput", **kw) -> MoEConfig:
    return MoEConfig(num_experts=128, top_k=4, hidden_size=hidden, intermediate_size=intermediate, device=device, quant=QuantScheme(*quant),
                     parallel=ParallelConfig(tp_size=tp, dp_size=dp, use_ep=ep, all2all_backend=a2a), **kw)


def _values(config: MoEConfig) -> dict:
    cat = default_catalog()
    return dict(normalize(config, Environment((("vllm", "0.33.0"),), frozenset(), True), cat.package_names, cat.env_vars).values)


def test_padded_hidden_size_needs_the_all2all_kernels():
    # use_all2all_kernels = use_ep and dp > 1 (vLLM 0.29.0-0.34.0 P/config.py FusedMoEParallelConfig).
    assert _values(_config())["padded_hidden_size"] == 3072
    assert _values(_config(dp=1, tp=8))["padded_hidden_size"] == 2880
    assert _values(_config(ep=False))["padded_hidden_size"] == 2880


def test_padded_groups_read_the_padded_hidden_size():
    # CT WNA16 create_weights: hidden_size % group_size with the padded hidden size (vLLM 0.33.0
    # Q/compressed_tensors/compressed_tensors_moe/compressed_tensors_moe_wna16.py).
    v = _values(_config(intermediate=2816, quant=("int4_static", None), weight_group_size=128))
    assert (v["weight_groups_aligned"], v["padded_weight_groups_aligned"]) == (False, True)
    v = _values(_config(intermediate=2816, quant=("int4_static", None), weight_group_size=128, a2a="allgather_reducescatter"))
    assert (v["weight_groups_aligned"], v["padded_weight_groups_aligned"]) == (False, False)


# ------------------------------------------------------------------ step 2: the method's own, by backend


def _mx(backend: str, *, platform: str = "cuda", arch: str = "none", selector: str = "generic", method: str | None = "mxfp4", activation: str = "swigluoai",
        hidden: int = 2880, partition: int = 360, padded_hidden: int | None = None, version: str | None = "0.33.0") -> tuple[int, int]:
    values = {"hidden_size": hidden, "padded_hidden_size": padded_hidden or hidden, "intermediate_size_per_partition": partition, "all2all": "none",
              "weight_quant": "mxfp4_static", "mxfp4_selector": selector, "quant_method": method, "platform": platform, "gpu_arch": arch, "activation": activation}
    s = layer_sizes(values, backend, Version(version) if version else None)
    return s.padded_hidden_size, s.padded_intermediate_size_per_partition


# vLLM 0.33.0 P/oracle/mxfp4.py mxfp4_round_up_hidden_size_and_intermediate_size, branch by branch
# (0.32.0 and 0.34.0 have the same function).
@pytest.mark.parametrize(
    ("backend", "kw", "expected"),
    [
        ("flashinfer_cutlass", {}, (2944, 384)),  # FI CUTLASS: 128 / 128 (gpt-oss H200 TP8, seen by the model-construction tier)
        ("flashinfer_cutlass_afp8", {}, (2944, 384)),
        ("flashinfer_trtllm", {"partition": 2880, "padded_hidden": 3072}, (3072, 2944)),  # TRT-LLM: hidden 256, intermediate 128 (B200 DP8 DeepEP HT)
        ("flashinfer_trtllm_afp8", {}, (3072, 384)),
        ("marlin", {"partition": 2880, "padded_hidden": 3072}, (3072, 2944)),  # MARLIN / BATCHED_MARLIN: 256 / 128 (H100 DeepEP LL)
        ("marlin", {"platform": "xpu"}, (2944, 384)),  # XPU Marlin: hidden 128
        ("deep_gemm", {}, (2944, 384)),
        ("vllm_cutlass", {}, (2944, 384)),  # CUTLASS_MXFP4_MXFP4 (0.32.0+)
        ("emulation", {"partition": 720}, (2880, 736)),  # OCP MX block 32
        ("cpu", {"platform": "cpu", "partition": 700}, (2880, 704)),  # AMX BLOCK_N 32
        ("b12x", {}, (2880, 360)),  # b12x plans for the exact sizes
        ("flashinfer_moe_ep_cutedsl", {}, (2880, 360)),  # the megakernel validates itself (0.32.0+)
        ("triton", {}, (2880, 384)),  # the last branch: intermediate 64 only
        ("humming", {}, (2880, 384)),
        ("triton", {"platform": "rocm", "arch": "gfx942"}, (3072, 512)),  # ROCm: 256 / 256
        ("aiter", {"platform": "rocm", "arch": "gfx942"}, (3072, 512)),  # GPT-OSS passes no activation: 256
        ("aiter", {"platform": "rocm", "arch": "gfx942", "selector": "deepseek_v4", "method": "fp8", "activation": "silu"}, (2944, 384)),  # Mxfp4MoEMethod passes SiLU: 128
        ("aiter", {"platform": "rocm", "arch": "gfx942", "selector": "deepseek_v4", "method": "fp8", "activation": "swigluoai"}, (3072, 512)),
        ("triton_unfused", {"platform": "rocm", "arch": "gfx942", "selector": "deepseek_v4", "method": "fp8", "activation": "situ"}, (2944, 384)),  # matmul_ogs block_k 128 before CDNA4
        ("triton_unfused", {"platform": "rocm", "arch": "gfx950", "selector": "deepseek_v4", "method": "fp8", "activation": "situ"}, (3072, 512)),  # CDNA4: 256
        ("aiter_mxfp4_mxfp4", {"platform": "rocm", "arch": "gfx950"}, (3072, 384)),  # W4A4: hidden 256, intermediate 128
    ],
    ids=lambda v: str(v),
)
def test_mxfp4_round_up_0_33(backend, kw, expected):
    assert _mx(backend, **kw) == expected


@pytest.mark.parametrize(
    ("backend", "kw", "version", "expected"),
    [
        # vLLM 0.31.0: no AITER_MXFP4_MXFP4 branch (one ROCm alignment for both sizes: 256).
        ("aiter_mxfp4_mxfp4", {"platform": "rocm", "arch": "gfx950"}, "0.31.0", (3072, 512)),
        # vLLM 0.29.0-0.30.0: no TRITON_UNFUSED branch on ROCm (256); AITER with SiTU/SiLU is 128.
        ("triton_unfused", {"platform": "rocm", "arch": "gfx942", "selector": "deepseek_v4", "method": "fp8", "activation": "situ"}, "0.30.0", (3072, 512)),
        ("aiter", {"platform": "rocm", "arch": "gfx942", "selector": "deepseek_v4", "method": "fp8", "activation": "situ"}, "0.29.0", (2944, 384)),
        ("triton_unfused", {"platform": "rocm", "arch": "gfx942", "selector": "deepseek_v4", "method": "fp8", "activation": "situ"}, "0.31.0", (2944, 384)),
    ],
    ids=lambda v: str(v),
)
def test_mxfp4_round_up_older_releases(backend, kw, version, expected):
    assert _mx(backend, version=version, **kw) == expected


def test_methods_without_their_own_round_up_keep_step_one():
    # CompressedTensorsW4A4Mxfp4MoEMethod and the NVFP4 / FP8 methods inherit FusedMoEMethodBase's
    # maybe_roundup_sizes (vLLM 0.29.0-0.34.0 P/fused_moe_method_base.py): the all2all step only.
    assert _mx("marlin", selector="compressed_tensors", method="compressed-tensors", padded_hidden=3072) == (3072, 360)
    values = {"hidden_size": 2688, "padded_hidden_size": 2816, "intermediate_size_per_partition": 1856, "all2all": "deepep_high_throughput",
              "weight_quant": "nvfp4_static", "mxfp4_selector": "none", "quant_method": "modelopt", "platform": "cuda", "gpu_arch": "none", "activation": "relu2_no_mul"}
    sizes = layer_sizes(values, "flashinfer_trtllm", Version("0.33.0"))
    assert (sizes.padded_hidden_size, sizes.padded_intermediate_size_per_partition) == (2816, 1856)
    assert [s.rule for s in sizes.steps] == ["pad.all2all.deepep_high_throughput"]


def _unq(backend: str, partition: int, version: str) -> int:
    values = {"hidden_size": 2048, "padded_hidden_size": 2048, "intermediate_size_per_partition": partition, "all2all": "none",
              "weight_quant": "none", "mxfp4_selector": "none", "quant_method": "none", "platform": "rocm", "gpu_arch": "gfx942", "activation": "silu"}
    return layer_sizes(values, backend, Version(version)).padded_intermediate_size_per_partition


@pytest.mark.parametrize(
    ("backend", "partition", "version", "expected"),
    [
        # vLLM 0.31.0-0.34.0 P/oracle/unquantized.py unquantized_round_up_hidden_size_and_intermediate_size
        ("flashinfer_trtllm", 96, "0.31.0", 128),
        ("flashinfer_trtllm", 96, "0.30.0", 96),  # 0.29.0-0.30.0 UnquantizedFusedMoEMethod has no round-up of its own
        ("aiter", 96, "0.32.0", 128),  # aiter_moe_intermediate_alignment: 64 up to 192 (96 -> 128)
        ("aiter", 320, "0.33.0", 384),  # 128 above 192
        ("aiter", 160, "0.33.0", 192),
        ("aiter", 96, "0.31.0", 96),  # 0.31.0 pads only FLASHINFER_TRTLLM
        ("triton", 96, "0.33.0", 96),
    ],
    ids=lambda v: str(v),
)
def test_unquantized_round_up(backend, partition, version, expected):
    assert _unq(backend, partition, version) == expected


def test_every_rule_cites_the_vllm_function_it_transcribes():
    for rule in MXFP4_RULES:
        assert "mxfp4_round_up_hidden_size_and_intermediate_size" in rule.reference, rule.id
    for rule in UNQUANTIZED_RULES:
        assert "unquantized_round_up_hidden_size_and_intermediate_size" in rule.reference, rule.id
    assert len({r.id for r in MXFP4_RULES + UNQUANTIZED_RULES}) == len(MXFP4_RULES) + len(UNQUANTIZED_RULES)


def test_an_unmodelled_release_uses_its_stand_in_rules():
    from moe_oracle.core.versions import EngineRelease, Known

    newer = EngineRelease("vllm", "vLLM", "0.40.0", Known.DECLARED, "", False, "0.34.0")
    assert rules_version(newer) == Version("0.34.0")
    assert rules_version(None) is None


# ------------------------------------------------------------------ the engine and the plan


def _env(release: str, *packages: str) -> Environment:
    pins = {"flashinfer-python": "0.7.2.post1", "deep-ep": "1.0", "deep-gemm": "1.0"}
    return Environment((("vllm", release), *((p, pins[p]) for p in packages)), frozenset(), True)


def test_ct_w4a8_fp8_at_hidden_2880_is_built_under_deepep_and_refused_without():
    # vLLM 0.33.0 compressed_tensors_moe_w4a8_fp8.py create_weights asserts hidden_size % 256 on the
    # size maybe_roundup_sizes returned: 3072 under DeepEP HT, 2880 otherwise (issue 25).
    oracle = Oracle(default_catalog())
    env = _env("0.33.0", "deep-ep")
    cfg = _config(quant=("int4_static", "fp8_dynamic_token"), device=H200, quant_method="compressed-tensors", weight_group_size=128, intermediate=2816)
    decision = oracle.explain(cfg, env)
    assert decision.kernel == "vllm_cutlass_w4a8"
    sizes = decision_layer_sizes(decision)
    assert (sizes.hidden_size, sizes.padded_hidden_size) == (2880, 3072)
    refused = oracle.explain(_config(quant=("int4_static", "fp8_dynamic_token"), device=H200, quant_method="compressed-tensors", weight_group_size=128, intermediate=2816, tp=8, dp=1, ep=False), env)
    failures = {f.rule: f.field for f in refused.candidate("vllm_cutlass_w4a8").failures}
    assert failures.get("constraint.ct_w4a8_fp8_hidden_256") == "padded_hidden_size"


def test_no_kernel_no_sizes():
    oracle = Oracle(default_catalog())
    decision = oracle.explain(_config(quant=("int4_static", "fp8_dynamic_token"), device=H200, quant_method="compressed-tensors", weight_group_size=128, intermediate=2816, tp=8, dp=1, ep=False), _env("0.33.0"))
    assert decision.winner is None and decision_layer_sizes(decision) is None


def test_plan_reports_the_checkpoint_and_the_padded_sizes():
    # gpt-oss-20b on B200, DP8 + EP over DeepEP HT: vLLM 0.33.0 built hidden 3072 (DeepEP HT) and
    # intermediate 2944 (TRT-LLM MXFP4: 128), as the model-construction tier read from its layers.
    import json

    import jsonschema

    from moe_oracle.core._resources import schema_dir
    from moe_oracle.explain.plan import build_plan
    from moe_oracle.inputs.hardware import lookup_hardware
    from tests.golden.regen_plans import checkpoint

    oracle = Oracle(default_catalog(), _env("0.33.0", "flashinfer-python", "deep-ep", "deep-gemm"))
    plan = build_plan(checkpoint("gpt-oss-20b"), oracle, device=lookup_hardware("B200").device,
                      parallel=ParallelConfig(tp_size=1, dp_size=8, use_ep=True, all2all_backend="deepep_high_throughput"))
    group = plan.moe_groups()[0]
    assert group.decision.selected.backend == "flashinfer_trtllm"
    record = plan.to_dict()
    sizes = record["groups"][0]["layer_sizes"]
    assert (sizes["hidden_size"], sizes["padded_hidden_size"]) == (2880, 3072)
    assert (sizes["intermediate_size_per_partition"], sizes["padded_intermediate_size_per_partition"]) == (2880, 2944)
    assert [(s["rule"], s["field"]) for s in sizes["padding"]] == [("pad.all2all.deepep_high_throughput", "hidden_size"), ("pad.mxfp4.trtllm", "intermediate_size_per_partition")]
    jsonschema.validate(json.loads(json.dumps(record, default=str)), json.loads((schema_dir() / "bundled" / "plan.schema.json").read_text()))
    assert "weights padded: hidden 2880 -> 3072" in plan.render_text()


def test_the_selection_tier_compares_the_padded_sizes():
    from moe_oracle.verify.cases import Answer

    vllm = Answer("ok", "MarlinExperts", "standard", "MARLIN", sizes=(3072, 2944))
    ours = Answer("ok", "MarlinExperts", "standard", "MARLIN", sizes=(3072, 2880))
    assert not vllm.agrees(ours) and vllm.differs_in(ours) == ("sizes",)
    assert vllm.agrees(Answer("ok", "MarlinExperts", "standard", "MARLIN"))  # a side that built no method: not compared
    assert Answer.from_dict(vllm.to_dict()) == vllm  # JSON round trip (the worker's records)
