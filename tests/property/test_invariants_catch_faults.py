"""The restructured one-case invariants still fail: each is run on a Decision with one planted fault.

The failure and assumption invariants read the reference model's :class:`Judgement` (only the
rules that do not pass, each shared rule judged once); determinism compares one fresh Oracle
evaluation with the shared Decision. A mutated record must make each of them raise.
"""

from __future__ import annotations

import copy
import dataclasses

import pytest

from moe_oracle.core import oracle as oracle_module
from moe_oracle.core.records import Assumption
from tests.property import invariants as inv
from tests.property.reference_model import Outcome
from tests.property.strategies import pinned

pytestmark = pytest.mark.property

_MEMOS = (inv._decided, inv.record, inv._values, inv._judged)  # the shared memos, before any patch


def _case():
    return pinned()


def _with_candidates(monkeypatch, case, edit):
    """Make ``inv.decide(case)`` answer a copy of its Decision whose candidates ``edit`` changed."""
    real = inv.evaluate(inv.CATALOG, case.config, case.env)
    cands = list(real.candidates)
    edit(cands)
    planted = copy.copy(real)
    planted.__dict__["candidates"] = tuple(cands)
    for memo in _MEMOS:
        memo.cache_clear()
    monkeypatch.setattr(inv, "_decided", lambda c: planted if c == case else real)
    return planted


def _rejected(cands):
    return next(i for i, c in enumerate(cands) if c.failures)


@pytest.fixture(autouse=True)
def _fresh_memos():
    yield
    for memo in _MEMOS:
        memo.cache_clear()


def test_the_pinned_case_passes_every_engine_invariant():
    case = _case()
    for check in inv.ENGINE_INVARIANTS.values():
        check(case)


def test_failures_sound_catches_a_wrong_observed_value(monkeypatch):
    case = _case()

    def edit(cands):
        i = _rejected(cands)
        f = cands[i].failures[0]
        cands[i] = dataclasses.replace(cands[i], failures=(dataclasses.replace(f, observed="planted"), *cands[i].failures[1:]))

    _with_candidates(monkeypatch, case, edit)
    with pytest.raises(AssertionError, match="observed"):
        inv.check_failures_sound(case)


def test_failures_sound_catches_an_undeclared_and_a_passing_rule(monkeypatch):
    case = _case()
    real = inv.evaluate(inv.CATALOG, case.config, case.env)
    i = _rejected(list(real.candidates))
    kernel = real.candidates[i].kernel
    judged = inv.MODEL.for_release(case.env).judge(inv.MODEL.for_release(case.env).values(case.config, case.env))
    failing = {r.rule for r in judged.failing(kernel)}
    passing = next(r.rule for r in judged.rules(kernel) if r.rule not in failing and r.outcome(judged.values) is Outcome.PASS)
    for rule, message in (("no.such.rule", "no rule the tables declare"), (passing, "reported failing, but it passs")):
        def edit(cands, rule=rule):
            f = cands[i].failures[0]
            cands[i] = dataclasses.replace(cands[i], failures=(*cands[i].failures, dataclasses.replace(f, rule=rule)))

        _with_candidates(monkeypatch, case, edit)
        with pytest.raises(AssertionError, match=message):
            inv.check_failures_sound(case)


def test_failures_complete_catches_a_dropped_failure(monkeypatch):
    case = _case()

    def edit(cands):
        i = _rejected(cands)
        cands[i] = dataclasses.replace(cands[i], failures=cands[i].failures[1:])

    _with_candidates(monkeypatch, case, edit)
    with pytest.raises(AssertionError, match="declared failing but not reported"):
        inv.check_failures_complete(case)


def test_failures_complete_catches_a_failure_reported_twice(monkeypatch):
    case = _case()

    def edit(cands):
        i = _rejected(cands)
        cands[i] = dataclasses.replace(cands[i], failures=(*cands[i].failures, cands[i].failures[0]))

    _with_candidates(monkeypatch, case, edit)
    with pytest.raises(AssertionError, match="reported but not declared failing"):
        inv.check_failures_complete(case)


def test_failures_complete_catches_a_shared_constraint_dropped(monkeypatch):
    # A layer or family constraint is judged once for every kernel: dropping it from one kernel's
    # failures must still be caught (TP 8 does not divide an intermediate size of 100).
    case = pinned(parallel__tp_size=8, intermediate_size=100)
    real = inv.evaluate(inv.CATALOG, case.config, case.env)
    model = inv.MODEL.for_release(case.env)
    judged = model.judge(model.values(case.config, case.env))
    shared = {r.rule for c in model.constraints for r in [model._shared_constraint(c)]}
    hit = next(((i, c) for i, c in enumerate(real.candidates) if any(r.rule in shared for r in judged.failing(c.kernel))), None)
    assert hit is not None, "no shared constraint fails for the case"
    i, cand = hit

    def edit(cands):
        cands[i] = dataclasses.replace(cand, failures=tuple(f for f in cand.failures if f.rule not in shared))

    _with_candidates(monkeypatch, case, edit)
    with pytest.raises(AssertionError, match="declared failing but not reported"):
        inv.check_failures_complete(case)


def test_assumptions_invariant_catches_a_planted_assumption(monkeypatch):
    case = _case()

    def edit(cands):
        cands[0] = dataclasses.replace(cands[0], assumptions=(*cands[0].assumptions, Assumption("platform", "cuda", "planted.rule", "planted")))

    _with_candidates(monkeypatch, case, edit)
    with pytest.raises(AssertionError, match="assumptions"):
        inv.check_assumptions_are_unknown_inputs(case)


def test_deterministic_catches_a_fresh_evaluation_that_differs(monkeypatch):
    case = _case()
    inv.check_deterministic(case)
    real_evaluate = oracle_module.evaluate

    def drifting(*args, **kwargs):
        d = real_evaluate(*args, **kwargs)
        return dataclasses.replace(d, notes=(*d.notes, "planted note"))

    monkeypatch.setattr(oracle_module, "evaluate", drifting)
    with pytest.raises(AssertionError):
        inv.check_deterministic(case)


# ---------------------------------------------------------------- the checkpoint fields the
# reference model now derives from the config itself (issue 25): a wrong engine value is caught.


def _with_value(monkeypatch, case, name, value):
    """Make ``inv.decide(case)`` answer a copy of its Decision whose normalized ``name`` is ``value``."""
    from moe_oracle.core.normalize import Normalized

    real = inv.evaluate(inv.CATALOG, case.config, case.env)
    values = dict(real.normalized.values)
    values[name] = value
    planted = copy.copy(real)
    planted.__dict__["normalized"] = Normalized(values, real.normalized.sources)
    for memo in _MEMOS:
        memo.cache_clear()
    monkeypatch.setattr(inv, "_decided", lambda c: planted if c == case else real)


def _ct_w4a8():
    from tests.property.found_cases import CT_W4A8_FP8_OLD_RELEASE

    return CT_W4A8_FP8_OLD_RELEASE


@pytest.mark.parametrize(("name", "wrong"), [("weight_group_size", 128), ("weight_zero_point", True), ("act_order", "group")])
def test_normalized_values_catches_a_wrong_checkpoint_field(monkeypatch, name, wrong):
    case = _ct_w4a8()
    inv.check_normalized_values(case)  # passes unplanted
    assert inv.decide(case).normalized.values[name] != wrong
    _with_value(monkeypatch, case, name, wrong)
    with pytest.raises(AssertionError, match=name):
        inv.check_normalized_values(case)
