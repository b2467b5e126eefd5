"""The Decision's record paths agree: the candidate dicts ``to_dict`` builds from the engine's rows
equal the records' own ``to_dict`` (CandidateResult, Failure, Assumption), the lazily rendered
error equals the eager text, and ``selected`` built alone equals the one among all candidates."""

from __future__ import annotations

import pytest

from moe_oracle.core.engine import evaluate
from moe_oracle.core.decision import NoEligibleKernelError
from moe_oracle.core.oracle import Oracle
from moe_oracle.tools.sampling import sample_configs


def _inputs(catalog, n=300, seed=23):
    """(config, environment, policy, decision): the sampled inputs with their Decision (whose
    ``config`` is the one the engine selected with, after any front-end rewrite, not the input)."""
    for config, env in sample_configs(n, seed, catalog):
        for policy in ("faithful", "safe"):
            yield config, env, policy, evaluate(catalog, config, env, policy=policy)


def _decisions(catalog, n=300, seed=23):
    for *_, decision in _inputs(catalog, n, seed):
        yield decision


def test_candidate_dicts_from_rows_equal_the_records(catalog):
    checked = failures = 0
    for config, env, policy, fast in _inputs(catalog):
        record = fast.to_dict()  # built from the rows: no CandidateResult exists yet
        assert "candidates" not in fast.__dict__
        slow = evaluate(catalog, config, env, policy=policy)  # the same inputs (a rewrite's note included)
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
        assert str(info.value).startswith(("No MoE kernel is eligible", "No MoE kernel runs", "Requested backend"))
        seen += 1
    assert seen > 10


def _request_names(catalog):
    names = set(catalog.backend_names)
    for rm in catalog.request_maps:
        names.update(rm.names)
        names.update(rm.auto)
    return sorted(names)


def test_first_eligible_on_the_bit_sets_equals_the_scan_over_rows(catalog):
    """``Ranking.first_eligible`` (bit sets, tolerated checks masked out) picks the candidate a
    scan over the materialized rows picks, with no tolerance and with both of the view's, for
    explicit requests too (a family's request checks are held per kernel, ``own_fail``)."""
    from dataclasses import replace

    import random

    from moe_oracle.core.errors import ConfigError
    from moe_oracle.verify.ours import config_for, environment_for
    from moe_oracle.verify.space import random_deployments

    rng = random.Random(4)
    names = _request_names(catalog)
    cases = [(replace(config, moe_backend=rng.choice(["auto", *names])), env) for config, env in sample_configs(300, 31, catalog)]
    for dep in random_deployments(400, 3):  # the differential harness's deployments: family front ends, shortcuts
        try:
            cases.append((config_for(dep), environment_for(dep, "0.33.0")))
        except ConfigError:
            pass
    compared = tolerated_picks = family = 0
    for config, env in cases:
        for policy in ("faithful", "safe"):
            try:
                d = evaluate(catalog, config, env, policy=policy)
            except ConfigError:  # a name the release or the layer refuses: not this test's subject
                continue
            if d.ranking.fixed is not None:
                continue
            ranking = replace(d.ranking, patched={})
            view = ranking.view
            family += bool(ranking.own_fail)
            for tol in (None, view.tolerance(False), view.tolerance(True)):
                allowed = tol.rules if tol is not None else frozenset()
                scan = next((k for k, r in enumerate(ranking.rows) if all(c.rule in allowed for c in r.failures)), None)
                fast = replace(ranking).first_eligible(tol)  # a fresh ranking: no rows materialized
                assert fast == scan, (config, policy, tol and sorted(tol.rules)[:5])
                if tol is not None and scan is not None and ranking.rows[scan].failures:
                    tolerated_picks += 1
                compared += 1
    assert compared > 2_000 and tolerated_picks >= 5 and family > 100, (compared, tolerated_picks, family)


def test_has_failure_on_the_bit_sets_equals_the_materialized_rows(catalog):
    """``Ranking.has_failure`` (bit sets) says what ``row(pos).failures`` says, at every position,
    on fresh rankings (no rows built), on the engine's own (patched, fixed) and after ``rows``."""
    from dataclasses import replace

    from moe_oracle.core.errors import ConfigError
    from moe_oracle.verify.ours import config_for, environment_for
    from moe_oracle.verify.space import random_deployments

    cases = list(sample_configs(200, 41, catalog))
    # Patched rankings are rare (about one deployment in 60): 450 deployments hold a few more than
    # the threshold below (300 held 3 once the sampler drew vLLM 0.34.0's mori apart).
    for dep in random_deployments(450, 5):
        try:
            cases.append((config_for(dep), environment_for(dep, "0.33.0")))
        except ConfigError:
            pass
    compared = with_failure = patched = fixed = 0
    for config, env in cases:
        for policy in ("faithful", "safe"):
            try:
                d = evaluate(catalog, config, env, policy=policy)
            except ConfigError:
                continue
            patched += bool(d.ranking.patched)
            fixed += d.ranking.fixed is not None
            fresh = replace(d.ranking)  # no rows materialized
            expected = [bool(r.failures) for r in d.ranking.rows]
            assert [fresh.has_failure(pos) for pos in range(len(expected))] == expected, (config, policy)
            assert [d.ranking.has_failure(pos) for pos in range(len(expected))] == expected
            compared += len(expected)
            with_failure += sum(expected)
    assert compared > 20_000 and 0 < with_failure < compared and patched > 5 and fixed > 0, (compared, with_failure, patched, fixed)


def test_request_bits_are_each_kernels_own_request_check(catalog):
    for view in (catalog, catalog.for_version("0.31.0")):
        index = view.experts_index
        for k, entry in enumerate(view.experts):
            own = [c for c in index.checks_in(k, view.request_bits)]
            assert [c.rule for c in own] == [f"request.{entry.backend}"]


def test_fast_constructors_build_what_the_dataclass_init_builds(catalog):
    """``Decision.of`` and ``Ranking.of`` (no frozen ``__init__``) set every field as the
    dataclass constructor does, and ``Decision.of`` refuses a missing or unknown field."""
    from dataclasses import fields, replace

    from moe_oracle.core.decision import Decision
    from moe_oracle.core.ranking import Ranking

    config, env = next(iter(sample_configs(1, 3, catalog)))
    d = evaluate(catalog, config, env)
    r = d.ranking
    again = Ranking(r.view, r.order, r.dispatch, r.fail, r.abstain, r.pf_fail, r.pf_abstain, r.kb_fail, r.kb_abstain, r.extra_fail, r.extra_abstain, r.own_fail)
    fast = Ranking.of(r.view, r.order, r.dispatch, r.fail, r.abstain, r.pf_fail, r.pf_abstain, r.kb_fail, r.kb_abstain, r.extra_fail, r.extra_abstain, r.own_fail)
    assert {f.name: getattr(fast, f.name) for f in fields(Ranking)} == {f.name: getattr(again, f.name) for f in fields(Ranking)}
    values = {f.name: getattr(d, f.name) for f in fields(Decision)}
    assert {f.name: getattr(Decision(**values), f.name) for f in fields(Decision)} == {f.name: getattr(Decision.of(**values), f.name) for f in fields(Decision)}
    assert replace(d, notes=("x",)).notes == ("x",)  # dataclasses.replace still works on a fast-built record
    with pytest.raises(TypeError, match="shortcut"):
        Decision.of(**{k: v for k, v in values.items() if k != "shortcut"})
    with pytest.raises(TypeError, match="bogus"):
        Decision.of(**values, bogus=1)
