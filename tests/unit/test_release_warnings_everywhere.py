"""Every subcommand warns, in text and JSON, when its answer's release is not modelled or is
registered ``verified: false`` (issue 21): ``diff`` and ``why-not`` as ``select``/``explain``/``plan``."""

from __future__ import annotations

import json

import pytest

from moe_oracle.cli import main

LAYER = ["--model", "qwen3-30b-a3b", "--quant", "fp8_block", "--gpu", "H200"]
UNVERIFIED = "vLLM 0.34.0 is modelled but not verified"


def _json(capsys, argv):
    main(argv)
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("to", "fragment"), [("vllm==0.34.0", UNVERIFIED), ("vllm==0.35.0", "answers are for vLLM")])
def test_diff_warns_for_an_unverified_or_unmodelled_side_in_json_and_text(capsys, to, fragment):
    record = _json(capsys, ["diff", *LAYER, "--from", "vllm==0.33.0", "--to", to, "--json"])
    assert any(fragment in w and w.startswith(to) for w in record["warnings"]), record["warnings"]
    main(["diff", *LAYER, "--from", "vllm==0.33.0", "--to", to])
    out = capsys.readouterr().out
    assert any(line.startswith("WARNING: ") and fragment in line for line in out.splitlines())


def test_diff_between_verified_releases_has_no_warning(capsys):
    assert _json(capsys, ["diff", *LAYER, "--from", "vllm==0.32.0", "--to", "vllm==0.33.0", "--json"])["warnings"] == []


@pytest.mark.parametrize(("release", "fragment"), [("0.34.0", UNVERIFIED), ("0.34.1", "answers are for vLLM"), ("0.33.0", None)])
def test_why_not_warns_like_select(capsys, release, fragment):
    argv = ["why-not", "--backend", "triton", *LAYER, "--package", f"vllm=={release}"]
    record = _json(capsys, [*argv, "--json"])
    select = _json(capsys, ["select", *LAYER, "--package", f"vllm=={release}", "--json", "--full"])
    assert [w["message"] for w in select["warnings"] if w["code"] == "engine_release"] == record["warnings"]
    if fragment is None:
        assert record["warnings"] == []
        return
    assert any(fragment in w for w in record["warnings"])
    main(argv)
    assert any(line.startswith("WARNING: ") and fragment in line for line in capsys.readouterr().out.splitlines())


def test_select_explain_and_plan_warn_for_an_unverified_release(capsys):
    main(["select", *LAYER, "--package", "vllm==0.34.0"])
    assert UNVERIFIED in capsys.readouterr().err
    main(["explain", *LAYER, "--package", "vllm==0.34.0"])
    assert UNVERIFIED in capsys.readouterr().out
    main(["plan", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--package", "vllm==0.34.0"])
    assert UNVERIFIED in capsys.readouterr().out
