"""Issue 24: what an operator meets. Bounded work on any input, impossible configs refused with
vLLM's check named, messages that point at what the user wrote, and the friction items. Each test
here failed before the change it covers."""

from __future__ import annotations

import json
import re
import time
from pathlib import Path

import pytest

from tests.cli_capture import cli
from moe_oracle.core._resources import examples_dir

R1 = json.loads((examples_dir() / "deepseek-r1.json").read_text())


def _model(tmp_path: Path, **changes: object) -> str:
    cfg = dict(R1)
    cfg.update(changes)
    path = tmp_path / "config.json"
    path.write_text(json.dumps(cfg))
    return str(path)


# ----------------------------------------------------------------------------- bounded work


@pytest.mark.parametrize("command", ["select", "plan"])
def test_mtp_layer_count_is_bounded_and_fast(tmp_path: Path, command: str) -> None:
    start = time.perf_counter()
    code, out, err = cli(command, "--model", _model(tmp_path, num_nextn_predict_layers=10**6), "--gpu", "H200", "--tp", "8")
    assert time.perf_counter() - start < 2.0
    assert code == 2, out
    assert "num_nextn_predict_layers" in err and "at most 16" in err and "MTP" in err


def test_layer_count_message_states_the_bound(tmp_path: Path) -> None:
    code, _, err = cli("select", "--model", _model(tmp_path, num_hidden_layers=10**9), "--gpu", "H200")
    assert code == 2
    assert "num_hidden_layers" in err and "at most 256" in err


# ------------------------------------------------------------------ impossible configs refused


@pytest.mark.parametrize(
    ("changes", "field", "words"),
    [
        ({"n_group": 0}, "n_group", "GroupedTopKRouter"),  # topk_group 4: not a degenerate grouping
        ({"n_group": None}, "n_group", "num_expert_group and topk_group must be provided"),
        ({"topk_group": 100}, "topk_group", "n_group = 8"),
        ({"model_type": 7}, "model_type", "AutoConfig"),
    ],
)
def test_impossible_model_configs_are_refused_naming_vllms_check(tmp_path: Path, changes: dict, field: str, words: str) -> None:
    code, out, err = cli("select", "--model", _model(tmp_path, **changes), "--gpu", "H200", "--tp", "8")
    assert code == 2, out
    assert f"$.{field}" in err and words in err


def test_unclosed_regex_target_is_refused(tmp_path: Path) -> None:
    q = {"quant_method": "compressed-tensors", "format": "float-quantized", "ignore": ["lm_head"], "config_groups": {"group_0": {"targets": ["re:[unclosed"], "weights": {"num_bits": 8, "type": "float", "strategy": "channel", "symmetric": True, "dynamic": False}, "input_activations": {"num_bits": 8, "type": "float", "strategy": "token", "symmetric": True, "dynamic": True}}}}
    code, out, err = cli("select", "--model", _model(tmp_path, quantization_config=q), "--gpu", "H200", "--tp", "8")
    assert code == 2, out
    assert "config_groups.group_0.targets[0]" in err and "re.error" in err


def test_python_api_refuses_the_same(tmp_path: Path) -> None:
    from moe_oracle.core.errors import ConfigError
    from moe_oracle.inputs.hf import from_hf_config

    with pytest.raises(ConfigError, match="n_group"):
        from_hf_config({**R1, "n_group": 0})


_BOMB = "".join(f"{c}: &{c} [{', '.join([f'*{p}'] * 9) if p else ', '.join(['x'] * 9)}]\n" for p, c in zip(["", "a", "b", "c", "d", "e", "f", "g"], "abcdefgh"))


