"""Shared fixtures: a small synthetic catalog (tests/tables_fixture.py) and the shipped one."""

from __future__ import annotations

import os
import tempfile

import pytest

# Keep the validated-table cache of test runs out of the user's ~/.cache.
os.environ.setdefault("MOE_ORACLE_CACHE_DIR", tempfile.mkdtemp(prefix="moe-oracle-test-cache-"))

from moe_oracle.oracle import default_catalog
from tests import gcsettings
from tests.tables_fixture import load

default_catalog()
gcsettings.tune()


@pytest.fixture()
def small_catalog(tmp_path):
    return load(tmp_path)


@pytest.fixture(scope="session")
def catalog():
    return default_catalog()
