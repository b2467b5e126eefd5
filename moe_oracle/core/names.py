"""Names an operator types (quant schemes, backends, all2all backends, GPUs, packages): case is
folded on ASCII letters only, and a character outside ASCII is described by its code point.

Python's :meth:`str.lower` / :meth:`str.upper` (and a regular expression's ``IGNORECASE`` on a
``str`` pattern) fold some other characters onto ASCII ones: the Kelvin sign ``K`` (U+212A)
lowers to ``k``, the dotless ``ı`` (U+0131) and the long ``ſ`` (U+017F) upper to ``I`` and
``S``. A name folded that way would accept a lookalike (``fp8_bloc\\u212a`` as ``fp8_block``)
that no engine accepts. Every name this package knows is ASCII, so folding only ASCII letters
keeps each spelling an operator may use (``FP8_Block``) and lets no lookalike through.
"""

from __future__ import annotations

import string
import unicodedata

__all__ = ["ascii_lower", "ascii_upper", "escaped", "non_ascii", "non_ascii_message"]

_LOWER = str.maketrans(string.ascii_uppercase, string.ascii_lowercase)
_UPPER = str.maketrans(string.ascii_lowercase, string.ascii_uppercase)


def ascii_lower(text: str) -> str:
    """``text`` with its ASCII letters lowered, every other character kept.

    >>> ascii_lower("FP8_Block"), ascii_lower("fp8_bloc\\u212a") == "fp8_bloc\\u212a"
    ('fp8_block', True)
    """
    return text.translate(_LOWER)


def ascii_upper(text: str) -> str:
    """``text`` with its ASCII letters raised, every other character kept.

    >>> ascii_upper("mi300x"), ascii_upper("m\\u0131300x") == "M\\u0131300X"
    ('MI300X', True)
    """
    return text.translate(_UPPER)


def escaped(text: str) -> str:
    """``text`` with every character :meth:`str.isprintable` refuses (a NUL, a bidirectional
    override such as U+202E, other control and format characters) written as ``repr`` writes it
    (``\\x00``, ``\\u202e``), as an error's ``got`` echoes a ``--gpu`` value; a line break and a
    tab stay (messages and notes lay out lines with them). For a sentence that echoes a value
    from an input file or flag: printed raw, such a character hides or reorders what follows.

    >>> escaped("Qwen3Moe\\x00For\\u202eCausalLM") == "Qwen3Moe\\\\x00For\\\\u202eCausalLM"
    True
    >>> escaped("plain words: H200") == "plain words: H200"
    True
    """
    if text.isprintable():
        return text
    return "".join(c if c.isprintable() or c in "\n\t" else repr(c)[1:-1] for c in text)


def non_ascii(text: str) -> str | None:
    """The first character of ``text`` outside ASCII, said with its code point, its Unicode name
    and its position (1-based); ``None`` when ``text`` is ASCII.

    >>> non_ascii("fp8_bloc\\u212a") == "'\\u212a' (U+212A KELVIN SIGN) at character 9"
    True
    >>> non_ascii("fp8_block") is None
    True
    """
    for position, char in enumerate(text, start=1):
        if not char.isascii():
            name = unicodedata.name(char, "")
            return f"{char!r} (U+{ord(char):04X}{' ' + name if name else ''}) at character {position}"
    return None


def non_ascii_message(what: str, text: str) -> str | None:
    """The sentence refusing a ``what`` name (``quant scheme``) that holds a character outside
    ASCII, or ``None`` when it is ASCII.

    >>> non_ascii_message("quant scheme", "fp8_bloc\\u212a") == "quant scheme names are ASCII; this one holds '\\u212a' (U+212A KELVIN SIGN) at character 9"
    True
    """
    found = non_ascii(text) if isinstance(text, str) else None
    return f"{what} names are ASCII; this one holds {found}" if found else None
