"""The two hypothesis profiles of the property and fuzz suites.

* ``ci`` (default): derandomized, so every run tries the same examples; bounded so that
  ``pytest tests/property tests/fuzz`` stays within a few minutes on two cores.
* ``thorough``: ten times the examples, randomized; select it with
  ``MOE_ORACLE_HYPOTHESIS_PROFILE=thorough``.

Tests scale their example count from the loaded profile with :func:`budget`, so a cheap
invariant gets more examples than one that runs the CLI, in both profiles.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

__all__ = ["PROFILE", "budget", "register"]

ENV_VAR = "MOE_ORACLE_HYPOTHESIS_PROFILE"
_BASE = {"ci": 150, "thorough": 1500}
_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]


def register() -> str:
    """Register ``ci`` and ``thorough`` (idempotent) and load the one ``$MOE_ORACLE_HYPOTHESIS_PROFILE`` names."""
    settings.register_profile(
        "ci", max_examples=_BASE["ci"], derandomize=True, database=None, deadline=None, print_blob=True, suppress_health_check=_SLOW_OK
    )
    settings.register_profile("thorough", max_examples=_BASE["thorough"], deadline=None, print_blob=True, suppress_health_check=_SLOW_OK)
    name = os.environ.get(ENV_VAR, "ci")
    if name not in _BASE:
        raise ValueError(f"{ENV_VAR}={name!r}: expected one of {sorted(_BASE)}")
    settings.load_profile(name)
    return name


PROFILE = register()


def budget(weight: float) -> settings:
    """Settings with ``weight`` times the profile's example count (at least 3).

    ``weight`` is relative to a cheap engine invariant (1.0); costly ones (CLI
    subprocess-free runs, why-not searches, table reloads) use a fraction.
    """
    return settings(max_examples=max(3, int(_BASE[PROFILE] * weight)))
