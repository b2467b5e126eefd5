"""``schemas/why_not.schema.json`` describes what ``why-not --json`` prints, and no more.

Before, ``blocking`` items were not described (any value passed), ``warnings`` (always printed)
was not required, ``cost`` allowed null (it is a sum, never null) and nothing tied ``found`` /
``already_eligible`` to the fields they empty.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from moe_oracle.core._resources import schema_dir
from moe_oracle.core.vocab import ReasonCode
from moe_oracle.explain.whynot_edits import CATEGORIES
from tests.cli_capture import cli


def _schema() -> dict:
    return json.loads((schema_dir() / "bundled" / "why_not.schema.json").read_text(encoding="utf-8"))


CASES = {
    # (argv, exit code, what the record must show)
    "already-selected": (("--backend", "triton", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8"), 0, "already_eligible"),
    "already-eligible-outranked": (("--backend", "marlin", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8"), 0, "already_eligible"),
    "dead-end": (("--backend", "flashinfer_trtllm", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8", "--keep", "device"), 1, "blocking"),
    "found-with-release-warning": (("--backend", "deep_gemm", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--package", "vllm==0.35.0"), 0, "warnings"),
    "found-two-backend-ids": (("--backend", "flashinfer_trtllm", "--model", "gpt-oss-120b", "--gpu", "H200", "--tp", "8"), 0, "alternatives"),
}


def _record(name: str) -> dict:
    argv, code, _ = CASES[name]
    got, out, err = cli("why-not", *argv, "--json")
    assert got == code, err
    return json.loads(out)


@pytest.mark.parametrize("name", list(CASES))
def test_real_why_not_records_validate(name: str) -> None:
    record = _record(name)
    jsonschema.validate(record, _schema())
    assert record[CASES[name][2]], f"{name}: the case no longer shows {CASES[name][2]}"


def test_a_dead_end_names_reason_codes_in_blocking() -> None:
    record = _record("dead-end")
    assert not record["found"] and record["blocking"]
    assert {b.split(":", 1)[0] for b in record["blocking"]} <= {c.value for c in ReasonCode}


def test_keep_lists_the_search_categories() -> None:
    assert _schema()["properties"]["keep"]["items"]["enum"] == list(CATEGORIES)


@pytest.mark.parametrize(
    "name, change",
    [
        ("dead-end", lambda r: r.pop("warnings")),
        ("dead-end", lambda r: r.update(blocking=[{"code": "sm_unsupported"}])),
        ("dead-end", lambda r: r.update(blocking=["device_capability is 90"])),
        ("dead-end", lambda r: r.update(cost=None)),
        ("dead-end", lambda r: r.update(kernel="triton")),
        ("already-selected", lambda r: r.update(blocking=["sm_unsupported: device_capability [x.y]"])),
        ("already-selected", lambda r: r.update(found=False)),
        ("already-selected", lambda r: r.update(backend=[])),
        ("already-selected", lambda r: r.update(keep=["model", "gpu"])),
        ("found-two-backend-ids", lambda r: r.update(alternatives=[])),
        ("found-two-backend-ids", lambda r: r.update(warnings=[1])),
    ],
    ids=["no-warnings", "blocking-object", "blocking-free-text", "cost-null", "dead-end-with-kernel", "eligible-but-blocked",
         "eligible-not-found", "no-backend", "unknown-keep", "found-without-alternatives", "warning-not-a-string"],
)
def test_the_schema_refuses_what_why_not_never_prints(name: str, change) -> None:
    record = _record(name)
    change(record)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(record, _schema())


def test_why_not_names_its_release_and_keeps_the_input_notes() -> None:
    """Before, why-not never said which vLLM release its fixes were for (explain's ``Answer for:``),
    and its JSON dropped the notes (which MoE layer the answer is for) that its text printed."""
    argv = ("--backend", "deep_gemm", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8", "--package", "vllm==0.29.0")
    code, out, err = cli("why-not", *argv)
    assert code == 0, err
    assert "Answer for: vLLM 0.29.0 (declared); engine view, faithful policy" in out.splitlines()
    code, out, err = cli("why-not", *argv, "--json")
    assert code == 0, err
    record = json.loads(out)
    jsonschema.validate(record, _schema())
    assert (record["engine"]["version"], record["engine"]["known"]) == ("0.29.0", "declared")
    assert any("this answer is for MoE layer 3 only" in note for note in record["notes"])


@pytest.mark.parametrize("field", ["engine", "notes"])
def test_the_schema_requires_the_release_and_the_notes(field: str) -> None:
    record = _record("already-selected")
    record.pop(field)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(record, _schema())
