"""``--serve "vllm serve ..."``: a command line read with the flags of the vLLM release the answer is for (issue 9).

``--serve`` did not exist before issue 9, so every CLI test here fails on the parent commit.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from moe_oracle.cli import main
from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.serve import SELECTION_FLAGS, UNMODELLED_FLAGS, parse_serve
from moe_oracle.inputs.release_facts import engine_facts
from tests.cli_capture import cli


def test_every_classified_flag_is_a_real_vllm_flag():
    dests = {f["dest"] for f in engine_facts()["serve_flags"]} | {"model_tag"}
    assert set(SELECTION_FLAGS) <= dests and set(UNMODELLED_FLAGS) <= dests
    assert not set(SELECTION_FLAGS) & set(UNMODELLED_FLAGS)


def test_the_facts_file_is_vllm_0_33_0():
    facts = engine_facts("0.33.0")
    assert facts["version"] == "0.33.0" and len(facts["serve_flags"]) > 300
    assert "VLLM_USE_DEEP_GEMM" in facts["env_vars"]


def test_vllm_spellings_are_rewritten_as_vllm_does():
    s = parse_serve("vllm serve --model=openai/gpt-oss-120b --tensor_parallel_size=4 -dp 2 -ep --all2all-backend deepep_low_latency --no-enable-eplb -O3", version="0.33.0")
    assert (s.model, s.tp, s.dp, s.ep, s.all2all, s.eplb) == ("openai/gpt-oss-120b", 4, 2, True, "deepep_low_latency", False)
    assert "--optimization-level" in s.notes[0]


def test_json_dot_notation_and_kernel_config():
    s = parse_serve("vllm serve m --enable-expert-parallel -tp 8 --enable-eplb --eplb-config.num_redundant_experts 32 --kernel-config '{\"moe_backend\": \"FlashInfer-TRTLLM\"}'", version="0.33.0")
    assert (s.redundant_experts, s.moe_backend) == (32, "flashinfer_trtllm")


def test_config_file_is_spliced_in_after_the_model(tmp_path):
    (tmp_path / "serve.yaml").write_text("tensor-parallel-size: 8\nenable-expert-parallel: true\nport: 8000\nmax-num-batched-tokens: 8K\n")
    s = parse_serve("vllm serve m --config serve.yaml -tp 4", version="0.33.0", base=tmp_path)
    assert (s.tp, s.ep, s.max_num_batched_tokens) == (4, True, 8192)  # the command line wins over the file, as in vLLM


def test_environment_words_before_the_command_are_kept():
    s = parse_serve("VLLM_USE_DEEP_GEMM=0 VLLM_ROCM_USE_AITER=1 vllm serve m", version="0.33.0")
    assert s.env == (("VLLM_USE_DEEP_GEMM", "0"), ("VLLM_ROCM_USE_AITER", "1"))


def test_flags_are_classified_in_notes():
    s = parse_serve("vllm serve m --port 8000 --gpu-memory-utilization 0.9 --speculative-config '{\"method\": \"mtp\"}' -pcp 2", version="0.33.0")
    assert s.notes[0] == "ignored (no effect on MoE kernel selection): --gpu-memory-utilization, --port"
    assert any(n.startswith("--speculative-config: a draft model") for n in s.notes)
    # -pcp is read (the MoE layer counts PCP as it counts DP), so no note says it is not modelled.
    assert s.pcp == 2 and not any("prefill-context" in n for n in s.notes)


def test_the_placement_strategy_is_read_for_selection():
    """The note read "plan honours it when placing each rank's experts; kernel selection does not
    depend on it": vLLM 0.34.0's MoE LoRA wrapper refuses EP without linear placement
    (vllm/lora/layers/fused_moe.py FusedMoEWithLoRA._ep_check), so the flag is read, not noted."""
    s = parse_serve("vllm serve m --enable-expert-parallel -dp 4 --expert-placement-strategy round_robin", version="0.34.0")
    assert s.expert_placement == "round_robin"
    assert "expert_placement_strategy" in SELECTION_FLAGS and "expert_placement_strategy" not in UNMODELLED_FLAGS
    assert not any("expert-placement-strategy" in n for n in s.notes)


@pytest.mark.parametrize(("command", "fragment"), [
    ("vllm serve m --tensor-paralel-size 8", "did you mean --tensor-parallel-size?"),
    ("vllm serve m --moe-backend cutlas", "refuses this MoE backend"),
    ("vllm serve m --all2all-backend deepep", "refuses this all2all backend"),
    ("vllm serve -tp 8", "names no model"),
    ("vllm serve m -tp eight", "expected an integer"),
    ("vllm run m", "expected a `vllm serve ...` command line"),
])
def test_what_vllm_refuses_is_bad_input(command, fragment):
    with pytest.raises(ConfigError) as info:
        parse_serve(command, version="0.33.0")
    assert fragment in str(info.value) and str(info.value).startswith("bad --serve")


def test_cli_minimax_m2_tp8_with_expert_parallel(capsys):
    code = main(["explain", "--gpu", "H200", "--serve", "vllm serve MiniMaxAI/MiniMax-M2 --tensor-parallel-size 8 --enable-expert-parallel --port 8000", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    assert record["inputs"]["ep_size"]["value"] == 8 and record["inputs"]["use_ep"]["source"] == "user_flag"
    assert any("ignored (no effect on MoE kernel selection): --port" in n for n in record["notes"])


def test_cli_serve_dtype_and_online_fp8(capsys):
    code = main(["explain", "--gpu", "H200", "--serve", "vllm serve Qwen/Qwen3-30B-A3B -q fp8 --dtype half", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code in (0, 1)
    assert record["inputs"]["quant_scheme"]["value"] == "fp8_tensor_dynamic" and record["inputs"]["in_dtype"]["value"] == "float16"


def test_online_fp8_names_the_serve_flag_as_the_methods_source(capsys):
    # Qwen3-30B-A3B has no quantization_config: the method comes from --quantization (vLLM
    # 0.29.0-0.34.0 Q/fp8.py online quantization), not from config.json (was: "config.json quantization_config").
    import jsonschema

    from moe_oracle.core._resources import package_dir

    serve = "vllm serve Qwen/Qwen3-30B-A3B --quantization fp8 -tp 2"
    assert main(["plan", "--gpu", "H100", "--serve", serve, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    quant = record["model"]["quantization"]
    assert (quant["method"], quant["source"]) == ("fp8", "--quantization fp8 (no quantization document)")
    jsonschema.validate(record, json.loads((package_dir().parent / "schemas" / "bundled" / "plan.schema.json").read_text()))
    assert main(["plan", "--gpu", "H100", "--serve", serve]) == 0
    assert "Quantization: fp8 (--quantization fp8 (no quantization document))" in capsys.readouterr().out


def test_cli_serve_conflicts_with_a_different_flag(capsys):
    assert main(["select", "--gpu", "H200", "--tp", "4", "--serve", "vllm serve qwen3-30b-a3b -tp 8"]) == 2
    assert "given as --tp 4 and in --serve as --tensor-parallel-size 8" in capsys.readouterr().err


def test_cli_serve_model_that_is_not_here(capsys):
    assert main(["select", "--gpu", "H200", "--serve", "vllm serve someorg/NoSuchModel -tp 8"]) == 2
    assert "does not download models" in capsys.readouterr().err


@pytest.mark.parametrize(("command", "overrides", "key", "value", "allowed"), [
    ("select", {"num_experts": "abc"}, "num_experts", "abc", None),
    # qwen3_moe.py reads hidden_act only in its dense MLP (Qwen3MoeMLP: silu only), built for mlp_only_layers
    ("select", {"hidden_act": "foo", "mlp_only_layers": [0]}, "hidden_act", "foo", "silu"),
    ("explain", {"quantization_config": {"quant_method": "bogus"}}, "quantization_config.quant_method", "bogus", "fp8"),
    ("plan", {"quantization_config": {"quant_method": "bogus"}}, "quantization_config.quant_method", "bogus", "fp8"),
], ids=["select-int", "select-activation", "explain-nested", "plan-nested"])
def test_a_bad_hf_override_blames_the_flag_not_the_model_file(command, overrides, key, value, allowed, capsys):
    line = f"vllm serve qwen3-30b-a3b --hf-overrides '{json.dumps(overrides)}'"
    assert main([command, "--gpu", "H200", "--serve", line, "--json"]) == 2
    record = json.loads(capsys.readouterr().out)
    assert record["message"] == "bad --serve"
    (issue,) = record["issues"]
    assert issue["file"] is None and issue["path"] == f"--serve --hf-overrides {key}" and issue["value"] == value
    assert "--hf-overrides sets" in issue["message"]
    assert allowed is None or allowed in issue["allowed"]


def test_a_bad_model_file_field_is_still_the_files_beside_an_override(tmp_path, capsys):
    model = tmp_path / "config.json"
    model.write_text(json.dumps({**json.loads((Path(__file__).parents[2] / "examples/models/qwen3-30b-a3b.json").read_text()), "hidden_act": "foo", "mlp_only_layers": [0]}))
    assert main(["select", "--gpu", "H200", "--serve", f"vllm serve {model} --hf-overrides '{{\"num_experts\": 64}}'", "--json"]) == 2
    (issue,) = json.loads(capsys.readouterr().out)["issues"]
    assert issue["file"] == str(model) and issue["path"] == "$.hidden_act"


def test_serve_environment_words_are_read_and_checked_as_vllm_reads_them(capsys):
    code = main(["explain", "--gpu", "H200", "--serve", "FOO=1 VLLM_USE_DEEP_GEMM=0 vllm serve deepseek-ai/DeepSeek-R1 -tp 8", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert code == 0 and record["environment"]["env"] == {"VLLM_USE_DEEP_GEMM": "0"}
    assert "--serve: FOO is not read by vLLM 0.34.0: ignored" in record["notes"]
    assert main(["select", "--gpu", "H200", "--serve", "VLLM_USE_DEEP_GEMM=true vllm serve deepseek-ai/DeepSeek-R1 -tp 8"]) == 2
    assert "--serve VLLM_USE_DEEP_GEMM: vLLM 0.34.0 reads VLLM_USE_DEEP_GEMM with bool(int(...))" in capsys.readouterr().err


def test_speculative_config_moe_backend_is_the_drafts():
    """vLLM 0.33.0 vllm/config/speculative.py: ``SpeculativeConfig.moe_backend`` (JSON keys
    de-dashed by arg_utils ``create_speculative_config``) overrides the draft's KernelConfig."""
    s = parse_serve("vllm serve m --moe-backend triton --speculative-config '{\"method\": \"mtp\", \"num_speculative_tokens\": 1, \"moe-backend\": \"flashinfer_cutlass\"}'", version="0.33.0")
    assert (s.moe_backend, s.draft_moe_backend) == ("triton", "flashinfer_cutlass")
    assert parse_serve("vllm serve m --speculative-config.moe_backend auto", version="0.33.0").draft_moe_backend == "auto"
    assert parse_serve("vllm serve m --speculative-config '{\"method\": \"mtp\"}'", version="0.33.0").draft_moe_backend is None


