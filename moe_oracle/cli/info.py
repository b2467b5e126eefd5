"""``moe-oracle examples`` and ``moe-oracle codes``: what the package ships and what its codes mean."""

from __future__ import annotations

from typing import Any

from .common import EXIT_CODES_ALWAYS, EXIT_OK

__all__ = ["add_parsers", "run_codes", "run_examples"]


def add_parsers(sub: Any) -> None:
    """Register ``examples`` and ``codes`` (they take no arguments)."""
    sub.add_parser("examples", help="list shipped example models and hardware names", description="List the shipped example model configs and the hardware catalog.", epilog=EXIT_CODES_ALWAYS)
    sub.add_parser("codes", help="every reason code and warning code: what it means and what to change", description="Explain every reason code a failure can carry (the closed set in moe_oracle.core.vocab.ReasonCode), then every warning code a Decision's warnings carry (known_bad, unchecked, engine_release).", epilog=EXIT_CODES_ALWAYS)


def run_examples() -> int:
    """Run ``examples``: the shipped model configs and the hardware catalog."""
    from ..inputs.hardware import GPU_CATALOG
    from ..inputs.models import example_names

    print("Example models (--model NAME):")
    for name in example_names():
        print(f"  {name}")
    print("Hardware (--gpu NAME):")
    for name, hw in GPU_CATALOG.items():
        d = hw.device
        arch = f"SM {d.capability}" if d.capability else (d.arch or "")
        print(f"  {name:<16} {d.platform.value:<5} {arch:<8} {hw.description}")
    return EXIT_OK


def run_codes() -> int:
    """Run ``codes``: what every reason and warning code means."""
    from ..core.codes import render_codes

    print(render_codes(), end="")
    return EXIT_OK
