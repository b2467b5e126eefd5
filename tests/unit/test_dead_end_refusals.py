"""A dead end's headline and Blocking say what vLLM itself raises, at the stage it raises it.

On the parent commit:

* ``select --model qwen3-30b-a3b --gpu B200 --tp 2 --dp 2 --ep --lora --all2all deepep_low_latency``
  said "the engine selects flashinfer_trtllm_bf16_lora, then refuses the layer" with no Blocking
  section, though vLLM 0.34.0 P/oracle/unquantized.py ``select_unquantized_moe_backend`` raises
  "MoE LoRA requires a Standard activation layout" at the top of its LoRA branch, before it tries
  any kernel (``constraint.unquantized_lora_layout``);
* on CPU with LoRA it said the engine selects ``flashinfer_trtllm_bf16_lora``, though vLLM skips it
  and raises for TRITON (``return_or_raise(TRITON, ..., is_lora=True)``), again with no Blocking;
* ``select --model deepseek-r1 --gpu H200 --tp 8 --moe-backend cutlass`` blamed the quant scheme
  ("rejects 4 of 5 candidates"), though vLLM 0.29.0-0.34.0 P/oracle/fp8.py
  ``select_fp8_moe_backend`` raises "vLLM CUTLASS FP8 MoE backend is disabled for this
  configuration." on the request (``allow_vllm_cutlass`` is False for the fp8 method) before it
  checks the kernel;
* ``run --model gpt-oss-20b`` (CPU) showed "quant_scheme = mxfp4_w16, allowed one of
  [unquantized]: rejects every candidate" while its fix ``--quant fp8_tensor_static`` selects a
  kernel: the pair's rules allow more between them than its first rule does.
"""

from __future__ import annotations

import json

import jsonschema
import pytest

from moe_oracle.core._resources import schema_dir
from moe_oracle.core.config import MoEConfig
from moe_oracle.core.engine import evaluate
from moe_oracle.core.environment import Environment
from moe_oracle.core.loading import load_runtime_catalog
from moe_oracle.core.oracle import default_catalog
from moe_oracle.core.quant import QuantScheme
from moe_oracle.core.blocking import blockers, engine_refusal, shortcut_raises
from moe_oracle.core.render import compact_dict, render_dead_end
from moe_oracle.inputs.hardware import lookup_hardware
from moe_oracle.inputs.hf import from_hf_config, load_hf_config
from moe_oracle.inputs.models import resolve_model_path
from moe_oracle.core.config import Device, ParallelConfig
from tests.cli_capture import cli

LORA = ["--model", "qwen3-30b-a3b", "--gpu", "B200", "--tp", "2", "--dp", "2", "--ep", "--lora", "--all2all", "deepep_low_latency"]
CUTLASS = ["--model", "deepseek-r1", "--gpu", "H200", "--tp", "8", "--moe-backend", "cutlass"]
V034 = Environment(packages=(("vllm", "0.34.0"),))


def _model(name: str, device: Device, **changes) -> MoEConfig:
    ck = from_hf_config(load_hf_config(resolve_model_path(name)))
    return MoEConfig(device=device, provenance=ck.provenance, **{**ck.kwargs, **changes})


def _select_schema() -> dict:
    return json.loads((schema_dir() / "bundled" / "select.schema.json").read_text(encoding="utf-8"))


def test_the_lora_layout_refusal_leads_the_dead_end():
    config = _model("qwen3-30b-a3b", lookup_hardware("B200").device, lora=True,
                    parallel=ParallelConfig(tp_size=2, dp_size=2, use_ep=True, all2all_backend="deepep_low_latency"))
    d = evaluate(default_catalog(), config, V034)
    assert d.winner is None and d.refused is None  # no kernel is selected, so none is refused
    refusal = engine_refusal(d)
    assert refusal is not None and (refusal.kind, refusal.stage) == ("layer", "selection")
    assert [c.rule for c in refusal.checks] == ["constraint.unquantized_lora_layout"]
    (b,) = blockers(d)
    assert (b.code.value, b.field, b.raised_at, b.rules) == ("feature_unsupported", "activation_format", "selection", ("constraint.unquantized_lora_layout",))
    record = compact_dict(d)
    jsonschema.validate(record, _select_schema())
    assert record["blocking"][0]["raised_at"] == "selection"
    assert "vLLM raises before it tries any kernel [constraint.unquantized_lora_layout]" in d.describe()


def test_the_lora_layout_refusal_in_the_select_text():
    code, out, _ = cli("select", *LORA)
    assert code == 1
    head, *rest = out.splitlines()
    assert head == "No MoE kernel runs for vLLM 0.34.0 (assumed: newest modelled): vLLM raises in the layer's kernel selection, before it tries any kernel; 87 candidates."
    assert rest[0] == "Blocking:"
    assert rest[1].startswith("  activation_format = batched_experts, allowed one of [standard]: vLLM raises here, in the layer's kernel selection, before it tries any kernel (feature_unsupported) [constraint.unquantized_lora_layout]")
    assert "selects flashinfer_trtllm_bf16_lora" not in out
    # The fixes answer that refusal (each re-checked by the search).
    assert "--no-lora  [cost 1" in out and "--no-ep  [cost 1" in out


def test_older_releases_have_no_layout_refusal():
    """vLLM 0.29.0-0.33.0 have no such check (P/oracle/unquantized.py's LoRA branch returns
    TrtLlmBf16LoRAExperts or TritonExperts unchecked): no refusal before selection is named."""
    config = _model("qwen3-30b-a3b", lookup_hardware("B200").device, lora=True,
                    parallel=ParallelConfig(tp_size=2, dp_size=2, use_ep=True, all2all_backend="deepep_low_latency"))
    d = evaluate(default_catalog(), config, Environment(packages=(("vllm", "0.33.0"),)))
    assert engine_refusal(d) is None


