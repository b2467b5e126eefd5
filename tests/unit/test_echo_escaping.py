"""Values read from input files and flags are echoed escaped in notes and messages, as an error's
``got`` echoes a ``--gpu`` value (``repr``: ``\\x00``, ``\\u202e``).

Before, a NUL or a right-to-left override (U+202E) in config.json's ``architectures`` reached the
terminal raw in explain's, select's and plan's notes: the override reorders what follows it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle.core._resources import examples_dir
from moe_oracle.core.errors import InputIssue
from tests.cli_capture import cli

RAW = "Qwen3Moe\x00ForCausal\u202eLM"
SHOWN = "Qwen3Moe\\x00ForCausal\\u202eLM"


@pytest.fixture
def model(tmp_path: Path) -> str:
    cfg = json.loads((examples_dir() / "qwen3-30b-a3b.json").read_text(encoding="utf-8"))
    cfg["architectures"] = [RAW]
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg), encoding="utf-8")
    return str(path)


@pytest.mark.parametrize("command", ["explain", "select", "plan"])
def test_an_architecture_with_control_characters_is_noted_escaped(model: str, command: str) -> None:
    code, out, err = cli(command, "--model", model, "--gpu", "H200")
    assert code == 0, err
    printed = out + err
    assert SHOWN in printed and "\x00" not in printed and "\u202e" not in printed


def test_the_json_notes_carry_the_escaped_text_too(model: str) -> None:
    code, out, _ = cli("explain", "--model", model, "--gpu", "H200", "--json")
    assert code == 0
    assert any(SHOWN in note for note in json.loads(out)["notes"])


def test_an_error_message_echoing_an_input_is_escaped() -> None:
    issue = InputIssue("--model", f"{RAW} is not a shipped example", RAW, None)
    assert issue.text() == f"{SHOWN} is not a shipped example"
    assert issue.to_dict()["value"] == RAW  # the value itself stays whole, as data
