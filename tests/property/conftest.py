"""Hypothesis profiles (``ci`` default, ``thorough`` via MOE_ORACLE_HYPOTHESIS_PROFILE); the count report is tests/conftest.py's."""

from __future__ import annotations

from tests.property import profiles

profiles.register()
