"""Model references (``--model``, a serve line's MODEL, a config file's ``model.hf_config``):
a path that does not exist is refused, never read as a shipped example of the same last name; a
Hugging Face id of another organisation resolves to the example of that name with a note."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest

from moe_oracle.core._resources import examples_dir
from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.models import EXAMPLE_HF_IDS, example_names, find_model, looks_like_path
from tests.cli_capture import cli

MISSING_PATHS = ["/models/my-finetune/qwen3-30b-a3b-fp8", "/mnt/ckpts/deepseek-r1/", "./qwen3-30b-a3b-fp8", "../qwen3-30b-a3b-fp8", "~/qwen3-30b-a3b-fp8", "ckpts/my/qwen3-30b-a3b-fp8", "qwen3-30b-a3b-fp8/"]


@pytest.mark.parametrize("ref", MISSING_PATHS)
def test_a_missing_path_is_refused_not_read_as_an_example(ref: str) -> None:
    with pytest.raises(ConfigError) as exc:
        find_model(ref)
    issue = exc.value.issues[0]
    assert issue.path == "--model" and issue.value == ref and "no such file or checkpoint directory" in issue.message


@pytest.mark.parametrize("argv", [["--model", "/models/my-finetune/qwen3-30b-a3b-fp8"], ["--model", "/mnt/ckpts/deepseek-r1/"], ["--serve", "vllm serve /models/my-finetune/qwen3-30b-a3b-fp8 -tp 2"]], ids=["model", "model-dir", "serve"])
def test_cli_refuses_a_missing_path_with_exit_2(argv: list[str]) -> None:
    code, out, err = cli("explain", *argv, "--gpu", "H200")
    assert code == 2 and out == ""
    assert "no such file or checkpoint directory" in err and argv[1].split()[-3 if argv[0] == "--serve" else 0] in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a named pipe")
@pytest.mark.parametrize("flag", ["--model", "--hf-quant-config"])
def test_a_pipe_is_refused_as_not_a_regular_file_not_as_missing(flag: str, tmp_path: Path) -> None:
    """`--model <(cat config.json)` (a pipe that exists) was refused as "no such file"; it is
    refused as what it is, before anything opens it (a pipe gives its text once, diff reads twice)."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    extra = [] if flag == "--model" else ["--model", "qwen3-30b-a3b"]
    code, out, err = cli("plan", flag, str(pipe), *extra, "--gpu", "H200")
    assert code == 2 and out == ""
    wanted = "not a regular file or a directory" if flag == "--model" else "not a regular file:"
    assert f"bad {flag}" in err and "is a named pipe (such as bash's <(...))" in err and wanted in err and "no such file" not in err


def test_an_existing_directory_of_that_name_is_read(tmp_path: Path) -> None:
    ckpt = tmp_path / "my-finetune" / "qwen3-30b-a3b-fp8"
    ckpt.mkdir(parents=True)
    doc = json.loads((examples_dir() / "qwen3-30b-a3b.json").read_text())
    (ckpt / "config.json").write_text(json.dumps(doc))
    assert find_model(str(ckpt)).path == ckpt / "config.json"
    assert find_model(str(ckpt) + "/").note is None


def test_the_publishers_own_id_resolves_without_a_note() -> None:
    found = find_model("Qwen/Qwen3-30B-A3B-FP8")
    assert found.path == examples_dir() / "qwen3-30b-a3b-fp8.json" and found.note is None
    vendor = find_model("nvidia/Qwen3.5-122B-A10B-NVFP4")
    assert vendor.path.name == "nvidia-qwen3.5-122b-a10b-nvfp4.json" and vendor.note is None


def test_another_organisations_id_resolves_with_a_note() -> None:
    found = find_model("someone/Qwen3-30B-A3B-FP8")
    assert found.path == examples_dir() / "qwen3-30b-a3b-fp8.json"
    assert found.note is not None and "qwen3-30b-a3b-fp8" in found.note and "Qwen/Qwen3-30B-A3B-FP8" in found.note and "someone/Qwen3-30B-A3B-FP8" in found.note


@pytest.mark.parametrize("argv", [["--model", "someone/Qwen3-30B-A3B-FP8"], ["--serve", "vllm serve someone/Qwen3-30B-A3B-FP8"]], ids=["model", "serve"])
def test_the_stand_in_note_reaches_the_answer(argv: list[str]) -> None:
    code, out, err = cli("explain", *argv, "--gpu", "H200", "--json")
    assert code == 0, err
    notes = json.loads(out)["notes"]
    assert any("shipped example qwen3-30b-a3b-fp8" in n and "in its place" in n for n in notes), notes
    code, out, _ = cli("explain", *argv, "--gpu", "H200")
    assert code == 0 and "in its place" in out


def test_an_examples_file_name_is_the_example() -> None:
    assert find_model("qwen3-30b-a3b-fp8.json").path == examples_dir() / "qwen3-30b-a3b-fp8.json"
    assert find_model("qwen3-30b-a3b-fp8.json").note is None


