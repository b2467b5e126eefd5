"""Hints for a ``vllm serve`` flag vLLM's parser refuses: the flag the user meant.

Kept apart from :mod:`.serve` (which reads the line) because they only word a refusal: an
abbreviation argparse expanded (``--ep`` read as ``--eplb-config``), an ambiguous or unknown
option whose short form is a flag (``--tp``: ``-tp``), and, for a ``--config`` YAML file, whose
keys always become ``--KEY``, the key meant (``tp:`` -> ``tensor-parallel-size``).
"""

from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from ..core.errors import did_you_mean
from .serve_config_file import ConfigFileFlags
from .serve_words import FOREIGN_FLAGS

__all__ = ["abbreviation_hint", "short_form_hint", "unknown_flag_hint"]


def unknown_flag_hint(name: str, known: Sequence[str], serve_flags: Sequence[Mapping[str, Any]], *, in_file: bool) -> str:
    """The hint after "vLLM does not know NAME": another engine's flag and its vLLM spelling; for
    a YAML key (``in_file``) the key of the long option meant (a key becomes ``--KEY``, so only a
    long option can be meant: the one whose short spelling it is, else the nearest); else the
    nearest option.

    >>> unknown_flag_hint("--tp", ["--tensor-parallel-size", "-tp"], [{"options": ["--tensor-parallel-size", "-tp"]}], in_file=True)
    '; did you mean the key tensor-parallel-size?'
    """
    if name in FOREIGN_FLAGS:
        engine, ours = FOREIGN_FLAGS[name]
        return f": {name} is a flag of {engine}; in vLLM: {ours}"
    if in_file:
        guess = _long_of_short(name, serve_flags) or did_you_mean(name, [o for o in known if o.startswith("--")])
        return f"; did you mean the key {guess[2:]}?" if guess else ""
    guess = did_you_mean(name, known)
    return f"; did you mean {guess}?" if guess else ""


# Short flags people write for expert parallelism that vLLM's parser reads as abbreviations.
_EP_SPELLINGS = frozenset({"--ep", "--e", "--ex", "--exp"})


def _long_of_short(flag: str, serve_flags: Sequence[Mapping[str, Any]]) -> str | None:
    """The long option of the flag whose short option ``flag`` spells with two dashes (``--tp``:
    ``-tp`` is ``--tensor-parallel-size``); ``None`` where ``-X`` is no option of the release."""
    options = next((f["options"] for f in serve_flags if "-" + flag[2:] in f["options"]), ())
    return next((o for o in options if o.startswith("--")), None)


def short_form_hint(message: str, serve_flags: Sequence[Mapping[str, Any]], from_config: ConfigFileFlags | None) -> str:
    """Where argparse finds ``--X`` ambiguous and ``-X`` is a short option of the release (``--dp``:
    ``-dp``, ``--data-parallel-size``), the flag meant: the key of the long option when a
    ``--config`` file gave it (a YAML key becomes ``--KEY``), else the short option.

    >>> short_form_hint("ambiguous option: --dp could match --dp-a, --dp-b", [{"options": ["--data-parallel-size", "-dp"]}], None)
    '; did you mean -dp (--data-parallel-size)?'
    """
    named = re.match(r"ambiguous option: (--[\w-]+)", message)
    if named is None:
        return ""
    flag = named.group(1)
    long = _long_of_short(flag, serve_flags)
    if long is None:
        return ""
    if from_config is not None and from_config.gave(flag):
        return f"; did you mean the key {long[2:]}?"
    return f"; did you mean -{flag[2:]} ({long})?"


def abbreviation_hint(message: str, args: Sequence[str]) -> str:
    """Say which word argparse expanded when its refusal names a flag the user did not write
    (``allow_abbrev``: ``--ep`` is ``--eplb-config``), and the flag meant where it is known.

    >>> abbreviation_hint("argument --eplb-config: expected one argument", ["m", "--ep"])
    ' (argparse read --ep as an abbreviation of --eplb-config; expert parallelism is --enable-expert-parallel, or -ep)'
    """
    named = re.match(r"argument (--[\w-]+)", message)
    if named is None:
        return ""
    flag = named.group(1)
    written = next((w.split("=", 1)[0] for w in args if w.startswith("--") and w.split("=", 1)[0] != flag and flag.startswith(w.split("=", 1)[0])), None)
    if written is None:
        return ""
    meant = "; expert parallelism is --enable-expert-parallel, or -ep" if written in _EP_SPELLINGS else ""
    return f" (argparse read {written} as an abbreviation of {flag}{meant})"
