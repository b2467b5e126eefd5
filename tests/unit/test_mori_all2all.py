"""vLLM 0.34.0's ``mori`` all2all backend: MoRI EPv1 or EPv2 as ``resolve_mori_all2all`` resolves it
(vllm/config/parallel.py, called from RocmPlatform.check_and_update_config), the EPv2
prepare/finalize's refusals (P/all2all_utils.py even split, P/prepare_finalize/mori_epv2.py
post_init_setup), and the name refused before 0.34.0."""

from __future__ import annotations

import pytest

from moe_oracle import MoEConfig, select
from moe_oracle.core.config import Device, ParallelConfig
from moe_oracle.core.environment import Environment
from moe_oracle.core.errors import ConfigError
from moe_oracle.core.mori import per_tensor_fp8_activations, resolve_mori_ep
from moe_oracle.core.vocab import DType
from moe_oracle.inputs.files import parse_quant

AITER = {"VLLM_ROCM_USE_AITER": "1"}


def _resolve(**kw):
    base = dict(platform="rocm", gpu_arch="gfx950", ep_v2_env=None, sdma_env=None, mori_installed=True, mori_version="1.2.4",
                moe_backend="auto", in_dtype="bfloat16", per_tensor_fp8=False)
    base.update(kw)
    return resolve_mori_ep(**base)


def test_epv2_where_supported_and_unset():
    r = _resolve()
    assert (r.ep_v2, r.reason, r.forced, r.dispatch) == (True, None, False, "mori_epv2")
    assert "one host" in r.note() and "EPv2" in r.note()


@pytest.mark.parametrize(("kw", "reason"), [
    (dict(gpu_arch="gfx942"), "this GPU"),
    (dict(sdma_env="1"), "MORI_ENABLE_SDMA=1"),
    (dict(sdma_env="true"), "MORI_ENABLE_SDMA=1"),
    (dict(moe_backend="aiter_mega_moe"), "aiter_mega_moe"),
    (dict(in_dtype="float16"), "dtype=float16"),
    (dict(per_tensor_fp8=True), "per-tensor FP8"),
    (dict(mori_version="1.2.3"), "older than 1.2.4"),
    (dict(mori_version="dev"), "older than 1.2.4"),
    (dict(mori_installed=False, mori_version=None), "not installed"),
])
def test_unset_falls_back_to_epv1_with_the_first_reason(kw, reason):
    r = _resolve(**kw)
    assert not r.ep_v2 and r.dispatch == "mori_epv1" and reason in r.reason and reason in r.note()


def test_gfx1250_keeps_epv2_under_sdma():
    assert _resolve(gpu_arch="gfx1250", sdma_env="1").ep_v2


def test_explicit_one_forces_epv2_and_zero_epv1():
    forced = _resolve(gpu_arch="gfx942", ep_v2_env="1")
    assert forced.ep_v2 and forced.forced and "this GPU" in forced.reason and "VLLM_MORI_EP_V2=1" in forced.note()
    off = _resolve(ep_v2_env="0")
    assert not off.ep_v2 and off.forced and "VLLM_MORI_EP_V2=0" in off.note()


def test_a_value_vllm_cannot_parse_is_bad_input():
    with pytest.raises(ConfigError, match="VLLM_MORI_EP_V2"):
        _resolve(ep_v2_env="true")


def test_unknown_mori_is_an_assumption():
    r = _resolve(mori_installed=None, mori_version=None)
    assert r.ep_v2 and any("MoRI" in a for a in r.assumptions)
    unversioned = _resolve(mori_version=None)
    assert unversioned.ep_v2 and any("version is not known" in a for a in unversioned.assumptions)


def test_off_rocm_mori_stays_epv1():
    assert _resolve(platform="cuda", gpu_arch=None).dispatch == "mori_epv1"


@pytest.mark.parametrize(("method", "weight", "act", "want"), [
    ("fp8", "fp8_static_tensor", "fp8_dynamic_tensor", True),
    ("fp8", "fp8_static_block128", "fp8_dynamic_group128", False),
    ("compressed-tensors", "fp8_static_channel", "fp8_dynamic_token", False),
    ("compressed-tensors", "fp8_static_tensor", "fp8_static_tensor", True),
    ("modelopt", "nvfp4_static", "nvfp4_dynamic", False),
    (None, "fp8_static_tensor", "fp8_static_tensor", False),
])
def test_per_tensor_fp8_follows_vllms_checkpoint_reading(method, weight, act, want):
    assert per_tensor_fp8_activations(method, weight, act) is want