def test_speculative_config_moe_backend_is_not_normalized():
    """Unlike --moe-backend, the MoEBackend literal of SpeculativeConfig takes names as written."""
    with pytest.raises(ConfigError) as info:
        parse_serve("vllm serve m --speculative-config '{\"moe_backend\": \"FlashInfer-CUTLASS\"}'", version="0.33.0")
    issue = info.value.issues[0]
    assert issue.path == "--serve --speculative-config moe_backend" and issue.value == "FlashInfer-CUTLASS"
    assert "flashinfer_cutlass" in issue.allowed


# --- values the release refuses at start: --quantization, --kv-cache-dtype -----------------------


@pytest.mark.parametrize(("command", "flag", "value"), [
    ("select", "--quantization bogus", "bogus"),
    ("select", "--kv-cache-dtype fp9", "fp9"),
    ("plan", "-q bogus", "bogus"),
    ("plan", "--kv-cache-dtype fp9", "fp9"),
])
def test_a_value_the_release_refuses_at_start_is_bad_input(command, flag, value, capsys):
    """vLLM 0.33.0 ModelConfig._verify_quantization ("Unknown quantization method": an unquantized
    checkpoint, where the -q value itself is checked) and CacheConfig._validate_cache_dtype refuse
    these; they were accepted with a note."""
    assert main([command, "--gpu", "H200", "--serve", f"vllm serve qwen3-30b-a3b -tp 2 {flag}"]) == 2
    err = capsys.readouterr().err
    name = "--quantization" if "q" in flag.split()[0] else "--kv-cache-dtype"
    assert err.startswith("moe-oracle: error: bad --serve") and f"--serve {name}: vLLM 0.34.0" in err and f"(got '{value}')" in err
    assert ("allowed: awq, auto_awq, fp8" if name == "--quantization" else "allowed: auto, float16, bfloat16, fp8") in err


@pytest.mark.parametrize("flag", ["-q FP8", "--quantization fp8", "--kv-cache-dtype fp8_e4m3", "--kv-cache-dtype octave_k3v4"])
def test_values_the_release_accepts_are_still_accepted(flag):
    # An unquantized checkpoint: -q fp8 is online quantization, never the checkpoint-mismatch
    # refusal vLLM gives a quantized one.
    assert main(["select", "--gpu", "H200", "--serve", f"vllm serve qwen3-30b-a3b -tp 2 {flag}"]) == 0


@pytest.mark.parametrize("flag", ["-q fbgemm_fp8 --allow-deprecated-quantization", "-q humming", "-q awq"])
def test_online_quantization_other_than_fp8_is_refused_as_not_modelled(flag, capsys):
    """vLLM quantizes an unquantized checkpoint online with the method (humming:
    HummingMoEMethod) or refuses it; the answer for the unquantized layer, given before with a
    note, was wrong either way."""
    assert main(["select", "--gpu", "H200", "--serve", f"vllm serve qwen3-30b-a3b -tp 2 {flag}"]) == 2
    assert "on an unquantized checkpoint is not modelled" in capsys.readouterr().err


def test_the_allowed_values_are_the_declared_releases(capsys):
    """octave_k3v4 is a CacheDType from vLLM 0.33.0 on; 0.32.0's argparse choices refuse it."""
    serve = "vllm serve deepseek-r1 -tp 8 --kv-cache-dtype octave_k3v4"
    assert main(["select", "--gpu", "H200", "--serve", serve, "--package", "vllm==0.33.0"]) == 0
    assert main(["select", "--gpu", "H200", "--serve", serve, "--package", "vllm==0.32.0"]) == 2
    assert "--serve --kv-cache-dtype: vLLM 0.32.0 refuses" in capsys.readouterr().err


def test_a_deprecated_method_needs_allow_deprecated_quantization():
    from moe_oracle.inputs.serve import serve_value_issues

    issues = serve_value_issues(parse_serve("vllm serve m -q fbgemm_fp8", version="0.33.0"), "0.33.0")
    assert [(i.path, i.value) for i in issues] == [("--serve --quantization", "fbgemm_fp8")]
    assert "--allow-deprecated-quantization" in issues[0].message
    assert parse_serve("vllm serve m -q FP8", version="0.33.0").quantization == "fp8"  # ModelConfig.validate_quantization_before


def test_release_values_agree_with_the_serve_facts():
    """engine_facts/vllm-release-values.yaml's 0.33.0 variable names are the serve facts file's
    (the file against each release's source: tests/differential/test_release_sources.py)."""
    from moe_oracle.inputs.release_facts import release_values

    for version in ("0.33.0", "0.34.0"):
        assert tuple(sorted(engine_facts(version)["env_vars"])) == release_values(version)["env_vars"]


@pytest.mark.parametrize(("model", "example"), [
    ("nvidia/Qwen3.5-122B-A10B-NVFP4", "nvidia-qwen3.5-122b-a10b-nvfp4.json"),
    ("RedHatAI/DeepSeek-V4-Flash-NVFP4-FP8", "redhatai-deepseek-v4-flash-nvfp4-fp8.json"),
    ("Qwen/Qwen3.5-122B-A10B", "qwen3.5-122b-a10b.json"),
    ("deepseek-ai/DeepSeek-R1", "deepseek-r1.json"),
])
def test_a_hugging_face_id_resolves_to_its_shipped_example(model, example):
    """examples/models/SOURCES.md lists these ids; a vendor's re-quantized checkpoint is shipped
    under the whole id, the others under the id's last component."""
    from moe_oracle.inputs.serve_apply import serve_model_path

    found = serve_model_path(parse_serve(f"vllm serve {model} -tp 8", version="0.33.0"))
    assert found.path.name == example and found.note is None


def test_explain_refuses_a_quantization_no_override_accepts_for_the_checkpoint():
    # vLLM _verify_quantization: fp8 checkpoint, -q awq -> "does not match"; -q fp8 matches.
    from moe_oracle.cli import main

    assert main(["explain", "--serve", "vllm serve qwen3-30b-a3b-fp8 -q awq", "--gpu", "H200"]) == 2
    assert main(["explain", "--serve", "vllm serve qwen3-30b-a3b-fp8 -q fp8", "--gpu", "H200"]) == 0


