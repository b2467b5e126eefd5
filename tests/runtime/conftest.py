"""Fixtures of the runtime tests (torch required; the whole directory is skipped without it)."""

from __future__ import annotations

import os

import pytest

torch = pytest.importorskip("torch")

if not torch.cuda.is_available():
    # Triton decides at import whether its kernels (its own library's too) are interpreted: set the
    # switch before anything imports it, so test_triton_kernels.py can run our kernels on CPU.
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_configure(config: pytest.Config) -> None:
    # pyproject.toml registers these too; kept so tests/runtime runs from any rootdir.
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU (skipped without one)")
    config.addinivalue_line("markers", "multiprocess: spawns torch.distributed gloo workers")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if torch.cuda.is_available():
        return
    skip = pytest.mark.skip(reason="no CUDA device")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


@pytest.fixture(autouse=True)
def _deterministic() -> None:
    torch.manual_seed(0)


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    """Tiny shapes run fastest single-threaded, and intra-op threads stall when the 2 CI cores are shared."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(before)
