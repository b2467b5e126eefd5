"""Flag values a new-user test found accepted or misread (--without, --sm, --quant, plan --help).

Each case failed before its fix: ``--without vllm==0.31.0`` and ``--without ""`` were accepted (a
note listed ``vllm==0-31-0`` as a package no table reads); ``--platform cuda --sm 15`` (91, 99)
answered triton, exit 0, while ``--arch gfx9999`` was refused; ``--quant bf16``, ``FP8_BLOCK``,
``Fp8_Block`` were refused and ``fp8-blk`` got "did you mean 'FP8-Blk'?"; ``plan --help`` listed
``--config`` and ``--quant``, which plan always refuses.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from moe_oracle.core.quant import SCHEMES, scheme_by_name
from moe_oracle.inputs.hardware import CUDA_CAPABILITIES, GPU_CATALOG
from tests.cli_capture import cli

PACKAGE = Path(__file__).resolve().parents[2] / "moe_oracle"
QWEN = ("select", "--model", "qwen3-30b-a3b", "--gpu", "H200")


# ------------------------------------------------------------------ --without NAME


@pytest.mark.parametrize("value", ["vllm==0.31.0", "", " ", "flashinfer-cubin ", "vllm>=0.31", "x-", "a b"])
def test_without_takes_a_distribution_name_only(value: str) -> None:
    code, out, err = cli(*QWEN, "--without", value)
    assert code == 2 and not out, (out, err)
    assert "bad --without" in err and "distribution NAME" in err and "--package NAME==VERSION" in err, err


@pytest.mark.parametrize("value", ["flashinfer-cubin", "Flash_Infer.cubin", "deep_gemm", "x"])
def test_without_a_valid_name_still_answers(value: str) -> None:
    code, out, err = cli(*QWEN, "--without", value)
    assert code == 0 and out, err


# ------------------------------------------------------------------ --sm N


@pytest.mark.parametrize("sm", ["15", "91", "99", "101", "200"])
def test_an_sm_no_gpu_has_is_refused_like_an_unknown_arch(sm: str) -> None:
    code, out, err = cli("select", "--model", "qwen3-30b-a3b", "--platform", "cuda", "--sm", sm)
    assert code == 2 and not out
    assert "bad --sm" in err and f"(got {sm})" in err and "would be a guess" in err, err
    assert all(str(known) in err for known in CUDA_CAPABILITIES)


@pytest.mark.parametrize("sm", [str(c) for c in CUDA_CAPABILITIES])
def test_every_known_sm_answers(sm: str) -> None:
    code, _, err = cli("select", "--model", "qwen3-30b-a3b", "--platform", "cuda", "--sm", sm)
    assert code in (0, 1), err


def test_known_sms_cover_every_capability_the_tables_and_the_catalog_name() -> None:
    """The known list is held to the tables: a rule naming a new capability fails here (the
    ``in:`` and plain lists of ``device_capability``; a range's bounds are not capabilities)."""
    named: set[int] = {e.device.capability for e in GPU_CATALOG.values() if e.device.capability is not None}
    for path in [*PACKAGE.glob("kernels/*.yaml"), *PACKAGE.glob("rules/*.yaml"), *PACKAGE.glob("prepare_finalize/*.yaml")]:
        text = path.read_text()
        for listed in re.findall(r"device_capability:\s*(?:\{\s*(?:in|not_in):\s*)?\[([0-9, ]+)\]", text):
            named |= {int(v) for v in listed.split(",") if v.strip()}
        for listed in re.findall(r"device_capability:\s*\n\s*(?:in|not_in):\s*\[([0-9, ]+)\]", text):
            named |= {int(v) for v in listed.split(",") if v.strip()}
    assert {90, 100, 107, 121} <= named
    assert named <= set(CUDA_CAPABILITIES), f"{sorted(named - set(CUDA_CAPABILITIES))} named by the tables or the catalog but not known"


@pytest.mark.parametrize("model", ["deepseek-r1", "qwen3-30b-a3b-fp8"])
def test_the_platform_cuda_note_names_every_known_capability(model: str) -> None:
    """The note for --platform cuda without --sm tried a hand-written 6 of the 14 capabilities
    --sm takes (80, 89, 90, 100, 103, 120): SM 10.7, 12.1, 7.5, ... were never answered."""
    code, out, _ = cli("explain", "--model", model, "--platform", "cuda")
    assert code == 0
    note = next(line for line in out.splitlines() if "--platform cuda without --sm" in line)
    named = [int(sm) for group in re.findall(r"\(--sm ([0-9, ]+)\)", note) for sm in group.split(",")]
    assert sorted(named) == sorted(CUDA_CAPABILITIES) and len(named) == len(set(named)), note


# ------------------------------------------------------------------ --quant NAME


@pytest.mark.parametrize(("typed", "scheme"), [("bf16", "unquantized"), ("FP8_BLOCK", "fp8_block"), ("Fp8_Block", "fp8_block"), ("fp8-blk", "fp8_block"), ("MXFP4-MXFP8", "mxfp4_mxfp8"), ("NVFP4", "nvfp4")])
def test_quant_ignores_case_and_dash_or_underscore(typed: str, scheme: str) -> None:
    assert scheme_by_name(typed) is SCHEMES[scheme]
    code, out, err = cli(*QWEN, "--quant", typed)
    assert code in (0, 1) and out, err


@pytest.mark.parametrize(("typed", "suggestion"), [("fp8_blok", "fp8_block"), ("FP8-Blok", "fp8_block"), ("nvfp", "nvfp4"), ("mxfp8_w61", "mxfp8_w16")])
def test_quant_did_you_mean_is_a_scheme_name(typed: str, suggestion: str) -> None:
    code, out, err = cli(*QWEN, "--quant", typed)
    assert code == 2 and not out
    assert f"did you mean {suggestion!r}?" in err, err


def test_every_quant_did_you_mean_is_a_scheme_name() -> None:
    """Near-misses of every name and alias (a letter dropped, case flipped) are answered with a
    scheme name, never an alias's spelling."""
    from moe_oracle.core.errors import ConfigError
    from moe_oracle.core.quant import SCHEME_ALIASES

    for name in [*SCHEMES, *SCHEME_ALIASES]:
        typed = name[:-1] + "#"
        with pytest.raises(ConfigError) as info:
            scheme_by_name(typed)
        guess = info.value.issues[0].suggestion()
        assert guess is None or guess in SCHEMES, (typed, guess)


# ------------------------------------------------------------------ plan --help


def test_plan_help_lists_no_flag_plan_refuses() -> None:
    code, out, _ = cli("plan", "--help")
    assert code == 0 and "--model" in out
    assert not re.search(r"--config FILE|--quant NAME", out), out
    code, _, err = cli("plan", "--config", "layer.yaml", "--model", "qwen3-30b-a3b", "--gpu", "H200")
    assert code == 2 and "plan reads a whole model" in err and "use explain" in err
    code, _, err = cli("plan", "--quant", "fp8_block", "--model", "qwen3-30b-a3b", "--gpu", "H200")
    assert code == 2 and "use explain" in err


def test_explain_help_still_lists_config_and_quant() -> None:
    code, out, _ = cli("explain", "--help")
    assert code == 0 and "--config FILE" in out and "--quant NAME" in out