# --- --quantization on a quantized checkpoint: vLLM's order ----------------------------------------
# vLLM 0.29.0-0.33.0 ModelConfig._verify_quantization (vllm/config/model.py, the same in each):
# with a quantization document, the override classes run first, then "does not match", then the
# name and deprecation checks on the resulting method. Each row was run through the real
# _verify_quantization of 0.29.0 and 0.33.0 (a CPU harness calling it with the document below).

_QC = {
    "gptq": {"quant_method": "gptq", "bits": 4, "group_size": 128, "desc_act": False, "sym": True},
    "awq": {"quant_method": "awq", "bits": 4, "group_size": 128, "zero_point": True, "version": "gemm"},
    "fp8": {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]},
    "modelopt_fp8": {"quant_method": "modelopt", "quantization": {"quant_algo": "FP8", "exclude_modules": ["lm_head"]}},
    "fbgemm": {"quant_method": "fbgemm_fp8", "activation_scale_ub": 1200.0, "modules_to_not_convert": ["lm_head"]},
    "empty": {"quant_method": ""},
}


def _checkpoint(tmp_path: Path, qc: str) -> Path:
    cfg = json.loads((Path(__file__).parents[2] / "examples" / "models" / "qwen3-30b-a3b.json").read_text())
    cfg["quantization_config"] = _QC[qc]
    (tmp_path / qc).mkdir()
    (tmp_path / qc / "config.json").write_text(json.dumps(cfg))
    return tmp_path / qc


@pytest.mark.parametrize("release", ["0.29.0", "0.33.0"])
@pytest.mark.parametrize(("qc", "flags", "accepted"), [
    ("gptq", "-q marlin", True),  # AutoGPTQ override: marlin -> auto_gptq (was: "knows no such method")
    ("awq", "-q marlin", True),  # AutoAWQ override: marlin -> auto_awq
    ("modelopt_fp8", "-q fbgemm_fp8", True),  # ModelOpt override -> modelopt; no deprecation check
    ("modelopt_fp8", "-q bogus", True),  # ModelOpt override takes any -q
    ("empty", "-q fp8", False),  # "" -> None after the override loop: "(None) does not match (fp8)"
    ("empty", "", True),
    ("gptq", "-q gptq_marlin", True),
    ("gptq", "-q moe_wna16", True),
    ("awq", "-q moe_wna16", True),
    ("gptq", "-q awq", False),
    ("fp8", "-q fbgemm_fp8", False),  # "does not match" comes before the deprecation check
    ("fp8", "-q bogus", False),  # "does not match", not "Unknown quantization method"
    ("fbgemm", "", False),
    ("fbgemm", "--allow-deprecated-quantization", True),
])
def test_quantization_on_a_quantized_checkpoint_follows_verify_quantization(tmp_path, qc, flags, accepted, release, capsys):
    serve = f"vllm serve {_checkpoint(tmp_path, qc)} {flags}"
    code = main(["select", "--gpu", "H200", "--package", f"vllm=={release}", "--serve", serve])
    assert code == (0 if accepted else 2), capsys.readouterr().err


def test_an_override_that_replaces_the_quantization_is_noted(tmp_path, capsys):
    serve = f"vllm serve {_checkpoint(tmp_path, 'gptq')} -q marlin"
    assert main(["explain", "--gpu", "H200", "--serve", serve]) == 0
    assert "auto_gptq override takes the checkpoint as auto_gptq" in capsys.readouterr().out


def test_an_empty_quant_method_does_not_match_any_quantization(tmp_path, capsys):
    assert main(["select", "--gpu", "H200", "--serve", f"vllm serve {_checkpoint(tmp_path, 'empty')} -q fp8"]) == 2
    assert "model config (None) does not match" in capsys.readouterr().err


def test_quantization_fp8_on_a_checkpoint_quantized_by_hf_quant_config_json_is_not_online_fp8(tmp_path, capsys):
    """vLLM get_config reads hf_quant_config.json when config.json has no quantization_config, and
    the ModelOpt override takes -q fp8 as modelopt; it was answered as online FP8 (triton)."""
    ck = _checkpoint(tmp_path, "empty")
    cfg = json.loads((ck / "config.json").read_text())
    del cfg["quantization_config"]
    (ck / "config.json").write_text(json.dumps(cfg))
    (ck / "hf_quant_config.json").write_text(json.dumps({"producer": {"name": "modelopt"}, "quantization": {"quant_algo": "FP8", "exclude_modules": ["lm_head"]}}))
    assert main(["explain", "--gpu", "H200", "--serve", f"vllm serve {ck} -q fp8"]) == 0
    out = capsys.readouterr().out
    assert "quantizes the experts online" not in out and "modelopt override takes the checkpoint as modelopt" in out


@pytest.mark.parametrize(("model", "needle"), [
    ("gpt-oss-20b", "For gpt-oss model, use '--moe-backend humming' instead of '--quantization humming'."),  # vLLM's own message
    ("fp8", "not modelled"),
    ("gptq", "not modelled"),
    ("empty", "not modelled"),
])
def test_quantization_humming_is_never_answered_with_the_checkpoints_selection(model, needle, tmp_path, capsys):
    """HummingConfig.override_quantization_method (Q/humming.py) takes every checkpoint as humming
    (HummingMoEMethod, not modelled) and refuses a gpt-oss MXFP4 one; both used to be answered
    with the checkpoint's normal selection."""
    ref = model if model not in _QC else _checkpoint(tmp_path, model)
    for command in ("select", "plan"):
        assert main([command, "--gpu", "H200", "--serve", f"vllm serve {ref} -q humming"]) == 2
        assert needle in capsys.readouterr().err


# --- the serve line is parsed with the flags of the release the answer is for ---------------------

_R1 = "vllm serve deepseek-ai/DeepSeek-R1 -tp 8"


def test_there_is_a_facts_file_per_modelled_release():
    """tools/vllm_cli_facts.py output for 0.29.0-0.33.0 (tests/differential checks each against its tree)."""
    from moe_oracle.inputs.release_facts import serve_releases
    from moe_oracle.verify.run import RELEASES

    assert serve_releases() == RELEASES
    assert [engine_facts(r)["version"] for r in RELEASES] == list(RELEASES)


@pytest.mark.parametrize(("flags", "versions_ok", "versions_refused"), [
    # FlashInfer MoE-EP megakernel: a MoEBackend name in 0.29.0-0.31.0, gone in 0.33.0 (vllm/config/kernel.py)
    ("--moe-backend flashinfer_moe_ep_mega_cutedsl", ("0.29.0", "0.30.0", "0.31.0"), ("0.33.0",)),
    ("--enable-bf16x3-router-gemm", ("0.29.0",), ("0.33.0",)),
    ("--monokernel", ("0.33.0",), ("0.29.0",)),
])
def test_flags_and_choices_are_the_releases(flags, versions_ok, versions_refused):
    for version in versions_ok:
        parse_serve(f"{_R1} {flags}", version=version)
    for version in versions_refused:
        with pytest.raises(ConfigError) as info:
            parse_serve(f"{_R1} {flags}", version=version)
        assert f"vLLM {version}" in str(info.value)


def test_cli_parses_the_serve_line_for_the_declared_release(capsys):
    serve = f"{_R1} --moe-backend flashinfer_moe_ep_mega_cutedsl"
    assert main(["select", "--gpu", "H200", "--package", "vllm==0.29.0", "--serve", serve]) != 2  # accepted by 0.29.0's parser
    capsys.readouterr()
    assert main(["select", "--gpu", "H200", "--package", "vllm==0.33.0", "--serve", serve]) == 2
    assert "--serve --moe-backend: vLLM 0.33.0 refuses" in capsys.readouterr().err
    assert main(["select", "--gpu", "H200", "--package", "vllm==0.29.0", "--serve", f"{_R1} --monokernel"]) == 2
    assert "vLLM 0.29.0 does not know --monokernel" in capsys.readouterr().err
    assert main(["select", "--gpu", "H200", "--package", "vllm==0.29.0", "--serve", f"{_R1} --enable-bf16x3-router-gemm"]) == 0


def test_an_unmodelled_release_is_parsed_with_its_stand_in(capsys):
    """vllm==0.35.0 is answered with 0.34.0's facts (EngineRelease.stand_in), and the message names 0.34.0."""
    assert main(["select", "--gpu", "H200", "--package", "vllm==0.35.0", "--serve", f"{_R1} --enable-bf16x3-router-gemm"]) == 2
    assert "vLLM 0.34.0 does not know --enable-bf16x3-router-gemm" in capsys.readouterr().err


