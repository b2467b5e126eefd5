"""Launcher prefixes in a serve line: what wraps the ``vllm serve`` command rather than being it.

``sudo vllm serve M``, ``nohup vllm serve M``, ``uv run vllm serve M``, ``docker run ...
vllm/vllm-openai --model M``: vLLM never sees the launcher's words, and moe-oracle reads the words
vLLM parses, so these lines were refused as "extra words" or as a docker flag vLLM lacks
(``--gpus``). :func:`launcher_issue` names the launcher and gives the command to pass instead.

The ``vllm/vllm-openai`` image runs ``vllm serve`` with the words after the image name (vLLM's
docker/Dockerfile, ``ENTRYPOINT ["vllm", "serve"]`` of the vllm-openai stage), so those words are
the serve line. ``python -m vllm.entrypoints.openai.api_server`` is no launcher: vLLM 0.29.0-0.34.0
still run it (vllm/entrypoints/openai/api_server.py's ``__main__``; 0.34.0 warns it is deprecated),
and :func:`~moe_oracle.inputs.serve_argv.strip_launcher` reads it.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from typing import Sequence

from ..core.errors import InputIssue

__all__ = ["launcher_issue"]

_CONTAINERS = frozenset({"docker", "podman", "nerdctl"})
_ENV_WORD = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*=")


def _vllm_at(words: Sequence[str]) -> int | None:
    """Where the vLLM command starts inside ``words``: ``vllm serve`` or ``python -m vllm.*``."""
    for i, word in enumerate(words):
        name = Path(word).name
        if name == "vllm" and i + 1 < len(words) and words[i + 1] == "serve":
            return i
        if re.fullmatch(r"python[0-9.]*", name) and words[i + 1 : i + 2] == ["-m"] and words[i + 2 : i + 3] and words[i + 2].startswith("vllm."):
            return i
    return None


def _vllm_image_at(words: Sequence[str]) -> int | None:
    """The word naming a vLLM image (``vllm/vllm-openai:latest``, ``rocm/vllm``) in a container line."""
    for i, word in enumerate(words):
        if not word.startswith("-") and re.search(r"(^|/)vllm([-_][\w.-]*)?(:[\w.-]+)?$", word.split("@")[0]):
            return i
    return None


def _serve_words(args: Sequence[str]) -> list[str]:
    """``vllm serve`` with ``args``; ``--model M`` moved first, as vLLM moves it."""
    args = list(args)
    for i, arg in enumerate(args):
        if arg == "--model" and i + 1 < len(args):
            return ["vllm", "serve", args[i + 1], *args[:i], *args[i + 2 :]]
        if arg.startswith("--model="):
            return ["vllm", "serve", arg.removeprefix("--model="), *args[:i], *args[i + 1 :]]
    return ["vllm", "serve", *args]


def launcher_issue(words: Sequence[str], command: str, env_words: Sequence[str] = ()) -> InputIssue | None:
    """The problem with a serve line whose first word launches vLLM rather than being it (``None``
    when the line starts with the vLLM command, or names no vLLM command at all).

    ``words``: the line's words after its leading ``NAME=VALUE`` assignments (``env_words``, kept
    in the command given back).
    """
    if not words or Path(words[0]).name == "vllm" or _vllm_at(words) == 0:
        return None
    first = Path(words[0]).name
    start = _vllm_at(words)
    env = [*env_words, *(w for w in words[: start if start is not None else 0] if _ENV_WORD.match(w))]
    if start is not None:
        launcher = shlex.join(words[:start])
        given = shlex.join([*env, *words[start:]])
        return InputIssue("--serve", f"`{launcher}` launches vLLM and is not read: moe-oracle reads the words vLLM parses; give the vLLM command itself: --serve {shlex.quote(given)}", command, ["vllm serve MODEL [flags]"])
    if first in _CONTAINERS:
        image = _vllm_image_at(words[1:])
        if image is not None:
            given = shlex.join(_serve_words(words[image + 2 :]))
            return InputIssue("--serve", f"a {first} command line is not read: the vLLM image runs `vllm serve` with the words after the image name ({words[image + 1]}); give that command: --serve {shlex.quote(given)}", command, ["vllm serve MODEL [flags]"])
        return InputIssue("--serve", f"a {first} command line is not read: give the `vllm serve MODEL [flags]` command the container runs", command, ["vllm serve MODEL [flags]"])
    return None
