"""``moe-oracle verify``'s arguments and environment are checked before any work, in that order,
and a refusal is the bad-input error every command gives: exit 2, a message saying how to repair
it, and the ``{error, message, issues}`` record on stdout with ``--json``.

Before, a vLLM environment with an interpreter but no release tree raised FileNotFoundError
from the worker launch (a traceback), ``--cases -5`` was only refused after the environment
check, and ``--json`` printed nothing on stdout for exit 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from moe_oracle.core._resources import schema_dir
from tests.cli_capture import cli


@pytest.fixture
def no_trees(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An environment with venv/bin/python but no src/<release>."""
    monkeypatch.delenv("MOE_ORACLE_VLLM_ENV", raising=False)
    python = tmp_path / "env" / "venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text("#!/bin/sh\n", encoding="utf-8")
    return tmp_path / "env"


def test_an_environment_without_the_release_tree_is_bad_input_naming_the_repair(no_trees: Path) -> None:
    code, out, err = cli("verify", "--vllm-env", str(no_trees), "--cases", "2", "--release", "0.31.0", "--release", "0.33.0")
    assert code == 2 and out == "" and "Traceback" not in err
    assert "bad --vllm-env" in err and f"{no_trees}/src/0.31.0/vllm" in err
    assert f"python -m moe_oracle.verify.setup_env --dir {no_trees} --releases 0.31.0 0.33.0" in err


def test_verify_json_prints_the_error_record_on_stdout(no_trees: Path) -> None:
    code, out, err = cli("verify", "--vllm-env", str(no_trees), "--cases", "2", "--json")
    assert code == 2, err
    record = json.loads(out)
    jsonschema.validate(record, json.loads((schema_dir() / "bundled" / "error.schema.json").read_text(encoding="utf-8")))
    assert record["message"] == "bad --vllm-env" and record["issues"][0]["path"] == "--vllm-env"
    assert record["issues"][0]["value"] == str(no_trees) and "setup_env --dir" in record["issues"][0]["message"]


@pytest.mark.parametrize(
    ("flag", "value", "allowed"),
    [("--cases", "-5", "an integer >= 0"), ("--jobs", "0", "an integer >= 1"), ("--min-agreement", "1.5", "a fraction from 0 to 1"), ("--min-agreement", "nan", "a fraction from 0 to 1")],
    ids=["cases-negative", "jobs-0", "agreement-1.5", "agreement-nan"],
)
def test_bad_arguments_are_refused_before_the_environment(flag: str, value: str, allowed: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MOE_ORACLE_VLLM_ENV", raising=False)  # no environment at all: the argument still comes first
    code, out, err = cli("verify", flag, value)
    assert code == 2 and f"argument {flag}: expected {allowed}" in err and "vllm-env" not in err.split("error:")[-1]


def test_nothing_to_compare_is_refused_before_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MOE_ORACLE_VLLM_ENV", raising=False)
    code, out, err = cli("verify", "--cases", "0", "--json")
    assert code == 2 and json.loads(out)["message"] == "bad --cases"


def test_no_environment_named_says_how_to_make_one(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MOE_ORACLE_VLLM_ENV", raising=False)
    code, out, err = cli("verify", "--json")
    assert code == 2
    issue = json.loads(out)["issues"][0]
    assert issue["path"] == "--vllm-env" and "MOE_ORACLE_VLLM_ENV" in issue["message"] and "setup_env --dir DIR" in issue["message"]


def test_an_unreadable_replay_file_is_bad_input(no_trees: Path, tmp_path: Path) -> None:
    (no_trees / "src" / "0.34.0" / "vllm").mkdir(parents=True)
    code, out, err = cli("verify", "--vllm-env", str(no_trees), "--replay", str(tmp_path / "missing.json"), "--json")
    assert code == 2 and json.loads(out)["issues"][0]["path"] == "--replay"