def test_a_modelled_release_refuses_a_value_naming_the_serve_flag(capsys):
    """With 0.29.0 (no rdna3 in its MoEBackend) the serve line's flag is named, not $.moe_backend."""
    assert main(["select", "--gpu", "H200", "--package", "vllm==0.29.0", "--serve", "vllm serve Qwen/Qwen3-30B-A3B -tp 2 --moe-backend rdna3"]) == 2
    err = capsys.readouterr().err
    assert "--serve --moe-backend: vLLM 0.29.0 refuses this MoE backend" in err and "$.moe_backend" not in err


def test_parse_serve_needs_a_modelled_release():
    with pytest.raises(LookupError, match="0.28.0"):
        parse_serve("vllm serve m", version="0.28.0")


# --- argparse checks choices on every occurrence --------------------------------------------------

@pytest.mark.parametrize(("version", "flag", "bad", "good"), [
    ("0.33.0", "--moe-backend", "bogus", "triton"),
    ("0.29.0", "--moe-backend", "bogus", "triton"),
    ("0.33.0", "--all2all-backend", "bogus", "naive"),
    ("0.29.0", "--kv-cache-dtype", "bogus", "fp8"),
    ("0.32.0", "--kv-cache-dtype", "bogus", "fp8"),
    ("0.33.0", "--dtype", "bogus", "bfloat16"),
])
def test_every_occurrence_of_a_flag_with_choices_is_checked(version, flag, bad, good):
    with pytest.raises(ConfigError) as info:
        parse_serve(f"vllm serve m {flag} {bad} {flag} {good}", version=version)
    issue = info.value.issues[0]
    assert (issue.path, issue.value) == (f"--serve {flag}", bad) and good in issue.allowed and f"vLLM {version}" in issue.message


def test_kv_cache_dtype_has_no_choices_in_0_33_0():
    """0.33.0's --kv-cache-dtype is a plain str (CacheConfig validates the last value at start)."""
    assert parse_serve("vllm serve m --kv-cache-dtype bogus --kv-cache-dtype fp8", version="0.33.0").kv_cache_dtype == "fp8"


def test_cli_refuses_an_earlier_bad_moe_backend(capsys):
    assert main(["select", "--gpu", "H200", "--serve", "vllm serve Qwen/Qwen3-30B-A3B -tp 2 --moe-backend bogus --moe-backend triton"]) == 2
    assert "(got 'bogus')" in capsys.readouterr().err


# --- --kernel-config moe_backend and --moe-backend auto --------------------------------------------

def test_kernel_config_moe_backend_survives_an_explicit_auto():
    """create_engine_config copies --moe-backend into KernelConfig only when it is not auto
    (vLLM 0.29.0 vllm/engine/arg_utils.py ~l. 2545, 0.33.0 ~l. 2800)."""
    for version in ("0.29.0", "0.33.0"):
        s = parse_serve("vllm serve m --kernel-config '{\"moe_backend\": \"Marlin\"}' --moe-backend auto", version=version)
        assert s.moe_backend == "marlin" and s.flag_for("moe_backend") == "--kernel-config moe_backend"
        s = parse_serve("vllm serve m --kernel-config '{\"moe_backend\": \"marlin\"}' --moe-backend triton", version=version)
        assert s.moe_backend == "triton" and s.flag_for("moe_backend") == "--moe-backend"
    assert parse_serve("vllm serve m --moe-backend auto", version="0.33.0").moe_backend == "auto"


def test_cli_kernel_config_backend_wins_over_auto(capsys):
    serve = "vllm serve Qwen/Qwen3-30B-A3B-FP8 -tp 2 --kernel-config '{\"moe_backend\":\"marlin\"}' --moe-backend auto"
    assert main(["select", "--gpu", "H200", "--serve", serve]) == 0
    assert capsys.readouterr().out.startswith("marlin ")


@pytest.mark.parametrize("value", ["null", "1"])
def test_kernel_config_moe_backend_must_be_a_name(value):
    """KernelConfig.moe_backend is a MoEBackend literal, not optional: pydantic refuses null."""
    with pytest.raises(ConfigError) as info:
        parse_serve(f"vllm serve m --kernel-config '{{\"moe_backend\": {value}}}'", version="0.33.0")
    issue = info.value.issues[0]
    assert (issue.path, issue.value) == ("--serve --kernel-config moe_backend", value) and "triton" in issue.allowed


def test_every_kernel_config_occurrence_is_validated():
    with pytest.raises(ConfigError, match="bogus"):
        parse_serve("vllm serve m --kernel-config '{\"moe_backend\": \"bogus\"}' --kernel-config '{\"moe_backend\": \"triton\"}'", version="0.33.0")


# --- vLLM's optional_type: "" and "None" are not given ---------------------------------------------

@pytest.mark.parametrize("version", ["0.29.0", "0.33.0"])
@pytest.mark.parametrize("words", ["-q None", "-q ''", "--speculative-config None", "--speculative-config ''", "-sc None", "--hf-config-path None", "-q fp8 -q None"])
def test_optional_type_flags_read_none_as_not_given(version, words):
    s = parse_serve(f"vllm serve m {words}", version=version)
    assert (s.quantization, s.draft_moe_backend, s.hf_config_path) == (None, None, None)
    assert not {"quantization", "speculative_config", "hf_config_path"} & set(s.given)


def test_none_is_a_value_for_a_flag_without_optional_type():
    """--moe-backend is not optional_type: 'None' is lower-cased to 'none' and refused by choices."""
    with pytest.raises(ConfigError, match="none"):
        parse_serve("vllm serve m --moe-backend None", version="0.33.0")


def test_cli_accepts_none_words(capsys):
    for words in ("-q None", "--speculative-config None", "--speculative-config ''"):
        assert main(["select", "--gpu", "H200", "--serve", f"vllm serve Qwen/Qwen3-30B-A3B -tp 2 {words}"]) == 0, words


# --- the --no-X spellings of boolean flags turn them off ------------------------------------------

_RELEASES = ("0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0")


@pytest.mark.parametrize("version", _RELEASES)
@pytest.mark.parametrize(("words", "attr", "on"), [
    ("--no-enable-expert-parallel", "ep", False),
    ("--enable-expert-parallel --no-enable-expert-parallel", "ep", False),
    ("-ep --no-enable-expert-parallel", "ep", False),
    ("--no-enable-expert-parallel --enable-expert-parallel", "ep", True),
    ("--no-enable-eplb", "eplb", False),
    ("--enable-eplb --no-enable-eplb", "eplb", False),
    ("--no-enable-lora", "lora", False),
    ("--no-enable-lora --enable-lora", "lora", True),
    ("--no-allow-deprecated-quantization", "allow_deprecated_quantization", False),
])
def test_no_spellings_of_a_boolean_flag_turn_it_off(version, words, attr, on):
    """argparse.BooleanOptionalAction (vLLM 0.29.0-0.32.0) and vLLM 0.33.0 EnableDisableAction
    set False for --no-X; the last occurrence wins."""
    assert getattr(parse_serve(f"vllm serve m {words}", version=version), attr) is on


@pytest.mark.parametrize("version", _RELEASES)
def test_every_no_spelling_in_the_facts_is_negative(version):
    """tools/vllm_cli_facts.py lists each --no-X a release registers as a negative string."""
    for flag in engine_facts(version)["serve_flags"]:
        strings = {*flag["options"], *flag.get("negative", ())}
        assert {s for s in strings if s.startswith("--no-")} <= set(flag.get("negative", ())), flag["dest"]


def test_cli_no_enable_expert_parallel_is_off(capsys):
    """select for 0.31.0 answered with EP on for --no-enable-expert-parallel while the facts did not list it as negative."""
    serve = "vllm serve Qwen/Qwen3-30B-A3B-FP8 -tp 2"

    def kernel(version, words):
        assert main(["select", "--gpu", "H200", "--package", f"vllm=={version}", "--serve", f"{serve} {words}", "--json"]) == 0
        return json.loads(capsys.readouterr().out)["selected"]["kernel"]

    for version in ("0.31.0", "0.33.0"):
        assert kernel(version, "--no-enable-expert-parallel") == kernel(version, "") != kernel(version, "-ep")


# --- --spec-method choices and --spec-tokens type, as each release's argparse checks them ---------

