"""The bad-input error record (`--json`, exit code 2) follows ``schemas/error.schema.json``.

Before, the record (``{error, message, issues[...]}``, printed by ``moe_oracle.cli.main`` from
``_IssuesError.to_dict``) had no schema: a machine reading ``--json`` output could not validate
what it got when the exit code was 2.
"""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from moe_oracle.core._resources import schema_dir
from tests.cli_capture import cli


def _bundled(name: str) -> dict:
    return json.loads((schema_dir() / "bundled" / f"{name}.schema.json").read_text(encoding="utf-8"))


@pytest.fixture
def bad_files(tmp_path: Path) -> Path:
    (tmp_path / "dup.yaml").write_text("model:\n  num_experts: 8\n  num_experts: 16\n", encoding="utf-8")
    (tmp_path / "no_moe.json").write_text('{"model_type": "mixtral", "num_local_experts": 0}', encoding="utf-8")
    (tmp_path / "freeze.txt").write_text("vllm==0.31.0\nflashinfer-python\n", encoding="utf-8")
    (tmp_path / "tables").mkdir()
    return tmp_path


MODEL = ("--model", "deepseek-r1", "--gpu", "H200")

CASES = {
    "explain-unknown-gpu": ("explain", "--model", "deepseek-r1", "--gpu", "H2000"),
    "explain-duplicate-key-config": ("explain", "--config", "{d}/dup.yaml", "--gpu", "H200"),
    "select-tp-0": ("select", *MODEL, "--tp", "0"),
    "select-unknown-quant": ("select", *MODEL, "--quant", "bogus"),
    "select-missing-tables": ("select", *MODEL, "--tables", "{d}/tables"),
    "plan-no-device": ("plan", "--model", "deepseek-r1"),
    "plan-model-without-moe": ("plan", "--model", "{d}/no_moe.json", "--gpu", "H200"),
    "diff-bad-side": ("diff", *MODEL, "--from", "vllm==0.31.0", "--to", "bogus"),
    "diff-bare-package-in-environment": ("diff", *MODEL, "--from", "vllm==0.31.0", "--to", "vllm==0.33.0", "--environment", "{d}/freeze.txt"),
    "why-not-unknown-backend": ("why-not", "--backend", "bogus", *MODEL),
    "why-not-serve-refused": ("why-not", "--backend", "triton", "--gpu", "H200", "--serve", "vllm serve deepseek-ai/DeepSeek-R1 --enable-eplb"),
}


def _error_record(argv: tuple[str, ...], directory: Path) -> dict:
    code, out, err = cli(*(a.replace("{d}", str(directory)) for a in argv), "--json")
    assert code == 2, (out, err)
    return json.loads(out)


@pytest.mark.parametrize("argv", list(CASES.values()), ids=list(CASES))
def test_every_error_record_validates_against_the_error_schema(argv: tuple[str, ...], bad_files: Path) -> None:
    record = _error_record(argv, bad_files)
    jsonschema.validate(record, _bundled("error"))


def test_the_error_schema_is_closed(bad_files: Path) -> None:
    """A key added to or dropped from the record (or an issue) fails validation: the schema
    describes the record, not any object."""
    record = _error_record(CASES["explain-unknown-gpu"], bad_files)
    schema = _bundled("error")
    jsonschema.validate(record, schema)
    for broken in (
        {**record, "extra": 1},
        {k: v for k, v in record.items() if k != "issues"},
        {**record, "issues": []},
        {**record, "issues": [{**record["issues"][0], "hint": "x"}]},
        {**record, "issues": [{k: v for k, v in record["issues"][0].items() if k != "did_you_mean"}]},
        {**record, "error": "KeyError"},
    ):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema)


def test_the_error_schema_names_every_issues_error_class() -> None:
    """``error`` is the class name: every ConfigError/TableError subclass the package defines is listed."""
    import importlib

    from moe_oracle.core.errors import _IssuesError

    importlib.import_module("moe_oracle.cli")  # for its effect: imports the modules that define the error classes

    def subclasses(cls: type) -> set[type]:
        return {cls, *(s for sub in cls.__subclasses__() for s in subclasses(sub))}

    names = {c.__name__ for c in subclasses(_IssuesError) if c.__module__.startswith("moe_oracle.") and not c.__name__.startswith("_")}
    schema = json.loads((schema_dir() / "error.schema.json").read_text(encoding="utf-8"))
    assert names == set(schema["properties"]["error"]["enum"])


# ------------------------------------------------------------------ long inputs are echoed shortened

LONG = "x" * 100_000


@pytest.mark.parametrize("argv", [("explain", "--model", LONG), ("explain", "--gpu", "H200", "--serve", f"vllm serve {LONG}")], ids=["model", "serve-model"])
def test_a_long_value_is_echoed_by_its_start_and_length(argv: tuple[str, ...]) -> None:
    # the 100,000-character --model was echoed twice in full
    code, out, err = cli(*argv)
    assert code == 2 and out == ""
    assert len(err) < 2_000 and "(100,000 characters)" in err and "x" * 70 in err


def test_the_json_record_keeps_the_value_and_shortens_the_message() -> None:
    code, out, _ = cli("explain", "--model", LONG, "--json")
    record = json.loads(out)
    jsonschema.validate(record, _bundled("error"))
    issue = record["issues"][0]
    assert code == 2 and issue["value"] == LONG  # the observed value is data, kept whole
    assert len(issue["message"]) < 1_000 and "(100,000 characters)" in issue["message"]


def test_a_long_file_name_heads_the_problem_shortened() -> None:
    long_path = "/" + "y" * 300
    code, _, err = cli("explain", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--environment", long_path)
    assert code == 2 and "y" * 300 not in err and "(301 characters)" in err


@pytest.mark.parametrize(
    "argv, flag",
    [
        (("explain", *MODEL, "--tp", "1e3"), "--tp"),
        (("explain", *MODEL, "--max-tokens", "-5"), "--max-tokens"),
        (("select", *MODEL, "--quant", ""), "--quant"),
        (("select", *MODEL, "--moe-backend", ""), "--moe-backend"),
        (("why-not", *MODEL), "moe-oracle why-not"),  # --backend missing
        (("explain", *MODEL, "--bogus"), "moe-oracle"),
    ],
    ids=["tp-not-int", "max-tokens-negative", "quant-empty", "moe-backend-empty", "required-missing", "unrecognized"],
)
def test_argparse_refusals_print_the_error_record_with_json(argv: tuple[str, ...], flag: str) -> None:
    """Before, --json was ignored for what argparse refuses: stdout empty, usage on stderr."""
    code, out, err = cli(*argv, "--json")
    assert code == 2, err
    record = json.loads(out)
    jsonschema.validate(record, _bundled("error"))
    assert [i["path"] for i in record["issues"]] == [flag]
    if flag.startswith("--"):
        assert record["message"] == f"bad {flag}"


def test_argparse_refusals_without_json_still_print_usage() -> None:
    code, out, err = cli("explain", *MODEL, "--tp", "1e3")
    assert (code, out) == (2, "")
    assert err.startswith("usage: moe-oracle explain") and "argument --tp: invalid int value: '1e3'" in err
