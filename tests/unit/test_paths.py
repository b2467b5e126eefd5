"""A leading ``~`` in a path the operator wrote is expanded (:mod:`moe_oracle.inputs.paths`), in
every path flag and path field, and messages still name the path as written.

Before, ``--model ~/cfg.json`` (quoted, ``--model=~/cfg.json``, or inside a ``--serve`` string or
a file: places no shell expands) was refused as "no such file", and ``--tables ~/t`` looked for
a directory named ``~`` under the working directory.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from pathlib import Path

import pytest

from moe_oracle.core._resources import examples_dir
from moe_oracle.inputs.paths import shown_path, user_path
from tests.cli_capture import cli
from tests.tables_fixture import write_tables


@pytest.fixture()
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home directory holding a config.json, a checkpoint directory, a MoEConfig file naming the
    config.json as ``~/cfg.json``, an hf_quant_config.json, a pip freeze, a serve config and tables."""
    home = tmp_path / "home"
    (home / "ck").mkdir(parents=True)
    shutil.copy(examples_dir() / "qwen3-30b-a3b.json", home / "cfg.json")
    shutil.copy(examples_dir() / "qwen3-30b-a3b.json", home / "ck" / "config.json")
    shutil.copy(examples_dir() / "nvidia-nemotron-3-nano-30b-a3b-bf16.json", home / "nano.json")
    shutil.copy(examples_dir() / "nvidia-nemotron-3-nano-30b-a3b-nvfp4.hf_quant_config.json", home / "q.json")
    (home / "x.yaml").write_text("model:\n  hf_config: ~/cfg.json\ndevice:\n  gpu: H200\n", encoding="utf-8")
    (tmp_path / "elsewhere.yaml").write_text("model:\n  hf_config: ~/nano.json\n  hf_quant_config: ~/q.json\ndevice:\n  gpu: B200\n", encoding="utf-8")
    (home / "freeze.txt").write_text("vllm==0.33.0\n", encoding="utf-8")
    (home / "s.yaml").write_text("tensor-parallel-size: 2\n", encoding="utf-8")
    write_tables(home / "t")
    monkeypatch.setenv("HOME", str(home))
    return home


def test_user_path_expands_a_leading_tilde_before_the_base(home: Path) -> None:
    assert user_path("~/cfg.json") == home / "cfg.json"
    assert user_path("~/cfg.json", Path("/srv")) == home / "cfg.json"
    assert user_path("cfg.json", Path("/srv")) == Path("/srv/cfg.json")
    assert user_path("a/~/b") == Path("a/~/b")  # only a leading ~
    assert shown_path("~/cfg.json", user_path("~/cfg.json")) == "~/cfg.json"


