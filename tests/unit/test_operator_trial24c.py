"""Issue 24's last trial findings (/work/notes/user24_findings.md, "L" items left after session 7).
Each test failed before the change that covers it."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from moe_oracle import ConfigError
from moe_oracle.inputs.hardware import GPU_ARCHES, GPU_CATALOG
from moe_oracle.inputs.hf import load_hf_config
from tests.cli_capture import cli

PACKAGE = Path(__file__).resolve().parents[2] / "moe_oracle"


# ------------------------------------------------------------------ serve --ep


def test_serve_ep_says_argparse_read_an_abbreviation_and_names_the_flag() -> None:
    """`--ep` in a serve line reached vLLM's argparse as `--eplb-config` with no word of why."""
    code, out, err = cli("select", "--serve", "vllm serve deepseek-r1 -tp 8 --ep", "--gpu", "H200")
    assert code == 2 and not out
    assert "argparse read --ep as an abbreviation of --eplb-config" in err
    assert "--enable-expert-parallel, or -ep" in err


# ------------------------------------------------------------------ load_hf_config on a directory


def test_load_hf_config_reads_a_checkpoint_directorys_config_json(tmp_path: Path) -> None:
    (tmp_path / "config.json").write_text(json.dumps({"model_type": "qwen3_moe", "num_experts": 8}))
    assert load_hf_config(tmp_path)["num_experts"] == 8


def test_load_hf_config_on_a_directory_without_config_json_says_so(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="the directory has no config.json"):
        load_hf_config(tmp_path)


# ------------------------------------------------------------------ --hf-quant-config over a checkpoint's own document


@pytest.mark.parametrize("command", ["select", "explain", "plan"])
def test_an_explicit_hf_quant_config_hiding_the_checkpoints_own_document_is_said(command: str) -> None:
    """deepseek-r1 carries an FP8 quantization_config; --hf-quant-config replaced it unsaid."""
    code, out, err = cli(command, "--model", "deepseek-r1", "--hf-quant-config", "nvidia-nemotron-3-nano-30b-a3b-nvfp4", "--gpu", "B200")
    assert code == 0
    shown = err if command == "select" else out
    assert "--hf-quant-config replaces config.json's own quantization document (quant_method fp8) with the file given (NVFP4)" in shown


def test_no_replacement_note_without_an_own_document() -> None:
    code, out, err = cli("select", "--model", "qwen3-30b-a3b", "--hf-quant-config", "nvidia-nemotron-3-nano-30b-a3b-nvfp4", "--gpu", "B200")
    assert code == 0 and "replaces config.json's own" not in err


# ------------------------------------------------------------------ unknown ROCm / XPU arches


@pytest.mark.parametrize(("platform", "arch"), [("rocm", "gfx9999"), ("xpu", "xe9")])
def test_an_unknown_arch_is_refused_with_the_known_ones(platform: str, arch: str) -> None:
    """`--platform rocm --arch gfx9999` answered "nothing eligible" (exit 1); XPU xe9 answered Triton unsaid."""
    code, out, err = cli("select", "--model", "qwen3-30b-a3b", "--platform", platform, "--arch", arch)
    assert code == 2 and not out
    assert "bad --arch" in err and f"(got '{arch}')" in err
    assert all(known in err for known in GPU_ARCHES[platform])


def test_known_arches_cover_every_arch_the_tables_and_the_catalog_name() -> None:
    """The known list is held to the tables: a rule naming a new gfx target or XPU generation fails here."""
    named: dict[str, set[str]] = {"rocm": set(), "xpu": set()}
    for path in [*PACKAGE.glob("kernels/*.yaml"), *PACKAGE.glob("rules/*.yaml"), *PACKAGE.glob("prepare_finalize/*.yaml")]:
        text = path.read_text()
        named["rocm"] |= set(re.findall(r"\b(gfx\d{3,4}[a-f]?)\b", text))
        named["xpu"] |= set(re.findall(r"\b(xe\d)\b", text))
    for entry in GPU_CATALOG.values():
        platform = entry.device.platform.value
        if platform in named and entry.device.arch:
            named[platform].add(entry.device.arch)
    assert named["rocm"] and named["xpu"]
    for platform, arches in named.items():
        assert arches <= set(GPU_ARCHES[platform]), f"{platform}: {sorted(arches - set(GPU_ARCHES[platform]))} named by the tables but not known"


def test_a_known_arch_in_any_case_still_answers() -> None:
    code, out, _ = cli("select", "--model", "qwen3-30b-a3b", "--platform", "rocm", "--arch", "GFX942")
    assert code == 0 and out


# ------------------------------------------------------------------ a selection variable not modelled