def _decide(release: str = "0.34.0", *, arch: str = "gfx950", quant: str = "unquantized", dp: int = 8, experts: int = 128, env: dict | None = None, dtype: DType = DType.BFLOAT16, **kw):
    cfg = MoEConfig(num_experts=experts, top_k=8, hidden_size=2048, intermediate_size=768, device=Device("rocm", arch=arch), quant=parse_quant(quant), in_dtype=dtype, **kw,
                    parallel=ParallelConfig(dp_size=dp, use_ep=True, all2all_backend="mori"))
    return select(cfg, env=Environment.declared(packages=[f"vllm=={release}", "aiter==0.1.5", "mori==1.2.4"], env=env or {}), strict=False)


def _unchecked(d) -> list[str]:
    return [w.failure.rule for w in d.warnings if w.code == "unchecked" and w.failure is not None]


def test_mori_selects_on_0_34_0_with_the_resolved_prepare_finalize():
    v2 = _decide(env=AITER)
    assert v2.kernel is not None and v2.prepare_finalize == "mori_epv2" and v2.normalized.values["dispatch"] == "mori_epv2"
    assert any(n.startswith("--all2all mori runs MoRI EPv2") for n in v2.notes)
    v1 = _decide(arch="gfx942", env=AITER)
    assert v1.kernel is not None and v1.prepare_finalize == "mori" and any("EPv1" in n and "this GPU" in n for n in v1.notes)


def test_epv1_needs_aiter_epv2_does_not():
    v1 = _decide(env={"VLLM_MORI_EP_V2": "0"})
    assert v1.kernel is None
    assert _decide().kernel is not None  # EPv2: no AITER assertion (Triton experts, unquantized)


def test_mori_is_refused_before_0_34_0():
    d = _decide("0.33.0", env=AITER)
    assert d.kernel is None
    assert any(f.rule == "constraint.mori_all2all_release" for c in d.candidates for f in c.failures)


def test_epv2_refuses_experts_that_do_not_split_evenly():
    d = _decide(dp=6, env=AITER)  # 128 experts over 6 EP ranks
    assert d.prepare_finalize == "mori_epv2" and "mori_epv2.even_experts" in _unchecked(d)
    assert "mori_epv2.even_experts" not in _unchecked(_decide(dp=8, env=AITER))


def test_epv2_refuses_quantized_inputs_to_non_aiter_experts():
    forced = {"VLLM_MORI_EP_V2": "1"}
    fp8 = dict(quant="fp8_block", quant_method="fp8", weight_block_size=(128, 128))
    triton = _decide(env=forced, **fp8)
    assert triton.kernel is not None and not triton.kernel.startswith("aiter") and "mori_epv2.unquantized_inputs" in _unchecked(triton)
    aiter = _decide(env={**forced, **AITER}, **fp8)
    assert aiter.kernel.startswith("aiter") and "mori_epv2.unquantized_inputs" not in _unchecked(aiter)
    # online int8 (experts_int8) builds a W8A16 quant config: nothing quantized before dispatch
    int8 = _decide(env=forced, quant="int8_channel_token", quant_method="experts_int8")
    assert int8.kernel is not None and "mori_epv2.unquantized_inputs" not in _unchecked(int8)


def test_epv2_takes_the_native_mxfp8_triton_experts():
    """Mxfp8NativeTritonExperts quantizes its rows itself (expects_unquantized_inputs True, vLLM
    0.34.0 P/experts/mxfp8_native_moe.py), so MoRI EPv2's post_init_setup passes; the differential
    tier found vLLM building MoriEPv2PrepareAndFinalize where we said it raises (case 6f812117e4a0)."""
    d = _decide(arch="gfx950", env={"VLLM_MORI_EP_V2": "1"}, quant="mxfp8", quant_method="compressed-tensors")
    assert d.kernel == "triton_mxfp8" and d.prepare_finalize == "mori_epv2"
    assert "mori_epv2.unquantized_inputs" not in _unchecked(d)


def test_forced_epv2_refuses_float16_at_construction():
    d = _decide(env={"VLLM_MORI_EP_V2": "1", **AITER}, dtype=DType.FLOAT16)
    assert d.prepare_finalize == "mori_epv2" and "mori_epv2.bf16" in _unchecked(d)


def test_the_deprecated_mori_names_are_noted_from_0_34_0():
    def notes(release):
        cfg = MoEConfig(num_experts=128, top_k=8, hidden_size=2048, intermediate_size=768, device=Device("rocm", arch="gfx942"), quant=parse_quant("unquantized"),
                        parallel=ParallelConfig(dp_size=8, use_ep=True, all2all_backend="mori_low_latency"))
        d = select(cfg, env=Environment.declared(packages=[f"vllm=={release}", "aiter==0.1.5", "mori==1.2.4"], env=AITER), strict=False)
        return [n for n in d.notes if "deprecated" in n]
    assert notes("0.34.0") and "--all2all mori picks" in notes("0.34.0")[0]
    assert not notes("0.33.0")
