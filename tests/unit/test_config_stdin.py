"""``--config -`` reads the MoEConfig document from standard input, validated as a file's.

On the parent commit ``cat moe.yaml | moe-oracle select --config -`` was refused as
"--config: cannot read: No such file or directory (got '-')": the ``-`` was taken for a file name.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from moe_oracle.core.tables import MAX_TABLE_BYTES
from tests.cli_capture import cli

MODEL = Path(__file__).resolve().parents[2] / "examples" / "models" / "qwen3-30b-a3b.json"
DOC = f"model: {{hf_config: {MODEL}, quant: fp8_block}}\ndevice: {{platform: cuda, capability: 90}}\nenvironment: {{packages: {{vllm: 0.31.0}}}}\n"


def _stdin(monkeypatch: pytest.MonkeyPatch, data: bytes) -> None:
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))


def test_config_dash_reads_standard_input_as_the_file_would(tmp_path, monkeypatch):
    path = tmp_path / "moe.yaml"
    path.write_text(DOC, encoding="utf-8")
    code, out, err = cli("select", "--config", str(path), "--json")
    assert code == 0, err
    _stdin(monkeypatch, DOC.encode())
    stdin_code, stdin_out, stdin_err = cli("select", "--config", "-", "--json")
    assert stdin_code == 0, stdin_err
    record, from_file = json.loads(stdin_out), json.loads(out)
    assert record["selected"] == from_file["selected"] and record["selected"]["kernel"] == "triton"
    assert record["fingerprint"] == from_file["fingerprint"]


def test_config_dash_is_read_once_by_both_diff_sides(monkeypatch):
    _stdin(monkeypatch, DOC.encode())
    code, out, err = cli("diff", "--config", "-", "--from", "vllm==0.31.0", "--to", "gpu:B200", "--json")
    assert code == 0, err
    group = json.loads(out)["groups"][0]
    assert group["before"]["release"] == group["after"]["release"] == "vLLM 0.31.0 (declared)"
    assert group["before"]["selected"]["kernel"] == "triton" != group["after"]["selected"]["kernel"]


@pytest.mark.parametrize(("data", "words"), [
    (b"", ["<stdin>", "must be a mapping", "empty file"]),
    (b"device: {platform: cuda, capability: 90}\n", ["<stdin>", "'model' is a required property"]),
    (b"x" * (MAX_TABLE_BYTES + 10), ["<stdin>", "larger than"]),
], ids=["empty", "schema", "too-large"])
def test_config_dash_is_validated_as_a_file(monkeypatch, data, words):
    _stdin(monkeypatch, data)
    code, out, err = cli("select", "--config", "-")
    assert code == 2 and out == ""
    for word in words:
        assert word in err, err


def test_a_closed_standard_input_is_bad_input(monkeypatch):
    monkeypatch.setattr("sys.stdin", None)
    code, out, err = cli("select", "--config", "-", "--json")
    assert code == 2
    record = json.loads(out)
    assert record["issues"][0]["path"] == "--config" and "standard input" in record["issues"][0]["message"]


def test_help_says_dash_reads_standard_input():
    code, out, _ = cli("select", "--help")
    assert code == 0 and "- reads it from standard input" in " ".join(out.split())


class _UnreadableStdin:
    """Standard input that fails the test when read (a terminal nobody types into)."""

    @property
    def buffer(self):
        raise AssertionError("standard input was read")


def test_plan_refuses_config_dash_without_reading_standard_input(monkeypatch):
    """plan refuses --config (one layer) whatever it holds: it must say so at once, not wait for
    standard input first (on the parent commit it read stdin before refusing)."""
    monkeypatch.setattr("sys.stdin", _UnreadableStdin())
    code, out, err = cli("plan", "--config", "-", "--gpu", "H200")
    assert code == 2 and "plan reads a whole model" in err
