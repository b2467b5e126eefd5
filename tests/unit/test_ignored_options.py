"""Options that used to be silently ignored are refused, naming the flag, the value and what is
allowed (exit 2; with ``--json`` the bad-input record argparse's refusals print).

On the parent commit ``select --full`` without ``--json`` printed the one-line answer,
``why-not --keep ""`` kept nothing extra, and ``matrix --gpu ,`` printed every device, each with
exit 0 and no word about the flag.
"""

from __future__ import annotations

import json

import pytest

from tests.cli_capture import cli

LAYER = ("--model", "qwen3-30b-a3b", "--gpu", "H200")


def test_select_full_without_json_is_refused():
    code, out, err = cli("select", *LAYER, "--full")
    assert code == 2 and out == ""
    assert "bad --full" in err and "--json" in err


def test_select_full_with_json_still_prints_the_whole_record():
    code, out, err = cli("select", *LAYER, "--full", "--json")
    assert code == 0, err
    assert "candidates" in json.loads(out)


@pytest.mark.parametrize(("argv", "flag", "value", "allowed"), [
    (["why-not", "--backend", "deep_gemm", *LAYER, "--keep", ""], "--keep", "''", "device, parallel"),
    (["why-not", "--backend", "deep_gemm", *LAYER, "--keep", "device,"], "--keep", "'device,'", "device, parallel"),
    (["matrix", "--gpu", ","], "--gpu", "','", "hardware catalog"),
    (["matrix", "--gpu", "H200,,B200"], "--gpu", "'H200,,B200'", "hardware catalog"),
    (["matrix", "--quant", " "], "--quant", "' '", "quant scheme"),
    (["matrix", "--backend", "triton,"], "--backend", "'triton,'", "backend ids"),
], ids=["keep-empty", "keep-trailing-comma", "gpu-comma", "gpu-double-comma", "quant-blank", "backend-trailing-comma"])
def test_an_empty_list_item_is_refused(argv, flag, value, allowed):
    code, out, err = cli(*argv)
    assert code == 2 and out == ""
    assert f"argument {flag}: empty item in {value}" in err and allowed in err, err


def test_an_empty_keep_under_json_is_the_bad_input_record():
    code, out, _ = cli("why-not", "--backend", "deep_gemm", *LAYER, "--keep", "", "--json")
    assert code == 2
    issue = json.loads(out)["issues"][0]
    assert issue["path"] == "--keep" and "empty item" in issue["message"] and "device" in issue["message"]


@pytest.mark.parametrize("argv", [
    ["why-not", "--backend", "deep_gemm", *LAYER, "--keep", "device,parallel"],
    ["matrix", "--gpu", "H200,B200", "--quant", "fp8_block"],
], ids=["keep", "matrix"])
def test_full_lists_still_answer(argv):
    code, out, err = cli(*argv)
    assert code in (0, 1) and out, err
