"""lint's reachability findings: ``never_selected`` (a kernel nothing selects), the tables'
``unreachable`` declarations, and ``contradictory_adjustments`` (an adjustment undoing another).

A kernel that only one platform or device runs is found by a search started where it runs
(derived from its own checks), not only when the seeded sample happens to draw that device: the
shipped XPU and CPU FP8 kernels were reported as never selected while ``select`` gave them.
"""

from __future__ import annotations

import copy

from moe_oracle.tools.lint import lint
from tests.cli_capture import cli
from tests.tables_fixture import _kernel, base_tables, load


def _reach(catalog):
    return {(f.code, f.subject): f for f in lint(catalog, drift=False) if f.code in ("never_selected", "unreachable", "unreachable_selected")}


def _with_kernel(t, kid, order, **kw):
    t[f"kernels/{kid}.yaml"] = {"kind": "experts", "family": kid, "reference": "test", "entries": [_kernel(kid, kid, **kw)]}
    orders = t["rules/priority.yaml"]["orders"]
    orders[order]["backends"] = [kid, *orders[order]["backends"]]


def _dead(t, **extra):
    """A kernel that can never be selected: SM 10.0 only, and a constraint refusing SM 10.0 (the
    shipped lut_b_sm107's shape: the released wheel lacks its compiled op)."""
    _with_kernel(t, "dead", 0, platforms={"cuda": {"device_capability": [100]}},
                 constraints=[{"id": "dead.no_op", "field": "device_capability", "not_in": [100], "reason": "sm_unsupported", "hint": "needs a compiled op"}], **extra)


def test_a_kernel_of_a_device_the_sample_never_draws_is_found_where_it_runs(tmp_path):
    # xe3: no GPU of the hardware catalog has it, so neither the sample nor a repair (which moves
    # between catalog devices) reaches it; the start made from the kernel's own arch list does.
    t = copy.deepcopy(base_tables())
    _with_kernel(t, "xe3_only", 1, platforms={"xpu": {"gpu_arch": ["xe3"]}})
    assert ("never_selected", "xe3_only") not in _reach(load(tmp_path, t))


def test_a_kernel_that_can_never_be_selected_is_still_a_warning(tmp_path):
    t = copy.deepcopy(base_tables())
    _dead(t)
    finding = _reach(load(tmp_path, t))[("never_selected", "dead")]
    assert finding.severity == "warning" and "never made eligible" in finding.message


def test_a_declared_unreachable_kernel_is_a_note_and_a_stale_declaration_a_warning(tmp_path):
    t = copy.deepcopy(base_tables())
    _dead(t, unreachable="needs a compiled op no released wheel has")
    _with_kernel(t, "xe3_only", 1, platforms={"xpu": {"gpu_arch": ["xe3"]}}, unreachable="claimed, but wrong")
    found = _reach(load(tmp_path, t))
    assert found[("unreachable", "dead")].severity == "note"
    assert ("never_selected", "dead") not in found
    assert found[("unreachable_selected", "xe3_only")].severity == "warning"


def test_lint_strict_passes_on_the_shipped_tables():
    # Every shipped kernel is selected by some deployment, or declares why none is (cpu_fp8_w8a8:
    # no CPU has AMX-FP8; lut_b_sm107: the wheel lacks its op); no other warning either.
    code, out, err = cli("lint", "--strict", "--no-drift")
    assert code == 0, out + err
    assert " 0 warning(s)" in out
    for kernel in ("xpu_block_fp8", "cpu_fp8", "aiter_w4a4_monolithic", "rdna3_wna16"):
        assert f"never_selected         {kernel}:" not in out
    assert "note    unreachable            cpu_fp8_w8a8:" in out and "note    unreachable            lut_b_sm107:" in out


def _adjust(t, aid, move, to, when=None):
    t["rules/priority.yaml"]["adjustments"].append(
        {"id": aid, "when": when or {"platform": ["cuda"]}, "move": move, "to": to, "kind": "performance", "reason": "x", "reference": "x"})


def test_an_end_move_that_takes_the_anchor_along_does_not_undo_a_relative_move(tmp_path):
    # vLLM 0.32.0+ MXFP4 on SM 9.0: prioritize_humming puts Humming before Marlin, then
    # _filter_by_activation moves both behind the matching backends, keeping their order.
    t = copy.deepcopy(base_tables())
    _adjust(t, "adjust.optin_before_slow", ["optin"], "before:slow")
    _adjust(t, "adjust.both_back", ["optin", "slow"], "back")
    _adjust(t, "adjust.optin_alone_front", ["optin"], "front")
    found = {f.subject for f in lint(load(tmp_path, t), sample=False) if f.code == "contradictory_adjustments"}
    assert "adjust.optin_before_slow/adjust.both_back" not in found
    assert "adjust.optin_before_slow/adjust.optin_alone_front" in found  # leaves its anchor behind
    assert "adjust.both_back/adjust.optin_alone_front" in found  # opposite ends
