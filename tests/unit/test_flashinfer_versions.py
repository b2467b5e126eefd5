"""A declared FlashInfer version the tables do not model is warned about, like an unmodelled vLLM.

vLLM 0.33.0 requirements/cuda.txt pins flashinfer-python==0.7.2.post1; the tables model the
versions rules/engine.yaml lists (each release's pin and the newest known). ``flashinfer-python==0.2.0``
with vLLM 0.33.0 used to change nothing and warn nothing.
"""

from __future__ import annotations

import pytest

from moe_oracle.cli import main

BASE = ["select", "--model", "deepseek-r1", "--gpu", "B200", "--tp", "8", "--package", "vllm==0.33.0"]


@pytest.mark.parametrize("version, words", [
    ("0.2.0", "older than any version the tables model"),
    ("0.7.1", "is not a modelled version"),
    ("0.7.0.post1", "vLLM 0.33.0 pins flashinfer-python==0.7.2.post1; you declared 0.7.0.post1"),
    ("0.9.0", "newer than the newest the tables know"),
])
def test_an_unmodelled_or_unpinned_flashinfer_is_a_warning(capsys, version, words):
    assert main([*BASE, "--package", f"flashinfer-python=={version}"]) == 0
    captured = capsys.readouterr()
    assert "1 warning" in captured.out and words in captured.err


def test_the_pinned_flashinfer_warns_nothing(capsys):
    assert main([*BASE, "--package", "flashinfer-python==0.7.2.post1"]) == 0
    captured = capsys.readouterr()
    assert "warning" not in captured.out and "warning" not in captured.err
