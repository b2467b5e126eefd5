"""Architectures a release builds through vLLM's Transformers backend before registering them
(checkpoint facts ``zaya_native_model``, ``beam_vllm_config``; checked against each release's
build by the model-construction tier, full-corpus run of 2026-12-04)."""

from __future__ import annotations

import json
from pathlib import Path

from moe_oracle.core.vocab import DType
from moe_oracle.inputs.checkpoint import read_checkpoint

REGISTRY = Path(__file__).resolve().parents[2] / "examples" / "models" / "registry"


def _cfg(name: str) -> dict:
    return json.loads((REGISTRY / name).read_text())


def test_zaya_router_logits_follow_the_build_path():
    cfg = _cfg("zayaforcausallm-synthetic.json")
    old, new = read_checkpoint(cfg, release="0.33.0"), read_checkpoint(cfg, release="0.34.0")
    (o, *_), (n, *_) = old.moe_layers(), new.moe_layers()
    # 0.34.0 zaya.py: float32 router logits; before, the Transformers backend's external routing passes no router dtype
    assert n.kwargs["router_logits_dtype"] == DType.FLOAT32
    assert o.kwargs.get("router_logits_dtype") in (None, o.kwargs["in_dtype"])
    assert any("Transformers backend" in note for note in old.notes) and not any("Transformers backend" in note for note in new.notes)


def test_beam_on_0_32_0_takes_transformers_config_defaults():
    cfg = _cfg("beamforcausallm-synthetic.json")
    assert "mlp_layer_types" not in cfg and "n_group" not in cfg
    old, new = read_checkpoint(cfg, release="0.32.0"), read_checkpoint(cfg, release="0.33.0")
    assert [L.spec.kind for L in old.layers[:4] if L.spec.role == "target"] == ["dense", "dense", "dense", "moe"]
    assert all(L.spec.kind == "moe" for L in new.layers if L.spec.role == "target")
    o, n = old.moe_layers()[0].kwargs, new.moe_layers()[0].kwargs
    assert (o.get("num_expert_group"), o.get("topk_group")) == (8, 4)
    assert n.get("num_expert_group") is None and n.get("topk_group") is None
