"""A problem in an hf_quant_config.json (given with --hf-quant-config, or found beside config.json)
names that file, not the model's config.json."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle.core._resources import examples_dir
from tests.cli_capture import cli

BAD = {"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP9", "group_size": 16}}


@pytest.mark.parametrize("command", ["explain", "plan"])
def test_a_bad_hf_quant_config_names_its_file(tmp_path: Path, command: str) -> None:
    hq = tmp_path / "hq.json"
    hq.write_text(json.dumps(BAD))
    code, out, err = cli(command, "--model", "nvidia-nemotron-3-nano-30b-a3b-bf16", "--gpu", "B200", "--hf-quant-config", str(hq))
    assert code == 2 and out == ""
    assert f"bad {hq}" in err and f"{hq}: $.quantization.quant_algo" in err and "'FP9'" in err
    assert "nvidia-nemotron-3-nano-30b-a3b-bf16.json" not in err


def test_a_bad_document_beside_config_json_names_it(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text((examples_dir() / "nvidia-nemotron-3-nano-30b-a3b-bf16.json").read_text())
    (tmp_path / "hf_quant_config.json").write_text(json.dumps(BAD))
    code, _, err = cli("explain", "--model", str(tmp_path), "--gpu", "B200")
    assert code == 2 and f"{tmp_path / 'hf_quant_config.json'}: $.quantization.quant_algo" in err


def test_a_config_files_hf_quant_config_names_its_file(tmp_path: Path) -> None:
    hq = tmp_path / "hq.json"
    hq.write_text(json.dumps(BAD))
    cfg = tmp_path / "c.yaml"
    cfg.write_text("model:\n  hf_config: nvidia-nemotron-3-nano-30b-a3b-bf16\n  hf_quant_config: hq.json\ndevice:\n  gpu: B200\n")
    code, _, err = cli("explain", "--config", str(cfg))
    assert code == 2 and "hq.json" in err and "quant_algo" in err and "'FP9'" in err


# ------------------------------------------------------------------ a model config given as the quantization document

PLAIN = examples_dir() / "nvidia-nemotron-3-nano-30b-a3b-bf16.json"  # a model config without any quantization document


@pytest.mark.parametrize("command", ["explain", "plan"])
def test_a_plain_model_config_as_hf_quant_config_is_refused(command: str) -> None:
    # it was read as a quantization document without quant_method: "unquantized", silently
    code, out, err = cli(command, "--model", "nvidia-nemotron-3-nano-30b-a3b-bf16", "--gpu", "B200", "--hf-quant-config", str(PLAIN))
    assert code == 2 and out == ""
    assert f"--hf-quant-config: {str(PLAIN)!r} is a model config" in err
    assert "hf_quant_config.json" in err and "config.json that carries quantization_config" in err


def test_a_config_files_plain_model_config_as_hf_quant_config_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"model:\n  hf_config: nvidia-nemotron-3-nano-30b-a3b-bf16\n  hf_quant_config: {PLAIN}\ndevice:\n  gpu: B200\n")
    code, _, err = cli("explain", "--config", str(cfg))
    assert code == 2 and f"{cfg}: $.model.hf_quant_config: {str(PLAIN)!r} is a model config" in err


def test_a_config_json_carrying_quantization_config_gives_that_document() -> None:
    # deepseek-r1's config.json carries an FP8 block quantization_config; it was read as a
    # document without quant_method (unquantized)
    code, out, err = cli("explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--hf-quant-config", str(examples_dir() / "deepseek-r1.json"))
    assert code == 0, err
    assert out.splitlines()[0].split(", ")[3].startswith("fp8_block"), out.splitlines()[0]
    assert "its quantization_config is the document read" in out


@pytest.mark.parametrize("path", sorted(examples_dir().rglob("*.hf_quant_config.json")), ids=lambda p: p.name)
def test_every_shipped_hf_quant_config_is_its_own_document(path: Path) -> None:
    from moe_oracle.inputs.models import quant_document

    doc = json.loads(path.read_text())
    assert quant_document(doc, path, "--hf-quant-config") == (doc, None)


# ------------------------------------------------------------------ a quantization document that is no JSON object

@pytest.mark.parametrize("command", ["explain", "plan"])
def test_a_json_list_as_hf_quant_config_is_called_a_quantization_document(tmp_path: Path, command: str) -> None:
    # it was called "a model config", and the flag that named it was not said
    hq = tmp_path / "hq.json"
    hq.write_text("[1, 2]")
    code, out, err = cli(command, "--model", "nvidia-nemotron-3-nano-30b-a3b-bf16", "--gpu", "B200", "--hf-quant-config", str(hq))
    assert code == 2 and out == ""
    assert f"{hq}: $: a quantization document (--hf-quant-config) must be a JSON object (got 'list')" in err
    assert "model config" not in err


def test_a_config_files_hf_quant_config_list_names_the_field(tmp_path: Path) -> None:
    (tmp_path / "hq.json").write_text("[]")
    cfg = tmp_path / "c.yaml"
    cfg.write_text("model:\n  hf_config: nvidia-nemotron-3-nano-30b-a3b-bf16\n  hf_quant_config: hq.json\ndevice:\n  gpu: B200\n")
    code, _, err = cli("explain", "--config", str(cfg))
    assert code == 2 and "a quantization document ($.model.hf_quant_config) must be a JSON object" in err and "model config" not in err


def test_a_json_list_as_model_is_still_a_model_config(tmp_path: Path) -> None:
    model = tmp_path / "config.json"
    model.write_text("[]")
    code, _, err = cli("explain", "--model", str(model), "--gpu", "B200")
    assert code == 2 and "a model config (--model) must be a JSON object (got 'list')" in err


# ------------------------------------------------------------------ a shipped example's name as the quantization document

@pytest.mark.parametrize("command", ["explain", "plan"])
def test_a_shipped_model_examples_name_is_read_as_its_config_json(command: str) -> None:
    # it was refused as "not the name of a shipped hf_quant_config.json example"
    code, out, err = cli(command, "--model", "qwen3-30b-a3b", "--gpu", "H200", "--hf-quant-config", "qwen3-30b-a3b-fp8", "--json")
    record = json.loads(out)
    assert code == 0, err
    note = f"--hf-quant-config {examples_dir() / 'qwen3-30b-a3b-fp8.json'} is a model config: its quantization_config is the document read"
    assert note in record["notes"]


def test_a_shipped_model_examples_name_gives_its_quantization() -> None:
    code, out, _ = cli("explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--hf-quant-config", "qwen3-30b-a3b-fp8.json", "--json")
    assert code == 0 and json.loads(out)["inputs"]["quant_scheme"]["value"] == "fp8_block"


def test_a_config_files_hf_quant_config_takes_a_model_examples_name(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("model:\n  hf_config: qwen3-30b-a3b\n  hf_quant_config: qwen3-30b-a3b-fp8\ndevice:\n  gpu: H200\n")
    code, _, err = cli("explain", "--config", str(cfg))
    assert code == 0, err


def test_an_unknown_name_lists_the_examples_that_carry_a_quantization_document() -> None:
    code, out, _ = cli("explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--hf-quant-config", "qwen3-30b-a3b-fp9", "--json")
    issue = json.loads(out)["issues"][0]
    assert code == 2 and issue["path"] == "--hf-quant-config"
    assert "qwen3-30b-a3b-fp8" in issue["allowed"] and "nvidia-nemotron-3-nano-30b-a3b-nvfp4" in issue["allowed"]
    assert "qwen3-30b-a3b" not in issue["allowed"]  # no quantization document: it would be refused
    assert "takes a file's path" in issue["message"] and issue["did_you_mean"] == "qwen3-30b-a3b-fp8"


def test_a_path_is_never_read_as_a_model_example() -> None:
    code, out, _ = cli("explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--hf-quant-config", "./qwen3-30b-a3b-fp8", "--json")
    assert code == 2 and json.loads(out)["issues"][0]["path"] == "--hf-quant-config"


def test_a_model_example_without_a_quantization_document_is_refused_as_a_model_config() -> None:
    code, out, _ = cli("explain", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--hf-quant-config", "qwen3-30b-a3b", "--json")
    issue = json.loads(out)["issues"][0]
    assert code == 2 and "is a model config" in issue["message"] and "a model config goes in --model" in issue["message"]
