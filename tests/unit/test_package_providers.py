"""Distribution names against the module names vLLM imports, for every package the tables read.

A real ROCm ``pip freeze`` lists AITER as ``amd-aiter`` (its wheel's metadata: Name amd-aiter,
top_level.txt aiter); vLLM imports ``aiter`` (vllm/utils/import_utils.py has_aiter), and the
tables read ``packages.aiter``.
"""

from __future__ import annotations

import re
from importlib import resources

from moe_oracle.cli import main
from moe_oracle.core.environment import ABSENT, Environment
from moe_oracle.core.packages import PACKAGE_IMPORTS


def test_amd_aiter_in_a_freeze_is_the_aiter_the_tables_read():
    env = Environment(packages={"amd-aiter": "0.1.7"}, complete=True)
    assert env.package("aiter") == "0.1.7"
    assert Environment(packages={"torch": "2.9.0"}, complete=True).package("aiter") is ABSENT


def test_every_package_the_tables_read_has_its_import_name():
    root = resources.files("moe_oracle")
    read = set()
    for sub in ("kernels", "rules", "prepare_finalize"):
        for f in root.joinpath(sub).iterdir():
            if f.name.endswith(".yaml"):
                text = f.read_text(encoding="utf-8")
                read |= set(re.findall(r"packages\.([a-z0-9_.-]+)", text)) | {n for block in re.findall(r"packages: *\{([^}]*)\}", text) for n in re.findall(r"([a-z0-9_.-]+):", block)}
    assert read and not read - set(PACKAGE_IMPORTS), sorted(read - set(PACKAGE_IMPORTS))


def test_a_rocm_freeze_with_amd_aiter_selects_aiter(capsys, tmp_path):
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("amd-aiter==0.1.7\ntorch==2.9.0+rocm7.0\nvllm==0.33.0\n")
    argv = ["select", "--model", "qwen3-30b-a3b-fp8", "--gpu", "MI300X", "--tp", "1", "--environment", str(freeze), "--env", "VLLM_ROCM_USE_AITER=1"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert out.startswith("aiter_fp8_block ") and "assumption" not in out
