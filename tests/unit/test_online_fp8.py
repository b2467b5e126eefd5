"""The online FP8 ``--quantization`` shorthands on an unquantized checkpoint.

vLLM 0.29.0-0.34.0 vllm/config/quantization.py ``_ONLINE_SHORTHANDS`` maps ``fp8_per_tensor``,
``fp8_per_block`` and ``fp8_per_channel`` to the online MoE methods of Q/online/fp8.py
(``Fp8PerTensorOnlineMoEMethod``, ``Fp8PerBlockOnlineMoEMethod``, ``Fp8PtpcOnlineMoEMethod``), which
ask the FP8 oracle with the keys of the equivalent checkpoint scheme. Where the selection is the
checkpoint's, the answers must be equal (compared with the checkpoint's own answer, never with a
written-down kernel); where the methods differ (the block is never refined and the shard is padded
after selection; PTPC enables vLLM's CUTLASS FP8 MoE and refuses the backends it cannot run), the
tables say so. Before these shorthands were modelled, every serve line below was refused as "not
modelled".
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version

from moe_oracle.core.padding import layer_sizes
from moe_oracle.verify.run import RELEASES
from tests.cli_capture import cli

EXAMPLES = Path(__file__).parents[2] / "examples" / "models"
BF16 = "Qwen/Qwen3-30B-A3B"
FP8_BLOCK = "Qwen/Qwen3-30B-A3B-FP8"  # quant_method fp8, weight_block_size [128, 128]
_CT_CHANNEL_TOKEN = {  # llm-compressor's FP8_DYNAMIC recipe, the shape _ONLINE_SHORTHANDS names for fp8_per_channel
    "quant_method": "compressed-tensors",
    "format": "float-quantized",
    "config_groups": {"group_0": {
        "targets": ["Linear"],
        "weights": {"type": "float", "num_bits": 8, "strategy": "channel", "symmetric": True, "dynamic": False},
        "input_activations": {"type": "float", "num_bits": 8, "strategy": "token", "symmetric": True, "dynamic": True},
    }},
    "ignore": ["lm_head"],
}


def _explain(serve: str, gpu: str, release: str, *extra: str) -> tuple[int, dict]:
    code, out, err = cli("explain", "--serve", f"vllm serve {serve}", "--gpu", gpu, "--package", f"vllm=={release}", *extra, "--json")
    return code, json.loads(out) if out.strip() else {"stderr": err}


def _answer(doc: dict) -> tuple:
    """What a user reads: the selection and every candidate's status with its failing rules."""
    return (doc.get("selected"), tuple((c["kernel"], c["status"], tuple(sorted(f["rule"] for f in c.get("failures", ())))) for c in doc["candidates"]))


def _eligible(doc: dict) -> set[str]:
    return {c["kernel"] for c in doc["candidates"] if c["status"] in ("selected", "eligible")}


def _ct_checkpoint(tmp_path: Path) -> str:
    cfg = json.loads((EXAMPLES / "qwen3-30b-a3b.json").read_text())
    cfg["quantization_config"] = _CT_CHANNEL_TOKEN
    (tmp_path / "ct").mkdir()
    (tmp_path / "ct" / "config.json").write_text(json.dumps(cfg))
    return str(tmp_path / "ct")


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("gpu", ["H200", "B200"])
@pytest.mark.parametrize(("online", "equivalent"), [
    (f"{BF16} --quantization fp8_per_block", FP8_BLOCK),
    (f"{BF16} --quantization fp8_per_tensor", f"{BF16} --quantization fp8"),  # vLLM builds Fp8PerTensorOnlineMoEMethod for both
], ids=["per_block", "per_tensor"])
def test_an_online_shorthand_is_answered_as_its_checkpoint_scheme(online, equivalent, gpu, release):
    code, doc = _explain(online, gpu, release)
    assert code in (0, 1), doc
    ref_code, ref = _explain(equivalent, gpu, release)
    assert (code, _answer(doc)) == (ref_code, _answer(ref))
    assert doc["inputs"]["quant_method"]["value"] == online.split()[-1]


@pytest.mark.parametrize("release", RELEASES)
@pytest.mark.parametrize("gpu", ["H200", "B200"])
def test_fp8_per_channel_is_answered_as_a_compressed_tensors_channel_token_checkpoint(gpu, release, tmp_path):
    """Both ask the FP8 oracle with (kFp8StaticChannelSym, kFp8DynamicTokenSym) and
    allow_vllm_cutlass=True; on these GPUs no backend the PTPC method refuses is reached."""
    code, doc = _explain(f"{BF16} --quantization fp8_per_channel", gpu, release)
    ref_code, ref = _explain(_ct_checkpoint(tmp_path), gpu, release)
    assert code == ref_code == 0, (doc, ref)
    assert doc["selected"] == ref["selected"]
    # Every kernel eligible for the checkpoint is for the online method, but those the method
    # refuses after selection (it would, were the oracle to reach them): Marlin here.
    vetoed = {c["kernel"] for c in doc["candidates"] if [f["rule"] for f in c.get("failures", ())] == ["constraint.fp8_per_channel_backend"]}
    assert vetoed == {"marlin"}
    assert _eligible(doc) == _eligible(ref) - vetoed
    cutlass = next(c for c in doc["candidates"] if c["kernel"] == "vllm_cutlass")
    assert "vllm_cutlass.allow_vllm_cutlass" not in [f["rule"] for f in cutlass.get("failures", ())]


