"""A problem in a flag that a serve line's ``--config`` YAML file gave names that file.

vLLM splices the file's keys in as flags (FlexibleArgumentParser._pull_args_from_config), so a
refusal names a flag the operator never typed; before this, moe-oracle said only
"--serve --tensor-parallel-size: expected an integer", and a file that was not YAML was reported
with PyYAML's '<unicode string>' excerpt instead of the file's name and line. Each test here fails
on the code before the change (the file was never named).
"""

from __future__ import annotations

import json

import pytest

from moe_oracle.cli import main
from moe_oracle.core.errors import ConfigError
from moe_oracle.inputs.serve import parse_serve


def _issues(tmp_path, text: str, line: str, version: str = "0.34.0"):
    (tmp_path / "serve.yaml").write_text(text)
    with pytest.raises(ConfigError) as exc:
        parse_serve(f"vllm serve m --config serve.yaml {line}", version=version, base=tmp_path)
    return exc.value.issues


@pytest.mark.parametrize("text, path", [
    ("tensor-parallel-size: eight\n", "--serve --tensor-parallel-size"),
    ("tensor_parallel_size: eight\n", "--serve --tensor-parallel-size"),  # underscores, as vLLM reads them
    ("dtype: float77\n", "--serve --dtype"),
    ("all2all-backend: nope\n", "--serve --all2all-backend"),
    ("nonsense-key: 3\n", "--serve"),
])
def test_a_problem_in_a_flag_the_file_gave_names_the_file(tmp_path, text, path):
    (issue,) = _issues(tmp_path, text, "")
    assert issue.path == path and issue.file == str(tmp_path / "serve.yaml")


def test_a_flag_the_command_line_gives_too_is_not_charged_to_the_file(tmp_path):
    """-tp on the line and tensor-parallel-size in the file are one flag: either may be the bad one."""
    issues = _issues(tmp_path, "tensor-parallel-size: eight\n", "-tp 2")
    assert [i.file for i in issues] == [None] and issues[0].path == "--serve --tensor-parallel-size"


def test_a_problem_on_the_command_line_beside_a_good_file_is_not_charged_to_it(tmp_path):
    (issue,) = _issues(tmp_path, "tensor-parallel-size: 2\n", "--dtype float77")
    assert issue.path == "--serve --dtype" and issue.file is None


def test_a_file_that_is_not_yaml_is_named_with_its_line(tmp_path):
    (issue,) = _issues(tmp_path, "tensor-parallel-size: 2\ndtype: [bfloat16\n", "")
    assert issue.file == str(tmp_path / "serve.yaml") and issue.path == "--serve --config"
    assert "line 3" in issue.message and "unicode string" not in issue.message


@pytest.mark.parametrize("command", ["explain", "plan"])
def test_the_doors_name_the_file_for_checks_made_after_parsing(tmp_path, capsys, command):
    """--kv-cache-dtype is checked against the answer's release after the line is read (both doors)."""
    (tmp_path / "kv.yaml").write_text("kv-cache-dtype: fp9\n")
    rc = main([command, "--serve", f"vllm serve Qwen/Qwen3-30B-A3B --config {tmp_path / 'kv.yaml'}", "--gpu", "H200", "--json"])
    assert rc == 2
    (issue,) = json.loads(capsys.readouterr().out)["issues"]
    assert issue["path"] == "--serve --kv-cache-dtype" and issue["file"] == str(tmp_path / "kv.yaml")


def test_the_message_names_the_file_first(tmp_path, capsys):
    (tmp_path / "s.yaml").write_text("tensor-parallel-size: eight\n")
    assert main(["explain", "--serve", f"vllm serve Qwen/Qwen3-30B-A3B --config {tmp_path / 's.yaml'}", "--gpu", "H200"]) == 2
    assert f"{tmp_path / 's.yaml'}: --serve --tensor-parallel-size: expected an integer" in capsys.readouterr().err

