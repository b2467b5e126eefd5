"""An architecture vLLM does not register is noted whatever the model_type: vLLM picks the model
class by ``architectures`` (0.34.0 vllm/model_executor/models/registry.py ``inspect_model_cls``,
``_raise_for_unsupported``), so a known model_type does not make it build that family's class."""

from __future__ import annotations

import json
from pathlib import Path

from moe_oracle.core._resources import examples_dir
from moe_oracle.inputs.checkpoint.architectures import architecture_notes
from moe_oracle.inputs.checkpoint.families import FAMILIES, GENERIC
from moe_oracle.inputs.checkpoint.releases import ReaderRelease
from tests.cli_capture import cli


def test_unknown_architecture_with_a_known_model_type_is_noted() -> None:
    qwen3 = next(f for f in FAMILIES if f.name == "qwen3_moe")
    notes = architecture_notes("FooForCausalLM", qwen3, ReaderRelease.of("0.34.0"))
    assert len(notes) == 1 and "FooForCausalLM is not among the MoE architectures vLLM 0.34.0 registers" in notes[0] and "qwen3_moe" in notes[0]
    assert architecture_notes("Qwen3MoeForCausalLM", qwen3, ReaderRelease.of("0.34.0")) == ()


def test_the_generic_note_is_kept() -> None:
    notes = architecture_notes("FooForCausalLM", GENERIC, ReaderRelease.of("0.34.0"))
    assert len(notes) == 1 and "not among the MoE architectures" in notes[0]


def test_the_note_reaches_explain(tmp_path: Path) -> None:
    doc = json.loads((examples_dir() / "qwen3-30b-a3b.json").read_text())
    doc["architectures"] = ["FooForCausalLM"]
    path = tmp_path / "foo.json"
    path.write_text(json.dumps(doc))
    code, out, err = cli("explain", "--model", str(path), "--gpu", "H200", "--json")
    assert code == 0, err
    assert any("FooForCausalLM is not among the MoE architectures" in n for n in json.loads(out)["notes"])
