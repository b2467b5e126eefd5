"""The Decision's record paths agree: the candidate dicts ``to_dict`` builds from the engine's rows
equal the records' own ``to_dict`` (CandidateResult, Failure, Assumption), the lazily rendered
error equals the eager text, and ``selected`` built alone equals the one among all candidates."""

from __future__ import annotations

import pytest

from moe_oracle.engine import evaluate
from moe_oracle.errors import NoEligibleKernelError
from moe_oracle.oracle import Oracle
from moe_oracle.sampling import sample_configs


def _decisions(catalog, n=300, seed=23):
    for config, env in sample_configs(n, seed, catalog):
        for policy in ("faithful", "safe"):
            yield evaluate(catalog, config, env, policy=policy)


def test_candidate_dicts_from_rows_equal_the_records(catalog):
    checked = failures = 0
    for fast in _decisions(catalog):
        record = fast.to_dict()  # built from the rows: no CandidateResult exists yet
        assert "candidates" not in fast.__dict__
        slow = evaluate(catalog, fast.config, fast.environment, policy=fast.policy)
        assert record["candidates"] == [c.to_dict() for c in slow.candidates]
        assert slow.to_dict() == record  # to_dict after the records exist takes the records' path
        checked += 1
        failures += sum(len(c["failures"]) for c in record["candidates"])
    assert checked == 600 and failures > 10_000  # the comparison saw real failure records


def test_selected_alone_equals_selected_among_all(catalog):
    for d in _decisions(catalog, 100, 5):
        alone = d.selected
        again = evaluate(catalog, d.config, d.environment, policy=d.policy)
        again.candidates
        assert alone == again.selected


def test_no_eligible_error_renders_when_read(catalog):
    seen = 0
    for config, env in sample_configs(400, 3, catalog):
        oracle = Oracle(catalog, env)
        decision = oracle.explain(config)
        if decision.winner is not None:
            continue
        with pytest.raises(NoEligibleKernelError) as info:
            oracle.select(config)
        assert info.value.decision is decision
        assert str(info.value) == decision.render_failure()
        assert str(info.value).startswith(("No MoE kernel is eligible", "Requested backend"))
        seen += 1
    assert seen > 10