@pytest.mark.parametrize(("text", "words"), [(_BOMB, "alias bomb"), ("a: &a [*a]\n", "refers to itself"), ("a: " + "[" * 5000 + "]" * 5000 + "\n", "too deep")])
def test_serve_config_alias_bomb_refused_fast(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "bomb.yaml"
    path.write_text(text)
    start = time.perf_counter()
    code, out, err = cli("select", "--serve", f"vllm serve deepseek-ai/DeepSeek-R1 --config {path}", "--gpu", "H200")
    assert time.perf_counter() - start < 2.0
    assert code == 2, out
    assert "--serve --config" in err and words in err


# ------------------------------------------------------------------ messages


def test_shell_substitution_is_named_not_read_as_flags() -> None:
    code, _, err = cli("select", "--serve", "vllm serve Qwen/Qwen3-30B-A3B $(rm -rf x) -tp 2", "--gpu", "H200")
    assert code == 2
    assert "shell substitution is not expanded" in err and "--node-rank" not in err


def test_single_quoted_dollar_is_not_a_substitution() -> None:
    code, out, err = cli("select", "--serve", "vllm serve Qwen/Qwen3-30B-A3B -tp 2 --served-model-name '$x'", "--gpu", "H200")
    assert code == 0, err


@pytest.mark.parametrize(
    ("line", "engine"),
    [
        ("python -m sglang.launch_server --model-path Qwen/Qwen3-30B-A3B --tp 2", "SGLang"),
        ("Qwen/Qwen3-30B-A3B --model-path x", "SGLang"),
        ("trtllm-serve Qwen/Qwen3-30B-A3B --tp_size 2", "TensorRT-LLM"),
        ("Qwen/Qwen3-30B-A3B --tp_size 2", "TensorRT-LLM"),
    ],
)
def test_other_engines_command_lines_are_named(line: str, engine: str) -> None:
    code, _, err = cli("select", "--serve", line, "--gpu", "H200")
    assert code == 2
    assert f"{engine} command line; moe-oracle answers for vLLM" in err and "did you mean" not in err


def test_all2all_abbreviation_did_you_mean() -> None:
    code, _, err = cli("select", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--all2all", "deepep_ll", "--ep", "--dp", "2")
    assert code == 2 and "did you mean 'deepep_low_latency'" in err


def test_why_not_backend_family_did_you_mean() -> None:
    code, _, err = cli("why-not", "--backend", "flashinfer", "--model", "qwen3-30b-a3b", "--gpu", "H200")
    assert code == 2
    assert "did you mean one of" in err and "flashinfer_cutlass" in err and "flashinfer_trtllm" in err


# ------------------------------------------------------------------ friction


def test_model_takes_a_hugging_face_id_like_serve() -> None:
    flag = cli("select", "--model", "Qwen/Qwen3-30B-A3B-FP8", "--gpu", "H200")
    serve = cli("select", "--serve", "vllm serve Qwen/Qwen3-30B-A3B-FP8", "--gpu", "H200")
    assert flag[0] == serve[0] == 0, flag[2]
    assert flag[1].split(" for vLLM")[0] == serve[1].split(" for vLLM")[0]


def test_unknown_hf_id_is_charged_to_model() -> None:
    code, _, err = cli("select", "--model", "nobody/NoSuchModel", "--gpu", "H200")
    assert code == 2 and "--model: 'nobody/NoSuchModel' is not a local checkpoint" in err and "does not download" in err


def test_hf_quant_config_takes_a_shipped_example_name() -> None:
    code, out, err = cli("select", "--model", "nvidia-nemotron-3-nano-30b-a3b-bf16", "--hf-quant-config", "nvidia-nemotron-3-nano-30b-a3b-nvfp4", "--gpu", "B200")
    assert code == 0, err
    assert "nvfp4" in out


def test_hf_quant_config_as_model_points_to_the_flag() -> None:
    path = examples_dir() / "nvidia-nemotron-3-nano-30b-a3b-nvfp4.hf_quant_config.json"
    code, _, err = cli("select", "--model", str(path), "--gpu", "B200")
    assert code == 2 and "--hf-quant-config" in err and "declares no MoE layer" not in err


@pytest.mark.parametrize(("flag", "first", "second"), [("--model", "qwen3-30b-a3b", "deepseek-r1"), ("--serve", "vllm serve a", "vllm serve b"), ("--config", "a.yaml", "b.yaml"), ("--platform", "cuda", "rocm"), ("--sm", "90", "100"), ("--hf-quant-config", "a", "b")])
def test_repeated_source_flags_are_refused(flag: str, first: str, second: str) -> None:
    code, _, err = cli("select", "--gpu", "H200", flag, first, flag, second)
    assert code == 2 and f"argument {flag}: given more than once" in err


@pytest.mark.parametrize(("flag", "first", "second"), [("--gpu", "H200", "B200"), ("--quant", "fp8_block", "unquantized"), ("--tp", "2", "4")])
def test_repeated_deployment_flags_say_the_last_wins(flag: str, first: str, second: str) -> None:
    """why-not's fixes are flags appended to the command (``--gpu B200`` after ``--gpu H200``):
    the later value is used, and stderr says so."""
    argv = ["select", "--model", "qwen3-30b-a3b", *(["--gpu", "H200"] if flag != "--gpu" else [])]
    code, _, err = cli(*argv, flag, first, flag, second)
    assert code == 0, err
    assert f"warning: {flag} given more than once: the last ({second!r}" in err or f"the last ({int(second)!r}" in err


def test_unknown_consumer_gpu_hints_platform_and_sm() -> None:
    code, _, err = cli("select", "--model", "qwen3-30b-a3b", "--gpu", "NVIDIA GeForce RTX 4090")
    assert code == 2 and "--platform cuda --sm 89" in err


def test_from_hf_config_json_string_is_a_clear_error() -> None:
    from moe_oracle.core.errors import ConfigError
    from moe_oracle.inputs.hf import from_hf_config

    with pytest.raises(ConfigError, match="not a JSON string: pass load_hf_config"):
        from_hf_config(json.dumps(R1))  # type: ignore[arg-type]


def test_hf_overrides_errors_name_the_flag_and_the_model_as_written() -> None:
    code, _, err = cli("select", "--serve", "vllm serve deepseek-ai/DeepSeek-R1 --hf-overrides '{\"topk_group\": 9}'", "--gpu", "H200")
    assert code == 2
    assert "--serve --hf-overrides topk_group" in err and "deepseek-ai/DeepSeek-R1" in err
    assert str(examples_dir()) not in err


def test_hf_quant_config_not_read_note_only_when_it_is_not_read() -> None:
    from moe_oracle.inputs.checkpoint import read_checkpoint

    cfg = json.loads((examples_dir() / "nvidia-nemotron-3-nano-30b-a3b-bf16.json").read_text())
    beside = json.loads((examples_dir() / "nvidia-nemotron-3-nano-30b-a3b-nvfp4.hf_quant_config.json").read_text())
    read = read_checkpoint(cfg, beside=beside)
    assert read.quant.source.startswith("hf_quant_config.json beside")
    assert not any("is not read" in n for n in read.quant.notes)
    shadowed = read_checkpoint({**cfg, "quantization_config": {"quant_method": "fp8", "activation_scheme": "dynamic", "weight_block_size": [128, 128]}}, beside=beside)
    assert any("hf_quant_config.json beside config.json is not read" in n for n in shadowed.quant.notes)


# ------------------------------------------------------------------ schemas for why-not and diff


def _bundled(name: str) -> dict:
    from moe_oracle.core._resources import schema_dir

    return json.loads((schema_dir() / "bundled" / f"{name}.schema.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize(
    "argv",
    [
        ["why-not", "--backend", "deep_gemm", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--tp", "2"],
        ["why-not", "--backend", "deep_gemm", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8"],
        ["why-not", "--backend", "flashinfer_trtllm", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--tp", "8"],
    ],
)
def test_why_not_json_validates_against_its_schema(argv: list[str]) -> None:
    import jsonschema

    code, out, err = cli(*argv, "--json")
    assert code in (0, 1), err
    jsonschema.validate(json.loads(out), _bundled("why_not"))


def test_diff_json_validates_against_its_schema() -> None:
    import jsonschema

    code, out, err = cli("diff", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8", "--from", "vllm==0.29.0", "--to", "vllm==0.33.0", "--json")
    assert code == 0, err
    record = json.loads(out)
    jsonschema.validate(record, _bundled("diff"))
    assert record["groups"]


def test_why_not_schema_refuses_a_record_missing_a_field() -> None:
    import jsonschema

    code, out, _ = cli("why-not", "--backend", "deep_gemm", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--json")
    record = json.loads(out)
    del record["alternatives"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(record, _bundled("why_not"))


def test_readme_shows_the_python_path_from_a_hf_config_with_an_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    import re

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, re.S)
    block = next(b for b in blocks if "from_hf_config" in b and "Environment.declared" in b)
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    scope: dict = {}
    exec(block, scope)  # noqa: S102 - the README's own example
    assert scope["decision"].kernel and scope["decision"].release.label() == "vLLM 0.31.0 (declared)"


def test_select_prints_notes_that_change_what_to_do_on_stderr() -> None:
    code, out, err = cli("select", "--model", "qwen3-30b-a3b-fp8", "--gpu", "B200", "--env", "VLLM_USE_FLASHINFER_MOE_FP8=1")
    assert code == 0 and "\n" not in out.strip()
    assert "note: --env: VLLM_USE_FLASHINFER_MOE_FP8 has no effect" in err and "use --moe-backend" in err
    _, _, quiet = cli("select", "--model", "mixtral-8x7b-instruct-v0.1", "--gpu", "H200", "--tp", "8")
    assert "note:" not in quiet  # one kind of MoE layer, nothing to act on


def test_platform_cuda_without_sm_answers_per_candidate_sm() -> None:
    code, out, err = cli("select", "--model", "qwen3-30b-a3b-fp8", "--platform", "cuda")
    assert code == 0
    assert "the answer depends on the compute capability" in err and re.search(r"\w+ on SM [0-9., ]*\b9\.0\b", err) and re.search(r"\w+ on SM [0-9., ]*\b10\.0\b", err)
    code, out, err = cli("select", "--model", "qwen3-30b-a3b-fp8", "--platform", "cuda", "--sm", "90")
    assert "depends on the compute capability" not in err


def test_a_count_that_is_not_an_integer_is_refused_not_a_traceback() -> None:
    """Found by the fuzz_deep tier: a string num_nextn_predict_layers reached a comparison with 0."""
    from moe_oracle.core.errors import ConfigError
    from moe_oracle.inputs.hf import from_hf_config

    cfg = json.loads((examples_dir() / "deepseek-v4-flash.json").read_text())
    with pytest.raises(ConfigError, match=r"num_nextn_predict_layers: must be an integer"):
        from_hf_config({**cfg, "num_nextn_predict_layers": "$(rm -rf x)"})


def test_run_on_cpu_says_what_it_costs_before_it_starts(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("torch")
    import sys as _sys

    import moe_oracle.runtime.runner as runner

    seen: list[str] = []

    def stop(*_a: object, **_k: object) -> None:
        seen.append(_sys.stderr.getvalue())  # what was said before the layer is built
        raise KeyboardInterrupt

    monkeypatch.setattr(runner, "run_layer", stop)
    with pytest.raises(KeyboardInterrupt):
        cli("run", "--model", "qwen3-30b-a3b", "--tokens", "16")
    assert seen and "on CPU this allocates about" in seen[0] and "M random weights (128 experts" in seen[0] and "--max-experts 16" in seen[0]


def test_marlin_on_a100_fp8_is_labelled_weight_only() -> None:
    code, out, err = cli("select", "--model", "qwen3-30b-a3b-fp8", "--gpu", "A100")
    assert code == 0 and out.startswith("marlin")
    assert "weight-only (W8A16)" in err
    _, _, h200 = cli("select", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200")
    assert "weight-only" not in h200


def test_deepep_on_mi300x_is_noted() -> None:
    code, _, err = cli("select", "--model", "deepseek-r1", "--gpu", "MI300X", "--dp", "8", "--ep", "--all2all", "deepep_low_latency")
    assert code in (0, 1)
    assert "on a ROCm device: DeepEP is NVIDIA's" in err and "mori_low_latency" in err


def test_backend_order_lists_this_platforms_backends() -> None:
    _, out, _ = cli("explain", "--model", "qwen3-30b-a3b", "--gpu", "H200")
    line = next(l for l in out.splitlines() if l.startswith("Backend order:"))
    assert "aiter" not in line and "batched_triton" in line and "of other platforms left out" in line
    _, out, _ = cli("explain", "--model", "qwen3-30b-a3b", "--gpu", "MI300X")
    line = next(l for l in out.splitlines() if l.startswith("Backend order:"))
    assert "aiter" in line and "flashinfer_trtllm" not in line


def test_why_not_blocking_lines_get_their_why() -> None:
    code, out, _ = cli("why-not", "--backend", "aiter", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--keep", "device")
    assert code == 1
    lines = out.splitlines()
    blocking = [i for i, l in enumerate(lines) if l.startswith("  - ") and l.endswith("]")]
    assert blocking and all(lines[i + 1].lstrip().startswith("why: ") for i in blocking)
