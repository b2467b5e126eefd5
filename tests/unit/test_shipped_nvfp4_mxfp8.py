"""NVFP4 and MXFP8 facts of the shipped engine tables, per vLLM release (checked against each
release's own code by ``moe-oracle verify``; these pin the decisions that changed between releases)."""

from __future__ import annotations

import pytest

from moe_oracle import ConfigError, Device, Environment, MoEConfig, Oracle, ParallelConfig
from moe_oracle.core.quant import QuantScheme

NVFP4 = QuantScheme("nvfp4_static", "nvfp4_dynamic")
NVFP4_TOKEN = QuantScheme("nvfp4_static", "nvfp4_dynamic_token")
MXFP8 = QuantScheme("mxfp8_static", "mxfp8_dynamic")


@pytest.fixture(scope="module")
def oracle():
    return Oracle.default()


def env(release: str, *packages: str, **variables: str) -> Environment:
    """Exactly these packages (everything else absent), as the differential harness asks."""
    pairs = [("vllm", release)] + [tuple(p.split("==")) for p in packages]
    return Environment(tuple(pairs), frozenset(), True, tuple(sorted(variables.items())))


def upstream(decision) -> str | None:
    return decision.rows[decision.winner].entry.upstream if decision.winner is not None else None


def cfg(quant=NVFP4, capability=100, quant_method="modelopt", **kw):
    base = dict(num_experts=128, top_k=8, hidden_size=4096, intermediate_size=1536, device=Device("cuda", capability=capability), quant=quant, quant_method=quant_method)
    base.update(kw)
    return MoEConfig(**base)


def test_nvfp4_on_hopper_prefers_humming_from_0_32(oracle):
    c = cfg(capability=90)
    pkgs = ("humming==0.1.19",)
    assert upstream(oracle.explain(c, env("0.31.0", *pkgs))) == "MarlinExperts"
    assert upstream(oracle.explain(c, env("0.32.0", *pkgs))) == "HummingIndexedExperts"


def test_flashinfer_moe_ep_binds_passthrough_from_0_32(oracle):
    par = ParallelConfig(dp_size=2, use_ep=True)
    c = cfg(moe_backend="flashinfer_moe_ep_cutedsl", parallel=par)
    d = oracle.explain(c, env("0.33.0"))
    assert upstream(d) == "FlashInferMoeEpExperts"
    assert d.prepare_finalize == "passthrough"
    with pytest.raises(ConfigError):
        oracle.explain(cfg(moe_backend="flashinfer_moe_ep_cutedsl", parallel=ParallelConfig(dp_size=2, use_ep=True, all2all_backend="deepep_low_latency")), env("0.33.0"))
    with pytest.raises(ConfigError):  # not a --moe-backend choice before 0.32.0 (flashinfer_moe_ep_mega_cutedsl then)
        oracle.explain(c, env("0.31.0"))


def test_b12x_is_opt_in_and_force_a16_makes_it_w4a16(oracle):
    c = cfg(capability=120, activation="swigluoai_uninterleave")
    e = env("0.33.0", "b12x==1.5.1")
    assert upstream(oracle.explain(c, e)) != "B12xExperts"
    assert upstream(oracle.explain(cfg(capability=120, moe_backend="b12x"), e)) == "B12xExperts"
    # B12x refuses SwiGLU-OAI with W4A8; VLLM_B12X_MOE_FP4_FORCE_A16=1 drops the activation key first.
    assert oracle.explain(cfg(capability=120, activation="swigluoai_uninterleave", moe_backend="b12x"), e).winner is None
    forced = env("0.33.0", "b12x==1.5.1", VLLM_B12X_MOE_FP4_FORCE_A16="1")
    assert upstream(oracle.explain(cfg(capability=120, activation="swigluoai_uninterleave", moe_backend="b12x"), forced)) == "B12xExperts"


def test_per_token_nvfp4_modelopt_needs_trtllm(oracle):
    fi = ("flashinfer-python==0.7.2.post1",)
    assert upstream(oracle.explain(cfg(quant=NVFP4_TOKEN), env("0.33.0", *fi))) == "TrtLlmNvFp4ExpertsMonolithic"
    # On SM12x TRT-LLM is not eligible, and ModelOpt refuses whatever else vLLM would select.
    assert oracle.explain(cfg(quant=NVFP4_TOKEN, capability=120), env("0.33.0", *fi)).winner is None


def test_mxfp8_request_names_are_the_oracles(oracle):
    assert upstream(oracle.explain(cfg(quant=MXFP8, capability=80, moe_backend="marlin", quant_method="mxfp8"), env("0.33.0"))) == "MarlinExperts"
    # "emulation" is a --moe-backend choice but not a name the MXFP8 oracle maps: it raises.
    assert oracle.explain(cfg(quant=MXFP8, capability=80, moe_backend="emulation", quant_method="mxfp8"), env("0.33.0")).winner is None
    # Auto reaches the emulation as the last resort.
    assert upstream(oracle.explain(cfg(quant=MXFP8, device=Device("cpu", arch="x86_64"), quant_method="mxfp8"), env("0.33.0"))) == "Mxfp8EmulationTritonExperts"


def test_mxfp8_methods_and_eplb(oracle):
    par = ParallelConfig(tp_size=2, dp_size=2, use_ep=True, enable_eplb=True)
    assert oracle.explain(cfg(quant=MXFP8, capability=80, parallel=par, quant_method="modelopt"), env("0.33.0")).winner is None
    assert upstream(oracle.explain(cfg(quant=MXFP8, capability=80, parallel=par, quant_method="mxfp8"), env("0.33.0"))) == "MarlinExperts"


def test_aiter_mxfp8_by_release(oracle):
    rocm = Device("rocm", arch="gfx950")
    c = cfg(quant=MXFP8, device=rocm, activation="silu", quant_method="mxfp8")
    on = dict(VLLM_ROCM_USE_AITER="1")
    assert upstream(oracle.explain(c, env("0.33.0", "aiter==0.1.14", **on))) == "AiterMxfp8Experts"
    assert upstream(oracle.explain(c, env("0.32.0", "aiter==0.1.14", **on))) != "AiterMxfp8Experts"  # SiLU from 0.33.0
    assert upstream(oracle.explain(c, env("0.33.0", "aiter==0.1.13", **on))) != "AiterMxfp8Experts"  # gate_mode needs >= 0.1.14
