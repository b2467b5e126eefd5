"""The model-build tier's layer reader, on stand-in objects (no vLLM needed)."""

from __future__ import annotations

from types import SimpleNamespace

from moe_oracle.verify.model_build.reader import _hash_routed


def test_hash_routing_is_read_from_the_config_where_it_has_the_field():
    # vLLM 0.31.0+ FusedMoEConfig.has_hash_routing (P/layer.py: hash_indices_table is not None)
    table_router = SimpleNamespace(_hash_indices_table=object())
    assert _hash_routed(SimpleNamespace(has_hash_routing=False), table_router) is False
    assert _hash_routed(SimpleNamespace(has_hash_routing=True), None) is True


def test_before_0_31_the_routers_hash_table_answers():
    # vLLM 0.29.0-0.30.0: no such field; DeepseekV4MoE hands hash_indices_table to FusedTopKBiasRouter
    no_field = SimpleNamespace()
    assert _hash_routed(no_field, SimpleNamespace(_hash_indices_table=object())) is True
    assert _hash_routed(no_field, SimpleNamespace(_hash_indices_table=None)) is False
    assert _hash_routed(no_field, None) is False
