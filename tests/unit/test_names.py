"""Names are ASCII (:mod:`moe_oracle.core.names`): case is folded on ASCII letters only, so that a
lookalike no engine accepts names nothing, and it is refused with its code point.

``str.lower`` makes the Kelvin sign (U+212A) ``k`` and ``str.upper`` makes the dotless ``ı``
(U+0131) ``I``; a regular expression's ``IGNORECASE`` on a ``str`` pattern matches them too. Before,
``--quant fp8_bloc\\u212a`` selected for fp8_block, ``--gpu M\\u0131300X`` answered for the MI300X
and ``--without triton-\\u212aernels`` declared triton-kernels absent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle.core.environment import Environment
from moe_oracle.core.errors import ConfigError
from moe_oracle.core.names import ascii_lower, ascii_upper, non_ascii
from moe_oracle.core.packages import is_distribution_name, parse_requirement
from moe_oracle.core.quant import scheme_by_name, scheme_name
from tests.cli_capture import cli

KELVIN = "\u212a"  # 'K', lowers to 'k'
DOTLESS_I = "\u0131"  # 'ı', uppers to 'I'

LAYER = ["--model", "qwen3-30b-a3b", "--gpu", "H200"]

# (argv, the issue's path, the value, the code point its message names)
CLI = {
    "quant": ([*LAYER, "--quant", f"fp8_bloc{KELVIN}"], "--quant", f"fp8_bloc{KELVIN}", "U+212A"),
    "moe-backend": ([*LAYER, "--moe-backend", f"flashinfer_{KELVIN}"], "$.moe_backend", f"flashinfer_{KELVIN}", "U+212A"),
    "all2all": ([*LAYER, "--tp", "2", "--ep", "--all2all", f"nai{KELVIN}"], "$.parallel.all2all_backend", f"nai{KELVIN}", "U+212A"),
    # (not "gpu": a test id naming gpu is skipped without a CUDA device, tests/runtime/conftest.py)
    "hardware-name": (["--model", "qwen3-30b-a3b", "--gpu", f"M{DOTLESS_I}300X"], "--gpu", f"M{DOTLESS_I}300X", "U+0131"),
    "without": ([*LAYER, "--package", "vllm==0.33.0", "--without", f"triton-{KELVIN}ernels"], "--without", f"triton-{KELVIN}ernels", "U+212A"),
    "package": ([*LAYER, "--package", f"triton-{KELVIN}ernels==3.4.0"], "--package", f"triton-{KELVIN}ernels==3.4.0", "U+212A"),
}


@pytest.mark.parametrize("argv, path, value, code_point", CLI.values(), ids=CLI.keys())
def test_a_name_with_a_lookalike_is_refused_with_its_code_point(argv: list[str], path: str, value: str, code_point: str) -> None:
    code, out, err = cli("select", *argv, "--json")
    assert code == 2, out
    issue = json.loads(out)["issues"][0]
    assert issue["path"] == path and issue["value"] == value
    assert code_point in issue["message"] and "ASCII" in issue["message"]


def test_a_config_files_quant_name_with_a_lookalike_is_refused(tmp_path: Path) -> None:
    (tmp_path / "k.yaml").write_text(f"model:\n  hf_config: qwen3-30b-a3b\n  quant: fp8_bloc{KELVIN}\ndevice:\n  gpu: H200\n", encoding="utf-8")
    code, out, err = cli("select", "--config", str(tmp_path / "k.yaml"), "--json")
    issue = json.loads(out)["issues"][0]
    assert code == 2
    assert issue["path"] == "$.model.quant" and "U+212A KELVIN SIGN" in issue["message"]


def test_an_environment_file_naming_a_package_with_a_lookalike_is_refused(tmp_path: Path) -> None:
    (tmp_path / "pip.json").write_text(json.dumps([{"name": "vllm", "version": "0.33.0"}, {"name": f"triton-{KELVIN}ernels", "version": "3.4.0"}]), encoding="utf-8")
    code, out, err = cli("select", *LAYER, "--environment", str(tmp_path / "pip.json"), "--json")
    issue = json.loads(out)["issues"][0]
    assert code == 2
    assert issue["path"] == "$[1].name" and "U+212A" in issue["message"]


def test_the_python_doors_refuse_a_lookalike() -> None:
    assert scheme_name(f"fp8_bloc{KELVIN}") is None and scheme_name("FP8_Block") == "fp8_block"
    with pytest.raises(ConfigError, match="U\\+212A"):
        scheme_by_name(f"fp8_bloc{KELVIN}")
    with pytest.raises(ConfigError, match="U\\+212A") as info:
        Environment(absent={f"triton-{KELVIN}ernels"})
    assert info.value.issues[0].path == f"absent triton-{KELVIN}ernels"
    with pytest.raises(ConfigError, match="U\\+212A"):
        parse_requirement(f"triton-{KELVIN}ernels==3.4.0")
    assert not is_distribution_name(f"triton-{KELVIN}ernels")


def test_case_is_folded_on_ascii_letters_only() -> None:
    assert f"fp8_bloc{KELVIN}".lower() == "fp8_block"  # what Python's own fold does
    assert ascii_lower(f"FP8_BLOC{KELVIN}") == f"fp8_bloc{KELVIN}"
    assert ascii_upper(f"m{DOTLESS_I}300x") == f"M{DOTLESS_I}300X"
    assert non_ascii("nvfp4") is None and non_ascii(f"a{DOTLESS_I}") == "'ı' (U+0131 LATIN SMALL LETTER DOTLESS I) at character 2"
