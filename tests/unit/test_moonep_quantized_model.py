"""MoonEP on a model vLLM holds quantized is refused at start even where its MoE layers are not
(vLLM 0.31.0-0.34.0 vllm/config/vllm.py ``VllmConfig.__post_init__`` reads
``model_config.quantization``; breakit22 finding 1): an online method that quantizes linear layers
only, and an FP8 checkpoint whose ignore list holds every experts module, were answered with
MoonEP's experts. A bf16 model keeps them; before 0.31.0 there is no MoonEP to refuse this way."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle.cli import main
from moe_oracle.core.oracle import default_catalog
from moe_oracle.inputs.admissible import start_refusal
from moe_oracle.inputs.deployment import build_deployment
from moe_oracle.inputs.operator_inputs import OperatorInputs

def _experts_ignored(tmp_path: Path) -> Path:
    from moe_oracle.inputs.models import find_model

    cfg = json.loads(find_model("qwen3-30b-a3b").path.read_text(encoding="utf-8"))
    cfg["quantization_config"] = {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128],
                                  "ignored_layers": [f"model.layers.{i}.mlp.experts" for i in range(cfg["num_hidden_layers"])]}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return path


def _run(capsys, *argv: str) -> tuple[int, dict]:
    rc = main([*argv, "--json"])
    return rc, json.loads(capsys.readouterr().out)


def test_an_online_method_that_leaves_the_experts_unquantized(capsys):
    rc, out = _run(capsys, "select", "--gpu", "H200", "--serve", "vllm serve Qwen/Qwen3-30B-A3B -dp 2 --enable-expert-parallel --all2all-backend moonep --quantization mxfp4_hadamard32")
    assert rc == 2
    (issue,) = out["issues"]
    assert issue["path"] == "--serve --all2all-backend" and "quantization='mxfp4_hadamard32'" in issue["message"]


@pytest.mark.parametrize("command", ["select", "plan"])
def test_a_checkpoint_whose_experts_are_all_ignored(capsys, tmp_path, command):
    rc, out = _run(capsys, command, "--model", str(_experts_ignored(tmp_path)), "--gpu", "H200", "--dp", "2", "--ep", "--all2all", "moonep")
    assert rc == 2 and out["issues"][0]["path"] == "--all2all" and "quantization='fp8'" in out["issues"][0]["message"]


def test_a_bf16_model_keeps_moonep_and_old_releases_are_not_refused_this_way(capsys):
    rc, out = _run(capsys, "select", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--dp", "2", "--ep", "--all2all", "moonep")
    assert rc == 0 and out["selected"]["kernel"] == "moonep_experts"
    # vLLM 0.30.0 has no moonep backend: the all2all literal refuses it (a dead end), not this check.
    rc, out = _run(capsys, "select", "--package", "vllm==0.30.0", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--dp", "2", "--ep", "--all2all", "moonep")
    assert rc == 1 and out["selected"] is None and "issues" not in out


def test_why_not_never_moves_a_quantized_model_to_moonep(tmp_path):
    catalog = default_catalog()
    dep = build_deployment(OperatorInputs(model=str(_experts_ignored(tmp_path)), gpu="H200", dp=2, ep=True), catalog)
    assert dep.model_quantization == "fp8"
    refusal = start_refusal(dep, catalog)
    assert refusal(dep.config, dep.environment) is None
    assert refusal(dep.config.with_changes(parallel__all2all_backend="moonep"), dep.environment) is not None


def test_why_not_names_the_start_refusal_it_met(capsys, tmp_path):
    """The one edit that makes MoonEP eligible (``--all2all moonep``) is refused at start on this
    model; why-not said only that its search stopped at its bound. It now lists the edit with the
    refusal, in text and in ``--json`` (``refused_at_start``, schemas/why_not.schema.json)."""
    argv = ["why-not", "--backend", "moonep", "--model", str(_experts_ignored(tmp_path)), "--gpu", "H200", "--dp", "2", "--ep"]
    assert main(argv) == 1
    text = capsys.readouterr().out
    assert "Changes after which moonep is eligible but vLLM does not start:\n  - --all2all moonep: vLLM 0.34.0 refuses the moonep all2all backend at start" in text
    rc, out = _run(capsys, *argv)
    assert rc == 1 and not out["found"]
    (refused,) = out["refused_at_start"]
    assert [e["flag"] for e in refused["edits"]] == ["--all2all moonep"] and "quantization='fp8'" in refused["reason"]


def test_a_bf16_model_has_nothing_refused_at_start(capsys):
    rc, out = _run(capsys, "why-not", "--backend", "moonep", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--dp", "2", "--ep")
    assert rc == 0 and out["found"] and out["refused_at_start"] == []
    assert [e["flag"] for e in out["edits"]] == ["--all2all moonep"]
