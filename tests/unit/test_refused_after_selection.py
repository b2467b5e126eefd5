"""A layer the engine refuses after selecting a kernel (an ``after_selection`` constraint) gets a
true record, dead end and why-not.

On the parent commit, for Kimi-K2.5 (compressed-tensors WNA16) on B200 with TP8 + EP + EPLB (vLLM
selects MarlinExperts, then its layer refuses EPLB): ``triton_wna16`` was ``eligible`` with
``outranked_by: null``, which the Decision schema refuses; the dead end said ``enable_eplb``
"rejects every candidate" and that no change of a few inputs helps, although ``--moe-backend
triton`` and dropping ``--eplb`` both give a winner; ``why-not --backend triton`` said "outranked
by None". The selection itself (no winner) is unchanged.
"""

from __future__ import annotations

import json

import jsonschema

from moe_oracle.core._resources import schema_dir
from moe_oracle.cli import main
from moe_oracle.core.engine import evaluate
from moe_oracle.core.records import Status
from tests.tables_fixture import after_selection_refusal

KIMI = ["--model", "kimi-k2.5", "--gpu", "B200", "--tp", "8", "--ep", "--eplb"]
RULE = "constraint.ct_wna16_eplb"


def _schema() -> dict:
    return json.loads((schema_dir() / "bundled" / "decision.schema.json").read_text(encoding="utf-8"))


def test_the_record_names_the_refused_kernel_and_validates(capsys):
    assert main(["explain", *KIMI, "--json"]) == 1
    record = json.loads(capsys.readouterr().out)
    jsonschema.validate(record, _schema())
    assert record["selected"] is None and record["selected_by"] == "none"  # the outcome is unchanged
    by_kernel = {c["kernel"]: c for c in record["candidates"]}
    marlin = by_kernel["marlin"]
    assert marlin["status"] == "rejected" and [f["rule"] for f in marlin["failures"]] == [RULE]
    eligible = [c for c in record["candidates"] if c["status"] == "eligible"]
    assert [c["kernel"] for c in eligible] == ["triton_wna16"]
    assert all(c["outranked_by"] == "marlin" and c["rank"] > marlin["rank"] for c in eligible)


def test_the_dead_end_blames_the_refusal_and_finds_the_fixes(capsys):
    assert main(["select", *KIMI]) == 1
    out = capsys.readouterr().out
    assert out.startswith("No MoE kernel runs for vLLM 0.34.0") and "the engine selects marlin, then refuses the layer" in out
    assert "rejects every candidate" not in out and "no change of a few inputs" not in out
    assert f"then refuses the layer (eplb_unsupported) [{RULE}]" in out
    fixes = [line.strip() for line in out.splitlines() if line.startswith("  ") and ". " in line and "[cost" in line]
    assert any("--moe-backend triton  [cost 1" in f and f.endswith("-> triton_wna16 selected") for f in fixes), out
    assert any("--no-eplb  [cost 1" in f and f.endswith("-> marlin selected") for f in fixes), out
    # Each fix is true: the selection under it has a winner.
    assert main(["select", *KIMI, "--moe-backend", "triton"]) == 0
    assert capsys.readouterr().out.startswith("triton_wna16 [triton, modular]")
    assert main(["select", *KIMI[:-1]]) == 0
    assert capsys.readouterr().out.startswith("marlin [marlin, modular]")


def test_select_json_blocking_is_the_refusing_rule(capsys):
    assert main(["select", *KIMI, "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert [(b["field"], b["rules"]) for b in out["blocking"]] == [("enable_eplb", [RULE])]
    assert {f["flags"] for f in out["fixes"]} >= {"--moe-backend triton", "--no-eplb"}


def test_explain_shows_the_refused_kernel_then_what_it_outranks(capsys):
    main(["explain", *KIMI])
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line[:6].strip().rstrip(".").isdigit()]
    assert "marlin [marlin, modular]  REJECTED" in rows[0] and "triton_wna16 [triton, modular]  ELIGIBLE" in rows[1]
    assert "eligible, outranked by marlin, which the engine selects and then refuses the layer for" in out


def test_why_not_says_who_is_selected_and_refused(capsys):
    assert main(["why-not", "--backend", "triton", *KIMI]) == 0
    out = capsys.readouterr().out
    assert "None" not in out
    assert f"triton is already eligible (triton_wna16), but the engine selects marlin ahead of it and then refuses the layer [{RULE}]" in out
    assert "--moe-backend triton" in out


def test_the_api_records_the_refused_position(tmp_path):
    cat, cfg, e = after_selection_refusal(tmp_path)
    d = evaluate(cat, cfg, e)
    assert d.winner is None and d.refused is not None
    refused = d.candidates[d.refused]
    assert refused.status is Status.REJECTED and [f.rule for f in refused.failures] == ["c.eplb_slow_only"]
    assert d.refused_kernel == refused.kernel
    slow = d.candidate("slow")
    assert slow.status is Status.ELIGIBLE and slow.outranked_by == refused.kernel
    jsonschema.validate(json.loads(json.dumps(d.to_dict(), default=str)), _schema())
    assert [c.to_dict() for c in d.candidates] == d._candidate_dicts()
    # Without an after-selection refusal nothing is recorded as refused.
    assert evaluate(cat, cfg.with_changes(moe_backend="slow"), e).refused is None