@pytest.mark.parametrize(("version", "words", "value"), [
    ("0.33.0", "--spec-method bogus --spec-method mtp", "bogus"),
    ("0.29.0", "--spec-method mtp --spec-method bogus --spec-method mtp", "bogus"),
    ("0.33.0", "--spec-method medusa", "medusa"),  # SpeculativeMethod of 0.33.0 has no medusa
    ("0.29.0", "--spec-method glm5_next_mtp", "glm5_next_mtp"),  # added in 0.30.0
    ("0.33.0", "--spec-method MTP", "MTP"),  # no lower-casing
    # 0.29.0-0.30.0: the choices hold the string "None", optional_type returns None: invalid choice
    ("0.29.0", "--spec-method None", "None"),
    ("0.30.0", "--spec-method ''", ""),
    ("0.29.0", "--spec-method mtp --spec-method None", "None"),
])
def test_spec_method_is_one_of_the_releases_choices(version, words, value):
    with pytest.raises(ConfigError) as info:
        parse_serve(f"vllm serve m {words}", version=version)
    issue = info.value.issues[0]
    assert (issue.path, issue.value) == ("--serve --spec-method", value) and "mtp" in issue.allowed and f"vLLM {version}" in issue.message


@pytest.mark.parametrize(("version", "words", "method"), [
    ("0.29.0", "--spec-method medusa", "medusa"),
    ("0.30.0", "--spec-method glm5_next_mtp", "glm5_next_mtp"),
    ("0.31.0", "--spec-method None", None),  # the choices hold None: not given
    ("0.33.0", "--spec-method ''", None),
    ("0.33.0", "--spec-method mtp --spec-method None", None),
])
def test_spec_method_values_the_release_accepts(version, words, method):
    s = parse_serve(f"vllm serve m {words}", version=version)
    assert (s.speculative or {}).get("method") == method


@pytest.mark.parametrize("version", _RELEASES)
@pytest.mark.parametrize("words", ["--spec-tokens None", "--spec-tokens ''", "--spec-tokens x --spec-tokens 2", "--spec-tokens 1.5"])
def test_spec_tokens_is_an_int(version, words):
    """--spec-tokens is type=int (not optional_type): 'None' is an invalid int value."""
    with pytest.raises(ConfigError) as info:
        parse_serve(f"vllm serve m --spec-method mtp {words}", version=version)
    assert info.value.issues[0].path == "--serve --spec-tokens"


def test_spec_tokens_is_read_as_an_int():
    assert parse_serve("vllm serve m --spec-method mtp --spec-tokens 2", version="0.33.0").speculative == {"method": "mtp", "num_speculative_tokens": 2}


@pytest.mark.parametrize("command", ["select", "explain"])
@pytest.mark.parametrize(("version", "method"), [("0.33.0", "medusa"), ("0.29.0", "glm5_next_mtp")])
def test_cli_refuses_a_spec_method_naming_the_serve_flag(command, version, method, capsys):
    serve = f"vllm serve Qwen/Qwen3-30B-A3B -tp 2 --spec-method {method}"
    assert main([command, "--gpu", "H200", "--package", f"vllm=={version}", "--serve", serve]) == 2
    err = capsys.readouterr().err
    assert f"--serve --spec-method: vLLM {version} refuses" in err and method in err


# --- --kernel-config keys: KernelConfig forbids unknown ones (pydantic, extra="forbid") -----------

@pytest.mark.parametrize("version", _RELEASES)
@pytest.mark.parametrize(("words", "key"), [
    ("--kernel-config '{\"moe-backend\": \"marlin\"}'", "moe-backend"),  # no dash-to-underscore here
    ("--kernel-config.moe-backend marlin", "moe-backend"),
    ("--kernel-config '{\"bogus\": 1}' --kernel-config '{\"moe_backend\": \"marlin\"}'", "bogus"),  # every occurrence
    ("--kernel-config '{\"ir_op_priority\": {\"bogus\": []}}'", "ir_op_priority.bogus"),
])
def test_kernel_config_refuses_a_key_kernelconfig_lacks(version, words, key):
    with pytest.raises(ConfigError) as info:
        parse_serve(f"vllm serve m {words}", version=version)
    issue = info.value.issues[0]
    assert (issue.path, issue.value) == (f"--serve --kernel-config {key}", key) and f"vLLM {version}" in issue.message
    if key == "moe-backend":
        assert "did you mean moe_backend" in issue.message and "moe_backend" in issue.allowed


@pytest.mark.parametrize(("version", "words", "ok"), [
    ("0.33.0", "--kernel-config '{\"monokernel\": true}'", True),
    ("0.29.0", "--kernel-config '{\"monokernel\": true}'", False),  # KernelConfig.monokernel is new in 0.33.0
    ("0.29.0", "--kernel-config '{\"sparse_indexer_topk_backend\": \"auto\"}'", False),  # new in 0.30.0
    ("0.30.0", "--kernel-config '{\"sparse_indexer_topk_backend\": \"auto\"}'", True),
    ("0.33.0", "--kernel-config.moe_backend marlin --kernel-config.ir_op_priority.rms_norm+ native", True),
])
def test_kernel_config_keys_are_the_releases(version, words, ok):
    if ok:
        parse_serve(f"vllm serve m {words}", version=version)
    else:
        with pytest.raises(ConfigError, match=f"vLLM {version} refuses this key"):
            parse_serve(f"vllm serve m {words}", version=version)


def test_cli_refuses_a_dashed_kernel_config_key(capsys):
    serve = "vllm serve Qwen/Qwen3-30B-A3B-FP8 -tp 2 --kernel-config '{\"moe-backend\":\"marlin\"}'"
    assert main(["select", "--gpu", "H200", "--serve", serve]) == 2
    assert "--serve --kernel-config moe-backend: vLLM 0.34.0 refuses this key" in capsys.readouterr().err


# --- --speculative-config: json.loads on every occurrence, then the last one wins -----------------

@pytest.mark.parametrize("version", ["0.29.0", "0.33.0"])
@pytest.mark.parametrize(("words", "value"), [
    ("--speculative-config notjson --speculative-config None", "notjson"),
    ("--speculative-config notjson --speculative-config ''", "notjson"),
    ("-sc '{bad' -sc '{\"method\": \"mtp\"}'", "{bad"),
    ("--speculative-config None --speculative-config notjson", "notjson"),
])
def test_every_speculative_config_occurrence_is_json(version, words, value):
    """optional_type(json.loads): argparse converts each occurrence before the last one wins."""
    with pytest.raises(ConfigError) as info:
        parse_serve(f"vllm serve m {words}", version=version)
    issue = info.value.issues[0]
    assert (issue.path, issue.value) == ("--serve --speculative-config", value) and f"vLLM {version}" in issue.message


@pytest.mark.parametrize("words", ["--speculative-config null", "--speculative-config '[1]' --speculative-config None", "--speculative-config '{\"method\": \"mtp\"}' --speculative-config None"])
def test_a_last_none_or_null_speculative_config_is_not_given(words):
    s = parse_serve(f"vllm serve m {words}", version="0.33.0")
    assert s.speculative is None and "speculative_config" not in s.given


# --- every value-taking flag: argparse's type and choices, on every occurrence, from the facts ----

@pytest.mark.parametrize("version", ["0.29.0", "0.33.0"])
@pytest.mark.parametrize(("flag", "bad", "keyword", "expected"), [
    ("--max-num-seqs", "1.5", "type", "an integer"),  # int
    ("--max-num-seqs", "None", "type", "an integer"),  # not optional_type: 'None' is a value
    ("--gpu-memory-utilization", "x", "type", "a number"),  # float
    ("--max-model-len", "abc", "type", "-1 or auto"),  # human_readable_int_or_auto
    ("--max-model-len", "2.5K", "type", "integers only"),  # binary suffix with a decimal
    ("--max-num-scheduled-tokens", "8kk", "type", "k/m/g/t"),  # optional human_readable_int
    ("--mm-processor-kwargs", "{bad", "type", "JSON"),  # optional json.loads
    ("--default-chat-template-kwargs", "x", "type", "JSON"),  # json.loads
    ("--model-loader-extra-config", "{bad}", "type", "JSON object"),  # union_dict_and_str
    ("--cudagraph-capture-sizes", "1 x", "type", "an integer"),  # nargs='+' of int, each word
    ("--safetensors-load-strategy", "bogus", "choices", "lazy"),  # str choices
    ("--linear-backend", "bogus", "choices", "triton"),  # lower_underscore, then choices
    ("--max-lora-rank", "7", "choices", 16),  # int choices, compared after int()
])
def test_a_value_the_releases_argparse_refuses_is_bad_input(version, flag, bad, keyword, expected):
    with pytest.raises(ConfigError) as info:
        parse_serve(f"vllm serve m {flag} {bad}", version=version)
    (issue,) = info.value.issues
    assert (issue.path, issue.keyword) == (f"--serve {flag}", keyword) and issue.value == bad.split()[-1] and f"vLLM {version}" in issue.message
    assert expected in issue.allowed if keyword == "choices" else expected in issue.message


