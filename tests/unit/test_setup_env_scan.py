"""``setup_env`` reads a release wheel's compiled extensions for the ops the tables make claims
about (``compiled_ops.json``, checked against each release by tests/differential/
test_release_sources.py): here on a small wheel written for the test."""

from __future__ import annotations

import zipfile
from pathlib import Path

from moe_oracle.verify.setup_env import COMPILED_OP_PROBES, extract_release, scan_compiled_ops


def _wheel(tmp_path: Path, members: dict[str, bytes]) -> Path:
    path = tmp_path / "vllm-9.9.9-cp38-abi3-manylinux_2_28_x86_64.whl"
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in members.items():
            zf.writestr(name, data)
    return path


def test_the_scan_names_the_extensions_that_register_each_probe(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, {
        "vllm/_moe_C.abi3.so": b"\x7fELF...moe_align_block_size(Tensor topk_ids, int num_experts)...",
        "vllm/_C.abi3.so": b"\x7fELF...lut_b_moe_gemm(Tensor a, Tensor a_scales)...",
        "vllm/_custom_ops.py": b"def lut_b_moe_gemm(): ...  # a Python name is not a compiled op",
    })
    doc = scan_compiled_ops(wheel)
    assert doc["probes"] == list(COMPILED_OP_PROBES)
    assert doc["found"] == {"lut_b_moe_gemm": ["vllm/_C.abi3.so"], "moe_align_block_size": ["vllm/_moe_C.abi3.so"]}


def test_a_probe_no_extension_names_is_found_nowhere(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, {"vllm/_moe_C.abi3.so": b"moe_align_block_size", "vllm/__init__.py": b""})
    assert scan_compiled_ops(wheel)["found"]["lut_b_moe_gemm"] == []
    # The release tree keeps the sources and leaves the compiled parts out.
    assert extract_release(wheel, tmp_path / "tree") == 1
    assert (tmp_path / "tree" / "vllm" / "__init__.py").exists() and not (tmp_path / "tree" / "vllm" / "_moe_C.abi3.so").exists()
