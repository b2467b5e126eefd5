"""Hypothesis profiles (shared with tests/property) and the count of configs and bad inputs tried."""

from __future__ import annotations

from tests.property import profiles, tally

profiles.register()


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 - pytest hook signature
    tally.terminal_summary(terminalreporter, profiles.PROFILE)
