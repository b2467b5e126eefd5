"""The doors agree: config files replay, the CLI and the API give the same record, why-not answers hold."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from moe_oracle.core.config import Device, MoEConfig, ParallelConfig
from moe_oracle.explain.whynot_search import MAX_EDITS
from tests.property import invariants as inv
from tests.property.found_cases import AWQ_LAYER_ON_XPU, MORI_EP_V2_BEFORE_034
from tests.property.profiles import budget
from tests.property.strategies import CATALOG, LEAF_PATHS, LEAVES, Case, backend_names, cases, for_reference, note_case, refused_env_values, targeted_cases

pytestmark = pytest.mark.property


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("replay")


@budget(1.0)
@given(cases())
def test_printed_replay_file_round_trips(case):
    note_case(case)
    inv.check_replay_round_trip(case)


@budget(0.3)
@given(cases(), refused_env_values())
@example(*MORI_EP_V2_BEFORE_034)
def test_env_values_the_engine_refuses_are_bad_input(case, refused):
    note_case(case)
    inv.check_refused_env_value(case, *refused)


@budget(0.3)
@given(cases())
@example(case=AWQ_LAYER_ON_XPU)
def test_explain_select_and_the_api_agree(workdir, case):
    note_case(case)
    inv.check_cli_agrees(case, workdir)


@budget(0.3)
@given(cases(), backend_names())
def test_why_not_answer_makes_the_backend_eligible(case, backend):
    note_case(case)
    inv.check_why_not(case, backend)


@budget(0.5)
@given(targeted_cases().map(for_reference), st.data())
def test_why_not_finds_a_fix_that_only_installs_packages(case, data):
    # Take a kernel that is eligible, then declare packages it needs absent: installing them is a fix.
    # Kernels and packages with a version range come first: there, "install it" alone is not enough.
    values = inv.MODEL.values(case.config, case.env)

    def packages(kernel: str, ranged: bool) -> list[str]:
        rules = [r for r in inv.MODEL.rules(kernel, values) if r.field.startswith("packages.")]
        return sorted({r.field[9:] for r in rules if not ranged or "version" in (r.spec or {})})

    eligible = sorted(inv.eligible(inv.decide(case)))
    ranged = [k for k in eligible if packages(k, True)]
    if not eligible:
        return
    kernel = data.draw(st.sampled_from(ranged) if ranged and data.draw(st.booleans(), label="prefer ranged") else st.sampled_from(eligible), label="kernel")
    needed = packages(kernel, False)
    if not needed:
        return
    env = case.env
    first = packages(kernel, True) or needed
    removed = [data.draw(st.sampled_from(first), label="removed")] + data.draw(st.lists(st.sampled_from(needed), max_size=MAX_EDITS - 1, unique=True), label="also removed")
    for name in dict.fromkeys(removed):
        env = env.with_package(name, None)
    changed = Case(case.config, env)
    note_case(changed)
    inv.check_why_not_finds_package_fixes(changed, CATALOG.experts_by_id(kernel).backend)


def test_every_config_leaf_has_a_strategy():
    # A new MoEConfig, Device or ParallelConfig field must get a value strategy in
    # tests/property/strategies.py LEAVES, or it would never be fuzzed.
    expected = {f.name for f in dataclasses.fields(MoEConfig)} - {"device", "parallel"}
    expected |= {f"device.{f.name}" for f in dataclasses.fields(Device)} | {f"parallel.{f.name}" for f in dataclasses.fields(ParallelConfig)}
    assert set(LEAF_PATHS) == expected == set(LEAVES)
