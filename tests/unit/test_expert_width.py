"""The experts' intermediate size as vLLM's model class reads it: a family whose class reads
``moe_intermediate_size`` (vLLM 0.34.0 qwen3_moe.py ``FusedMoE(intermediate_size=config.moe_intermediate_size)``)
never takes the dense ``intermediate_size`` in its place; a family whose class sizes its experts by
``intermediate_size`` (Mixtral) still reads it."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle.core._resources import examples_dir
from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.hf import from_hf_config
from tests.cli_capture import cli


def _qwen3(**change: object) -> dict:
    doc = json.loads((examples_dir() / "qwen3-30b-a3b.json").read_text())
    for key, value in change.items():
        if value is ...:
            doc.pop(key)
        else:
            doc[key] = value
    return doc


def test_missing_expert_width_is_refused_not_taken_from_the_dense_width() -> None:
    with pytest.raises(ConfigError) as exc:
        from_hf_config(_qwen3(moe_intermediate_size=...), file="q.json")
    issue = exc.value.issues[0]
    assert issue.path == "$.moe_intermediate_size" and issue.file == "q.json"
    assert "transformers config class" in issue.message and "qwen3_moe" in issue.message and "6144" in issue.message


def test_null_expert_width_is_refused() -> None:
    with pytest.raises(ConfigError) as exc:
        from_hf_config(_qwen3(moe_intermediate_size=None), file="q.json")
    assert exc.value.issues[0].path == "$.moe_intermediate_size" and "null" in exc.value.issues[0].message


def test_cli_exit_2_names_the_key(tmp_path: Path) -> None:
    path = tmp_path / "q.json"
    path.write_text(json.dumps(_qwen3(moe_intermediate_size=...)))
    code, out, err = cli("explain", "--model", str(path), "--gpu", "H200", "--tp", "2")
    assert code == 2 and out == "" and "$.moe_intermediate_size" in err and "intermediate 6144" not in out


def test_the_expert_key_present_is_read() -> None:
    assert from_hf_config(_qwen3(), file="q.json").kwargs["intermediate_size"] == 768


def test_a_family_sized_by_intermediate_size_still_reads_it() -> None:
    doc = json.loads((examples_dir() / "mixtral-8x7b-instruct-v0.1.json").read_text())
    assert "moe_intermediate_size" not in doc
    assert from_hf_config(doc, file="m.json").kwargs["intermediate_size"] == doc["intermediate_size"]
