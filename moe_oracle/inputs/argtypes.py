"""A ``vllm serve`` flag value converted exactly as the release's argparse ``type`` converts it.

``tools/vllm_cli_facts.py`` records each value-taking flag's ``type`` as a kind of a small
vocabulary (``type:`` in ``engine_facts/vllm-<version>.yaml``; its ``type_kinds:`` says what
each means), classified from the release's own ``make_arg_parser`` (vLLM 0.29.0-0.33.0).
:func:`convert` applies the kind to one command-line word and raises :class:`ValueError` where
argparse would refuse it (argparse refuses a type function's ``ValueError``, ``TypeError`` and
``ArgumentTypeError``; an ``OverflowError`` or ``RecursionError`` escapes argparse and vLLM stops
with a traceback, which refuses the command line too):

* ``int``, ``float``: Python's own ``int()``/``float()`` (``" 8 "``, ``"+8"``, ``"8_000"`` pass);
* ``json``: ``json.loads`` (``type=json.loads``, or wrapped by ``parse_type``/``optional_type``);
* ``json_if_braced``: vllm/engine/arg_utils.py ``union_dict_and_str``: a ``{...}`` value is
  ``json.loads``-ed, anything else is the string;
* ``human_readable_int``, ``human_readable_int_or_auto``: vllm/utils/argparse_utils.py
  (:func:`human_readable_int`, :func:`human_readable_int_or_auto`);
* ``lower_underscore``: ``lambda s: s.lower().replace("-", "_")`` (``--moe-backend``,
  ``--linear-backend``; never fails, argparse checks the choices on the result);
* ``str``: no conversion. ``dataclass_json`` (pydantic ``TypeAdapter.validate_json`` of a config
  dataclass, after vLLM's own human-readable-number expansion) and ``other`` (a callable the
  generator could not classify) are :data:`UNCHECKED`: the value is returned as given, and its
  choices must not be checked against the unconverted word.

vLLM's ``optional_type`` (``optional: true`` in the facts) reads ``""`` and ``"None"`` as
``None`` before the wrapped type runs (:func:`convert` with ``optional=True``).
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["CHECKED", "KINDS", "UNCHECKED", "NONE_WORDS", "allowed_text", "convert", "human_readable_int", "human_readable_int_or_auto"]

# vllm/engine/arg_utils.py optional_type (vLLM 0.29.0-0.33.0): these words parse to None.
NONE_WORDS = ("", "None")

CHECKED = ("str", "int", "float", "json", "json_if_braced", "human_readable_int", "human_readable_int_or_auto", "lower_underscore")
UNCHECKED = ("dataclass_json", "other")
KINDS = CHECKED + UNCHECKED

_HUMAN = re.compile(r"(\d+(?:\.\d+)?)([kKmMgGtT])")
# union_dict_and_str matches r"(?s)^\s*{.*}\s*$" with the third-party ``regex`` module, whose
# \s is Unicode White_Space: Python's re \s also takes U+001C-U+001F, so those are left out here.
_BRACED = re.compile(r"(?s)^[^\S\x1c-\x1f]*{.*}[^\S\x1c-\x1f]*$")

_ALLOWED = {
    "int": "an integer, as Python's int() reads it",
    "float": "a number, as Python's float() reads it",
    "json": "a JSON value (json.loads)",
    "json_if_braced": "a string, or a JSON object when the value is {...} (json.loads)",
    "human_readable_int": "an integer, or a number with a k/m/g/t suffix (decimal: 8k = 8000, 2.5k allowed) or a K/M/G/T suffix (binary: 8K = 8192, integers only)",
    "human_readable_int_or_auto": "-1 or auto, an integer, or a number with a k/m/g/t suffix (decimal: 8k = 8000, 2.5k allowed) or a K/M/G/T suffix (binary: 8K = 8192, integers only)",
}


def human_readable_int(value: str) -> int:
    """vLLM's ``human_readable_int`` (vllm/utils/argparse_utils.py, the same in vLLM 0.29.0,
    0.30.0, 0.31.0, 0.32.0 and 0.33.0): strip, then a number with one ``k/m/g/t`` suffix is
    ``int(float(number) * 10**3n)`` (decimals allowed), one with ``K/M/G/T`` is
    ``int(number) * 2**10n`` (a decimal is refused), anything else is ``int()``.

    vLLM matches with the ``regex`` package, whose ``\\d`` follows a newer Unicode than Python's
    ``re``; a digit only it knows still fails, in Python's ``float()``/``int()``, as here.

    >>> [human_readable_int(v) for v in ("8192", " 8k", "25.6k", "8K", "1M", "+5", "1_000")]
    [8192, 8000, 25600, 8192, 1048576, 5, 1000]

    Raises:
        ValueError: not an integer (``abc``, ``1.5``, ``1.5K``: vLLM raises ArgumentTypeError).
        OverflowError: a decimal-suffixed number too large for a float (vLLM stops with it too).
    """
    value = value.strip()
    match = _HUMAN.fullmatch(value)
    if match:
        number, suffix = match.groups()
        if suffix in "kmgt":
            return int(float(number) * 10 ** (3 * ("kmgt".index(suffix) + 1)))
        return int(number) * 2 ** (10 * ("KMGT".index(suffix) + 1))
    return int(value)


def human_readable_int_or_auto(value: str) -> int:
    """vLLM's ``human_readable_int_or_auto`` (vllm/utils/argparse_utils.py, vLLM 0.29.0-0.33.0,
    ``--max-model-len``): ``-1`` or ``auto`` (any case) after stripping is -1, else
    :func:`human_readable_int`.

    >>> [human_readable_int_or_auto(v) for v in ("AUTO", " -1", "32k", "-2")]
    [-1, -1, 32000, -2]
    """
    value = value.strip()
    if value == "-1" or value.lower() == "auto":
        return -1
    return human_readable_int(value)


def convert(kind: str, text: str, *, optional: bool = False) -> Any:
    """``text`` converted as argparse's ``type`` of ``kind`` converts it (``None``: an
    ``optional_type`` flag's ``""``/``"None"``; :data:`UNCHECKED` kinds: ``text`` as given).

    >>> convert("int", " 8"), convert("int", "None", optional=True), convert("lower_underscore", "FlashInfer-CUTLASS")
    (8, None, 'flashinfer_cutlass')

    Raises:
        ValueError: argparse (or vLLM, by an escaping exception) refuses ``text``.
        KeyError: ``kind`` is not one of :data:`KINDS`.
    """
    if optional and text in NONE_WORDS:
        return None
    try:
        if kind == "int":
            return int(text)
        if kind == "float":
            return float(text)
        if kind == "json":
            return json.loads(text)
        if kind == "json_if_braced":
            return json.loads(text) if _BRACED.match(text) else text
        if kind == "human_readable_int":
            return human_readable_int(text)
        if kind == "human_readable_int_or_auto":
            return human_readable_int_or_auto(text)
        if kind == "lower_underscore":
            return text.lower().replace("-", "_")
    except (OverflowError, RecursionError) as exc:
        raise ValueError(str(exc)) from exc
    if kind in ("str", *UNCHECKED):
        return text
    raise KeyError(f"unknown serve flag type kind {kind!r}; the kinds: {', '.join(KINDS)}")


def allowed_text(kind: str) -> str:
    """What a value of ``kind`` must look like, for a message (``""`` where any word passes)."""
    return _ALLOWED.get(kind, "")