def test_cli_refuses_a_max_model_len_vllm_cannot_read(capsys):
    assert main(["select", "--gpu", "H200", "--serve", "vllm serve deepseek-ai/DeepSeek-R1 -tp 8 --max-model-len abc"]) == 2
    err = capsys.readouterr().err
    assert "--serve --max-model-len: vLLM 0.34.0 refuses the command line" in err and "(got 'abc')" in err and "-1 or auto" in err


@pytest.mark.parametrize("version", ["0.29.0", "0.33.0"])
@pytest.mark.parametrize("words", [
    "--max-model-len 32k", "--max-model-len 32K", "--max-model-len auto", "--max-model-len -1", "--max-model-len ' 2.5k '",
    "--gpu-memory-utilization 0.9", "--gpu-memory-utilization 1e-1", "--max-num-seqs +8", "--max-num-seqs 1_024",
    "--safetensors-load-strategy lazy", "--linear-backend Flashinfer-Cutlass", "--max-lora-rank 16",
    "--model-loader-extra-config plain", "--mm-processor-kwargs '{\"a\": 1}'", "--cudagraph-capture-sizes 1 2 4",
    "--port 8000 --port 8001",
])
def test_values_the_releases_argparse_accepts_are_accepted(version, words):
    parse_serve(f"vllm serve m {words}", version=version)


@pytest.mark.parametrize("version", ["0.29.0", "0.33.0"])
@pytest.mark.parametrize(("flag", "bad", "good"), [
    ("--max-model-len", "abc", "32k"),
    ("--gpu-memory-utilization", "x", "0.9"),
    ("--max-num-seqs", "1.5", "8"),
    ("--safetensors-load-strategy", "bogus", "lazy"),
    ("--mm-processor-kwargs", "{bad", "None"),
    ("--tensor-parallel-size", "x", "8"),  # a read flag: its earlier occurrences too
    ("--max-num-batched-tokens", "1.5K", "8k"),
])
def test_an_earlier_bad_occurrence_is_refused_when_the_last_is_good(version, flag, bad, good):
    with pytest.raises(ConfigError) as info:
        parse_serve(f"vllm serve m {flag} {bad} {flag} {good}", version=version)
    (issue,) = info.value.issues
    assert (issue.path, issue.value) == (f"--serve {flag}", bad)


@pytest.mark.parametrize("version", ["0.29.0", "0.33.0"])
@pytest.mark.parametrize("words", [
    "--max-num-scheduled-tokens None", "--kv-offloading-size None", "--mamba-block-size ''", "--mm-processor-kwargs None",
    "--max-num-seqs 8 --kv-cache-memory-bytes None",
])
def test_an_optional_type_flag_reads_none_as_not_given(version, words):
    s = parse_serve(f"vllm serve m {words}", version=version)
    assert not {"max_num_scheduled_tokens", "kv_offloading_size", "mamba_block_size", "mm_processor_kwargs", "safetensors_load_strategy", "kv_cache_memory_bytes"} & set(s.given)


@pytest.mark.parametrize("flag", ["--dcp-comm-backend", "--safetensors-load-strategy"])
@pytest.mark.parametrize(("version", "refused"), [("0.29.0", True), ("0.33.0", False)])
def test_none_is_refused_where_the_choices_do_not_hold_it(version, refused, flag):
    """Both flags are optional_type(str): 'None' reads as None, which 0.29.0's choices do not
    hold (only the string 'None': none_not_a_choice in the facts); 0.33.0's do."""
    if refused:
        with pytest.raises(ConfigError) as info:
            parse_serve(f"vllm serve m {flag} None", version=version)
        assert (info.value.issues[0].path, info.value.issues[0].keyword) == (f"--serve {flag}", "choices")
    else:
        assert flag.lstrip("-").replace("-", "_") not in parse_serve(f"vllm serve m {flag} None", version=version).given


def test_every_refused_value_is_reported_at_once():
    with pytest.raises(ConfigError) as info:
        parse_serve("vllm serve m --max-model-len abc --gpu-memory-utilization x --max-num-seqs 1.5", version="0.33.0")
    assert [i.path for i in info.value.issues] == ["--serve --max-model-len", "--serve --gpu-memory-utilization", "--serve --max-num-seqs"]


@pytest.mark.parametrize("version", _RELEASES)
def test_every_value_taking_flag_has_a_type_kind(version):
    """The facts record each flag's argparse type as one of argtypes.KINDS; a callable the
    generator could not classify is named (type_callable), and its choices are not checked."""
    from moe_oracle.inputs.argtypes import KINDS
    from moe_oracle.inputs.serve_argv import value_rules as _value_rules

    flags = [f for f in engine_facts(version)["serve_flags"] if f["value"] != "none"]
    assert all(f["type"] in KINDS for f in flags)
    assert all(("type_callable" in f) == (f["type"] == "other") for f in flags)
    rules = _value_rules(version)
    assert all(rules[f["dest"]].choices == () for f in flags if f["type"] in ("other", "dataclass_json") and f["dest"] in rules)
    assert {"max_model_len", "gpu_memory_utilization", "max_num_seqs", "safetensors_load_strategy", "tensor_parallel_size"} <= set(rules)


# --- vLLM's JSON dot notation (FlexibleArgumentParser.parse_args, vllm/utils/argparse_utils.py,
# the same in 0.29.0-0.33.0): dotted values are merged with recursive_dict_update, and a value
# json.loads cannot read is tried with human_readable_int before it is kept as a string.

@pytest.mark.parametrize("version", ["0.29.0", "0.33.0"])
@pytest.mark.parametrize(("flags", "expected"), [
    pytest.param("--hf-overrides.text_config.moe_intermediate_size 96 --hf-overrides.text_config '{\"num_experts_per_tok\":4}'",
                 {"text_config": {"moe_intermediate_size": 96, "num_experts_per_tok": 4}}, id="nested-dicts-merge"),
    pytest.param("--hf-overrides.a 1 --hf-overrides.a.b 2", {"a": {"b": 2}}, id="a-value-replaced-by-a-dict"),
    pytest.param("--hf-overrides.a.b 2 --hf-overrides.a 1", {"a": 1}, id="a-dict-replaced-by-a-value"),
    pytest.param("--hf-overrides.a 1 --hf-overrides.a 2", {"a": 2}, id="duplicate-key-last-wins"),
    pytest.param("--hf-overrides.l+ x,y --hf-overrides.l+ z", {"l": ["x", "y", "z"]}, id="lists-concatenate"),
    pytest.param("--hf-overrides.l '[1]' --hf-overrides.l '[2, 3]'", {"l": [1, 2, 3]}, id="json-lists-concatenate"),
    pytest.param("--hf-overrides.moe_intermediate_size 1K", {"moe_intermediate_size": 1024}, id="binary-suffix"),
    pytest.param("--hf-overrides.x 1k --hf-overrides.y 08 --hf-overrides.z 1_000", {"x": 1000, "y": 8, "z": 1000}, id="human-readable-int"),
    pytest.param("--hf-overrides.x 2.5K --hf-overrides.y abc --hf-overrides.z 2.5k", {"x": "2.5K", "y": "abc", "z": 2500}, id="else-the-string"),
])
def test_dotted_flags_merge_as_vllm_merges_them(version, flags, expected):
    s = parse_serve(f"vllm serve m {flags}", version=version)
    assert s.hf_overrides == expected


def test_dotted_human_readable_int_reaches_eplb_config():
    s = parse_serve("vllm serve m -tp 8 -ep --enable-eplb --eplb-config.num_redundant_experts 1k", version="0.33.0")
    assert s.redundant_experts == 1000


def test_a_dotted_key_given_twice_is_noted():
    s = parse_serve("vllm serve m --hf-overrides.a 1 --hf-overrides.a.b 2", version="0.33.0")
    assert any("--hf-overrides.a" in n and "duplicate" in n for n in s.notes)


@pytest.mark.parametrize("value", ["9" * 400 + "k", "[" * 100_000])
def test_a_dotted_value_vllm_crashes_on_is_refused_not_a_traceback(value):
    with pytest.raises(ConfigError) as info:
        parse_serve(["vllm", "serve", "m", "--hf-overrides.x", value], version="0.33.0")
    assert info.value.issues[0].path == "--serve --hf-overrides.x"


