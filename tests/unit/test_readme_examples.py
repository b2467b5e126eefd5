"""The README's example transcripts are what the CLI prints today.

Every ``$ moe-oracle ...`` line in a ```text (or plain ```) block of README.md whose command is complete (no
``...``, no line continuation; not ``run``, which needs a GPU, nor ``verify``, which needs a vLLM
environment) is run in-process, and every output line shown under it must be a line of the real
output. Lines the README elides (containing ``...``) are skipped, and so are the README's own
annotations: a trailing ``(exit code N)`` (checked against the real exit code) and a ``# comment``
after two spaces. The examples went stale once (58-kernel tables shown after the tables grew to
85); this keeps them true.
"""

from __future__ import annotations

import contextlib
import io
import re
import shlex
from pathlib import Path

import pytest

from moe_oracle import cli

README = Path(__file__).resolve().parents[2] / "README.md"
_EXIT = re.compile(r"\s{2,}\(exit code (\d+)\)\s*$")
_COMMENT = re.compile(r"\s{2,}#\s.*$")
_SKIPPED = ("run", "verify")


def _examples() -> list[tuple[int, str, list[str], int | None]]:
    """(README line, command, shown output lines, annotated exit code) of every runnable example."""
    out: list[tuple[int, str, list[str], int | None]] = []
    in_block = in_text = False
    current: tuple[int, str, list[str], list[int | None]] | None = None
    for number, line in enumerate(README.read_text(encoding="utf-8").splitlines(), 1):
        if line.startswith("```"):
            in_text = not in_block and line.strip() in ("```", "```text")  # an opening fence of a transcript
            in_block = not in_block
            if current is not None:
                out.append((current[0], current[1], current[2], current[3][0]))
                current = None
            continue
        if not in_text:
            continue
        if line.startswith("$ "):
            if current is not None:
                out.append((current[0], current[1], current[2], current[3][0]))
                current = None
            command = _COMMENT.sub("", line[2:])
            words = command.split()
            runnable = words[:1] == ["moe-oracle"] and len(words) > 1 and words[1] not in _SKIPPED and "..." not in command and not command.rstrip().endswith("\\")
            if runnable:
                current = (number, command, [], [None])
            continue
        if current is None:
            continue
        exit_code = _EXIT.search(line)
        if exit_code:
            current[3][0] = int(exit_code.group(1))
            line = _EXIT.sub("", line)
        line = _COMMENT.sub("", line).rstrip()
        if line.strip() and "..." not in line:
            current[2].append(line)
    return out


EXAMPLES = _examples()


def test_the_readme_has_runnable_examples():
    assert len(EXAMPLES) >= 8, [e[1] for e in EXAMPLES]


@pytest.mark.parametrize(("line", "command", "shown", "exit_code"), EXAMPLES, ids=[f"README:{e[0]}" for e in EXAMPLES])
def test_readme_example_prints_what_the_readme_shows(line, command, shown, exit_code, monkeypatch, tmp_path):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "200")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = cli.main(shlex.split(command)[1:])
    printed = set((out.getvalue() + err.getvalue()).splitlines())
    missing = [s for s in shown if s not in printed]
    assert not missing, f"README line {line}: `{command}` no longer prints:\n" + "\n".join(missing) + "\n--- it prints:\n" + out.getvalue() + err.getvalue()
    if exit_code is not None:
        assert code == exit_code, f"README line {line}: exit code {code}, the README says {exit_code}"
