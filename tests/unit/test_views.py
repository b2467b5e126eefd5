"""The engine's answer and our runtime's are two table sets: neither view's own limits change the other's answer.

The engine view (kernels/, prepare_finalize/, rules/) says what vLLM runs; the runtime view
(runtime_tables/) says what this package's runtime builds. A runtime entry that ``implements`` an
engine entry inherits that entry's checks (shown below too); everything else is separate.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from moe_oracle import Device, Environment, MoEConfig, Oracle
from moe_oracle.core._resources import runtime_table_dirs, table_dirs
from moe_oracle.core.loading import load_catalog, load_runtime_catalog
from moe_oracle.core.engine import evaluate
from moe_oracle.core.oracle import default_catalog, default_runtime_catalog
from moe_oracle.tools.sampling import sample_configs

B200 = Device("cuda", capability=100)
SAMPLES = 300


def _copy(dirs, root: Path) -> list[Path]:
    out = []
    for d in dirs:
        shutil.copytree(d, root / d.name, ignore=shutil.ignore_patterns("*.py", "__pycache__"))
        out.append(root / d.name)
    return out


def _edit(path: Path, fn) -> None:
    doc = yaml.safe_load(path.read_text(encoding="utf-8"))
    fn(doc)
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")


def _answer(d) -> tuple:
    """What a decision decided, without hashes and fingerprints (the table sets differ in bytes)."""
    return (d.kernel, d.prepare_finalize, d.shortcut, tuple((c.kernel, c.status.value, tuple(f.rule for f in c.failures)) for c in d.candidates), tuple(w.to_dict()["message"] for w in d.warnings))


def test_an_adapter_limit_is_the_runtime_view_s_only():
    config = MoEConfig(num_experts=128, top_k=8, hidden_size=2880, intermediate_size=1024, device=B200)  # hidden % 128 == 64
    engine = Oracle.default().explain(config)
    runtime = Oracle.default(view="runtime").explain(config)
    assert engine.kernel == "flashinfer_trtllm_bf16_monolithic" and engine.view == "engine"
    assert engine.rows[engine.winner].entry.adapter.startswith("vllm.") and "flashinfer_trtllm.adapter_hidden_alignment" not in {c.rule for e in default_catalog().experts for c in e.checks}
    adapter = runtime.candidate("flashinfer_trtllm_bf16_monolithic_adapter")
    assert runtime.view == "runtime" and "flashinfer_trtllm.adapter_hidden_alignment" in {f.rule for f in adapter.failures}
    assert runtime.kernel == "torch_grouped_mm" or runtime.kernel.startswith("reference")


def test_runtime_limits_never_change_the_engine_answer(tmp_path):
    engine_dirs = _copy(table_dirs(), tmp_path / "engine")
    runtime_dirs = _copy(runtime_table_dirs(), tmp_path / "runtime")

    def reject_everything(doc):
        for entry in doc["entries"]:
            entry.setdefault("constraints", []).append({"id": f"{entry['id']}.test_no_experts", "field": "num_experts", "max": 0, "reason": "shape_unsupported", "hint": "test"})

    for path in runtime_dirs[0].glob("*.yaml"):
        _edit(path, reject_everything)
    engine = load_catalog(engine_dirs)
    runtime = load_runtime_catalog(engine, runtime_dirs)
    shipped = default_catalog()
    for config, env in sample_configs(SAMPLES, 11, shipped):
        assert evaluate(runtime, config, env).kernel is None  # the runtime limits bite ...
        assert _answer(evaluate(engine, config, env)) == _answer(evaluate(shipped, config, env))  # ... and the engine does not see them


def test_engine_only_facts_never_change_the_runtime_answer(tmp_path):
    engine_dirs = _copy(table_dirs(), tmp_path / "engine")
    kernels, _, rules = engine_dirs

    def reverse_orders(doc):
        for order in doc["orders"]:
            order["backends"] = list(reversed(order["backends"]))
        doc["adjustments"] = []

    def triton_on_xpu_only(doc):
        for entry in doc["entries"]:
            if entry["id"] == "triton":
                entry["platforms"] = {"xpu": {}}

    def always_shortcut(doc):
        doc["shortcuts"][0]["when"] = {"platform": ["cuda", "rocm", "cpu", "xpu", "tpu"]}

    _edit(rules / "priority.yaml", reverse_orders)
    _edit(kernels / "triton.yaml", triton_on_xpu_only)
    _edit(rules / "shortcuts.yaml", always_shortcut)
    engine = load_catalog(engine_dirs)
    runtime = load_runtime_catalog(engine)
    shipped_engine, shipped_runtime = default_catalog(), default_runtime_catalog()
    changed_engine = 0
    for config, env in sample_configs(SAMPLES, 13, shipped_engine):
        changed_engine += _answer(evaluate(engine, config, env)) != _answer(evaluate(shipped_engine, config, env))
        assert _answer(evaluate(runtime, config, env)) == _answer(evaluate(shipped_runtime, config, env))
    assert changed_engine > SAMPLES // 10  # the edits do change the engine's answers


def test_an_implementing_entry_inherits_the_engine_entry_s_checks(tmp_path):
    engine_dirs = _copy(table_dirs(), tmp_path / "engine")

    def cutlass_on_sm90_only(doc):
        doc["entries"][0]["platforms"] = {"cuda": {"device_capability": [90]}}

    _edit(engine_dirs[0] / "flashinfer_cutlass.yaml", cutlass_on_sm90_only)
    runtime = load_runtime_catalog(load_catalog(engine_dirs))
    config = MoEConfig(num_experts=128, top_k=8, hidden_size=2048, intermediate_size=1024, device=B200, moe_backend="flashinfer_cutlass")
    before = evaluate(default_runtime_catalog(), config, Environment()).candidate("flashinfer_cutlass_bf16_adapter")
    after = evaluate(runtime, config, Environment()).candidate("flashinfer_cutlass_bf16_adapter")
    assert not before.failures and {f.rule for f in after.failures} == {"flashinfer_cutlass.platforms.cuda.device_capability"}


def test_the_runtime_view_builds_only_what_our_runtime_has():
    runtime = default_runtime_catalog()
    assert runtime.view_name == "runtime" and {e.provider for e in runtime.experts} == {"moe_oracle"} and {p.provider for p in runtime.prepare_finalize} == {"moe_oracle"}
    assert {e.implements for e in runtime.experts if e.implements} == {"flashinfer_trtllm_bf16_monolithic", "flashinfer_trtllm_bf16", "flashinfer_trtllm_fp8_monolithic", "flashinfer_trtllm_fp8", "flashinfer_cutlass"}
    engine = default_catalog()
    assert not {e.id for e in engine.experts} & {"reference", "reference_batched", "reference_monolithic", "torch_grouped_mm"}
    # "platform": the answer "the platform runs MoE itself" (vLLM TPU, FP8 NONE), not a kernel of ours.
    assert {e.provider for e in engine.experts} == {"vllm", "platform"} and engine.fallback == ()
    assert "vllm" not in {c.field[9:] for e in engine.experts for c in e.checks if c.field.startswith("packages.")}


def test_the_runtime_view_reads_moe_backend_by_backend_id_for_every_family():
    # The engine view reads an FP8 layer's request through vLLM's map_fp8_backend (rules/aliases.yaml
    # requests); our runtime's backends are not vLLM names, so the runtime view takes backend ids.
    import pytest

    from moe_oracle.core.errors import ConfigError
    from moe_oracle.core.quant import scheme_by_name

    cfg = MoEConfig(num_experts=64, top_k=4, hidden_size=2048, intermediate_size=768, device=Device("cuda", capability=90),
                    quant=scheme_by_name("fp8_block"), quant_method="fp8", weight_block_size=(128, 128), moe_backend="triton_fp8_block")
    assert evaluate(default_runtime_catalog(), cfg, Environment()).kernel == "triton_fp8_block"
    with pytest.raises(ConfigError, match="KernelConfig.moe_backend"):
        evaluate(default_catalog(), cfg, Environment())
