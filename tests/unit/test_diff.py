"""``moe-oracle diff``: the kernel that changes between two sides, and the facts that change it."""

from __future__ import annotations

import json
import os
import threading

import pytest

from moe_oracle import Device, Environment, MoEConfig
from moe_oracle.cli import main
from moe_oracle.explain.diff import Side, diff_groups
from moe_oracle.core.errors import ConfigError
from moe_oracle.cli.diff import parse_side
from tests.tables_fixture import load
from tests.unit.test_versions import versioned_tables

B200 = Device("cuda", capability=100)


def cfg(**kw):
    base = dict(num_experts=64, top_k=4, hidden_size=1024, intermediate_size=512, device=B200)
    base.update(kw)
    return MoEConfig(**base)


def side(version: str, **kw) -> Side:
    return Side(f"vllm=={version}", cfg(**kw), Environment.declared([f"vllm=={version}"]))


@pytest.fixture()
def versioned(tmp_path):
    return load(tmp_path, versioned_tables())


def test_a_kernel_that_appears_in_a_release_is_named_with_its_range(versioned):
    result = diff_groups(versioned, [("layers 0-3", side("0.31.0"), side("0.33.0"))])
    (group,) = result.groups
    assert group.changed and group.after.kernel == "fast_monolithic" and group.before.kernel != "fast_monolithic"
    entry = [c for c in group.causes if c.kind == "entry"]
    assert entry and entry[0].rule == "fast_monolithic" and entry[0].range == ">=0.33.0"
    assert result.to_dict()["changed"] == 1 and "fast_monolithic" in result.render_text()


def test_a_check_that_only_holds_in_one_release_is_the_cause(versioned):
    # gelu: `slow` rejects it before 0.33.0 (slow.no_gelu_before_0_33); pin the request to slow.
    result = diff_groups(versioned, [("MoE layers", side("0.32.0", activation="gelu", moe_backend="slow"), side("0.33.0", activation="gelu", moe_backend="slow"))])
    (group,) = result.groups
    assert group.before.kernel is None and group.after.kernel == "slow"
    checks = {c.rule: c for c in group.causes if c.kind == "check"}
    assert "slow.no_gelu_before_0_33" in checks and checks["slow.no_gelu_before_0_33"].range == "<0.33.0"


def test_an_unchanged_group_has_no_causes(versioned):
    result = diff_groups(versioned, [("MoE layers", side("0.33.0"), side("0.33.0"))])
    assert not result.changed and result.groups[0].causes == ()


def test_sides_parse_and_bad_sides_are_bad_input(tmp_path):
    assert parse_side("vllm==0.31.0, flashinfer-python==0.7.0.post1", "--from") == {"packages": ["vllm==0.31.0", "flashinfer-python==0.7.0.post1"]}
    assert parse_side("gpu:B200", "--to") == {"gpu": "B200"}
    f = tmp_path / "freeze.txt"
    f.write_text("vllm==0.33.0\n")
    assert parse_side(str(f), "--to") == {"environment": str(f)}
    with pytest.raises(ConfigError) as err:
        parse_side("B200", "--to")
    assert "bad --to" in str(err.value)


