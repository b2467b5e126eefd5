"""The passthrough all2all a FlashInfer MoE-EP backend binds is never called "no effect" (breakit22
finding 4): its prepare/finalize runs in every EP topology, TP-only included (vLLM 0.32.0-0.34.0
P/config.py ``use_passthrough_all2all``, not gated on ``use_all2all_kernels``), while another
backend under EP over TP alone still gets the note."""

from __future__ import annotations

import json

from moe_oracle.cli import main


def _select(capsys, *flags: str) -> dict:
    main(["select", *flags, "--json"])
    return json.loads(capsys.readouterr().out)


def test_the_bound_passthrough_is_not_a_no_effect_input(capsys):
    out = _select(capsys, "--model", "deepseek-v4-flash", "--gpu", "B200", "--tp", "8", "--ep", "--moe-backend", "flashinfer_moe_ep_mega_deep_gemm")
    assert out["selected"]["prepare_finalize"] == "passthrough"
    assert not [n for n in out["notes"] if "passthrough" in n and "no effect" in n], out["notes"]


def test_another_backend_without_all2all_kernels_keeps_the_note(capsys):
    out = _select(capsys, "--model", "qwen3-30b-a3b", "--gpu", "H200", "--tp", "8", "--ep", "--all2all", "deepep_low_latency", "--package", "deep-ep==1.2.1")
    assert [n for n in out["notes"] if n.startswith("all2all backend deepep_low_latency has no effect")], out["notes"]