# --- Abbreviated flags: vllm serve's parser is made by subparsers.add_parser (and the API
# server's is a plain FlexibleArgumentParser), so argparse's allow_abbrev=True holds (vLLM
# 0.29.0-0.33.0): an unambiguous prefix is the flag it starts, an ambiguous one is refused.

@pytest.mark.parametrize("version", ["0.29.0", "0.33.0"])
@pytest.mark.parametrize(("flags", "attr", "value"), [
    pytest.param("--tensor-parallel-si 8", "tp", 8, id="value-flag"),
    pytest.param("--tensor_parallel_si=4", "tp", 4, id="underscores-and-equals"),
    pytest.param("-t 2", "tp", 2, id="single-dash-prefix-of--tp"),
    pytest.param("--enable-expert-par", "ep", True, id="boolean"),
    pytest.param("--enable-expert-parallel --no-enable-expert-par", "ep", False, id="negative-string"),
    pytest.param("--max-num-batched 8k", "max_num_batched_tokens", 8000, id="human-readable-int"),
    pytest.param("--moe-back triton", "moe_backend", "triton", id="read-flag"),
    pytest.param("--hf-over.a 1 --hf-overrides.b 2", "hf_overrides", {"b": 2}, id="dotted-heads-merge-by-spelling-then-last-flag-wins"),
])
def test_an_unambiguous_prefix_is_the_flag_it_starts(version, flags, attr, value):
    assert getattr(parse_serve(f"vllm serve m {flags}", version=version), attr) == value


@pytest.mark.parametrize(("version", "flags", "message"), [
    ("0.33.0", "--enable-e", "ambiguous option: --enable-e could match --enable-expert-parallel, --enable-ep-weight-filter, --enable-elastic-ep, --enable-eplb"),
    ("0.29.0", "--no-enable-ep", "ambiguous option: --no-enable-ep could match --no-enable-ep-weight-filter, --no-enable-eplb"),
    ("0.33.0", "--he", "ambiguous option: --he could match --help, --headless"),
    ("0.33.0", "--disable-e", "ambiguous option: --disable-e could match --disable-expert-parallel, "),
    ("0.29.0", "--disable-e", "vLLM 0.29.0 does not know --disable-e"),
    ("0.33.0", "--hel", "--help prints vllm serve's help and exits"),
    ("0.29.0", "--help=moe", "--help prints vllm serve's help and exits"),
])
def test_an_ambiguous_prefix_is_refused_as_argparse_refuses_it(version, flags, message):
    with pytest.raises(ConfigError) as info:
        parse_serve(f"vllm serve m {flags}", version=version)
    assert message in str(info.value)


def test_disable_prefix_is_enable_expert_parallel_off_only_where_enable_disable_action_exists():
    assert parse_serve("vllm serve m -ep --disable-expert-par", version="0.33.0").ep is False
    with pytest.raises(ConfigError, match="does not know --disable-expert-par"):
        parse_serve("vllm serve m -ep --disable-expert-par", version="0.32.0")


@pytest.mark.parametrize("version", ["0.29.0", "0.30.0", "0.31.0", "0.32.0", "0.33.0"])
def test_the_parser_registers_the_releases_option_strings_in_its_order(version):
    from moe_oracle.inputs.serve_argv import release_parser as _parser

    assert list(_parser(version)[0]._option_string_actions) == engine_facts(version)["option_strings"]


# --- A --config YAML file (FlexibleArgumentParser._pull_args_from_config and load_config_file,
# vllm/utils/argparse_utils.py, vLLM 0.29.0-0.33.0). `vllm serve` loads it on the `vllm` parser
# (vllm/entrypoints/cli/main.py), whose only options are -h/--help/-v/--version, so a false
# boolean is dropped; `python -m vllm.entrypoints.openai.api_server` loads it on the serve parser,
# so a false boolean is --no-KEY where the parser has that exact string, else dropped.

API_SERVER = "python -m vllm.entrypoints.openai.api_server"


@pytest.mark.parametrize("version", ["0.29.0", "0.33.0"])
def test_a_false_boolean_in_the_config_file_without_a_no_form_is_dropped(tmp_path, version):
    (tmp_path / "c.yaml").write_text("disable-log-stats: false\nenable-expert-parallel: true\n")
    assert parse_serve("vllm serve m --config c.yaml", version=version, base=tmp_path).ep is True
    assert parse_serve(f"{API_SERVER} --model m --config c.yaml", version=version, base=tmp_path).ep is True


@pytest.mark.parametrize("version", ["0.29.0", "0.33.0"])
def test_vllm_serve_drops_every_false_boolean_of_the_config_file(tmp_path, version):
    (tmp_path / "c.yaml").write_text("enable_eplb: true\nenable-eplb: false\n")
    assert parse_serve("vllm serve m --config c.yaml", version=version, base=tmp_path).eplb is True
    # the API server's parser has --no-enable-eplb: the later key turns it off
    assert parse_serve(f"{API_SERVER} --model m --config c.yaml", version=version, base=tmp_path).eplb is False


@pytest.mark.parametrize("version", ["0.29.0", "0.33.0"])
def test_a_second_config_file_is_refused(tmp_path, version):
    (tmp_path / "c.yaml").write_text("tensor-parallel-size: 2\n")
    with pytest.raises(ConfigError, match="More than one config file"):
        parse_serve("vllm serve m --config c.yaml --config c.yaml", version=version, base=tmp_path)


def test_the_model_may_come_from_the_config_file(tmp_path):
    (tmp_path / "c.yaml").write_text("model: mm\ntensor-parallel-size: 2\n")
    assert parse_serve("vllm serve --config c.yaml", version="0.33.0", base=tmp_path).model == "mm"
    assert parse_serve("vllm serve m --config c.yaml", version="0.33.0", base=tmp_path).model == "m"  # model_tag wins (ServeSubcommand.cmd)


def test_vllm_serve_wants_the_model_first_or_in_the_config_file(tmp_path):
    (tmp_path / "c.yaml").write_text("tensor-parallel-size: 2\n")
    with pytest.raises(ConfigError, match="No model specified"):
        parse_serve("vllm serve --config c.yaml m", version="0.33.0", base=tmp_path)
    assert parse_serve(f"{API_SERVER} --config c.yaml --model m", version="0.33.0", base=tmp_path).tp == 2


def test_the_api_server_reads_the_model_from_model_only():
    assert parse_serve(f"{API_SERVER} --model m -tp 2", version="0.33.0").model == "m"
    with pytest.raises(ConfigError, match="reads the model from --model"):
        parse_serve(f"{API_SERVER} m -tp 2", version="0.33.0")



