"""The vLLM environment every differential test module runs vLLM's own code in."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from moe_oracle.verify.run import VllmEnv


@pytest.fixture(scope="module")
def vllm_env() -> VllmEnv:
    """``$MOE_ORACLE_VLLM_ENV`` as a :class:`VllmEnv`; skipped when unset, failed when it names no
    vLLM environment (a half-built one should not pass as "skipped")."""
    directory = os.environ.get("MOE_ORACLE_VLLM_ENV")
    if not directory:
        pytest.skip("MOE_ORACLE_VLLM_ENV is not set: build the vLLM environment with `python -m moe_oracle.verify.setup_env --dir DIR` and export MOE_ORACLE_VLLM_ENV=DIR")
    try:
        return VllmEnv.from_dir(Path(directory))
    except FileNotFoundError as exc:
        pytest.fail(f"MOE_ORACLE_VLLM_ENV={directory} is not a vLLM environment: {exc}")

