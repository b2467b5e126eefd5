"""Every subcommand warns, in text and JSON, when its answer's release is not modelled or is
registered ``verified: false`` (issue 21): ``diff`` and ``why-not`` as ``select``/``explain``/``plan``.

Every shipped release is verified since 2026-12-04, so the unverified case runs on a copy of the
shipped tables (``--tables``) whose ``rules/engine.yaml`` registers 0.34.0 ``verified: false``."""

from __future__ import annotations

import json
import shutil

import pytest

from moe_oracle.cli import main
from moe_oracle.core._resources import package_dir

LAYER = ["--model", "qwen3-30b-a3b", "--quant", "fp8_block", "--gpu", "H200"]
UNVERIFIED = "vLLM 0.34.0 is modelled but not verified"


@pytest.fixture(scope="module")
def tables(tmp_path_factory) -> list[str]:
    """``--tables DIR``: the shipped tables with 0.34.0 registered ``verified: false``."""
    root = tmp_path_factory.mktemp("unverified")
    for part in ("kernels", "prepare_finalize", "rules"):
        shutil.copytree(package_dir() / part, root / part)
    engine = root / "rules" / "engine.yaml"
    text = engine.read_text()
    marker = 'version: "0.34.0"'
    head, tail = text.split(marker, 1)
    engine.write_text(head + marker + tail.replace("verified: true", "verified: false", 1))
    return ["--tables", str(root)]


def _json(capsys, argv):
    main(argv)
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("to", "fragment"), [("vllm==0.34.0", UNVERIFIED), ("vllm==0.35.0", "answers are for vLLM")])
def test_diff_warns_for_an_unverified_or_unmodelled_side_in_json_and_text(capsys, tables, to, fragment):
    record = _json(capsys, ["diff", *LAYER, *tables, "--from", "vllm==0.33.0", "--to", to, "--json"])
    assert any(fragment in w and w.startswith(to) for w in record["warnings"]), record["warnings"]
    main(["diff", *LAYER, *tables, "--from", "vllm==0.33.0", "--to", to])
    out = capsys.readouterr().out
    assert any(line.startswith("WARNING: ") and fragment in line for line in out.splitlines())


def test_diff_between_verified_releases_has_no_warning(capsys):
    assert _json(capsys, ["diff", *LAYER, "--from", "vllm==0.32.0", "--to", "vllm==0.33.0", "--json"])["warnings"] == []


@pytest.mark.parametrize(("release", "fragment"), [("0.34.0", UNVERIFIED), ("0.34.1", "answers are for vLLM"), ("0.33.0", None)])
def test_why_not_warns_like_select(capsys, tables, release, fragment):
    argv = ["why-not", "--backend", "triton", *LAYER, *tables, "--package", f"vllm=={release}"]
    record = _json(capsys, [*argv, "--json"])
    select = _json(capsys, ["select", *LAYER, *tables, "--package", f"vllm=={release}", "--json", "--full"])
    assert [w["message"] for w in select["warnings"] if w["code"] == "engine_release"] == record["warnings"]
    if fragment is None:
        assert record["warnings"] == []
        return
    assert any(fragment in w for w in record["warnings"])
    main(argv)
    assert any(line.startswith("WARNING: ") and fragment in line for line in capsys.readouterr().out.splitlines())


def test_select_explain_and_plan_warn_for_an_unverified_release(capsys, tables):
    main(["select", *LAYER, *tables, "--package", "vllm==0.34.0"])
    assert UNVERIFIED in capsys.readouterr().err
    main(["explain", *LAYER, *tables, "--package", "vllm==0.34.0"])
    assert UNVERIFIED in capsys.readouterr().out
    main(["plan", "--model", "qwen3-30b-a3b", "--gpu", "H200", *tables, "--package", "vllm==0.34.0"])
    assert UNVERIFIED in capsys.readouterr().out


def test_no_shipped_release_warns_as_unverified(capsys):
    main(["select", *LAYER, "--package", "vllm==0.34.0"])
    assert "not verified" not in capsys.readouterr().err
