"""What the note for a removed variable recommends must be something vLLM accepts.

Every ``--moe-backend NAME`` a replacement names is checked against the ``--moe-backend`` choices
of each modelled release's argparse (moe_oracle/engine_facts/vllm-<release>.yaml, generated from
vllm/config/kernel.py MoEBackend); the old note recommended ``flashinfer_trtllm_afp8``, which vLLM
refuses.
"""

from __future__ import annotations

import re
from importlib import resources

import pytest
import yaml

RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")


def _moe_backend_choices(release: str) -> set[str]:
    doc = yaml.safe_load(resources.files("moe_oracle").joinpath(f"engine_facts/vllm-{release}.yaml").read_text(encoding="utf-8"))
    found = []

    def walk(node):
        if isinstance(node, dict):
            if node.get("dest") == "moe_backend" and "choices" in node:
                found.append(set(node["choices"]))
            for v in node.values():
                walk(v)
        elif isinstance(node, list):
            for v in node:
                walk(v)

    walk(doc)
    assert found, release
    return found[0]


def _removed():
    doc = yaml.safe_load(resources.files("moe_oracle").joinpath("rules/environment.yaml").read_text(encoding="utf-8"))
    return doc["removed"]


@pytest.mark.parametrize("release", RELEASES)
def test_every_recommended_moe_backend_is_a_choice_vllm_accepts(release):
    choices = _moe_backend_choices(release)
    wrong = {(r["name"], name) for r in _removed() for name in re.findall(r"--moe-backend (\w+)", r["replacement"]) if name not in choices}
    assert not wrong, f"vLLM {release} refuses: {sorted(wrong)}"


def test_the_mxfp8_activation_replacement_names_the_quantization_config_override():
    (entry,) = [r for r in _removed() if r["name"] == "VLLM_USE_FLASHINFER_MOE_MXFP4_MXFP8"]
    assert "--moe-backend flashinfer_trtllm " in entry["replacement"] and '"activation": "mxfp8"' in entry["replacement"]
