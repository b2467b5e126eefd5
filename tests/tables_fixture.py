"""A small, self-contained table set for engine and loader tests.

Tests build it in a temporary directory, optionally changing parts, so that they
do not depend on the shipped catalog's contents.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

from moe_oracle.core.catalog import Catalog
from moe_oracle.core.loading import load_catalog
from moe_oracle.core.config import Device, MoEConfig, ParallelConfig
from moe_oracle.core.environment import Environment

ANY_PLATFORM = {"cuda": {}, "rocm": {}, "cpu": {}, "xpu": {}}


def _kernel(kid: str, backend: str, interface: str = "modular", fmt: str = "standard", **extra: Any) -> dict[str, Any]:
    entry = {
        "id": kid,
        "backend": backend,
        "interface": interface,
        "activation_format": fmt,
        "adapter": f"tests.fake:{kid.title().replace('_', '')}",
        "provider": "moe_oracle",
        "runtime": "untested",
        "upstream": kid,
        "platforms": {"cuda": {}},
        "supports": {"quant_scheme": ["unquantized"], "activation": ["silu"]},
        "features": {"lora": False, "batch_invariant": False, "eplb": True},
    }
    if interface == "monolithic":
        entry["supports"]["routing_method"] = ["renormalize_naive", "deepseek_v3"]
        entry["supports"]["router_logits_dtype"] = ["bfloat16", "float32"]
    for key, value in extra.items():
        if key == "supports":
            entry["supports"].update(value)
        else:
            entry[key] = value
    return entry


def base_tables() -> dict[str, dict[str, Any]]:
    """relative path -> document."""
    return {
        "kernels/fast.yaml": {
            "kind": "experts",
            "family": "fast",
            "reference": "test",
            "entries": [
                _kernel("fast_monolithic", "fast", "monolithic", platforms={"cuda": {"device_capability": [100]}}, packages={"fastpkg": ">=1.0"}),
                _kernel("fast", "fast", platforms={"cuda": {"device_capability": [100]}}, packages={"fastpkg": ">=1.0"}),
            ],
        },
        "kernels/slow.yaml": {
            "kind": "experts",
            "family": "slow",
            "reference": "test",
            "entries": [
                _kernel("slow", "slow", platforms={"cuda": {"device_capability": {"min": 80}}}, supports={"quant_scheme": ["unquantized", "fp8_block"], "activation": ["silu", "gelu"]},
                        constraints=[{"id": "slow.max_experts", "field": "num_experts", "max": 512, "reason": "shape_unsupported", "hint": "at most 512 experts"}]),
                _kernel("slow_batched", "slow", fmt="batched_experts", platforms={"cuda": {}}),
            ],
        },
        "kernels/ref.yaml": {
            "kind": "experts",
            "family": "ref",
            "reference": "test",
            "entries": [_kernel("ref", "ref", platforms=ANY_PLATFORM, supports={"quant_scheme": ["unquantized", "fp8_block"], "activation": ["silu", "gelu"]})],
        },
        "kernels/optin.yaml": {
            "kind": "experts",
            "family": "optin",
            "reference": "test",
            "entries": [_kernel("optin", "optin", platforms={"cuda": {}})],
        },
        "prepare_finalize/pf.yaml": {
            "kind": "prepare_finalize",
            "reference": "test",
            "entries": [
                {"id": "local_modular", "dispatch": ["none", "allgather_reducescatter"], "interface": "modular", "activation_format": "standard", "carries_router_logits": False,
                 "adapter": "tests.fake:LocalModular", "provider": "moe_oracle", "runtime": "tested", "upstream": "local", "platforms": ANY_PLATFORM},
                {"id": "local_monolithic", "dispatch": ["none"], "interface": "monolithic", "activation_format": "standard", "carries_router_logits": True,
                 "adapter": "tests.fake:LocalMonolithic", "provider": "moe_oracle", "runtime": "tested", "upstream": "local", "platforms": ANY_PLATFORM},
                {"id": "ll", "dispatch": ["deepep_low_latency"], "interface": "modular", "activation_format": "batched_experts", "carries_router_logits": False,
                 "adapter": "tests.fake:LL", "provider": "moe_oracle", "runtime": "tested", "upstream": "ll", "platforms": {"cuda": {}}, "packages": {"deep-ep": ""}},
                {"id": "ht", "dispatch": ["deepep_high_throughput"], "interface": "modular", "activation_format": "standard", "carries_router_logits": False,
                 "adapter": "tests.fake:HT", "provider": "moe_oracle", "runtime": "tested", "upstream": "ht", "platforms": {"cuda": {}}},
            ],
        },
        "rules/priority.yaml": {
            "kind": "priority",
            "fallback": ["ref"],
            "orders": [
                {"id": "order.cuda", "when": {"platform": ["cuda"]}, "backends": ["fast", "slow", "optin"], "reference": "test"},
                {"id": "order.other", "when": {"platform": ["rocm", "cpu", "xpu", "tpu"]}, "backends": ["slow"], "reference": "test"},
            ],
            "adjustments": [
                {"id": "adjust.slow_first_on_ampere", "when": {"platform": ["cuda"], "device_capability": [80]}, "move": ["slow"], "to": "front", "kind": "performance", "reason": "test", "reference": "test"},
            ],
            "opt_in_only": [{"id": "optin.only", "backend": "optin", "reason": "opt-in for the test", "reference": "test"}],
        },
        "rules/aliases.yaml": {
            "kind": "aliases",
            "backends": {"quick": {"backends": ["fast"]}},
            "all2all": {"naive": {"to": "allgather_reducescatter", "status": "removed", "reference": "test"}},
        },
        "rules/engine.yaml": {
            "kind": "engine",
            "name": "vllm",
            "display": "vLLM",
            "reference": "test",
            "releases": [
                {"version": "0.31.0", "verified": True, "pins": {"fastpkg": "1.0"}},
                {"version": "0.33.0", "verified": True, "pins": {"fastpkg": "1.2"}},
            ],
            "packages": {"fastpkg": {"newest": "1.3"}},
        },
        "rules/environment.yaml": {
            "kind": "environment",
            "variables": [{"name": "VLLM_BATCH_INVARIANT", "type": "bool", "parse": "int", "default": False, "doc": "test", "reference": "test"}],
        },
        "rules/known_bad.yaml": {
            "kind": "known_bad",
            "entries": [{"id": "bad.fast_monolithic_gelu", "kernels": ["fast_monolithic"], "when": {"routing_method": ["deepseek_v3"], "num_experts": {"min": 300}}, "hint": "test crash", "reference": "test"}],
        },
    }


def write_tables(root: Path, tables: dict[str, dict[str, Any]] | None = None) -> list[Path]:
    """Write ``tables`` (default: :func:`base_tables`) under ``root``; returns the three directories."""
    tables = copy.deepcopy(tables if tables is not None else base_tables())
    for rel, doc in tables.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    dirs = [root / "kernels", root / "prepare_finalize", root / "rules"]
    for d in dirs:
        d.mkdir(parents=True, exist_ok=True)
    return dirs


def load(root: Path, tables: dict[str, dict[str, Any]] | None = None) -> Catalog:
    return load_catalog(write_tables(root, tables))


def after_selection_refusal(root: Path, after_selection: bool = True) -> tuple[Catalog, MoEConfig, Environment]:
    """The base tables plus an ``after_selection`` constraint (EPLB only on ``slow``) and a B200
    TP2 + EP + EPLB layer it refuses after ``fast`` is selected: (catalog, config, environment).
    ``after_selection=False``: the same constraint as a plain filter."""
    t = copy.deepcopy(base_tables())
    t["rules/constraints.yaml"] = {"kind": "constraints", "constraints": [
        {"id": "c.eplb_slow_only", "after_selection": after_selection, "field": "enable_eplb", "in": [False], "applies_to": {"except_backends": ["slow"]}, "reason": "eplb_unsupported", "hint": "EPLB only on slow"}]}
    cfg = MoEConfig(num_experts=8, top_k=2, hidden_size=1024, intermediate_size=512, device=Device("cuda", capability=100), parallel=ParallelConfig(tp_size=2, use_ep=True, enable_eplb=True))
    return load(root, t), cfg, Environment((("vllm", "0.33.0"), ("fastpkg", "1.2")), frozenset(), True, ())