@pytest.mark.parametrize("release", ["0.29.0", "0.34.0"])
def test_fp8_per_channel_refuses_the_marlin_kernel_the_oracle_picks(release, tmp_path):
    """On SM 8.0 the FP8 oracle reaches Marlin; Fp8PtpcOnlineMoEMethod then raises ("FP8 PTPC online
    MoE quant is not supported with the MARLIN backend"), it does not fall back. The checkpoint with
    the same keys keeps Marlin."""
    code, doc = _explain(f"{BF16} --quantization fp8_per_channel", "A100", release)
    ref_code, ref = _explain(_ct_checkpoint(tmp_path), "A100", release)
    assert ref_code == 0 and ref["selected"]["kernel"] == "marlin"
    assert code == 1 and doc["selected"] is None
    marlin = next(c for c in doc["candidates"] if c["kernel"] == "marlin")
    assert [(f["rule"], f["code"]) for f in marlin["failures"]] == [("constraint.fp8_per_channel_backend", "quant_unsupported")]


@pytest.mark.parametrize("release", RELEASES)
def test_fp8_per_block_keeps_the_128_block_where_the_checkpoint_refines_it(release):
    """TP 8 cuts Qwen3-30B-A3B's 768 into 96-wide shards: an fp8 block checkpoint refines its block
    (or is refused), the online method asks with kFp8Static128BlockSym and no checkpoint block."""
    code, doc = _explain(f"{BF16} --quantization fp8_per_block -tp 8", "H200", release)
    _, ref = _explain(f"{FP8_BLOCK} -tp 8", "H200", release)
    assert code == 0, doc
    assert (doc["inputs"]["weight_block"]["value"], doc["inputs"]["weight_block_size"]["value"]) == ("128x128", "none")
    assert ref["inputs"]["weight_block"]["value"] != "128x128"
    rules = {f["rule"] for c in doc["candidates"] for f in c.get("failures", ())}
    assert not rules & {"constraint.fp8_block_tp_alignment", "constraint.fp8_block_tp_alignment.other_blocks", "constraint.fp8_block_tp_padding"}


@pytest.mark.parametrize(("method", "padded"), [("fp8_per_block", (2176, 128)), ("fp8", (2100, 96)), ("fp8_per_tensor", (2100, 96))])
def test_only_the_online_block_method_rounds_the_layer_up_to_whole_blocks(method, padded):
    """Fp8PerBlockOnlineMoEMethod.maybe_roundup_sizes rounds the hidden size and the shard up to 128
    (vLLM 0.29.0-0.34.0 Q/online/fp8.py); checkpoint FP8 and the per-tensor method pad nothing."""
    weight = "fp8_static_tensor" if method == "fp8_per_tensor" else "fp8_static_block128"
    values = {"hidden_size": 2100, "padded_hidden_size": 2100, "intermediate_size_per_partition": 96, "weight_quant": weight, "quant_method": method, "platform": "cuda"}
    sizes = layer_sizes(values, "triton", Version("0.34.0"))
    assert (sizes.padded_hidden_size, sizes.padded_intermediate_size_per_partition) == padded


@pytest.mark.parametrize(("release", "token"), [("0.32.0", False), ("0.33.0", True), ("0.34.0", True)])
def test_fp8_per_tensor_asks_for_per_token_activations_when_batch_invariant(release, token):
    """vLLM 0.33.0+ Fp8PerTensorOnlineMoEMethod.__init__: kFp8DynamicTokenSym under VLLM_BATCH_INVARIANT."""
    code, doc = _explain(f"{BF16} --quantization fp8_per_tensor", "H200", release, "--batch-invariant")
    assert code in (0, 1), doc
    assert doc["inputs"]["activation_quant"]["value"] == ("fp8_dynamic_token" if token else "fp8_dynamic_tensor")


@pytest.mark.parametrize(("release", "refused"), [("0.31.0", True), ("0.32.0", False)])
def test_the_platform_checks_the_shorthand_by_its_own_name(release, refused):
    """XPU's supported_quantization lists fp8_per_channel from 0.32.0 (engine_facts/vllm-release-values.yaml):
    vLLM refuses the flag at start before, whatever the checkpoint."""
    code, doc = _explain(f"{BF16} --quantization fp8_per_channel", "ARC_B580", release)
    issues = [(i["keyword"], i["path"], i["value"]) for i in doc.get("issues", ())]
    assert (code == 2 and issues == [("supported_quantization", "--serve --quantization", "fp8_per_channel")]) == refused, doc
    if not refused:
        assert doc["inputs"]["quant_method"]["value"] == "fp8_per_channel"


