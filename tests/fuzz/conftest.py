"""Hypothesis profiles (shared with tests/property); the count of configs and bad inputs tried is reported by tests/conftest.py."""

from __future__ import annotations

from tests.property import profiles

profiles.register()
