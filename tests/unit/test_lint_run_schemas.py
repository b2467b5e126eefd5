"""``lint --json`` and ``run --json`` follow ``schemas/lint.schema.json`` and ``schemas/run.schema.json``.

Before, ``--help`` said ``--json`` works on lint and run, but no schema described either record
(every other command's ``--json`` has one, validated against real output).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path

import jsonschema
import pytest

from moe_oracle.core._resources import schema_dir
from tests.cli_capture import cli
from tests.tables_fixture import base_tables, write_tables


def _schema(name: str) -> dict:
    return json.loads((schema_dir() / "bundled" / f"{name}.schema.json").read_text(encoding="utf-8"))


def _lint_tables(tmp_path: Path, kind: str) -> tuple[str, ...]:
    if kind == "shipped":
        return ()
    t = copy.deepcopy(base_tables())
    if kind == "error":
        t["kernels/slow.yaml"]["entries"][0]["constraints"].append({"id": "slow.never", "field": "num_experts", "max": 0, "reason": "shape_unsupported", "hint": "x"})
    elif kind == "unloadable":
        t["kernels/slow.yaml"]["entries"][0]["backend"] = "Not A Backend"
    write_tables(tmp_path / "t", t)
    return ("--tables", str(tmp_path / "t"))


@pytest.mark.parametrize(("kind", "code"), [("shipped", 0), ("error", 1), ("unloadable", 2)])
def test_lint_json_validates_on_every_exit_code(tmp_path: Path, kind: str, code: int) -> None:
    got, out, err = cli("lint", "--json", "--no-drift", *_lint_tables(tmp_path, kind))
    assert got == code, err
    record = json.loads(out)
    jsonschema.validate(record, _schema("lint"))
    assert record["ok"] is (code == 0) and bool(record["errors"]) is (code == 2)
    if code == 1:
        assert any(f["severity"] == "error" and f["code"] == "unsatisfiable" for f in record["findings"])


def test_the_lint_schema_is_closed(tmp_path: Path) -> None:
    record = json.loads(cli("lint", "--json", "--no-drift", *_lint_tables(tmp_path, "error"))[1])
    schema = _schema("lint")
    finding = record["findings"][0]
    for broken in ({**record, "extra": 1}, {**record, "findings": [{**finding, "severity": "fatal"}]}, {**record, "findings": [{k: v for k, v in finding.items() if k != "subject"}]}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate(broken, schema)


@pytest.mark.parametrize(("argv", "code"), [(("--model", "qwen3-30b-a3b", "--tokens", "4", "--max-experts", "8"), 0), (("--model", "gpt-oss-20b", "--tokens", "2"), 1)], ids=["ran", "dead-end"])
def test_run_json_validates(argv: tuple[str, ...], code: int) -> None:
    pytest.importorskip("torch")  # run refuses to start without the runtime
    got, out, err = cli("run", *argv, "--json")
    assert got == code, err
    record = json.loads(out)
    jsonschema.validate(record, _schema("run"))
    assert (record["run"] is None) is (code == 1)
    if record["run"] is not None:
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate({**record, "run": {**record["run"], "extra": 1}}, _schema("run"))
