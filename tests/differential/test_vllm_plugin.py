"""The vLLM plugin inside vLLM: vLLM 0.33.0's own ``load_general_plugins`` finds the ``moe_oracle``
entry point and calls it, the model loader is wrapped, and the observer reads a model vLLM built
(on the meta device, as the model-construction tier builds it) and answers for each layer group.

Agreement itself is the model-construction tier's job (tests/differential/test_model_construction.py);
here the plugin must run inside vLLM and give every MoE layer a group with vLLM's classes and
moe-oracle's answer.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest

from moe_oracle.verify.model_build.corpus import QUICK_DEPLOYMENTS, cases
from moe_oracle.verify.model_build.driver import _worker, corpus_dirs
from moe_oracle.verify.run import VllmEnv

pytestmark = pytest.mark.differential


def test_vllm_loads_the_plugin_and_it_answers_for_every_layer_group():
    directory = os.environ.get("MOE_ORACLE_VLLM_ENV")
    if not directory:
        pytest.skip("MOE_ORACLE_VLLM_ENV is not set")
    env = VllmEnv.from_dir(Path(directory))
    case = next(c for c in cases(corpus_dirs(), QUICK_DEPLOYMENTS) if c.model == "qwen3-30b-a3b-fp8" and c.deployment["platform"] == "cuda")
    with tempfile.TemporaryDirectory() as tmp:
        (built,), summary = _worker(env, "0.33.0", [{**case.to_dict(), "plugin": True}], Path(tmp))
    assert built["status"] == "ok", built.get("error") or summary
    plugin = built["plugin"]
    assert plugin["wrapped"], "vLLM's load_general_plugins did not install the model-loader wrapper"
    groups = plugin["groups"]
    assert groups, "the observer answered nothing"
    covered = sorted(i for g in groups for i in g["layers"])
    assert covered == sorted(layer["index"] for layer in built["layers"] if layer["role"] == "target")
    for g in groups:
        assert g["vllm"]["experts"] and g["moe_oracle"] is not None and g["moe_oracle"]["experts"], g