@pytest.mark.parametrize(("flag", "method"), [("mxfp4", "Mxfp4OnlineMoEMethod"), ("int8_per_channel_weight_only", "Int8OnlineMoEMethod")])
def test_a_shorthand_moe_oracle_does_not_model_names_the_method_vllm_builds(flag, method):
    code, doc = _explain(f"{BF16} --quantization {flag}", "H200", "0.34.0")
    (issue,) = doc["issues"]
    assert code == 2 and (issue["path"], issue["value"]) == ("--serve --quantization", flag)
    assert method in issue["message"] and {"fp8_per_tensor", "fp8_per_block", "fp8_per_channel"} <= set(issue["allowed"])


def test_a_document_naming_an_online_shorthand_is_refused(tmp_path):
    """vLLM's OnlineQuantizationConfig.from_config raises for a checkpoint's document: the shorthand
    is a flag, not a format; the refusal says how to give it."""
    cfg = json.loads((EXAMPLES / "qwen3-30b-a3b.json").read_text())
    cfg["quantization_config"] = {"quant_method": "fp8_per_block"}
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(cfg))
    code, out, _ = cli("select", "--model", str(tmp_path / "m"), "--gpu", "H200", "--json")
    (issue,) = json.loads(out)["issues"]
    assert code == 2 and (issue["path"], issue["value"]) == ("$.quantization_config.quant_method", "fp8_per_block")
    assert "--quantization fp8_per_block" in issue["message"] and "fp8_per_block" not in issue["allowed"]


def test_a_config_files_online_fp8_method_is_read_by_the_tables(tmp_path):
    path = tmp_path / "layer.yaml"
    path.write_text("model: {num_experts: 64, top_k: 4, hidden_size: 1024, intermediate_size: 512, activation: silu, quant: fp8_channel_token, quant_method: fp8_per_channel}\ndevice: {gpu: H200}\n")
    code, out, _ = cli("select", "--config", str(path), "--json")
    assert code == 0 and json.loads(out)["selected"]["kernel"] == "vllm_cutlass"


def test_a_request_the_method_refuses_after_selection_is_fixed_by_dropping_it():
    """``--moe-backend marlin`` under ``--quantization fp8_per_channel``: the method refuses the
    requested kernel after the oracle returned it. The fixes offered only ``--quant`` changes (cost
    4); leaving the backend to the oracle (``--moe-backend auto``, cost 1) runs vLLM CUTLASS."""
    code, out, _ = cli("explain", "--serve", f"vllm serve {BF16} --quantization fp8_per_channel --moe-backend marlin", "--gpu", "H100", "--package", "vllm==0.34.0")
    assert code == 1
    fixes = [line.strip() for line in out.splitlines() if line[:5] in ("  1. ", "  2. ", "  3. ")]
    assert fixes[0] == "1. in the vllm serve line: --moe-backend auto  [cost 1, tie] -> vllm_cutlass selected", fixes
    # Requesting a backend whose kernels fail nothing but the request is as cheap.
    assert all("--moe-backend " in f and "[cost 1, tie]" in f for f in fixes[1:]) and len(fixes) == 3, fixes


def test_quant_over_an_online_method_says_where_the_quantization_came_from():
    """``--quant`` over ``--quantization fp8_per_channel`` on a BF16 checkpoint said it replaced
    "the checkpoint's quantization ... (the checkpoint's quantization_config)", which it has none of."""
    code, out, _ = cli("explain", "--serve", f"vllm serve {BF16} --quantization fp8_per_channel", "--quant", "mxfp8", "--gpu", "B200", "--package", "vllm==0.34.0")
    assert code == 0
    (note,) = [line for line in out.splitlines() if line.startswith("Note: --quant ")]
    assert note.startswith("Note: --quant mxfp8 replaces the quantization fp8_channel_token that --quantization fp8_per_channel applies at load to the unquantized checkpoint:")
    code, out, _ = cli("explain", "--serve", f"vllm serve {FP8_BLOCK}", "--quant", "mxfp8", "--gpu", "B200", "--package", "vllm==0.34.0")
    (note,) = [line for line in out.splitlines() if line.startswith("Note: --quant ")]
    assert "replaces the checkpoint's quantization fp8_block (the checkpoint's quantization_config)" in note


def test_select_keeps_the_note_of_quant_over_an_online_method():
    code, _out, err = cli("select", "--serve", f"vllm serve {BF16} --quantization fp8_per_channel", "--quant", "mxfp8", "--gpu", "B200", "--package", "vllm==0.34.0")
    assert code == 0 and "note: --quant mxfp8 replaces the quantization fp8_channel_token that --quantization fp8_per_channel applies at load" in err, err