def test_a_shortcut_that_raises_names_the_kernel_it_raises_for():
    config = _model("qwen3-30b-a3b", Device("cpu", arch="x86_64"), lora=True)
    d = evaluate(default_catalog(), config, V034)
    assert d.winner is None and d.refused_kernel == "triton" and engine_refusal(d) is None
    assert shortcut_raises(d) == "for LoRA on an unquantized layer"
    (b,) = blockers(d)
    assert b.rules == ("triton.platform",)
    text = render_dead_end(d)
    assert text.startswith("No MoE kernel runs for vLLM 0.34.0 (declared): vLLM's early return for LoRA on an unquantized layer tries triton and raises;")
    assert "vLLM's early return for LoRA on an unquantized layer tries triton (TritonExperts) and raises (platform_unsupported) [triton.platform]" in text
    assert "flashinfer_trtllm_bf16_lora" not in text


def test_the_fixes_of_a_raising_shortcut_include_leaving_its_condition():
    """The fixes edited only the raising kernel's check (``--gpu`` moves, cost 5); dropping what
    makes the early return run (``--no-lora``, cost 1) is the cheapest."""
    code, out, _ = cli("explain", "--model", "qwen3-30b-a3b", "--gpu", "CPU_X86_64", "--lora")
    assert code == 1
    fixes = [line.strip() for line in out.splitlines() if line.startswith("  1. ")]
    assert fixes and fixes[0].startswith("1. --no-lora  [cost 1] -> cpu_"), fixes


@pytest.mark.parametrize("release", ["0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0", "0.34.0"])
def test_a_cutlass_request_on_an_fp8_checkpoint_is_refused_on_the_request(release):
    config = _model("deepseek-r1", lookup_hardware("H200").device, moe_backend="cutlass", parallel=ParallelConfig(tp_size=8))
    d = evaluate(default_catalog(), config, Environment(packages=(("vllm", release),)))
    refusal = engine_refusal(d)
    assert refusal is not None and refusal.kind == "request"
    assert {c.rule for c in refusal.checks} == {"vllm_cutlass.allow_vllm_cutlass", "vllm_cutlass_batched.allow_vllm_cutlass"}
    (b,) = blockers(d)
    assert (b.code.value, b.field, b.raised_at) == ("path_not_enabled", "quant_method", "selection")
    text = render_dead_end(d)
    assert f"is refused for vLLM {release} (declared): vLLM raises on the request itself, before it tries the backend's kernels;" in text.splitlines()[0]
    assert "vLLM CUTLASS FP8 MoE backend is disabled for this configuration." in text
    assert "quant_scheme = fp8_block" not in text


def test_the_cutlass_gate_passes_where_vllm_allows_it_and_binds_only_fp8():
    h200 = lookup_hardware("H200").device
    ct = MoEConfig(num_experts=64, top_k=4, hidden_size=2048, intermediate_size=1024, device=h200,
                   quant=QuantScheme("fp8_static_channel", "fp8_dynamic_token"), quant_method="compressed-tensors", moe_backend="cutlass")
    d = evaluate(default_catalog(), ct, V034)
    assert d.kernel == "vllm_cutlass" and engine_refusal(d) is None
    nvfp4 = _model("nvidia-qwen3.5-122b-a10b-nvfp4", lookup_hardware("H200").device, moe_backend="cutlass")
    d = evaluate(default_catalog(), nvfp4, V034)
    assert d.winner is None and engine_refusal(d) is None  # the NVFP4 oracle has no such gate
    assert not any(f.rule.endswith("allow_vllm_cutlass") for c in d.candidates for f in c.failures)


def test_the_cutlass_request_in_the_select_text():
    code, out, _ = cli("select", *CUTLASS)
    assert code == 1
    lines = out.splitlines()
    assert lines[0] == "Requested backend vllm_cutlass, batched_vllm_cutlass (moe_backend) is refused for vLLM 0.34.0 (assumed: newest modelled): vLLM raises on the request itself, before it tries the backend's kernels; 87 candidates."
    assert lines[2].startswith("  quant_method = fp8, allowed one of [compressed-tensors, fp8_per_channel]: vLLM raises when it reads the request, before it tries the backend's kernels (path_not_enabled)")


def test_a_pair_of_several_rules_shows_what_they_allow_between_them():
    engine = default_catalog()
    runtime = load_runtime_catalog(engine)
    config = _model("gpt-oss-20b", Device("cpu", arch="x86_64"))
    d = evaluate(runtime, config, V034)
    assert d.winner is None
    b = blockers(d)[0]
    assert (b.code.value, b.field, b.rejected, b.of) == ("quant_unsupported", "quant_scheme", len(d.rows), len(d.rows))
    assert b.allowed_union and {"unquantized", "fp8_tensor_static"} <= set(b.failure.allowed)
    text = render_dead_end(d)
    assert "quant_scheme = mxfp4_w16, allowed one of [unquantized, " in text and f"(between its {len(b.rules)} rules): rejects every candidate" in text
    assert "allowed one of [unquantized]:" not in text
    assert compact_dict(d)["blocking"][0]["allowed"] == list(b.failure.allowed)


def test_a_pair_whose_rules_agree_shows_their_one_list():
    code, out, _ = cli("select", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--moe-backend", "flashinfer_trtllm")
    assert code == 1
    assert "  device_capability = 90, allowed one of [100, 103, 107]: rejects every candidate of the requested backend" in out
    assert "between its" not in out