def test_cli_diff_between_two_gpus_names_the_deciding_checks(capsys):
    code = main(["diff", "--model", "qwen3-30b-a3b", "--tp", "2", "--from", "gpu:H200", "--to", "gpu:B200", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["changed"] == 1
    (group,) = out["groups"]
    assert group["before"]["selected"]["kernel"] != group["after"]["selected"]["kernel"]
    assert any(c["kind"] == "check" and c["before"] == 90 for c in group["causes"]), group["causes"]
    assert main(["diff", "--model", "qwen3-30b-a3b", "--from", "nonsense", "--to", "gpu:B200"]) == 2


def test_cli_diff_of_a_whole_model_reports_every_layer_group(capsys):
    # DeepSeek-V4-Flash: hash-routed first layers, the routed MoE layers and the MTP draft layer are
    # separate groups; on H200 vLLM 0.32.0 added HUMMING to the DeepSeek-V4 MXFP4 list and put it
    # ahead of MARLIN on SM 9.0 (Q/utils/humming/priority.py prioritize_humming).
    code = main(["diff", "--model", "deepseek-v4-flash", "--gpu", "H200", "--tp", "8", "--from", "vllm==0.29.0", "--to", "vllm==0.33.0", "--json"])
    out = json.loads(capsys.readouterr().out)
    assert code == 0
    assert [g["layers"] for g in out["groups"]] == ["layers 0–2 (3)", "layers 3–42 (40)", "layer 43 (MTP mtp.0)"]
    assert out["changed"] == 3
    for g in out["groups"]:
        assert (g["before"]["selected"]["experts"], g["after"]["selected"]["experts"]) == ("MarlinExperts", "HummingIndexedExperts")
        assert "priority.mxfp4.hopper_prefers_humming" in {c["rule"] for c in g["causes"]}
        assert (g["before"]["release"], g["after"]["release"]) == ("vLLM 0.29.0 (declared)", "vLLM 0.33.0 (declared)")


@pytest.mark.parametrize("layer", [["--model", "qwen3-30b-a3b"], ["--model", "qwen3-30b-a3b", "--quant", "fp8_block"]], ids=["plan", "one-layer"])
def test_diff_notes_each_sides_environment_gpu_that_gpu_overrides(tmp_path, capsys, layer):
    sides = []
    for gpu in ("H100 80GB HBM3", "B200"):
        path = tmp_path / f"{gpu.split()[0]}.txt"
        path.write_text(f"GPU models and configuration : GPU 0: NVIDIA {gpu}\nVersions of relevant libraries\n[pip3] vllm==0.33.0\n")
        sides.append(str(path))
    assert main(["diff", *layer, "--gpu", "H200", "--from", sides[0], "--to", sides[1], "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert f"--from: --environment {sides[0]}: its GPU 'NVIDIA H100 80GB HBM3' is not used: --gpu H200 wins" in notes
    assert f"--to: --environment {sides[1]}: its GPU 'NVIDIA B200' is not used: --gpu H200 wins" in notes


@pytest.mark.parametrize("layer", [["--model", "qwen3-30b-a3b"], ["--model", "qwen3-30b-a3b", "--quant", "fp8_block"]], ids=["plan", "one-layer"])
def test_diff_gpu_sides_name_the_side_over_an_environment_files_gpu(tmp_path, capsys, layer):
    path = tmp_path / "collect.txt"
    path.write_text("GPU models and configuration : GPU 0: NVIDIA H100 80GB HBM3\nVersions of relevant libraries\n[pip3] vllm==0.33.0\n")
    assert main(["diff", *layer, "--environment", str(path), "--from", "gpu:H200", "--to", "gpu:B200", "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    # each side's note is headed by its flag and names the side once: it read
    # "--to: --environment F: its GPU ... is not used: --to gpu:B200 wins"
    assert f"--from: --environment {path}: its GPU 'NVIDIA H100 80GB HBM3' is not used: gpu:H200 wins" in notes
    assert f"--to: --environment {path}: its GPU 'NVIDIA H100 80GB HBM3' is not used: gpu:B200 wins" in notes
    for note in notes:
        assert not ("--from" in note and "--to" in note) and note.count("--from") <= 1 and note.count("--to") <= 1, note


@pytest.mark.parametrize("device", [["--gpu", "MI300X"], ["--platform", "rocm", "--arch", "gfx942"]])
def test_a_device_flag_with_two_gpu_sides_is_refused(device):
    """``diff --from gpu:H200 --to gpu:B200 --gpu MI300X`` answered H200 vs B200 with exit 0 and
    never mentioned MI300X: each gpu: side replaces the device flags, so they have no effect."""
    from tests.cli_capture import cli

    code, out, err = cli("diff", "--model", "qwen3-30b-a3b-fp8", "--tp", "2", "--from", "gpu:H200", "--to", "gpu:B200", *device)
    assert code == 2 and out == "", out
    for word in (device[0], device[1], "no effect", "--from gpu:H200", "--to gpu:B200"):
        assert word in err, err


def test_a_device_flag_with_one_gpu_side_is_the_other_sides_device():
    from tests.cli_capture import cli

    code, out, err = cli("diff", "--model", "qwen3-30b-a3b-fp8", "--tp", "2", "--from", "vllm==0.33.0", "--to", "gpu:B200", "--gpu", "H200")
    assert code == 0, err


@pytest.mark.parametrize(("argv", "message"), [
    (["--from", "vllm==0.31.0", "--to", "vllm==0.33.0", "--package", "vllm==0.32.0"], "--from vllm: declared twice with different versions: '0.32.0' (--package) and '0.31.0' (--from)"),
    (["--from", "vllm==0.31.0,vllm==0.33.0", "--to", "vllm==0.33.0"], "--from vllm: declared twice with different versions: '0.31.0' (--from) and '0.33.0' (--from)"),
], ids=["side-and-package", "within-a-side"])
def test_a_package_a_side_declares_twice_names_the_side(argv, message, capsys):
    """A side's version that disagrees with --package (or with itself) was refused as
    "--package vllm: declared twice", naming a flag given once; the refusal names the side."""
    assert main(["diff", "--model", "deepseek-r1", "--gpu", "H200", *argv]) == 2
    err = capsys.readouterr().err
    assert err.startswith("moe-oracle: error: bad --from") and message in err


def test_package_overrides_a_file_sides_version_as_the_help_says(tmp_path, capsys):
    """diff --help: a FILE side's versions are overridden by --package (packages sides are
    declared beside it and refused where they disagree: the test above). The help said packages
    sides were declared "on top of the other flags", which the refusal contradicted."""
    freeze = tmp_path / "freeze.txt"
    freeze.write_text("vllm==0.33.0\n")
    assert main(["diff", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--from", str(freeze), "--to", "gpu:B200", "--package", "vllm==0.31.0", "--json"]) == 0
    (group,) = json.loads(capsys.readouterr().out)["groups"]
    assert group["before"]["release"] == group["after"]["release"] == "vLLM 0.31.0 (declared)"
    from moe_oracle.cli.diff import _EPILOG
    assert "packages declared beside --package" in _EPILOG and "--package declarations override its versions" in _EPILOG


def test_a_side_too_long_for_a_file_name_is_bad_input_not_a_traceback():
    """`diff --from aaaa...` (5,000 characters) ended in OSError: File name too long."""
    with pytest.raises(ConfigError, match="bad --from"):
        parse_side("a" * 5000, "--from")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a named pipe")
def test_a_side_given_as_a_pipe_is_read_as_an_environment_file(tmp_path, capsys):
    """`--from <(pip freeze)` was refused as "expected ... an existing environment file" though
    the pipe exists and --environment reads pipes; a side reads its file once."""
    pipe = tmp_path / "freeze"
    os.mkfifo(pipe)
    writer = threading.Thread(target=lambda: pipe.write_text("vllm==0.31.0\n", encoding="utf-8"), daemon=True)
    writer.start()
    code = main(["diff", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--from", str(pipe), "--to", "vllm==0.33.0", "--json"])
    writer.join(timeout=10)
    record = json.loads(capsys.readouterr().out)
    assert code == 0 and record["groups"][0]["before"]["release"] == "vLLM 0.31.0 (declared)"


def _mtp_notes(notes: list[str]) -> list[str]:
    return [n for n in notes if "draft (MTP) layers are built only when serving" in n]


def test_a_note_of_one_side_only_names_the_side(capsys):
    """Two releases give nearly the same MTP note (each naming its release); they were printed
    unlabelled, one after the other. Each side's own note is now headed by its flag; a note both
    sides give is printed once, unlabelled, before them."""
    import jsonschema

    from moe_oracle.core._resources import schema_dir

    argv = ["diff", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8", "--from", "vllm==0.29.0", "--to", "vllm==0.33.0"]
    assert main([*argv, "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    jsonschema.validate(record, json.loads((schema_dir() / "bundled" / "diff.schema.json").read_text(encoding="utf-8")))
    mtp = _mtp_notes(record["notes"])
    assert [n.split(": ", 1)[0] for n in mtp] == ["--from", "--to"]
    assert "vLLM 0.29.0" in mtp[0] and "vLLM 0.33.0" in mtp[1]
    assert main(argv) == 0
    text = capsys.readouterr().out
    assert [line for line in text.splitlines() if line.startswith("Note: ")] == [f"Note: {n}" for n in record["notes"]]
    assert main(["diff", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8", "--from", "vllm==0.33.0", "--to", "vllm==0.33.0,flashinfer-python==0.7.0", "--json"]) == 0
    same = json.loads(capsys.readouterr().out)["notes"]
    assert len(_mtp_notes(same)) == 1 and not _mtp_notes(same)[0].startswith(("--from", "--to"))


def test_side_notes_keep_shared_notes_once_and_label_the_rest():
    from moe_oracle.cli.diff import side_notes

    assert side_notes(["b", "x", "a"], ["a", "y", "b"], ["z: grouped differently"]) == ["a", "b", "z: grouped differently", "--from: x", "--to: y"]
    assert side_notes(["a"], ["a"]) == ["a"]


@pytest.mark.parametrize("whole_model", [True, False], ids=["plan", "one-layer"])
def test_a_side_file_that_does_not_parse_is_charged_to_the_side(tmp_path, capsys, whole_model):
    """``--from FILE`` whose lines are no environment file was refused as "bad --environment", a
    flag the command line did not give; the refusal names the side that gave the file."""
    bad = tmp_path / "freeze.txt"
    bad.write_text("{bad\n", encoding="utf-8")
    layer = ["--model", "qwen3-30b-a3b-fp8"] if whole_model else ["--model", "qwen3-30b-a3b-fp8", "--quant", "fp8_block"]
    assert main(["diff", *layer, "--gpu", "H200", "--from", "vllm==0.33.0", "--to", str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("moe-oracle: error: bad --to (1 problem):"), err
    assert f"{bad}: line 1: not a requirement" in err and "--environment" not in err


_WHEEL = "flashinfer-python @ https://example.com/flashinfer_python-0.7.3-py3-none-any.whl"


@pytest.mark.parametrize("layer", [["--model", "deepseek-r1"], ["--model", "deepseek-r1", "--quant", "fp8_block"]], ids=["plan", "one-layer"])
def test_a_sides_wheel_url_note_names_the_side_not_package(layer, capsys):
    """A side's ``NAME @ URL`` (a wheel) gave the note "--to: --package: flashinfer-python
    0.7.3: the version is read from the wheel filename", naming --package, a flag the command
    line did not give; the note is the side's, headed by its flag only. The same package given
    with --package keeps its --package heading (a control: the heading is where the user wrote it)."""
    assert main(["diff", *layer, "--gpu", "B200", "--from", "vllm==0.33.0", "--to", f"vllm==0.33.0,{_WHEEL}", "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    wheel = [n for n in notes if "read from the wheel filename" in n]
    assert wheel == ["--to: flashinfer-python 0.7.3: the version is read from the wheel filename (https://example.com/flashinfer_python-0.7.3-py3-none-any.whl), as PEP 427 names wheels"]
    assert not any("--package" in n for n in notes)
    assert main(["diff", *layer, "--gpu", "B200", "--from", "vllm==0.33.0", "--to", "vllm==0.34.0", "--package", _WHEEL, "--json"]) == 0
    notes = json.loads(capsys.readouterr().out)["notes"]
    assert [n for n in notes if "read from the wheel filename" in n] == ["--package: flashinfer-python 0.7.3: the version is read from the wheel filename (https://example.com/flashinfer_python-0.7.3-py3-none-any.whl), as PEP 427 names wheels"]


@pytest.mark.parametrize("layer", [["--model", "deepseek-r1"], ["--model", "deepseek-r1", "--quant", "fp8_block"]], ids=["plan", "one-layer"])
def test_a_sides_package_refused_beside_without_or_probe_names_the_side(layer, capsys):
    """A side's package that --without declares absent was refused as "declared both installed
    (--package) and absent"; beside --probe as "do not also declare --package": both named
    --package, which the command line did not give. They name the side and what it wrote."""
    assert main(["diff", *layer, "--gpu", "B200", "--without", "flashinfer-python", "--from", "vllm==0.33.0", "--to", "vllm==0.33.0,flashinfer-python==0.7.3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("moe-oracle: error: bad --without") and "installed (--to flashinfer-python==0.7.3) and absent (--without)" in err and "--package" not in err
    assert main(["diff", *layer, "--gpu", "B200", "--probe", "--from", "vllm==0.33.0", "--to", "vllm==0.34.0"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("moe-oracle: error: bad --probe") and "--from vllm==0.33.0" in err and "--package" not in err


def _refusal(*argv):
    from tests.cli_capture import cli

    code, out, err = cli(*argv, "--json")
    assert code == 2, (out, err)
    return json.loads(out)["issues"][0]


@pytest.mark.parametrize(
    ("written", "allowed", "suggested"),
    [
        ("vllm>=0.33.0", ["vllm==0.34.0", "vllm==0.33.0"], "vllm==0.34.0"),
        ("vllm~=0.31.0", ["vllm==0.31.0"], "vllm==0.31.0"),
        ("vllm>=0.32,<0.34", ["vllm==0.33.0", "vllm==0.32.0"], "vllm==0.33.0"),
        ("vllm==0.33.*", ["vllm==0.33.0"], "vllm==0.33.0"),
        ("vllm<0.29", None, None),
    ],
    ids=["at-least", "compatible", "range-with-comma", "wildcard", "admits-none"],
)
@pytest.mark.parametrize("door", ["diff-side", "package"])
def test_a_version_range_is_refused_naming_the_modelled_releases_it_admits(door, written, allowed, suggested):
    # Before, a diff side answered "did you mean 'vllm==0.31.0'?" for vllm>=0.33.0 (the closest
    # spelling among the forms' examples), and --package suggested nothing.
    if door == "diff-side":
        issue = _refusal("diff", "--model", "deepseek-r1", "--gpu", "H200", "--from", written, "--to", "vllm==0.33.0")
        assert issue["path"] == "--from"
    else:
        issue = _refusal("select", "--model", "deepseek-r1", "--gpu", "H200", "--package", written)
        assert issue["path"] == "--package"
    assert issue["value"] == written and "declare the installed version exactly" in issue["message"]
    assert issue["allowed"] == allowed and issue["did_you_mean"] == suggested
    if allowed is None:
        assert "admits none of the vllm versions moe-oracle models (0.34.0, 0.33.0, 0.32.0, 0.31.0, 0.30.0, 0.29.0)" in issue["message"]


@pytest.mark.parametrize(("written", "suggested"), [("vllm=0.33.0", "vllm==0.33.0"), ("b200", "gpu:B200"), ("vllm", None)])
def test_a_side_of_no_form_suggests_what_it_most_likely_meant_or_nothing(written, suggested):
    issue = _refusal("diff", "--model", "deepseek-r1", "--gpu", "H200", "--from", "vllm==0.33.0", "--to", written)
    assert issue["path"] == "--to" and issue["did_you_mean"] == suggested and issue["allowed"] is None


@pytest.mark.parametrize("other", ["file", "packages"])
@pytest.mark.parametrize("gpu_first", [False, True], ids=["gpu-to", "gpu-from"])
def test_a_gpu_side_keeps_the_other_sides_packages(tmp_path, capsys, other, gpu_first):
    """``diff --from freeze.txt --to gpu:B200`` (or ``--from vllm==0.31.0``) answered the B200
    side for the newest modelled release (0.34.0), not the file's 0.31.0: a gpu: side dropped
    what the other side declared, so the diff showed a release change nobody asked for."""
    path = tmp_path / "freeze.txt"
    path.write_text("vllm==0.31.0\n", encoding="utf-8")
    given = str(path) if other == "file" else "vllm==0.31.0"
    sides = ["gpu:B200", given] if gpu_first else [given, "gpu:B200"]
    assert main(["diff", "--model", "deepseek-r1", "--gpu", "H200", "--tp", "8", "--from", sides[0], "--to", sides[1], "--json"]) == 0
    groups = json.loads(capsys.readouterr().out)["groups"]
    assert groups and {g[side]["release"] for g in groups for side in ("before", "after")} == {"vLLM 0.31.0 (declared)"}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a named pipe")
def test_a_gpu_side_facing_a_pipe_is_refused_not_read_twice(tmp_path):
    """A pipe can be read once; the gpu: side that keeps it is refused, naming both sides."""
    from tests.cli_capture import cli

    pipe = tmp_path / "freeze"
    os.mkfifo(pipe)
    writer = threading.Thread(target=lambda: pipe.write_text("vllm==0.31.0\n", encoding="utf-8"), daemon=True)
    writer.start()
    code, out, err = cli("diff", "--model", "qwen3-30b-a3b-fp8", "--gpu", "H200", "--from", str(pipe), "--to", "gpu:B200")
    # Opening for reading lets the writer finish when nothing read the pipe; its short write fits the
    # pipe's buffer, so it is done once joined (reading before that races it: EAGAIN).
    fd = os.open(pipe, os.O_RDONLY | os.O_NONBLOCK)
    writer.join(timeout=10)
    os.read(fd, 4096)
    os.close(fd)
    assert not writer.is_alive()
    assert code == 2 and out == ""
    assert "bad --to" in err and f"--from {pipe}" in err and "gpu:B200" in err and "read only once" in err
