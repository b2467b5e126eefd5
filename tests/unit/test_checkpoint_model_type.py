"""A config.json without model_type, as each release reads it (FACTS model_type_by_architecture):
vLLM 0.29.0-0.31.0 refuse a LongCat-Flash (n-gram) config without one at config read, 0.32.0 and
later read it as longcat_flash by its architecture; the construction tier compares the refusal."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle.cli import main
from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.checkpoint import read_checkpoint

ROOT = Path(__file__).resolve().parents[2]
NGRAM_FILE = ROOT / "examples" / "models" / "registry" / "longcatflashngramforcausallm-synthetic.json"
NGRAM = json.loads(NGRAM_FILE.read_text())


@pytest.mark.parametrize("release", ["0.29.0", "0.30.0", "0.31.0"])
def test_a_release_without_the_mapping_refuses_the_config(release):
    assert "model_type" not in NGRAM
    with pytest.raises(ConfigError) as exc:
        read_checkpoint(NGRAM, file=str(NGRAM_FILE), release=release)
    (issue,) = exc.value.issues
    assert issue.path == "$.model_type" and issue.value is None and issue.allowed
    assert f"vLLM {release} refuses a config.json without model_type" in issue.message and "Should have a `model_type` key" in issue.message


@pytest.mark.parametrize("release", ["0.32.0", "0.33.0", "0.34.0"])
def test_a_release_with_the_mapping_reads_it_as_longcat_flash(release):
    ck = read_checkpoint(NGRAM, release=release)
    assert (ck.top_model_type, ck.model_type, ck.family.name) == ("longcat_flash", "longcat_flash", "longcat_flash")
    assert any("reads it as model_type 'longcat_flash' by its architecture" in n for n in ck.notes)


def test_a_remote_config_class_is_left_to_trust_remote_code():
    cfg = {**NGRAM, "auto_map": {"AutoConfig": "configuration_longcat_ngram.LongcatFlashNgramConfig"}}
    ck = read_checkpoint(cfg, release="0.31.0")
    assert ck.family.name == "longcat_flash" and any("--trust-remote-code" in n and "does not run" in n for n in ck.notes)


def test_another_architecture_without_model_type_is_read_with_a_note():
    # no release maps Qwen3MoeForCausalLM: every one refuses it, but a hand-written config is still read
    qwen = {k: v for k, v in json.loads((ROOT / "examples" / "models" / "qwen3-30b-a3b.json").read_text()).items() if k != "model_type"}
    for release in ("0.29.0", "0.34.0"):
        ck = read_checkpoint(qwen, release=release)
        assert ck.family.name == "qwen3_moe" and any(f"vLLM {release} refuses a config.json without model_type" in n for n in ck.notes)


def test_plan_refuses_it_for_those_releases(capsys):
    assert main(["plan", "--model", str(NGRAM_FILE), "--gpu", "H200", "--tp", "8", "--package", "vllm==0.30.0"]) == 2
    err = capsys.readouterr().err
    assert "$.model_type" in err and "vLLM 0.30.0 refuses" in err
    assert main(["plan", "--model", str(NGRAM_FILE), "--gpu", "H200", "--tp", "8", "--package", "vllm==0.32.0"]) == 0


def test_the_construction_tier_compares_the_refusal():
    from moe_oracle.verify.model_build.driver import _REFUSAL, _refusal_verdict

    vllm = f"config: ValueError: Unrecognized model in {NGRAM_FILE.parent}. Should have a `model_type` key in its config.json."
    assert _REFUSAL.search(vllm)
    with pytest.raises(ConfigError) as exc:
        read_checkpoint(NGRAM, file=str(NGRAM_FILE), release="0.29.0")
    ours = {"status": "error", "error": f"exit 2: {exc.value}"[-800:], "layers": []}  # as ours.our_layers records it
    assert _refusal_verdict(vllm, ours) == "agree"
    answered = {"status": "ok", "error": None, "layers": [{"role": "target", "experts_class": "TritonExperts"}]}
    assert _refusal_verdict(vllm, answered).startswith("ours does not refuse")


def test_select_says_the_release_refuses_a_config_without_model_type(capsys, tmp_path):
    qwen = {k: v for k, v in json.loads((ROOT / "examples" / "models" / "qwen3-30b-a3b.json").read_text()).items() if k != "model_type"}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(qwen))
    assert main(["select", "--model", str(path), "--gpu", "H200", "--tp", "1", "--package", "vllm==0.33.0"]) == 0
    assert "vLLM 0.33.0 refuses a config.json without model_type" in capsys.readouterr().err