# (command line, what its output shows when the paths were read)
CASES = {
    "model-file": (["explain", "--model", "~/cfg.json", "--gpu", "H200"], "128 experts top-8"),
    "model-equals": (["explain", "--model=~/cfg.json", "--gpu", "H200"], "128 experts top-8"),
    "model-dir": (["explain", "--model", "~/ck", "--gpu", "H200"], "128 experts top-8"),
    "config-and-hf_config-field": (["explain", "--config", "~/x.yaml"], "128 experts top-8"),
    "hf-quant-config": (["explain", "--model", "~/nano.json", "--hf-quant-config", "~/q.json", "--gpu", "B200"], "nvfp4"),
    "environment": (["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--environment", "~/freeze.txt"], "vLLM 0.33.0 (declared)"),
    "diff-side": (["diff", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--from", "~/freeze.txt", "--to", "vllm==0.34.0"], "diff: ~/freeze.txt -> vllm==0.34.0"),
    "serve-model-and-config": (["explain", "--serve", "vllm serve ~/ck --config ~/s.yaml", "--gpu", "H200"], "tp=2"),
    "plan": (["plan", "--model", "~/cfg.json", "--gpu", "H200"], "Plan for cfg"),
    "tables": (["explain", "--tables", "~/t", "--model", "qwen3-30b-a3b", "--gpu", "H200"], "Selected:"),
}


@pytest.mark.parametrize("argv, shown", CASES.values(), ids=CASES.keys())
def test_every_path_flag_and_field_expands_a_leading_tilde(home: Path, argv: list[str], shown: str) -> None:
    code, out, err = cli(*argv)
    assert code in (0, 1), err  # read: an answer (1: nothing eligible in the small tables), not bad input
    assert shown in out


def test_a_config_file_elsewhere_names_checkpoint_fields_under_the_home(home: Path) -> None:
    code, out, err = cli("explain", "--config", str(home.parent / "elsewhere.yaml"))
    assert code == 0, err
    assert "nvfp4" in out


def test_matrix_html_writes_under_the_home(home: Path) -> None:
    code, _, err = cli("matrix", "--html", "~/m.html", "--gpu", "H200")
    assert code == 0 and (home / "m.html").is_file()
    assert "wrote ~/m.html" in err


# A missing file: the message names the path as written, not the expanded one.
MISSING = {
    "model": (["explain", "--model", "~/nope.json", "--gpu", "H200"]),
    "config": (["explain", "--config", "~/nope.yaml"]),
    "environment": (["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--environment", "~/nope.txt"]),
    "hf-quant-config": (["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--hf-quant-config", "~/nope.json"]),
    "serve-model": (["explain", "--serve", "vllm serve ~/nope.d", "--gpu", "H200"]),
    "serve-config": (["explain", "--serve", "vllm serve ~/ck --config ~/nope.yaml", "--gpu", "H200"]),
}


@pytest.mark.parametrize("argv", MISSING.values(), ids=MISSING.keys())
def test_a_missing_path_is_named_as_written(home: Path, argv: list[str]) -> None:
    code, out, err = cli(*argv)
    assert code == 2 and out == ""
    assert "'~/nope." in err and str(home) not in err


# A ~NAME with a NUL byte (a JSON/YAML file can hold one; argv cannot): os.path.expanduser looks
# the name up with pwd.getpwnam, which raised ValueError: embedded null byte, a traceback before
# any reader's own "cannot read" could answer.
NUL_FILES = {
    "hf_config": '{"model": {"hf_config": "~a\\u0000b/x"}, "device": {"gpu": "H200"}}',
    "hf_quant_config": '{"model": {"hf_config": "qwen3-30b-a3b", "hf_quant_config": "~a\\u0000b/x"}, "device": {"gpu": "H200"}}',
}


def test_user_path_keeps_a_name_it_cannot_look_up_as_written() -> None:
    assert user_path("~a\x00b/x") == Path("~a\x00b/x")


@pytest.mark.parametrize("doc", NUL_FILES.values(), ids=NUL_FILES.keys())
def test_a_tilde_name_with_a_nul_byte_is_bad_input_not_a_traceback(tmp_path: Path, doc: str) -> None:
    (tmp_path / "c.json").write_text(doc, encoding="utf-8")
    code, out, err = cli("explain", "--config", str(tmp_path / "c.json"))
    assert code == 2 and out == "", err
    assert "Traceback" not in err and "~a\\x00b/x" in err


def test_a_serve_config_naming_a_tilde_name_with_a_nul_byte_is_bad_input(tmp_path: Path) -> None:
    (tmp_path / "s.yaml").write_text('hf-config-path: "~a\\0b/x"\n', encoding="utf-8")
    code, out, err = cli("explain", "--gpu", "H200", "--serve", f"vllm serve qwen3-30b-a3b --config {tmp_path / 's.yaml'}")
    assert code == 2 and out == "", err
    assert "Traceback" not in err


def test_verify_path_flags_expand_a_leading_tilde(home: Path) -> None:
    """``verify``'s path flags were argparse ``type=Path``: ``--vllm-env=~/env`` (or the quoted
    word) looked for a directory named ``~`` here and answered "not found"."""
    from moe_oracle.cli import build_parser

    args = build_parser(["verify"]).parse_args(["verify", "--vllm-env=~/env", "--replay", "~/c.json", "--out", "~/o", "--divergences", "~/d.yaml", "--tables", "~/t"])
    assert (args.vllm_env, args.replay, args.out, args.divergences, args.tables) == (home / "env", [home / "c.json"], home / "o", home / "d.yaml", [home / "t"])


def test_verify_reads_a_tilde_in_its_environment_variable(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MOE_ORACLE_VLLM_ENV", "~/env")  # quoted in a shell profile: not expanded there
    code, out, err = cli("verify")
    assert code == 2 and "bad MOE_ORACLE_VLLM_ENV" in err and f"{home / 'env' / 'venv' / 'bin' / 'python'} not found" in err


def _path_flags_typed_path(source: str) -> list[str]:
    """``line: what`` for every argparse flag of ``source`` typed ``Path`` (``~`` kept as written)
    and every ``Path(os.environ...)`` (a variable set quoted in a profile keeps its ``~`` too)."""
    import ast

    def is_path(node: ast.AST) -> bool:
        return (isinstance(node, ast.Name) and node.id == "Path") or (isinstance(node, ast.Attribute) and node.attr == "Path")

    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call):
            continue
        if isinstance(node.func, ast.Attribute) and node.func.attr == "add_argument":
            found += [f"{node.lineno}: {ast.unparse(node.args[0]) if node.args else '?'} type={ast.unparse(k.value)}" for k in node.keywords if k.arg == "type" and is_path(k.value)]
        elif is_path(node.func) and node.args and "os.environ" in ast.unparse(node.args[0]):
            found.append(f"{node.lineno}: {ast.unparse(node)}")
    return found


_PACKAGE = Path(__file__).resolve().parents[2] / "moe_oracle"


@pytest.mark.parametrize("path", sorted(_PACKAGE.rglob("*.py")), ids=lambda p: str(p.relative_to(_PACKAGE)))
def test_no_path_flag_of_the_package_keeps_a_tilde(path: Path) -> None:
    """The standalone scripts of the harness (``python -m moe_oracle.verify.new_release
    --vllm-env=~/env``, ``source_diff``, ``mutate``, ``setup_env``, ``model_build.driver``, the
    workers) and ``tools.schemagen`` typed their path flags ``Path`` and read
    ``$MOE_ORACLE_VLLM_ENV`` with ``Path()``: a ``~`` no shell expanded named a directory ``~``
    here. Every path flag goes through :func:`~moe_oracle.inputs.paths.user_path`."""
    assert _path_flags_typed_path(path.read_text(encoding="utf-8")) == []


def test_the_path_flag_check_sees_type_path_and_an_environment_path() -> None:
    # a negative control, beside the forms that must pass (user_path, a Path that reads no variable)
    source = (
        "import argparse, os, pathlib\nfrom pathlib import Path\np = argparse.ArgumentParser()\n"
        "p.add_argument('--out', type=Path)\np.add_argument('tree', type=pathlib.Path)\np.add_argument('--n', type=int)\n"
        "p.add_argument('--env', type=user_path)\nd = Path(os.environ['MOE_ORACLE_VLLM_ENV'])\ne = Path(os.environ.get('X', '.'))\nf = Path('x')\n"
    )
    assert _path_flags_typed_path(source) == ["4: '--out' type=Path", "5: 'tree' type=pathlib.Path", "8: Path(os.environ['MOE_ORACLE_VLLM_ENV'])", "9: Path(os.environ.get('X', '.'))"]


def test_standalone_scripts_expand_a_leading_tilde(home: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``python -m moe_oracle.verify.source_diff '~/a' '~/b'`` answered "~/a has no vllm/
    directory"; ``python -m moe_oracle.tools.schemagen '~/s/vocabulary.schema.json'`` wrote
    under a directory named ``~`` here (or failed: no such directory)."""
    from moe_oracle.tools import schemagen
    from moe_oracle.verify import source_diff

    for tree in ("a", "b"):
        (home / tree / "vllm").mkdir(parents=True)
    assert source_diff.main(["~/a", "~/b", "--json"]) == 0, capsys.readouterr().err
    (home / "s").mkdir()
    assert schemagen.main(["~/s/vocabulary.schema.json"]) == 0
    assert (home / "s" / "vocabulary.schema.json").is_file() and (home / "s" / "bundled").is_dir()


# A file read but found wrong: the message names it as written, a file found under or beside a
# ~ path with the same ~. Before, --model ~/ck, --hf-quant-config ~/q.json, a serve line's MODEL and
# a config file's model.hf_config named the expanded path (/home/.../ck/config.json) once read.
CONTENT = {
    "model-dir": (["explain", "--model", "~/bad", "--gpu", "H200"], "~/bad/config.json"),
    "model-file": (["explain", "--model", "~/bad/config.json", "--gpu", "H200"], "~/bad/config.json"),
    "hf-quant-config": (["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--hf-quant-config", "~/bad/config.json"], "~/bad/config.json"),
    "hf-quant-config-model": (["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--hf-quant-config", "~/cfg.json"], "'~/cfg.json' is a model config"),
    "beside": (["explain", "--model", "~/besides", "--gpu", "H200"], "~/besides/hf_quant_config.json"),
    "serve-model": (["explain", "--serve", "vllm serve ~/bad", "--gpu", "H200"], "~/bad/config.json"),
    "config-hf_config": (["explain", "--config", "~/bad.yaml"], "~/bad/config.json"),
    "plan-model": (["plan", "--model", "~/bad", "--gpu", "H200"], "~/bad/config.json"),
    "config": (["explain", "--config", "~/broken.yaml"], "~/broken.yaml"),
    "environment": (["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--environment", "~/broken.txt"], "~/broken.txt"),
}


@pytest.mark.parametrize("argv, shown", CONTENT.values(), ids=CONTENT.keys())
def test_a_file_read_but_malformed_is_named_as_written(home: Path, argv: list[str], shown: str) -> None:
    (home / "bad").mkdir()
    (home / "bad" / "config.json").write_text('{"architectures": [', encoding="utf-8")
    (home / "besides").mkdir()
    shutil.copy(home / "cfg.json", home / "besides" / "config.json")
    (home / "besides" / "hf_quant_config.json").write_text('{"quant_method": ', encoding="utf-8")
    (home / "bad.yaml").write_text("model:\n  hf_config: ~/bad\ndevice:\n  gpu: H200\n", encoding="utf-8")
    (home / "broken.yaml").write_text("model: [1,\n", encoding="utf-8")
    (home / "broken.txt").write_text("garbage line ###\n", encoding="utf-8")
    code, out, err = cli(*argv)
    assert code == 2 and out == "", out
    assert shown in err and str(home) not in err, err


def test_shown_path_keeps_the_tilde_for_a_file_under_it(home: Path) -> None:
    assert shown_path("~/ck", home / "ck" / "config.json") == "~/ck/config.json"
    assert shown_path("~/ck/config.json", home / "ck" / "hf_quant_config.json") == "~/ck/hf_quant_config.json"
    assert shown_path("~/ck", home.parent / "elsewhere") == str(home.parent / "elsewhere")  # not under the ~: as it is
    assert shown_path("/abs/ck", Path("/abs/ck/config.json")) == "/abs/ck/config.json"
    assert shown_path("~nosuchuser_x/ck", Path("~nosuchuser_x/ck/config.json")) == "~nosuchuser_x/ck/config.json"


# --tables names a directory: a file or a missing path was looked into for kernels/,
# prepare_finalize/ and rules/ and refused three times as "table directory does not exist".
TABLES = {
    "file": ("~/freeze.txt", "'~/freeze.txt' is a regular file; --tables takes a directory"),
    "missing": ("~/nope.d", "'~/nope.d' does not exist; --tables takes a directory"),
}


@pytest.mark.parametrize("command", ["explain", "lint"])
@pytest.mark.parametrize("given, message", TABLES.values(), ids=TABLES.keys())
def test_tables_that_name_no_directory_are_refused_once(home: Path, command: str, given: str, message: str) -> None:
    extra = ["--model", "qwen3-30b-a3b", "--gpu", "H200"] if command == "explain" else []
    code, out, err = cli(command, "--tables", given, *extra, "--json")
    record = json.loads(out)
    issues = record["issues"] if command == "explain" else record["errors"]
    assert code == 2
    assert len(issues) == 1 and issues[0]["path"] == "--tables" and issues[0]["value"] == given and issues[0]["message"] == message


# Anything but a regular file where a file is read: a named pipe (nobody writing: the read blocked
# forever), a device (/dev/null read as an empty file), a directory (an OS error). Refused before
# it is opened, naming the flag or field, the path as written and what it is.
def _special(home: Path, kind: str) -> str:
    """A path of that kind, named .yaml (a serve line's --config is refused by its name first)."""
    if kind == "pipe":
        os.mkfifo(home / "fifo.yaml")
        return "~/fifo.yaml"
    if kind == "device":
        (home / "null.yaml").symlink_to("/dev/null")  # what a link leads to counts
        return "~/null.yaml"
    if kind == "loop":  # it was "no such file"
        (home / "loop.yaml").symlink_to(home / "loop2.yaml")
        (home / "loop2.yaml").symlink_to(home / "loop.yaml")
        return "~/loop.yaml"
    (home / "dir.yaml").mkdir()
    return "~/dir.yaml"


FILE_FLAGS = {
    "config": (lambda p: ["explain", "--config", p], "--config"),
    "hf-quant-config": (lambda p: ["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--hf-quant-config", p], "--hf-quant-config"),
    "serve-config": (lambda p: ["explain", "--gpu", "H200", "--serve", f"vllm serve qwen3-30b-a3b --config {p}"], "--serve --config"),
    "model": (lambda p: ["explain", "--model", p, "--gpu", "H200"], "--model"),
    "environment": (lambda p: ["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--environment", p], "--environment"),
}
WHAT = {"pipe": "is a named pipe", "device": "is a character device", "directory": "is a directory", "loop": "is a symbolic link loop"}
# --model takes a checkpoint directory; --environment takes a pipe (<(pip freeze)), read once.
TAKEN = {("model", "directory"), ("environment", "pipe")}


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a named pipe")
@pytest.mark.parametrize("kind", WHAT)
@pytest.mark.parametrize("argv, flag", FILE_FLAGS.values(), ids=FILE_FLAGS.keys())
def test_a_file_flag_refuses_what_is_no_regular_file(home: Path, argv, flag: str, kind: str) -> None:
    if (next(k for k, v in FILE_FLAGS.items() if v[1] == flag), kind) in TAKEN:
        pytest.skip("taken by this flag")
    given = _special(home, kind)
    result: list = []
    worker = threading.Thread(target=lambda: result.append(cli(*argv(given), "--json")), daemon=True)
    worker.start()
    worker.join(timeout=60)
    if worker.is_alive():  # blocked on the pipe: let the reader go before failing
        fd = os.open(home / "fifo.yaml", os.O_WRONLY | os.O_NONBLOCK)
        os.close(fd)
        worker.join(timeout=10)
        pytest.fail(f"{flag} {given} blocked on the {kind}")
    code, out, err = result[0]
    issue = json.loads(out)["issues"][0]
    assert code == 2
    assert issue["path"] == flag and issue["keyword"] == "file_type" and issue["value"] == given
    assert issue["message"].startswith(f"{given!r} {WHAT[kind]}") and "not a regular file" in issue["message"]


@pytest.mark.parametrize("argv, flag", [(["diff", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--from", "~/loop.yaml", "--to", "vllm==0.33.0"], "--from"),
                                        (["explain", "--model", "qwen3-30b-a3b", "--gpu", "H200", "--tables", "~/loop.yaml"], "--tables")], ids=["diff-side", "tables"])
def test_a_symbolic_link_loop_is_named_so(home: Path, argv: list[str], flag: str) -> None:
    _special(home, "loop")
    code, out, err = cli(*argv)
    assert code == 2 and out == "" and f"{flag}: '~/loop.yaml' is a symbolic link loop" in err


def test_a_config_files_hf_config_that_is_a_device_is_charged_to_the_field(home: Path) -> None:
    (home / "dev.yaml").write_text("model:\n  hf_config: /dev/null\ndevice:\n  gpu: H200\n", encoding="utf-8")
    code, out, err = cli("explain", "--config", "~/dev.yaml")
    assert code == 2 and out == ""
    assert "~/dev.yaml: $.model.hf_config: '/dev/null' is a character device, not a regular file or a directory" in err


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs a named pipe")
def test_read_user_file_refuses_a_pipe_nobody_writes_to_without_opening_it(tmp_path: Path) -> None:
    from moe_oracle.core.errors import ConfigError
    from moe_oracle.inputs.paths import read_user_file

    os.mkfifo(tmp_path / "p")
    (tmp_path / "f").write_bytes(b"abc")
    os.symlink(tmp_path / "f", tmp_path / "link")
    assert read_user_file(tmp_path / "link", "--config", 10).data == b"abc"  # a link to a regular file is one
    assert read_user_file(tmp_path / "f", "--config", 1).data == b"ab"  # one byte past the limit, to tell "too large"
    for path in (tmp_path / "p", tmp_path, Path("/dev/zero")):
        with pytest.raises(ConfigError) as info:
            read_user_file(path, "--config", 10)
        assert info.value.issues[0].keyword == "file_type" and info.value.title() == "bad --config"


def test_the_inputs_layer_opens_files_in_one_place() -> None:
    """Every file an operator names is opened by inputs/paths.read_user_file, which refuses what is
    no regular file; a reader of its own would be a second door without that check."""
    import ast

    import moe_oracle

    root = Path(moe_oracle.__file__).parent
    openers = {"open", "read_text", "read_bytes", "fdopen"}
    found = set()
    for folder in ("inputs", "cli", "explain"):
        for module in (root / folder).rglob("*.py"):
            for node in ast.walk(ast.parse(module.read_text(encoding="utf-8"))):
                if isinstance(node, ast.Call):
                    name = node.func.attr if isinstance(node.func, ast.Attribute) else getattr(node.func, "id", None)
                    if name in openers:
                        found.add(str(module.relative_to(root)))
    # checkpoint/releases.py reads a table shipped inside the package, not an operator's file
    assert found == {"inputs/paths.py", "inputs/checkpoint/releases.py"}
