"""Shared fixtures: a small synthetic catalog (tests/tables_fixture.py) and the shipped one."""

from __future__ import annotations

import pytest

from moe_oracle.oracle import default_catalog
from tests.tables_fixture import load


@pytest.fixture()
def small_catalog(tmp_path):
    return load(tmp_path)


@pytest.fixture(scope="session")
def catalog():
    return default_catalog()
