"""A new user's trial of the README (issue 24, session 6): what the trial found, each test failing
before the change that covers it. The findings: /work/notes/user24_findings.md."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.cli_capture import cli
from moe_oracle.core._resources import examples_dir


def timed(*argv: str) -> tuple[int, str, str, float]:
    start = time.process_time()
    code, out, err = cli(*argv)
    return code, out, err, time.process_time() - start


_LAYER = "model: {num_experts: 256, top_k: 8, hidden_size: 7168, intermediate_size: 2048}\ndevice: {gpu: H200}\n"


# ------------------------------------------------------------------ a --config file is bounded work


def _alias_bomb(levels: int = 9) -> str:
    """Anchors under the layer's own keys (so the schema reads them): 9**levels values once expanded."""
    keys = ["act_order", "activation", "architecture", "has_bias", "in_dtype", "model_type", "quant", "quant_method", "routing_method"]
    text = "model:\n  num_experts: 256\n  top_k: 8\n  hidden_size: 7168\n  intermediate_size: 2048\n"
    text += f"  {keys[0]}: &a0 [1,1,1,1,1,1,1,1,1]\n"
    for i in range(1, levels):
        text += f"  {keys[i]}: &a{i} [" + ",".join([f"*a{i - 1}"] * 9) + "]\n"
    return text + "device: {gpu: H200}\n"


