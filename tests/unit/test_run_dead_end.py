"""``run``'s text dead end is ``explain``'s for the same inputs (the runtime view, the probed host).

Before, ``run`` printed the exception trail (``render_failure``: what blocks, then every
candidate on one line each) with no ranked fixes, while ``select`` and ``explain`` ranked them.
"""

from __future__ import annotations

import pytest

from tests.cli_capture import cli

pytest.importorskip("torch")  # run refuses to start without the runtime

# gpt-oss-20b's MXFP4 layer: no kernel of our runtime takes mxfp4_w16 (see test_cli's run --json case).
LAYER = ("--model", "gpt-oss-20b")


@pytest.mark.parametrize("extra", [(), ("--all",), ("--moe-backend", "triton")], ids=["closest", "all", "unmapped-request"])
def test_run_prints_what_explain_prints_for_a_dead_end(extra: tuple[str, ...]) -> None:
    code, run_out, run_err = cli("run", *LAYER, "--tokens", "2", *extra)
    assert code == 1, run_err
    code, explain_out, explain_err = cli("explain", "--view", "runtime", "--probe", *LAYER, *extra)
    assert code == 1, explain_err
    assert run_out == explain_out
    assert "\nFixes, fewest and least disruptive first (each re-checked):\n  1. " in run_out
    assert "\nCandidates (" in run_out


def test_run_all_lists_every_candidate() -> None:
    _, closest, _ = cli("run", *LAYER, "--tokens", "2")
    _, every, _ = cli("run", *LAYER, "--tokens", "2", "--all")
    assert "more further from this problem" in closest and "--all lists them" in closest
    assert "--all lists them" not in every and every.count(" REJECTED") > closest.count(" REJECTED")
