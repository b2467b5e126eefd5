"""Hypothesis profiles (``ci`` default, ``thorough`` via MOE_ORACLE_HYPOTHESIS_PROFILE) and the count report."""

from __future__ import annotations

from tests.property import profiles, tally

profiles.register()


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 - pytest hook signature
    tally.terminal_summary(terminalreporter, profiles.PROFILE)
