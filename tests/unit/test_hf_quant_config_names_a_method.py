"""A quantization document that names no method (session 16's break-it pass): `{}`, a ModelOpt
`producer` alone or an empty `quantization` given as --hf-quant-config answered "unquantized"
(exit 0) for FP8 DeepSeek-R1, under a note that ended "(?)". Each test failed before the change."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle import ConfigError
from moe_oracle.inputs.hf import from_hf_config
from moe_oracle.inputs.models import resolve_model_path
from tests.cli_capture import cli

NAMELESS = {"empty": {}, "producer-only": {"producer": {"name": "modelopt"}}, "empty-quantization": {"producer": {"name": "modelopt"}, "quantization": {}}}


@pytest.mark.parametrize("name", sorted(NAMELESS))
def test_a_document_naming_no_method_is_refused_naming_the_file(name: str, tmp_path: Path) -> None:
    path = tmp_path / f"{name}.json"
    path.write_text(json.dumps(NAMELESS[name]))
    code, out, err = cli("select", "--model", "deepseek-r1", "--gpu", "B200", "--hf-quant-config", str(path))
    assert code == 2 and not out
    assert "bad --hf-quant-config" in err and f"'{path}' names no quantization method" in err


@pytest.mark.parametrize("name", sorted(NAMELESS))
def test_the_python_door_refuses_it_too(name: str) -> None:
    config = json.loads(resolve_model_path("deepseek-r1").read_text())
    with pytest.raises(ConfigError, match="names no quantization method") as caught:
        from_hf_config(config, file="ck/config.json", quant_cfg=NAMELESS[name])
    # no quant_file given: the problem names the model's file, as every issue must name one
    assert [issue.file for issue in caught.value.issues] == ["ck/config.json"]


def test_a_modelopt_document_without_quant_algo_is_read_and_said_without_a_placeholder(tmp_path: Path) -> None:
    # KV-cache-only ModelOpt quantization: the weights are unquantized, which the document says.
    path = tmp_path / "kv_only.json"
    path.write_text(json.dumps({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": None, "kv_cache_quant_algo": "FP8"}}))
    code, out, err = cli("select", "--model", "deepseek-r1", "--gpu", "B200", "--hf-quant-config", str(path))
    assert code == 0, err
    assert "(quant_method fp8) with the file given (ModelOpt quantization without a quant_algo)" in err and "(?)" not in err
