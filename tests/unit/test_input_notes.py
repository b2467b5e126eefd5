"""Inputs that change nothing are noted; inputs vLLM refuses at config time are bad input (exit 2);
provenance says `default` for defaults (issue 9).

On the parent commit `--eplb` without `--ep` selected nothing (exit 1) instead of failing as vLLM
does, `--max-tokens` and `--ep` at world size 1 passed silently, and every parallel field was
tagged `user_flag` as soon as any deployment flag was given (or none at all).
"""

from __future__ import annotations

import json

import pytest

from moe_oracle.cli import main

QWEN = ["--model", "qwen3-30b-a3b", "--gpu", "H200"]


def _record(capsys, *argv):
    code = main(["explain", *QWEN, *argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("argv", "fragment"), [
    (["--tp", "8", "--eplb"], "EPLB without expert parallelism"),
    (["--ep", "--eplb"], "without tensor, prefill-context or data parallelism"),
    (["--tp", "8", "--redundant-experts", "16"], "redundant experts without EPLB"),
    (["--tp", "2", "--dp", "3", "--ep", "--eplb", "--package", "vllm==0.33.0"], "do not split evenly over 6 EP ranks"),  # 0.34.0 computes an even count
    (["--tp", "2", "--dp", "3", "--ep", "--eplb", "--redundant-experts", "0"], "do not split evenly over 6 EP ranks"),
])
def test_config_time_refusals_exit_2_naming_the_flag(argv, fragment, capsys):
    code = main(["select", *QWEN, *argv])
    err = capsys.readouterr().err
    assert code == 2 and fragment in err and err.startswith("moe-oracle: error: bad --")


def test_eplb_on_a_cpu_is_refused(capsys):
    assert main(["select", "--model", "qwen3-30b-a3b", "--gpu", "CPU_X86_64_AMX", "--tp", "2", "--ep", "--eplb"]) == 2
    assert "only on CUDA, ROCm and XPU" in capsys.readouterr().err


@pytest.mark.parametrize(("release", "code", "fragment"), [
    ("0.30.0", 2, "vLLM 0.30.0 supports EPLB only on CUDA and ROCm devices, not xpu"),
    ("0.28.0", 2, "vLLM 0.29.0 (standing in for 0.28.0) supports EPLB only on CUDA and ROCm devices"),
    ("0.31.0", 0, ""),
])
def test_eplb_on_xpu_is_refused_by_the_releases_before_0_31(release, code, fragment, capsys):
    # vLLM 0.29.0-0.30.0 ParallelConfig: is_cuda_alike() only; 0.31.0 added is_xpu().
    assert main(["select", "--model", "qwen3-30b-a3b", "--gpu", "ARC_PRO_B60", "--tp", "2", "--ep", "--eplb", "--package", f"vllm=={release}"]) == code
    assert fragment in capsys.readouterr().err


def test_a_refusal_names_the_release_the_answer_is_for(capsys):
    assert main(["select", *QWEN, "--tp", "8", "--eplb", "--package", "vllm==0.31.0"]) == 2
    err = capsys.readouterr().err
    assert "vLLM 0.31.0 refuses EPLB without expert parallelism" in err and "0.33.0" not in err


def test_the_eplb_platforms_are_the_constraint_tables_for_every_release():
    """refusals.EPLB_PLATFORMS (the CLI refuses before selection) and rules/constraints.yaml's
    constraint.eplb_platform rules (the engine's records) state one fact: held equal."""
    from packaging.specifiers import SpecifierSet

    from moe_oracle.core._resources import package_dir
    from moe_oracle.core.refusals import eplb_platforms
    from moe_oracle.verify.run import RELEASES
    from moe_oracle.core.tables import safe_load

    rules = [r for r in safe_load((package_dir() / "rules" / "constraints.yaml").read_text())["constraints"] if r["id"].startswith("constraint.eplb_platform")]
    assert len(rules) == 2
    for release in RELEASES:
        (rule,) = [r for r in rules if release in SpecifierSet(r["engine"]["vllm"])]
        assert tuple(rule["in"]) == eplb_platforms(release), release


def test_max_tokens_no_rule_reads_is_noted(capsys):
    code, record = _record(capsys, "--max-tokens", "64")
    assert code == 0 and any("max tokens per call (64) has no effect" in n for n in record["notes"])


def test_ep_at_world_size_1_is_noted(capsys):
    code, record = _record(capsys, "--ep")
    assert code == 0 and any("expert parallelism has no effect at world size 1" in n for n in record["notes"])


def test_more_ep_ranks_than_experts_is_noted(capsys):
    code = main(["explain", "--model", "mixtral-8x7b-instruct-v0.1", "--gpu", "H200", "--tp", "16", "--ep", "--json"])
    record = json.loads(capsys.readouterr().out)
    assert any("16 EP ranks for 8 experts: 8 ranks hold no expert" in n for n in record["notes"]), (code, record["notes"])


def test_provenance_says_default_for_defaults(capsys):
    _, record = _record(capsys, "--tp", "8")
    inputs = record["inputs"]
    assert inputs["tp_size"]["source"] == "user_flag"
    assert inputs["dp_size"]["source"] == inputs["use_ep"]["source"] == inputs["enable_eplb"]["source"] == "default"
    assert inputs["lora"]["source"] == inputs["batch_invariant"]["source"] == "default"
    _, record = _record(capsys)
    assert record["inputs"]["tp_size"]["source"] == "default"


@pytest.mark.parametrize(("argv", "head"), [
    (["--tp", "0"], "bad --tp"),
    (["--all2all", "foo"], "bad --all2all"),
    (["--moe-backend", "foo"], "bad --moe-backend"),
    (["--quant", "foo"], "bad --quant"),
    (["--package", "torch>=2"], "bad --package"),
    (["--environment", "/no/such/freeze.txt"], "bad --environment"),
])
def test_errors_start_with_what_failed(argv, head, capsys):
    """Before issue 9 every one of these began "invalid MoE configuration"."""
    assert main(["select", *QWEN, *argv]) == 2
    assert capsys.readouterr().err.startswith(f"moe-oracle: error: {head} ")


# ------------------------------------------------------------------ notes name the model's input as it was given

@pytest.mark.parametrize(("argv", "label"), [(["--model", "deepseek-r1"], "--model"), (["--serve", "vllm serve deepseek-r1"], "--serve MODEL")], ids=["model", "serve"])
def test_a_checkpoint_note_is_labelled_by_the_input_that_named_the_model(capsys, argv, label) -> None:
    # a --serve line's model was labelled --model
    code = main(["explain", *argv, "--gpu", "H200", "--json"])
    notes = json.loads(capsys.readouterr().out)["notes"]
    layer = [n for n in notes if "this answer is for MoE layer" in n]
    assert code == 0 and len(layer) == 1 and layer[0].startswith(f"{label}: ")
    assert label == "--model" or not any(n.startswith("--model") for n in notes)


def test_select_prints_a_serve_lines_checkpoint_note_bare(capsys) -> None:
    code = main(["select", "--serve", "vllm serve deepseek-r1", "--gpu", "H200"])
    err = capsys.readouterr().err
    assert code == 0 and "note: this answer is for MoE layer" in err and "--serve MODEL:" not in err


@pytest.mark.parametrize("command", ["explain", "plan"])
def test_a_serve_lines_model_that_is_no_json_object_names_the_serve_line(tmp_path, capsys, command) -> None:
    model = tmp_path / "config.json"
    model.write_text("[]")
    code = main([command, "--serve", f"vllm serve {model}", "--gpu", "H200"])
    err = capsys.readouterr().err
    assert code == 2 and "a model config (--serve MODEL) must be a JSON object" in err
