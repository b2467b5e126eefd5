"""The words of a ``vllm serve`` command as the operator pasted it: split as a POSIX shell splits
them (refusing what a shell would evaluate: substitutions, operators between commands), and
another engine's launcher or flags recognised so that the refusal names that engine.
:mod:`moe_oracle.inputs.serve_argv` reads the words as vLLM's argparse does.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from types import MappingProxyType
from typing import Mapping, Sequence

from ..core.errors import ConfigError, InputIssue

__all__ = ["FOREIGN_FLAGS", "command_words", "other_engine"]


_SUBSTITUTION = re.compile(r"\$\(|`|\$\{|\$[A-Za-z_]")


def command_words(command: str | Sequence[str]) -> list[str]:
    """The words of a serve line, split as a POSIX shell splits them (``shlex``), nothing expanded.

    Raises:
        ConfigError: unbalanced quotes, or a word holding a shell substitution (``$(...)``,
            backquotes, ``${VAR}``, ``$VAR``): no shell runs, so the line would be read with the
            substitution's text as flag words (``$(rm -rf x)`` became ``--node-rank``'s ``-rf``).
    """
    if isinstance(command, str):
        try:
            words = shlex.split(command.replace("\\\n", " "))
        except ValueError as exc:
            raise ConfigError([InputIssue("--serve", f"not a shell command line: {exc}", command, None)], headline="bad --serve") from None
    else:
        words = list(command)
    text = command if isinstance(command, str) else " ".join(words)
    if isinstance(command, str) and (op := _shell_operator(command)) is not None:
        start, what = op
        shown = command[start : start + 40]
        raise ConfigError([InputIssue("--serve", f"{what} is not interpreted: moe-oracle reads the words of one command and runs no shell; give only the `vllm serve ...` command, without {shown!r}", text, None)], headline="bad --serve")
    if isinstance(command, str) and (hit := _SUBSTITUTION.search(_unquoted_single(command))):
        start = hit.start()
        shown = command[start : start + 40]
        raise ConfigError([InputIssue("--serve", f"shell substitution is not expanded: moe-oracle reads the line as words and runs no shell; write the value it stands for instead of {shown!r}", text, None)], headline="bad --serve")
    return words


def _shell_operator(command: str) -> tuple[int, str] | None:
    """The first shell control operator, redirection or comment outside quotes (``;``, ``&&``,
    ``|``, ``>``, ``<``, a trailing ``&``, ``#`` at the start of a word), as (offset, what it is),
    or ``None``. A shell ends the command there (``vllm serve M; rm -rf x``), so read as words
    they became flags and values (``-rf`` as ``--node-rank``'s abbreviation)."""
    quote = ""
    escaped = False
    for i, ch in enumerate(command):
        if escaped:
            escaped = False
        elif quote:
            if ch == quote:
                quote = ""
            elif ch == "\\" and quote == '"':
                escaped = True
        elif ch == "\\":
            escaped = True
        elif ch in "'\"":
            quote = ch
        elif ch in ";|&":
            op = ch * 2 if ch in "|&" and command[i + 1 : i + 2] == ch else ch
            return i, f"the shell operator {op!r}"
        elif ch in "<>":
            return i, f"the shell redirection {ch!r}"
        elif ch == "#" and (i == 0 or command[i - 1].isspace()):
            return i, "a shell comment"
    return None


def _unquoted_single(command: str) -> str:
    """``command`` with its single-quoted spans blanked (a shell expands nothing inside them)."""
    return re.sub(r"'[^']*'", lambda m: " " * len(m.group(0)), command)


_OTHER_ENGINES = (
    ("SGLang", re.compile(r"^(sglang(\.launch_server)?|python[0-9.]* -m sglang\S*)$"), ("--model-path", "--tp-size", "--dp-size", "--ep-size", "--moe-runner-backend", "--moe-a2a-backend")),
    ("TensorRT-LLM", re.compile(r"^(trtllm-\S+|python[0-9.]* -m tensorrt_llm\S*)$"), ("--tp_size", "--pp_size", "--ep_size", "--moe_expert_parallel_size", "--moe_backend", "--extra_llm_api_options")),
)


# Flags of other engines' launchers that vLLM has not, as they arrive in a vllm serve line
# (underscores already dashes, as vLLM rewrites them), with the engine and vLLM's spelling.
FOREIGN_FLAGS: Mapping[str, tuple[str, str]] = MappingProxyType({
    "--model-path": ("SGLang", "the model as `vllm serve MODEL`"),
    "--tp-size": ("SGLang / TensorRT-LLM", "--tensor-parallel-size (-tp)"),
    "--dp-size": ("SGLang", "--data-parallel-size (-dp)"),
    "--ep-size": ("SGLang / TensorRT-LLM", "--enable-expert-parallel (EP spans TP x PCP x DP in vLLM)"),
    "--pp-size": ("TensorRT-LLM", "--pipeline-parallel-size (-pp)"),
    "--moe-expert-parallel-size": ("TensorRT-LLM", "--enable-expert-parallel (EP spans TP x PCP x DP in vLLM)"),
    "--moe-runner-backend": ("SGLang", "--moe-backend"),
    "--moe-a2a-backend": ("SGLang", "--all2all-backend"),
    "--extra-llm-api-options": ("TensorRT-LLM", "separate flags (--config FILE takes a YAML of vLLM flags)"),
    "--model-id": ("Text Generation Inference", "the model as `vllm serve MODEL`"),
    "--num-shard": ("Text Generation Inference", "--tensor-parallel-size (-tp)"),
})


def other_engine(words: Sequence[str]) -> str | None:
    """``"SGLang"`` or ``"TensorRT-LLM"`` when a command line is another engine's: its launcher
    (``python -m sglang.launch_server``, ``trtllm-serve``) or a flag of its own that vLLM has not
    (``--model-path``; ``--tp_size``, which vLLM would read as an unknown ``--tp-size``); else ``None``."""
    if not words:
        return None
    first = Path(words[0]).name
    launched = (first, " ".join([first, *words[1:3]]))  # `trtllm-serve`, `python -m sglang.launch_server`
    for name, launcher, _ in _OTHER_ENGINES:
        if any(launcher.match(head) for head in launched):
            return name
    if first == "vllm" or any(w.startswith("vllm.") for w in words[1:3]):
        return None
    for name, _, flags in _OTHER_ENGINES:
        if any(w.split("=", 1)[0] in flags for w in words):
            return name
    return None


# The two entry points a serve line can name (vLLM 0.29.0-0.33.0): ``vllm serve`` (also
# ``python -m vllm.entrypoints.cli.main serve``): vllm/entrypoints/cli/main.py parses
# ``["serve", *words]`` with the ``vllm`` parser, so FlexibleArgumentParser's rewriting (``--model``
# moved first, ``--config`` loaded) runs there, and ServeSubcommand.cmd takes the positional model
# over ``--model``. ``python -m vllm.entrypoints.openai.api_server``:
# vllm/entrypoints/launchers/api_server/entry.py ``main`` parses the words with the serve parser
# itself: no ``--model`` move, and the server reads ``--model`` alone.
