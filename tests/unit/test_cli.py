"""The moe-oracle command line: commands, --help, --json, exit codes."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from moe_oracle.cli import build_parser, main
from moe_oracle.core.tables import load_schemas
from tests.tables_fixture import write_tables


@pytest.fixture()
def tables(tmp_path):
    write_tables(tmp_path)
    return str(tmp_path)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def layer_args(tables, *extra):
    return ["--tables", tables, "--model", "qwen3-30b-a3b", *extra]


@pytest.mark.parametrize("command", ["explain", "select", "why-not", "matrix", "lint", "run", "examples"])
def test_every_command_has_help(command, capsys):
    with pytest.raises(SystemExit) as info:
        main([command, "--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    assert "usage: moe-oracle " + command in out


def test_top_level_help_lists_commands():
    text = build_parser().format_help()
    for command in ("explain", "select", "why-not", "matrix", "lint", "run", "examples"):
        assert command in text


def test_a_parser_filled_for_one_command_reads_as_the_full_one():
    """main fills in the arguments of the command it runs only: the top-level help and that
    command's parser are the full tree's."""
    import argparse

    def subparsers(parser):
        return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices

    full = build_parser()
    for command, sub in subparsers(full).items():
        lean = build_parser(commands=[command])
        assert lean.format_help() == full.format_help()
        assert subparsers(lean)[command].format_help() == sub.format_help(), command
        assert [a.dest for a in subparsers(lean)[command]._actions] == [a.dest for a in sub._actions]


def test_select_prints_one_line_and_exit_0(tables, capsys):
    code, out, _ = run(capsys, "select", *layer_args(tables, "--gpu", "B200"))
    assert code == 0
    assert out.count("\n") == 1 and out.startswith("fast_monolithic [fast, monolithic] + local_monolithic")


def test_explain_json_validates_against_the_decision_schema(tables, capsys):
    code, out, _ = run(capsys, "explain", *layer_args(tables, "--gpu", "A100", "--json"))
    assert code == 0
    record = json.loads(out)
    errors = list(load_schemas().for_kind("decision").iter_errors(record))
    assert errors == []
    assert record["selected"]["kernel"] == "slow" and record["demotions"][0]["backend"] == "slow"


def test_nothing_eligible_exits_1_with_the_full_record(tables, capsys):
    code, out, _ = run(capsys, "explain", *layer_args(tables, "--gpu", "B200", "--moe-backend", "slow", "--max-tokens", "8", "--quant", "nvfp4"))
    assert code == 1
    assert "Selected: NONE" in out and "quant_unsupported" in out


def test_bad_input_exits_2_with_a_did_you_mean(tables, capsys):
    code, _, err = run(capsys, "explain", *layer_args(tables, "--gpu", "H2000"))
    assert code == 2 and "did you mean 'H200'" in err
    code, _, err = run(capsys, "explain", *layer_args(tables, "--gpu", "B200", "--all2all", "deepep_ll"))
    assert code == 2 and "all2all" in err
    code, out, _ = run(capsys, "select", *layer_args(tables, "--gpu", "B200", "--moe-backend", "slwo", "--json"))
    assert code == 2 and json.loads(out)["issues"][0]["did_you_mean"] == "slow"
    code, _, err = run(capsys, "explain", "--tables", tables, "--gpu", "B200")
    assert code == 2 and "--model" in err


def test_model_without_device_is_an_error(tables, capsys):
    code, _, err = run(capsys, "explain", *layer_args(tables))
    assert code == 2 and "--gpu" in err


def test_declared_packages_and_env(tables, capsys):
    code, out, _ = run(capsys, "select", *layer_args(tables, "--gpu", "B200", "--without", "fastpkg"))
    assert code == 0 and out.startswith("slow ")
    code, out, _ = run(capsys, "explain", *layer_args(tables, "--gpu", "B200", "--env", "VLLM_BATCH_INVARIANT=1", "--json"))
    record = json.loads(out)
    assert record["inputs"]["batch_invariant"] == {"value": True, "source": "env_var"}
    # A variable selection does not read changes nothing: accepted, and a note says so (issue 9).
    code, out, _ = run(capsys, "explain", *layer_args(tables, "--gpu", "B200", "--env", "NOT_READ=1", "--json"))
    assert code == 0 and any(n.startswith("--env: NOT_READ") for n in json.loads(out)["notes"])


def test_why_not_finds_the_smallest_change(tables, capsys):
    code, out, _ = run(capsys, "why-not", "--backend", "fast", *layer_args(tables, "--gpu", "H200", "--json"))
    assert code == 0
    result = json.loads(out)
    assert result["found"] and [e["target"] for e in result["edits"]] == ["device"]
    assert result["kernel"] in ("fast", "fast_monolithic")


def test_matrix_markdown_and_html(tables, tmp_path, capsys):
    code, out, _ = run(capsys, "matrix", "--tables", tables, "--markdown")
    assert code == 0 and "| `fast_monolithic` |" in out
    code, out, _ = run(capsys, "matrix", "--tables", tables)
    assert code == 0 and "  fast_monolithic" in out
    page = tmp_path / "m.html"
    code, _, _ = run(capsys, "matrix", "--tables", tables, "--html", str(page))
    html = page.read_text()
    assert code == 0 and html.startswith("<!doctype html>") and "id='rule-fast.platforms.cuda.device_capability'" in html
    assert "<script" not in html and "http" not in html.split("<body>")[1]


def test_lint_reports_and_json(tables, capsys):
    code, out, _ = run(capsys, "lint", "--tables", tables, "--json")
    report = json.loads(out)
    assert report["ok"] is True
    assert any(f["code"] == "never_selected" for f in report["findings"]) or all(f["severity"] != "error" for f in report["findings"])


def test_lint_on_broken_tables_exits_2(tmp_path, capsys):
    write_tables(tmp_path)
    (tmp_path / "kernels" / "fast.yaml").write_text("kind: experts\nfamily: fast\n")
    code, out, _ = run(capsys, "lint", "--tables", str(tmp_path))
    assert code == 2 and "kernels/fast.yaml" in out


def test_console_script_entry_point():
    proc = subprocess.run([sys.executable, "-m", "moe_oracle.cli", "--version"], capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and proc.stdout.startswith("moe-oracle ")


def test_a_warm_select_imports_only_what_answering_needs(tmp_path):
    """issue 11 (CLI start to answer): once the caches are filled, `select` parses no YAML and
    imports neither the why-not search, the differential harness nor packaging's requirement and
    tag parsers (each is imported where it is used)."""
    probe = (
        "import sys\n"
        # what the interpreter's start-up and packaging's own version classes import (packaging 26's
        # specifiers import its utils and tags) are not ours to avoid
        "import packaging.specifiers, packaging.version\n"
        "BASE = set(sys.modules)\n"
        "from moe_oracle.cli import main\n"
        "assert main(['select', '--model', 'deepseek-r1', '--gpu', 'H200', '--tp', '8']) == 0\n"
        "print(sorted(m for m in sys.modules if m not in BASE and (m.split('.')[0] == 'yaml' or m in ('jsonschema', 'packaging.requirements', 'packaging.tags', 'packaging.utils', 'moe_oracle.explain.whynot', 'moe_oracle.verify.run', 'moe_oracle.verify.cases', 'tempfile'))))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "MOE_ORACLE_NO_CACHE"}
    env["MOE_ORACLE_CACHE_DIR"] = str(tmp_path)
    for _ in range(2):  # the first call fills the caches
        proc = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, env=env, check=False)
        assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.splitlines()[-1] == "[]"


def test_only_a_command_line_run_freezes_the_heap_at_exit(monkeypatch, capsys):
    """main() without argv is the process's command: gc.freeze is registered to run at exit,
    once however often main runs; main(argv) (a caller's process) registers nothing."""
    import atexit
    import gc

    hooks = []
    monkeypatch.setattr(atexit, "register", lambda f, *a, **k: hooks.append(f) or f)
    monkeypatch.setattr(atexit, "unregister", lambda f: hooks.remove(f) if f in hooks else None)
    assert main(["codes"]) == 0 and hooks == []
    monkeypatch.setattr(sys, "argv", ["moe-oracle", "codes"])
    assert main() == 0 and main() == 0
    assert hooks == [gc.freeze]
    capsys.readouterr()


def test_answers_name_the_release_and_the_view(capsys):
    code, out, _ = run(capsys, "select", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--tp", "2", "--package", "vllm==0.31.0")
    assert code == 0 and out.rstrip().endswith("for vLLM 0.31.0 (declared)")
    code, out, _ = run(capsys, "explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--tp", "2", "--view", "runtime", "--json")
    record = json.loads(out)
    assert code == 0 and record["view"] == "runtime" and record["selected"]["kernel"] == "torch_grouped_mm" and record["engine"]["known"] == "assumed"
    code, out, _ = run(capsys, "explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--tp", "2", "--package", "vllm==0.35.0")
    assert code == 0 and "WARNING: answers are for vLLM 0.29.0\u20130.34.0; you declared 0.35.0" in out


def test_a_declared_variables_note_is_given_once_naming_where_it_was_declared(capsys):
    argv = ["explain", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8", "--env", "VLLM_ROCM_USE_AITER=yes"]
    assert main(argv) == 0
    lines = [ln for ln in capsys.readouterr().out.splitlines() if "read as false" in ln]
    assert len(lines) == 1 and lines[0].startswith("Note: --env: VLLM_ROCM_USE_AITER='yes'")
    assert main([*argv, "--json"]) == 0
    notes = [n for n in json.loads(capsys.readouterr().out)["notes"] if "read as false" in n]
    assert len(notes) == 1 and notes[0].startswith("--env: ")


@pytest.mark.parametrize("argv, flag", [
    (["why-not", "--backend", "trtllm", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8"], "--backend"),
    (["matrix", "--backend", "nope"], "--backend"),
    (["plan", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8", "--draft-moe-backend", "vllm_cutlass"], "--draft-moe-backend"),
])
def test_a_bad_backend_name_names_the_flag_it_was_given_in(argv, flag, capsys):
    assert main([*argv, "--json"] if argv[0] != "matrix" else argv) == 2
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert f"bad {flag}" in text and "--moe-backend" not in text.replace("--draft-moe-backend", "") and "$.moe_backend" not in text


EPLB_NO_EP = "model: {num_experts: 64, top_k: 4, hidden_size: 1024, intermediate_size: 512, activation: silu, quant: fp8_block}\ndevice: {gpu: H200}\nparallel: {tp_size: 2, dp_size: 4, %s}\n"


@pytest.mark.parametrize(("argv", "parallel", "path", "advice"), [
    (["select", "--config", "{file}"], "enable_eplb: true", "$.parallel.enable_eplb", "set $.parallel.use_ep: true in {file}"),
    (["select", "--config", "{file}"], "num_redundant_experts: 4", "$.parallel.num_redundant_experts", "set $.parallel.enable_eplb: true in {file}"),
    (["select", "--config", "{file}", "--no-ep"], "enable_eplb: true", "$.parallel.enable_eplb", "add --ep"),
    (["select", "--config", "{file}", "--eplb"], "use_ep: false", "--eplb", "set $.parallel.use_ep: true in {file}"),
    (["select", "--gpu", "H200", "--serve", "vllm serve qwen3-30b-a3b -tp 2 -dp 4 --enable-eplb"], None, "--serve --enable-eplb", "add --enable-expert-parallel to the vllm serve line"),
    (["why-not", "--backend", "triton", "--gpu", "H200", "--serve", "vllm serve qwen3-30b-a3b -tp 8 --eplb-config.num_redundant_experts 8"], None, "--serve --eplb-config num_redundant_experts", "add --enable-eplb to the vllm serve line"),
    (["plan", "--gpu", "H200", "--serve", "vllm serve qwen3-30b-a3b -tp 2 -dp 4 --enable-eplb"], None, "--serve --enable-eplb", "add --enable-expert-parallel to the vllm serve line"),
    (["select", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--tp", "8", "--eplb"], None, "--eplb", "add --ep"),
], ids=["file-eplb", "file-redundant", "file-eplb-flag-no-ep", "flag-eplb-file-no-ep", "serve-eplb", "serve-redundant", "plan-serve-eplb", "flag-eplb"])
def test_an_engine_refusal_advises_a_change_where_the_value_came_from(tmp_path, capsys, argv, parallel, path, advice):
    file = tmp_path / "dep.yaml"
    if parallel is not None:
        file.write_text(EPLB_NO_EP % parallel)
    argv = [a.replace("{file}", str(file)) for a in argv]
    assert main([*argv, "--json"]) == 2
    (issue,) = json.loads(capsys.readouterr().out)["issues"]
    assert issue["keyword"] == "engine_refuses" and issue["path"] == path
    assert issue["file"] == (str(file) if path.startswith("$") else None)
    assert issue["message"].endswith("; " + advice.replace("{file}", str(file)))


def test_an_engine_refusal_of_a_config_file_names_the_file_and_field(tmp_path, capsys):
    path = tmp_path / "eplb.yaml"
    path.write_text(
        "model: {num_experts: 64, top_k: 4, hidden_size: 1024, intermediate_size: 512, activation: silu, quant: fp8_block}\n"
        "device: {gpu: H200}\n"
        "parallel: {tp_size: 2, dp_size: 4, use_ep: true, enable_eplb: true, num_redundant_experts: 3}\n"
    )
    assert main(["select", "--config", str(path), "--json"]) == 2
    issue = json.loads(capsys.readouterr().out)["issues"][0]
    assert (issue["file"], issue["path"], issue["keyword"]) == (str(path), "$.parallel.enable_eplb", "engine_refuses")
    assert main(["select", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert str(path) in err and "$.parallel.enable_eplb" in err and "bad --eplb" not in err


def test_a_serve_line_without_a_device_names_the_serve_input(capsys):
    """The device comes from a flag or an environment file; the error names the input the layer
    came from (it said --model for a serve line)."""
    assert main(["explain", "--serve", "vllm serve deepseek-ai/DeepSeek-R1 -tp 8"]) == 2
    assert "the device is required with --serve" in capsys.readouterr().err


@pytest.mark.parametrize("seed", ["99999999999999999999999", str(-(2**63) - 1), "1.5"])
def test_run_refuses_a_seed_torch_cannot_take(seed, capsys):
    """`run --seed 99999999999999999999999` reached torch.Generator.manual_seed and ended in a
    traceback (ValueError: Overflow when unpacking long long); argparse now refuses it, naming the range."""
    with pytest.raises(SystemExit) as info:
        main(["run", "--model", "qwen3-30b-a3b", "--seed", seed])
    err = capsys.readouterr().err
    assert info.value.code == 2
    assert "argument --seed: expected an integer from -9223372036854775808 to 9223372036854775807" in err


def test_run_json_with_nothing_eligible_prints_the_decision_record(capsys):
    """`run --json` on a layer the runtime cannot take (gpt-oss-20b's MXFP4 on CPU) printed the
    text dead end, so stdout was not JSON; it now prints the Decision record with no run."""
    code = main(["run", "--model", "gpt-oss-20b", "--tokens", "2", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 1
    assert out["run"] is None and out["decision"]["selected"] is None


def test_run_names_layers_when_the_layer_count_is_what_cannot_fit(monkeypatch, capsys):
    """`run --layers 100000 --max-experts 8` was refused as "--max-experts: one expert of this
    layer needs 878.9 GiB": one expert of one layer fits, the layer count does not, so --layers is named."""
    pytest.importorskip("torch")
    import moe_oracle.runtime.runner as runner

    monkeypatch.setattr(runner, "available_memory_bytes", lambda: 16 * 2**30)
    code = main(["run", "--model", "qwen3-30b-a3b", "--layers", "100000", "--max-experts", "8", "--json"])
    issue = json.loads(capsys.readouterr().out)["issues"][0]
    assert code == 2
    assert issue["path"] == "--layers" and issue["value"] == 100000
    assert 1 < issue["allowed"]["maximum"] < 100000 and f"use --layers {issue['allowed']['maximum']} or fewer" in issue["message"]


@pytest.mark.parametrize("extra, path, value", [([], "$.num_experts", 128), (["--max-experts", "100"], "--max-experts", 100)], ids=["not-given", "given"])
def test_run_memory_refusal_names_max_experts_only_when_the_operator_gave_it(monkeypatch, capsys, extra, path, value):
    """`run --model deepseek-r1 --tokens 2048 --layers 2` on a small machine said "bad --max-experts
    ... (got 256)" to an operator who never typed --max-experts; without the flag the model's
    expert count is charged, with how much it needs, what is free and the --max-experts to give."""
    pytest.importorskip("torch")
    import moe_oracle.runtime.runner as runner

    monkeypatch.setattr(runner, "available_memory_bytes", lambda: 2 * 2**30)
    code = main(["run", "--model", "qwen3-30b-a3b", "--tokens", "2", *extra, "--json"])
    record = json.loads(capsys.readouterr().out)
    issue = record["issues"][0]
    assert code == 2
    assert issue["path"] == path and issue["value"] == value
    fit = issue["allowed"]["maximum"]
    assert 1 <= fit < 100 and f"--max-experts {fit}" in issue["message"] and "GiB is free" in issue["message"]
    if not extra:
        assert "--max-experts" not in record["message"] and "the model's 128 experts need" in issue["message"]
    else:
        assert record["message"] == "bad --max-experts"


def test_an_error_record_into_a_closed_pipe_exits_2_without_a_traceback(monkeypatch):
    """`plan --tp 0 --json | head -1` ended in a BrokenPipeError traceback raised while printing
    the error record (the handler for a broken pipe covered only the answer, not the error)."""
    import io

    class Closed(io.StringIO):
        def write(self, text):
            raise BrokenPipeError(32, "Broken pipe")

    monkeypatch.setattr(sys, "stdout", Closed())
    assert main(["plan", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "0", "--json"]) == 2


@pytest.mark.parametrize("extra", [[], ["--tokens", "32"]], ids=["default", "given"])
def test_run_tokens_refusal_names_the_default_when_tokens_was_not_given(monkeypatch, capsys, extra):
    """A `run` whose activations cannot fit was refused as "32 tokens need ... use fewer tokens" to an
    operator who never typed --tokens; the refusal says 32 is --tokens's default and how many fit."""
    pytest.importorskip("torch")
    import moe_oracle.runtime.runner as runner

    monkeypatch.setattr(runner, "available_memory_bytes", lambda: 4 * 2**20)  # 4 MiB: 32 tokens of activations do not fit
    code = main(["run", "--model", "qwen3-30b-a3b", "--max-experts", "1", *extra, "--json"])
    issue = json.loads(capsys.readouterr().out)["issues"][0]
    assert code == 2 and issue["path"] == "--tokens" and issue["value"] == 32
    fit = issue["allowed"]["maximum"]
    assert 1 <= fit < 32 and f"use --tokens {fit} or fewer" in issue["message"]
    assert ("(the default of --tokens)" in issue["message"]) == (not extra)
