"""The fallback release (no engine release known) is the newest modelled one, not a constant that
must be bumped by hand with each release."""

from __future__ import annotations

from moe_oracle.core.environment import Environment
from moe_oracle.core.loading import load_catalog
from moe_oracle.inputs.checkpoint.releases import NEWEST
from moe_oracle.inputs.release_facts import ENGINE_VERSION, serve_releases
from moe_oracle.inputs.serve import ServeArgs


def test_the_fallback_is_the_release_the_shipped_catalog_assumes():
    catalog = load_catalog()
    assert ENGINE_VERSION == str(catalog.engine.newest.version)
    assert ENGINE_VERSION == catalog.release(Environment()).version
    assert ENGINE_VERSION == serve_releases()[-1]


def test_serve_args_and_the_checkpoint_reader_default_to_it():
    assert NEWEST.version == ENGINE_VERSION
    assert ServeArgs(command="vllm serve m").version == ENGINE_VERSION
