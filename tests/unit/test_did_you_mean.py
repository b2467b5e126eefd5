"""The did-you-mean of an unknown name (:func:`moe_oracle.core.errors.did_you_mean`): the name it
spells with case ignored first, then a name a few edits away, never a longer name that merely
contains it.

Before, difflib's ratio with a 0.6 cutoff answered ``--package torch==2.9.0`` (a package no table
reads) with "did you mean 'zentorch'?", and every misspelling of torch the same way: ``zentorch``
holds all of ``torch`` (ratio 0.77).
"""

from __future__ import annotations

import json

import pytest

from moe_oracle.core.errors import did_you_mean
from moe_oracle.core.oracle import default_catalog
from tests.cli_capture import cli

PACKAGES = sorted(default_catalog().package_names)  # what the shipped tables read: zentorch among them, torch not

CASES = {
    # value: the suggestion among the packages the tables read
    "torch": None,
    "Torch": None,
    "torhc": None,
    "pytorch": None,
    "torchh": None,
    "ZENTORCH": "zentorch",  # case first
    "Deep_GEMM": "deep-gemm",  # case and -/_ ignored
    "deepgemm": "deep-gemm",
    "deep-gem": "deep-gemm",
    "triton-kernel": "triton-kernels",
    "aiterr": "aiter",
    "vlm": "vllm",
    "nixl_epp": "nixl-ep",
}


@pytest.mark.parametrize("value, expected", CASES.items(), ids=CASES.keys())
def test_a_package_name_is_suggested_only_when_it_is_a_misspelling(value: str, expected: str | None) -> None:
    assert "zentorch" in PACKAGES and "torch" not in PACKAGES
    assert did_you_mean(value, PACKAGES) == expected


def test_names_of_other_kinds_keep_their_suggestions() -> None:
    assert did_you_mean("slwo", ["slow", "fast"]) == "slow"  # a swap of two letters is one edit
    assert did_you_mean("bf16", ["bfloat16", "float16", "float32"]) == "bfloat16"  # a contraction
    assert did_you_mean("deepep_ll", ["deepep_v2", "deepep_low_latency"]) == "deepep_low_latency"  # initials
    assert did_you_mean("VLLM_USE_DEEP_GEM", ["VLLM_USE_DEEP_GEMM", "VLLM_USE_FLASHINFER_MOE_FP8"]) == "VLLM_USE_DEEP_GEMM"
    assert did_you_mean("slow", ["slow"]) is None  # an allowed name is no misspelling


def test_a_torch_package_no_table_reads_is_noted_without_zentorch() -> None:
    code, out, err = cli("select", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--package", "torch==2.9.0", "--package", "deepgemm==2.1.1", "--json")
    notes = [n for n in json.loads(out)["notes"] if n.startswith("packages no table reads")]
    assert code == 0 and len(notes) == 1
    assert "torch" in notes[0] and "zentorch" not in notes[0] and "deepgemm (did you mean 'deep-gemm'?)" in notes[0]