def test_a_local_file_wins_over_an_example_of_its_name(tmp_path: Path) -> None:
    (tmp_path / "qwen3-30b-a3b-fp8.json").write_text((examples_dir() / "qwen3-30b-a3b.json").read_text())
    assert find_model("qwen3-30b-a3b-fp8.json", tmp_path).path == tmp_path / "qwen3-30b-a3b-fp8.json"


def test_looks_like_path() -> None:
    assert all(looks_like_path(r) for r in MISSING_PATHS)
    assert not any(looks_like_path(r) for r in ("Qwen/Qwen3-30B-A3B-FP8", "qwen3-30b-a3b-fp8", "qwen3-30b-a3b-fp8.json"))


def test_every_example_has_its_hugging_face_id_as_sources_names_it() -> None:
    assert set(EXAMPLE_HF_IDS) == set(example_names())
    sources = (examples_dir() / "SOURCES.md").read_text()
    for name, ids in EXAMPLE_HF_IDS.items():
        assert re.search(rf"\b{re.escape(name)}\.json\b", sources), name
        assert any(i in sources or i.replace("/", "--") in sources for i in ids), (name, ids)  # as written, or as AIC's file name


@pytest.mark.parametrize(("ref", "note"), [("Qwen/Qwen3-30B-A3B-FP8", False), ("someone/Qwen3-30B-A3B-FP8", True)])
def test_config_file_hf_config_takes_a_hugging_face_id(tmp_path: Path, ref: str, note: bool) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"model:\n  hf_config: {ref}\ndevice:\n  gpu: H200\n")
    code, out, err = cli("explain", "--config", str(cfg), "--json")
    assert code == 0, err
    notes = json.loads(out)["notes"]
    assert any("$.model.hf_config" in n and "in its place" in n for n in notes) == note, notes


def test_config_file_hf_config_missing_path_is_refused(tmp_path: Path) -> None:
    cfg = tmp_path / "c.yaml"
    cfg.write_text("model:\n  hf_config: /nope/qwen3-30b-a3b-fp8\ndevice:\n  gpu: H200\n")
    code, _, err = cli("explain", "--config", str(cfg))
    assert code == 2 and "$.model.hf_config" in err and "no such file or checkpoint directory" in err and "/nope/qwen3-30b-a3b-fp8" in err


def _hf_quant_config_file(tmp_path: Path, ref: str) -> str:
    path = tmp_path / "layer.yaml"
    path.write_text(f"model:\n  hf_config: nvidia-nemotron-3-nano-30b-a3b-bf16\n  hf_quant_config: {ref}\ndevice:\n  gpu: B200\n", encoding="utf-8")
    return str(path)


def test_a_config_files_hf_quant_config_is_read_as_the_flag_reads_it(tmp_path: Path) -> None:
    """A file's ``model.hf_quant_config`` was resolved as a model reference: the shipped
    hf_quant_config example the flag takes was refused (its did-you-mean a BF16 model), while a
    model example (``deepseek-r1``) or a checkpoint directory was read as the quantization
    document (its config.json), answering "unquantized" with exit 0."""
    code, out, err = cli("explain", "--config", _hf_quant_config_file(tmp_path, "nvidia-nemotron-3-nano-30b-a3b-nvfp4"))
    assert code == 0, err
    assert "nvfp4 (nvfp4)" in out
    flag_code, flag_out, _ = cli("explain", "--model", "nvidia-nemotron-3-nano-30b-a3b-bf16", "--hf-quant-config", "nvidia-nemotron-3-nano-30b-a3b-nvfp4", "--gpu", "B200")
    assert flag_code == 0 and out.splitlines()[0] == flag_out.splitlines()[0]
    ckpt = tmp_path / "ck"
    ckpt.mkdir()
    (ckpt / "config.json").write_text((examples_dir() / "qwen3-30b-a3b.json").read_text(), encoding="utf-8")
    # A model example's name is read as its config.json file is (the flag's way since the QA pass):
    # its quantization_config, said in a note, never "unquantized"; one without a document is refused.
    code, out, err = cli("explain", "--config", _hf_quant_config_file(tmp_path, "deepseek-r1"))
    assert code == 0, err
    assert "fp8_block (fp8)" in out and f"$.model.hf_quant_config {examples_dir() / 'deepseek-r1.json'} is a model config: its quantization_config is the document read" in out
    code, out, err = cli("explain", "--config", _hf_quant_config_file(tmp_path, "qwen3-30b-a3b"))
    assert code == 2 and out == "", out
    assert "is a model config (architectures/model_type) with no quantization document" in err
    code, out, err = cli("explain", "--config", _hf_quant_config_file(tmp_path, "deepseek-r2"))
    assert code == 2 and out == "", out
    assert "$.model.hf_quant_config: no such file, and not the name of a shipped example that carries a quantization document" in err
    assert "nvidia-nemotron-3-nano-30b-a3b-nvfp4" in err and "deepseek-r1" in err and "qwen3-30b-a3b," not in err  # the allowed names carry quantization documents
    code, out, err = cli("explain", "--config", _hf_quant_config_file(tmp_path, str(ckpt)))
    assert code == 2 and out == "", out
    assert f"$.model.hf_quant_config: {str(ckpt)!r} is a directory, not a regular file" in err  # said as what it is, not "no such file"