def test_config_alias_bomb_is_refused_before_it_expands(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(_alias_bomb())
    code, _, err, cpu = timed("select", "--config", str(path))
    assert code == 2 and cpu < 2.0
    assert "alias" in err and "200000" in err and "bomb.yaml" in err


def test_large_yaml_config_is_refused_quickly_and_large_json_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.yaml"
    big.write_text(_LAYER + "".join(f"# padding line {i}\n" for i in range(20_000)))
    code, _, err, cpu = timed("select", "--config", str(big))
    assert code == 2 and cpu < 2.0
    assert "larger than 262144 bytes" in err and "JSON" in err
    doc = {"model": {"num_experts": 256, "top_k": 8, "hidden_size": 7168, "intermediate_size": 2048}, "device": {"gpu": "H200"}}
    as_json = tmp_path / "big.json"
    as_json.write_text(json.dumps(doc) + " " * 300_000)
    code, out, err, cpu = timed("select", "--config", str(as_json))
    assert code == 0, err
    assert "[triton, modular]" in out or "modular" in out


def test_large_json_config_repeating_a_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_text('{"device": {"gpu": "H200"}, "device": {"gpu": "B200"}}' + " " * 300_000)
    code, _, err = cli("select", "--config", str(path))
    assert code == 2 and "duplicate key 'device'" in err


def test_deeply_nested_yaml_config_is_refused_quickly(tmp_path: Path) -> None:
    path = tmp_path / "deep.yaml"
    path.write_text("model: " + "[" * 5000 + "]" * 5000 + "\n")
    code, _, err, cpu = timed("select", "--config", str(path))
    assert code == 2 and cpu < 1.0
    assert "nesting is too deep" in err and "64" in err


# ------------------------------------------------------------- an environment file is bounded work


def test_environment_file_of_300k_lines_is_refused_quickly(tmp_path: Path) -> None:
    path = tmp_path / "freeze.txt"
    path.write_text("".join(f"pkg{i}==1.0\n" for i in range(300_000)))
    code, _, err, cpu = timed("select", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--environment", str(path))
    assert code == 2 and cpu < 2.0
    assert "300000 lines" in err and "at most 20000" in err


def test_pip_json_listing_too_many_packages_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "list.json"
    path.write_text(json.dumps([{"name": f"p{i}", "version": "1.0"} for i in range(10_001)]))
    code, _, err = cli("select", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--environment", str(path))
    assert code == 2 and "10001 packages" in err and "10000" in err


def test_environment_line_too_long_is_refused_naming_the_line(tmp_path: Path) -> None:
    path = tmp_path / "freeze.txt"
    path.write_text("vllm==0.31.0\nflashinfer-python @ https://x/" + "y" * 5000 + "\n")
    code, _, err = cli("select", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--environment", str(path))
    assert code == 2 and "line 2" in err and "at most 4096" in err


@pytest.mark.parametrize("where", ["--package", "--environment"])
def test_a_version_too_long_for_a_release_is_refused_not_echoed(tmp_path: Path, where: str) -> None:
    version = "0.31.0" + ".0" * 2000
    if where == "--package":
        code, out, err = cli("select", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--package", f"vllm=={version}")
    else:
        path = tmp_path / "freeze.txt"
        path.write_text(f"vllm=={version}\n")
        code, out, err = cli("select", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--environment", str(path))
    assert code == 2, out
    assert "at most 128 characters" in err and len(err) < 1000


# ------------------------------------------------------- serve-line values: no traceback, named flag


def _serve(line: str) -> tuple[int, str, str]:
    return cli("select", "--gpu", "H200", "--serve", line)


_EPLB = "vllm serve deepseek-r1 -tp 8 -dp 2 --enable-expert-parallel --enable-eplb --eplb-config "


@pytest.mark.parametrize("value, says", [("Infinity", "expected an integer"), ("NaN", "expected an integer"), ("1.5", "fractional part"), ("1e99", "implausibly large")])
def test_eplb_config_redundant_experts_number_is_refused_naming_the_flag(value: str, says: str) -> None:
    code, _, err = _serve(_EPLB + "'{\"num_redundant_experts\": " + value + "}'")
    assert code == 2 and "Traceback" not in err
    assert "--serve --eplb-config num_redundant_experts" in err and says in err


@pytest.mark.parametrize("flag", ["--hf-overrides", "--speculative-config", "--kernel-config"])
def test_deeply_nested_json_flag_is_refused_not_a_traceback(flag: str) -> None:
    code, _, err = _serve(f"vllm serve deepseek-r1 {flag} '" + "[" * 5000 + "]" * 5000 + "'")
    assert code == 2 and "Traceback" not in err
    assert f"--serve {flag}" in err and "nested too deeply" in err


@pytest.mark.parametrize("line, flag", [("-tp 100000000000000000000", "--tensor-parallel-size"), ("-dp 100000000000000000000", "--data-parallel-size"), ("--max-num-batched-tokens 100000000000000000000", "--max-num-batched-tokens")])
def test_huge_serve_count_is_charged_to_the_serve_flag(line: str, flag: str) -> None:
    code, _, err = _serve(f"vllm serve deepseek-r1 {line}")
    assert code == 2
    assert f"--serve {flag}" in err and "bad --tp" not in err and "$.parallel" not in err and "$.max_num_tokens" not in err


# --------------------------------------------- a compressed-tensors re: pattern nested in text_config


@pytest.mark.parametrize("where", ["targets", "ignore"])
def test_uncompilable_re_pattern_in_a_nested_quantization_config_is_refused(tmp_path: Path, where: str) -> None:
    cfg = json.loads((examples_dir() / "kimi-k2.5.json").read_text())
    q = cfg["text_config"]["quantization_config"]  # Kimi-K2.5 keeps its document under text_config
    if where == "targets":
        q["config_groups"]["group_0"]["targets"] = ["re:[unclosed"]
    else:
        q["ignore"].append("re:[unclosed")
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    for command in ("select", "plan"):
        code, out, err = cli(command, "--model", str(path), "--gpu", "H200", "--tp", "8")
        assert code == 2, out
        assert "$.text_config.quantization_config." in err and "re:[unclosed" in err and "re.error" in err


# --------------------------------- --hf-overrides: a conflict it causes is charged to it, not the file


@pytest.mark.parametrize("command", ["select", "plan"])
@pytest.mark.parametrize("override", ["--hf-overrides '{\"num_experts\": 7}'", "--hf-overrides.num_experts 7"])
def test_override_conflicting_with_a_file_field_is_charged_to_the_override(command: str, override: str) -> None:
    code, _, err = cli(command, "--gpu", "H200", "--serve", f"vllm serve qwen3-30b-a3b {override}")
    assert code == 2
    assert "--serve --hf-overrides" in err and '{"num_experts": 7}' in err and "num_experts_per_tok" in err
    assert "site-packages" not in err and str(examples_dir()) not in err and "bad --serve" in err


def test_a_broken_file_stays_charged_to_the_file_under_an_override(tmp_path: Path) -> None:
    cfg = json.loads((examples_dir() / "qwen3-30b-a3b.json").read_text())
    cfg["num_experts_per_tok"] = 500  # broken without any override
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    code, _, err = cli("select", "--gpu", "H200", "--serve", f"vllm serve {path} --hf-overrides '{{\"num_experts\": 7}}'")
    assert code == 2
    assert f"{path}: $.num_experts_per_tok" in err and "with --hf-overrides" not in err


# -------------------------------------------- shell operators in a serve line are named as such


@pytest.mark.parametrize("tail, what", [("; rm -rf x", "';'"), ("&& echo hi", "'&&'"), ("| tee log", "'|'"), ("> log 2>&1 &", "'>'"), ("# a comment", "a shell comment")])
def test_shell_operator_in_a_serve_line_is_named_not_read_as_flags(tail: str, what: str) -> None:
    code, _, err = _serve(f"vllm serve deepseek-r1 -tp 8 {tail}")
    assert code == 2
    assert what in err and "runs no shell" in err and "--node-rank" not in err and "extra words" not in err


def test_quoted_or_escaped_operator_characters_are_values() -> None:
    code, out, err = _serve("vllm serve deepseek-r1 -tp 8 --served-model-name 'a;b|c#d' --hf-overrides '{\"x#\": \"&\"}' --api-key a\\;b")
    assert code == 0, err


# ------------------------------- another engine's flag inside a vllm serve line is named as such


@pytest.mark.parametrize("flag, engine, ours", [("--model-path x", "SGLang", "vllm serve MODEL"), ("--tp_size 8", "TensorRT-LLM", "--tensor-parallel-size"), ("--tp-size 8", "SGLang", "--tensor-parallel-size"), ("--num-shard 8", "Text Generation Inference", "--tensor-parallel-size"), ("--moe-runner-backend triton", "SGLang", "--moe-backend")])
def test_other_engines_flag_in_a_vllm_line_names_the_engine_not_an_unrelated_flag(flag: str, engine: str, ours: str) -> None:
    code, _, err = _serve(f"vllm serve qwen3-30b-a3b {flag}")
    assert code == 2
    assert engine in err and ours in err and "did you mean" not in err


# ------------------------------------------------------------------------- matrix within 2 s


@pytest.mark.parametrize("args", [(), ("--markdown",)])
def test_full_matrix_takes_well_under_two_seconds_of_cpu(args: tuple[str, ...]) -> None:
    cli("matrix", "--gpu", "H200", "--quant", "fp8_block")  # the catalog loaded once, as a CLI call finds it cached
    code, out, _, cpu = timed("matrix", *args)
    assert code == 0 and "triton" in out
    assert cpu < 1.5, f"{cpu:.2f} s of CPU"


# ---------------------------------------------------------------- the Python API the README shows


def test_scheme_by_name_unknown_is_a_config_error_naming_the_allowed_names() -> None:
    from moe_oracle import scheme_by_name
    from moe_oracle.core.errors import ConfigError

    with pytest.raises(ConfigError) as caught:
        scheme_by_name("fp9")
    text = str(caught.value)
    assert "fp9" in text and "fp8_block" in text and "unknown quant scheme" in text
    assert isinstance(caught.value, KeyError)  # callers that look names up keep working


# --------------------------------------------------------------------- device flags that conflict


def test_arch_with_platform_cuda_is_refused_like_sm_with_rocm() -> None:
    code, out, err = cli("select", "--model", "deepseek-r1", "--platform", "cuda", "--arch", "gfx942")
    assert code == 2, out
    assert "--arch" in err and "gfx942" in err and "--sm" in err
    code, _, err = cli("select", "--model", "deepseek-r1", "--platform", "rocm", "--sm", "90")
    assert code == 2 and "only meaningful on platform cuda" in err


# ------------------------------------------------------------- messages list the true allowed values


def test_n_group_message_lists_every_divisor_of_the_experts(tmp_path: Path) -> None:
    cfg = json.loads((examples_dir() / "deepseek-r1.json").read_text())
    cfg["n_group"] = 7
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    # On CPU, whose grouped top-k has no ungrouped fallback (off CPU vLLM's router routes 7 groups ungrouped).
    code, _, err = cli("select", "--model", str(path), "--gpu", "CPU_X86_64")
    assert code == 2
    assert "allowed: 1, 2, 4, 8, 16, 32, 64, 128, 256" in err


def test_the_value_is_stated_even_when_the_file_name_contains_it(tmp_path: Path) -> None:
    cfg = json.loads((examples_dir() / "deepseek-r1.json").read_text())
    cfg["num_nextn_predict_layers"] = 17
    path = tmp_path / "nextn17.json"  # the file name holds "17": the value was judged already said
    path.write_text(json.dumps(cfg))
    code, _, err = cli("select", "--model", str(path), "--gpu", "H200")
    assert code == 2 and "at most 16" in err and "(got 17)" in err


def test_collect_env_gpu_outside_the_catalog_gets_the_sm_hint_as_gpu_does(tmp_path: Path) -> None:
    path = tmp_path / "collect.txt"
    path.write_text("Collecting environment information...\nGPU models and configuration:\nGPU 0: NVIDIA GeForce RTX 4090\n\nvLLM Version: 0.33.0\n")
    code, _, err = cli("select", "--model", "qwen3-30b-a3b", "--environment", str(path))
    assert code == 2
    assert "RTX 4090" in err and "--platform cuda --sm 89" in err


# ------------------------------------------------------ vLLM's flags typed on moe-oracle's command


@pytest.mark.parametrize("flag, ours", [(("--tensor-parallel-size", "8"), "--tp"), (("-tp", "8"), "--tp"), (("--enable-expert-parallel",), "--ep"), (("--all2all-backend", "naive"), "--all2all")])
def test_a_vllm_flag_on_the_moe_oracle_command_names_moe_oracles_flag(flag: tuple[str, ...], ours: str) -> None:
    code, _, err = cli("select", "--model", "deepseek-r1", "--gpu", "H200", *flag)
    assert code == 2
    assert f"{flag[0]} is vLLM's; moe-oracle's is {ours}" in err and "--serve" in err


@pytest.mark.parametrize("given, write", [("9.0", "90"), ("sm_90", "90"), ("12.1", "121")])
def test_sm_written_as_other_tools_print_it_is_answered_with_our_spelling(given: str, write: str) -> None:
    code, _, err = cli("select", "--model", "deepseek-r1", "--platform", "cuda", "--sm", given)
    assert code == 2 and f"write {write}" in err and "major*10+minor" in err


def test_run_without_torch_says_so_in_its_headline(monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    monkeypatch.setitem(sys.modules, "moe_oracle.runtime.runner", None)  # as where torch is not installed
    code, _, err = cli("run", "--model", "qwen3-30b-a3b", "--tokens", "16")
    assert code == 3  # a missing optional dependency, not bad input (it was 2)
    assert "run needs torch" in err and "invalid MoE configuration" not in err


def test_a_nested_quantization_document_problem_is_located_under_text_config(tmp_path: Path) -> None:
    cfg = json.loads((examples_dir() / "kimi-k2.5.json").read_text())
    cfg["text_config"]["quantization_config"]["config_groups"]["group_0"]["weights"]["group_size"] = 0
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    code, _, err = cli("select", "--model", str(path), "--gpu", "H200", "--tp", "8")
    assert code == 2 and "$.text_config.quantization_config.group_size" in err


# -------------------------------------------------------------- the README states the release range


def test_the_readme_names_the_newest_modelled_release_where_it_states_the_range() -> None:
    import re

    from moe_oracle.verify.releases import harness_releases

    newest = harness_releases()[-1]
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    ranges = re.findall(r"0\.29\.0 … (\d+\.\d+\.\d+)", readme)
    assert ranges and set(ranges) == {newest}, ranges
    newer = re.search(r"a release newer than\s+(\S+) is answered as (\S+),", readme)
    assert newer and newer.groups() == (newest, newest)
    warning = re.search(r"WARNING: answers are for vLLM 0\.29\.0–(\S+); you declared (\S+): facts of (\S+) ", readme)
    assert warning and warning.group(1) == newest and warning.group(3) == newest


def test_help_says_what_model_takes_and_which_commands_take_json() -> None:
    _, out, _ = cli("explain", "--help")
    assert "checkpoint directory" in out and "Hugging Face id" in out and "0.29.0-0.33.0" not in out
    _, top, _ = cli("--help")
    assert "--json on each command" not in top and "--json on explain" in top
    _, lint_help, _ = cli("lint", "--help")
    assert "5 s of CPU" in lint_help


@pytest.mark.parametrize("command", [("plan", "--environment"), ("diff", "--to", "vllm==0.33.0", "--from")], ids=["plan", "diff-side"])
def test_collect_env_gpu_outside_the_catalog_is_charged_to_the_file_in_whole_model_commands(tmp_path: Path, command: tuple[str, ...]) -> None:
    """``plan`` (and ``diff``, which plans each side) refused the report's GPU as "bad --gpu:
    --gpu: unknown hardware name", a flag the command line did not give; ``select`` charges it
    to the file and names the flags that describe it."""
    path = tmp_path / "collect.txt"
    path.write_text("Collecting environment information...\nGPU models and configuration:\nGPU 0: NVIDIA GeForce RTX 4090\n\nvLLM Version: 0.33.0\n")
    code, out, err = cli(command[0], "--model", "qwen3-30b-a3b", *command[1:], str(path))
    assert code == 2 and out == ""
    assert "--gpu:" not in err and f"--environment {path}: the GPU 'NVIDIA GeForce RTX 4090' is not in the hardware catalog" in err
    assert "--platform cuda --sm 89" in err
