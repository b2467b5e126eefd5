"""The notes a winner carries (core/winner_notes.py)."""

from __future__ import annotations

import pytest

from moe_oracle.core.config import Device, MoEConfig
from moe_oracle.core.quant import SCHEMES
from moe_oracle.core.winner_notes import winner_notes


def _fp8(device: Device, backend: str = "auto") -> MoEConfig:
    return MoEConfig(num_experts=128, top_k=8, hidden_size=2048, intermediate_size=768, quant=SCHEMES["fp8_block"], device=device, moe_backend=backend)


@pytest.mark.parametrize(("capability", "native"), [(80, False), (86, False), (89, True), (90, True), (100, True)], ids=lambda v: str(v))
def test_marlin_fp8_note_says_native_fp8_only_as_the_device_has_it(capability: int, native: bool) -> None:
    # vLLM's warning ("does not have native support for FP8") is printed on every GPU; SM 8.9+ has it
    # (vllm/platforms/cuda.py CudaPlatform.supports_fp8). The old note said "no native FP8" on an H200.
    (note,) = winner_notes("marlin", _fp8(Device("cuda", capability=capability)))
    assert "weight-only (W8A16)" in note
    assert ("no native FP8" in note) is not native
    assert ("has native FP8" in note) is native


@pytest.mark.parametrize(("backend", "how"), [("marlin", "requested with --moe-backend marlin"), ("auto", "selected by the priority order")])
def test_marlin_fp8_note_says_how_marlin_was_chosen(backend: str, how: str) -> None:
    (note,) = winner_notes("marlin", _fp8(Device("cuda", capability=90), backend))
    assert how in note


def test_marlin_fp8_note_claims_nothing_of_an_unknown_capability() -> None:
    (note,) = winner_notes("marlin", _fp8(Device("cuda")))
    assert "native FP8" not in note
