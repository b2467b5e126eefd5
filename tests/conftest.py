"""Shared fixtures: a small synthetic catalog (tests/tables_fixture.py) and the shipped one."""

from __future__ import annotations

import os
import tempfile

import pytest

# Keep the validated-table cache of test runs out of the user's ~/.cache.
os.environ.setdefault("MOE_ORACLE_CACHE_DIR", tempfile.mkdtemp(prefix="moe-oracle-test-cache-"))

from moe_oracle.core.oracle import default_catalog
from tests import gcsettings
from tests.property import profiles, tally
from tests.tables_fixture import load

default_catalog()
gcsettings.tune()


def pytest_terminal_summary(terminalreporter, exitstatus, config):  # noqa: ARG001 - pytest hook signature
    """The configs and bad inputs the property and fuzz tests tried (tests/property/tally.py)."""
    if not hasattr(config, "workeroutput"):  # a pytest-xdist worker reports to the controller instead
        tally.terminal_summary(terminalreporter, profiles.PROFILE)


def pytest_sessionfinish(session, exitstatus):  # noqa: ARG001 - pytest hook signature
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:  # a pytest-xdist worker: its counts travel to the controller
        workeroutput["moe_oracle_tally"] = dict(tally.snapshot())


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: absent when running without workers
def pytest_testnodedown(node, error):  # noqa: ARG001 - pytest hook signature
    tally.merge(getattr(node, "workeroutput", {}).get("moe_oracle_tally", {}))


@pytest.fixture()
def small_catalog(tmp_path):
    return load(tmp_path)


@pytest.fixture(scope="session")
def catalog():
    return default_catalog()