@pytest.mark.parametrize(("override", "expected"), [
    # A nested config (text_config) is merged into, recursively: Kimi-K2.5 keeps its int4 experts.
    ("--hf-overrides.text_config.quantization_config.kv_cache_scheme null", "humming_indexed"),
    # A dict-valued parameter is replaced whole: without quant_method, vLLM's convertor reads "" (no quantization).
    ("--hf-overrides.quantization_config.weight_block_size [64,64]", None),
], ids=["nested-config-merged", "dict-parameter-replaced"])
def test_hf_overrides_update_the_config_as_vllms_apply_dict_overrides(override, expected, capsys):
    """vLLM 0.29.0-0.33.0 ModelConfig._apply_dict_overrides: a nested PreTrainedConfig gets
    _update_nested (a deep merge), any other attribute setattr (a replacement)."""
    model = "moonshotai/Kimi-K2.5 -tp 8" if "text_config" in override else "Qwen/Qwen3-30B-A3B-FP8"
    assert main(["explain", "--gpu", "H200", "--serve", f"vllm serve {model} {override}", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    if expected is not None:
        assert record["selected"]["kernel"] == expected
    else:
        assert record["inputs"]["quant_scheme"]["value"] == "unquantized"


def test_a_serve_line_past_the_word_bound_is_refused_before_argparse():
    """20,000 repeats of ``-tp 2`` took 12.6 s (argparse's next-option scan is quadratic in the
    flag count); past MAX_SERVE_WORDS the line is refused by its length, and a line at the bound
    is still read (the last -tp wins, as in vLLM)."""
    import time

    from moe_oracle.inputs.serve import MAX_SERVE_WORDS

    start = time.perf_counter()
    with pytest.raises(ConfigError) as info:
        parse_serve("vllm serve Qwen/Qwen3-30B-A3B" + " -tp 2" * 20_000, version="0.33.0")
    issue = info.value.issues[0]
    assert issue.path == "--serve" and str(MAX_SERVE_WORDS) in issue.message and "40001 words" in issue.message
    assert len(str(issue.value)) < 200
    assert time.perf_counter() - start < 5.0
    pairs = (MAX_SERVE_WORDS - 1) // 2
    assert parse_serve("vllm serve Qwen/Qwen3-30B-A3B" + " -tp 2" * (pairs - 1) + " -tp 4", version="0.33.0").tp == 4


@pytest.mark.parametrize("release", ["0.29.0", "0.34.0"])
@pytest.mark.parametrize(("flag", "where", "value"), [
    ("""--quantization-config '{"moe": {"activation": "mxfp8"}}'""", "moe.activation", "mxfp8"),
    ("--quantization-config.moe.activation mxfp4", "moe.activation", "mxfp4"),
])
def test_a_moe_activation_override_is_refused_naming_flag_and_value(release, flag, where, value):
    # breakit18 finding 6: vLLM 0.29.0-0.34.0 P/oracle/mxfp4.py _resolve_activation_key applies the
    # override; we answered for the checkpoint's key with a note calling it online quantization.
    with pytest.raises(ConfigError) as info:
        parse_serve(f"vllm serve openai/gpt-oss-120b -tp 4 {flag}", version=release)
    issue = info.value.issues[0]
    assert issue.path == f"--serve --quantization-config {where}" and issue.value == value


def test_a_moe_activation_override_exits_2_naming_the_flag(capsys):
    code = main(["select", "--gpu", "B200", "--serve", """vllm serve openai/gpt-oss-120b -tp 4 --quantization-config '{"moe": {"activation": "mxfp8"}}'"""])
    assert code == 2 and "--quantization-config moe.activation" in capsys.readouterr().err


def test_other_quantization_config_settings_keep_the_note():
    serve = parse_serve("""vllm serve openai/gpt-oss-120b -tp 4 --quantization-config '{"ignore": ["lm_head"]}'""", version="0.34.0")
    assert any(n.startswith("--quantization-config: online quantization settings are not modelled") for n in serve.notes)


@pytest.mark.parametrize(("flag", "where", "value"), [
    ("""--quantization-config '{"moe": {"activation": null}}'""", "moe.activation", "null"),
    ("""--quantization-config '{"targets": {"re:.*experts.*": {"activation": "mxfp8"}}}'""", "targets.re:.*experts.*.activation", "mxfp8"),
])
def test_from_0_34_an_explicit_null_and_a_target_spec_are_overrides_too(flag, where, value):
    # vLLM 0.34.0 P/oracle/mxfp4.py _resolve_activation_key: "An explicit override wins, null included";
    # vllm/config/quantization.py user_activation_override reads the layer's targets spec first.
    with pytest.raises(ConfigError) as info:
        parse_serve(f"vllm serve openai/gpt-oss-120b -tp 4 {flag}", version="0.34.0")
    assert info.value.issues[0].path == f"--serve --quantization-config {where}" and info.value.issues[0].value == value


def test_before_0_34_an_explicit_null_is_no_override():
    # vLLM 0.33.0 P/oracle/mxfp4.py _resolve_activation_key returns the checkpoint's key when the override is None
    serve = parse_serve("""vllm serve openai/gpt-oss-120b -tp 4 --quantization-config '{"moe": {"activation": null}}'""", version="0.33.0")
    assert serve.model == "openai/gpt-oss-120b"


def test_redundant_experts_may_be_zero_and_a_negative_count_names_the_minimum():
    """EPLBConfig.num_redundant_experts is Field(ge=0) (vLLM 0.29.0-0.34.0 vllm/config/parallel.py):
    the message said ">= 1" while 0 was accepted."""
    assert parse_serve("vllm serve m -tp 2 -ep --enable-eplb --eplb-config.num_redundant_experts 0", version="0.34.0").redundant_experts == 0
    with pytest.raises(ConfigError) as exc:
        parse_serve("vllm serve m -tp 2 -ep --enable-eplb --eplb-config.num_redundant_experts -3", version="0.34.0")
    assert exc.value.issues[0].message == "expected an integer >= 0"


@pytest.mark.parametrize("release", ["0.29.0", "0.33.0", "0.34.0"])
def test_an_explicit_null_redundant_count_is_refused(release):
    """``EPLBConfig.num_redundant_experts`` is typed ``int``: pydantic refuses an explicit null in
    every release (checked: vLLM 0.33.0 and 0.34.0 ``EPLBConfig(num_redundant_experts=None)`` raise
    ValidationError), though 0.34.0's default is None (computed at start). We read null as 0."""
    with pytest.raises(ConfigError) as exc:
        parse_serve("""vllm serve m -tp 2 -ep --enable-eplb --eplb-config '{"num_redundant_experts": null}'""", version=release)
    (issue,) = exc.value.issues
    assert (issue.path, issue.message) == ("--serve --eplb-config num_redundant_experts", "expected an integer")
    # A JSON false is 0 and true 1 there (pydantic's lax int), as before.
    assert parse_serve("""vllm serve m -tp 2 -ep --enable-eplb --eplb-config '{"num_redundant_experts": false}'""", version=release).redundant_experts == 0


def test_an_unknown_yaml_key_is_answered_with_a_key(tmp_path):
    """A YAML key becomes ``--KEY`` (vLLM's FlexibleArgumentParser), never a short option: ``tp:``
    was answered "did you mean -tp?", which a file cannot write; the key of the long option whose
    short spelling it is, or the nearest long option, is meant."""
    (tmp_path / "c.yaml").write_text("tp: 2\n")
    with pytest.raises(ConfigError) as exc:
        parse_serve("vllm serve m --config c.yaml", version="0.34.0", base=tmp_path)
    assert exc.value.issues[0].message.endswith("does not know --tp and would refuse the command line; did you mean the key tensor-parallel-size?")
    (tmp_path / "c.yaml").write_text("tensor-paralel-size: 2\n")
    with pytest.raises(ConfigError) as exc:
        parse_serve("vllm serve m --config c.yaml", version="0.34.0", base=tmp_path)
    assert exc.value.issues[0].message.endswith("did you mean the key tensor-parallel-size?")
    # On the command line itself the short option is still the guess.
    with pytest.raises(ConfigError) as exc:
        parse_serve("vllm serve m --tp 2", version="0.34.0")
    assert exc.value.issues[0].message.endswith("did you mean -tp?")


@pytest.mark.parametrize("command", ["select", "explain", "plan"])
def test_a_start_refusal_of_a_flag_the_config_file_gave_names_the_file(tmp_path, command):
    """EPLB without EP is refused after the serve line is read (core/refusals.py), where the
    parse-time charging of --config problems did not reach: the message named only --serve."""
    (tmp_path / "c.yaml").write_text("enable-eplb: true\ntensor-parallel-size: 2\n")
    code, _out, err = cli(command, "--serve", f"vllm serve Qwen/Qwen3-30B-A3B --config {tmp_path / 'c.yaml'}", "--gpu", "H100")
    assert code == 2
    assert f"{tmp_path / 'c.yaml'}: --serve --enable-eplb: vLLM 0.34.0 refuses EPLB without expert parallelism" in err, err
    # Given on the line itself, the line is named.
    code, _out, err = cli(command, "--serve", "vllm serve Qwen/Qwen3-30B-A3B --enable-eplb -tp 2", "--gpu", "H100")
    assert code == 2 and "  - --serve --enable-eplb: vLLM 0.34.0 refuses EPLB" in err, err


def test_an_ambiguous_yaml_key_names_the_file_and_the_key_meant(tmp_path):
    """``dp: 2`` in a --config file becomes ``--dp``, which argparse finds ambiguous (--dp-sync-...):
    the refusal named neither the file nor the key meant (``-dp`` is --data-parallel-size)."""
    (tmp_path / "c.yaml").write_text("dp: 2\n")
    with pytest.raises(ConfigError) as exc:
        parse_serve("vllm serve m --config c.yaml", version="0.34.0", base=tmp_path)
    (issue,) = exc.value.issues
    assert issue.file is not None and issue.file.endswith("c.yaml")
    assert "ambiguous option: --dp could match" in issue.message and issue.message.endswith("; did you mean the key data-parallel-size?")
    with pytest.raises(ConfigError) as exc:
        parse_serve("vllm serve m --dp 2", version="0.34.0")
    assert exc.value.issues[0].file is None and exc.value.issues[0].message.endswith("; did you mean -dp (--data-parallel-size)?")
