"""The project's typed errors. Each carries its problems as data; ``str()`` only formats.

Every error raised for bad input names the file (when there is one), the JSON
path of the field, the value seen and what is allowed.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

from .names import ascii_lower, escaped

__all__ = [
    "ConfigError",
    "InputIssue",
    "MissingDependencyError",
    "MoEOracleError",
    "TableError",
    "did_you_mean",
]


def did_you_mean(value: Any, allowed: Iterable[Any]) -> str | None:
    """Closest allowed spelling of ``value``, or ``None``.

    In order: the allowed name ``value`` spells with case and ``-``/``_`` ignored (ASCII letters
    only, :func:`~moe_oracle.core.names.ascii_lower`); an abbreviation (``deepep_ll`` for
    ``deepep_low_latency``); else the allowed name fewest edits away (insert, delete, replace,
    swap two neighbours: :func:`_edits`), when that is at most one edit for a name of up to five
    characters, two up to eight, three beyond, ties going to the closer difflib ratio; else the
    one allowed name ``value`` contracts (letters left out inside, first and last kept: ``bf16``
    for ``bfloat16``). A name that merely contains ``value`` (``zentorch`` for ``torch``) is no
    misspelling of it: difflib's ratio (0.77 there) suggested it.

    >>> did_you_mean("deepep_low_latncy", ["deepep_low_latency", "nixl_ep"])
    'deepep_low_latency'
    >>> did_you_mean("deepep_ll", ["deepep_v2", "deepep_low_latency"])
    'deepep_low_latency'
    >>> did_you_mean("TORCH", ["torch", "zentorch"]), did_you_mean("torch", ["zentorch", "deep-gemm"]), did_you_mean("slwo", ["slow", "fast"])
    ('torch', None, 'slow')
    >>> did_you_mean("bf16", ["bfloat16", "float16", "float32"])
    'bfloat16'
    """
    if not isinstance(value, str):
        return None
    options = [str(a) for a in allowed]
    if len(value) > 3 * max((len(o) for o in options), default=0):
        return None  # nothing that long is a misspelling of an allowed name
    lowered = {ascii_lower(o).replace("-", "_"): o for o in options}
    key = ascii_lower(value).replace("-", "_")
    if key in lowered:
        return lowered[key] if lowered[key] != value else None
    for low, option in lowered.items():  # an abbreviation: deepep_ll for deepep_low_latency
        parts = low.split("_")
        if any(key == "_".join(parts[:i] + ["".join(p[:1] for p in parts[i:])]) for i in range(len(parts) - 1)):
            return option
    limit = 1 if len(key) <= 5 else 2 if len(key) <= 8 else 3
    scored = []
    for low, option in lowered.items():
        if abs(len(low) - len(key)) <= limit:  # each edit changes the length by at most one
            edits = _edits(key, low)
            if edits <= limit:
                scored.append((edits, -difflib.SequenceMatcher(None, key, low).ratio(), option))
    if scored:
        return min(scored)[2]
    # a contraction: the name with letters left out inside, first and last kept (bf16 for bfloat16), when only one fits
    contracted = [option for low, option in lowered.items() if len(key) > 1 and key[0] == low[0] and key[-1] == low[-1] and _inside(key, low)]
    return contracted[0] if len(contracted) == 1 else None


def _inside(short: str, long: str) -> bool:
    """Whether ``short`` is ``long`` with characters left out (a subsequence)."""
    rest = iter(long)
    return all(char in rest for char in short)


def _edits(a: str, b: str) -> int:
    """The optimal string alignment distance: insertions, deletions, substitutions and swaps of
    two neighbouring characters (``slwo`` -> ``slow`` is one).

    >>> _edits("slwo", "slow"), _edits("torch", "zentorch"), _edits("fp8_blok", "fp8_block")
    (1, 3, 1)
    """
    previous2: list[int] = []
    previous = list(range(len(b) + 1))
    for i in range(1, len(a) + 1):
        current = [i] + [0] * len(b)
        for j in range(1, len(b) + 1):
            cost = a[i - 1] != b[j - 1]
            current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            if i > 1 and j > 1 and a[i - 1] == b[j - 2] and a[i - 2] == b[j - 1]:
                current[j] = min(current[j], previous2[j - 2] + 1)
        previous2, previous = previous, current
    return previous[len(b)]


def _short(value: Any, limit: int = 80) -> str:
    """``repr(value)``, its start and its length when longer than ``limit``.

    >>> _short("x" * 100_000, 12)
    "'xxxxxxxx... (100,000 characters)"
    """
    text = repr(value)
    if len(text) <= limit:
        return text
    size = len(value) if isinstance(value, (str, bytes)) else len(text)
    return f"{text[: limit - 3]}... ({size:,} characters)"


# A word of a message (a path, a name, a serve line's word) longer than this is the operator's
# input echoed, never wording: its start and length are shown (:func:`_clipped`).
_ECHO_LIMIT = 200


def _clipped(text: str, value: Any = None) -> str:
    """``text`` (a message, a file name) with every echo of an input longer than
    :data:`_ECHO_LIMIT` shortened to its start and length: ``value`` as quoted or as written,
    and any other word that long (a 100,000-character ``--model`` was echoed twice in full).

    >>> _clipped(f"{'x' * 300!r} is not a shipped example", "x" * 300)[-55:]
    'xxxxxxxxxx... (300 characters) is not a shipped example'
    >>> len(_clipped("y" * 500 + " is too long"))
    132
    >>> _clipped("short words stay")
    'short words stay'
    """
    import re

    if len(text) <= _ECHO_LIMIT:
        return text
    if isinstance(value, str) and len(value) > _ECHO_LIMIT:
        text = text.replace(repr(value), _short(value)).replace(value, f"{value[:76]}... ({len(value):,} characters)")
    return re.sub(rf"\S{{{_ECHO_LIMIT + 1},}}", lambda m: f"{m.group()[:_ECHO_LIMIT // 2]}... ({len(m.group()):,} characters)", text)


def _says(message: str, shown: str) -> bool:
    """Whether ``message`` already states the value ``shown`` as a word of its own: not merely as
    part of another number or name, nor in the file name or path the issue is headed by (a file
    ``nextn17.json`` hid "(got 17)")."""
    import re

    return re.search(rf"(?<![\w.]){re.escape(shown)}(?![\w])", message) is not None


@dataclass(frozen=True)
class InputIssue:
    """One problem in an input document (config file, table, model config, flag).

    Attributes:
        path: JSON path of the offending field (``"$.parallel.tp_size"``) or flag name.
        message: what is wrong, one sentence.
        value: the value seen (may be ``None`` for a missing field).
        allowed: what would be accepted, as data, or ``None`` if not enumerable.
        file: the file, when the input came from one.
        entry: the table entry id, when the input is a table.
        keyword: the JSON Schema keyword or semantic check that failed.
        suggest: the did-you-mean, where the one who raises knows better than the closest
            spelling among ``allowed`` (the newest modelled release a version range admits).
    """

    path: str
    message: str
    value: Any = None
    allowed: Any = None
    file: str | None = None
    entry: str | None = None
    keyword: str | None = None
    suggest: str | None = None

    def suggestion(self) -> str | None:
        if self.suggest is not None:
            return self.suggest
        if isinstance(self.allowed, (list, tuple)):
            return did_you_mean(self.value, self.allowed)
        return None

    def text(self) -> str:
        """:attr:`message` as printed: an echo of a long input shortened to its start and length
        (:func:`_clipped`; :attr:`value` keeps the input whole), characters that are not
        printable escaped (:func:`~.names.escaped`, as ``repr`` escapes the ``got`` value)."""
        return escaped(_clipped(self.message, self.value))

    def format(self) -> str:
        where = _clipped(":".join(p for p in (self.file, self.entry) if p))
        head = f"{where}: {_clipped(self.path)}" if where else _clipped(self.path)
        message = self.text()
        text = f"{head}: {message}"
        if self.value is not None and not _says(message, _short(self.value)):
            text += f" (got {_short(self.value)})"
        if isinstance(self.allowed, (list, tuple)) and self.allowed:
            shown = ", ".join(str(a) for a in list(self.allowed)[:24])
            more = f", ... ({len(self.allowed)} in all)" if len(self.allowed) > 24 else ""
            text += f"; allowed: {shown}{more}"
        family = self.family()
        suggestion = self.suggestion()
        if len(family) > 1:
            text += f"; did you mean one of {', '.join(family)}?"
        elif suggestion:
            text += f"; did you mean {suggestion!r}?"
        return text

    def family(self) -> list[str]:
        """The allowed names ``value`` is the stem of (``flashinfer`` -> every ``flashinfer_*``)."""
        if not isinstance(self.value, str) or not isinstance(self.allowed, (list, tuple)) or len(self.value) < 3:
            return []
        stem = self.value.lower().replace("-", "_").rstrip("_") + "_"
        return [str(a) for a in self.allowed if str(a).lower().startswith(stem)]

    def to_dict(self) -> dict[str, Any]:
        from .records import jsonable

        return {
            "file": self.file,
            "entry": self.entry,
            "path": self.path,
            "keyword": self.keyword,
            "value": jsonable(self.value) if _json_safe(self.value) else repr(self.value),
            "allowed": jsonable(self.allowed),
            "message": self.text(),
            "did_you_mean": self.suggestion(),
        }


def _json_safe(value: Any) -> bool:
    return isinstance(value, (str, int, float, bool, type(None), list, tuple, dict, frozenset, set))


# MoEConfig field paths the command-line flags set, for the CLI's headline that names the flag
# (:meth:`_IssuesError.naming_flags`).
_FLAG_FOR_PATH = {
    "$.parallel.tp_size": "--tp",
    "$.parallel.dp_size": "--dp",
    "$.parallel.pcp_size": "--pcp",
    "$.parallel.all2all_backend": "--all2all",
    "$.parallel.num_redundant_experts": "--redundant-experts",
    "$.device.capability": "--sm",
    "$.device.arch": "--arch",
    "$.device.platform": "--platform",
    "$.moe_backend": "--moe-backend",
    "$.max_num_tokens": "--max-tokens",
}

# The Python API's names for the records a field path starts in: ``Device(capability=999)`` is
# headed "bad Device.capability", not by the flag that sets it on the command line.
_API_RECORD = {"device": "Device", "parallel": "ParallelConfig", "provenance": "Provenance"}


# Flags whose value the Python API takes as a parameter of its own: an issue found at the flag's
# path (``--package vllm``, raised by the Environment both doors build) is headed by that parameter
# in the API (``bad Environment.packages``) and by the flag on the command line (``bad --package``).
_API_FOR_FLAG = {
    "--package": "Environment.packages",
    "--without": "Environment.absent",
    "--env": "Environment.env",
    "--backend": "why_not(backend_name)",
    "--keep": "why_not(keep)",
}


def _flag_of(path: str) -> str | None:
    """The input an issue path names on the command line: a flag (``--gpu``; ``--serve MODEL`` ->
    ``--serve``; a field a flag sets, ``$.parallel.tp_size`` -> ``--tp``), else the field
    (``$.top_k`` -> ``top_k``)."""
    if path in _FLAG_FOR_PATH:
        return _FLAG_FOR_PATH[path]
    if path.startswith("--"):
        return path.split()[0].split("/")[0]
    if path.startswith("$.") and " " not in path:
        return path[2:]
    return _field_of(path)


def _field_of(path: str) -> str | None:
    """The input an issue path names in the Python API: a flag the API takes as a parameter of its
    own by that parameter (``--package vllm`` -> ``Environment.packages``), another flag as written
    (``--gpu``), a record's field (``$.parallel.tp_size`` -> ``ParallelConfig.tp_size``), else the
    field (``$.top_k`` -> ``top_k``)."""
    if path.startswith("--"):
        flag = path.split()[0].split("/")[0]
        return _API_FOR_FLAG.get(flag, flag)
    if path.startswith("$.") and " " not in path:
        head, _, rest = path[2:].partition(".")
        return f"{_API_RECORD[head]}.{rest}" if rest and head in _API_RECORD else path[2:]
    return None


def _restored(cls: type[BaseException], args: tuple[Any, ...], state: dict[str, Any]) -> BaseException:
    """An error as pickled by :meth:`MoEOracleError.__reduce__`: its class, ``args`` and attributes,
    without calling its ``__init__`` (whose parameters are its records, not its message)."""
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class MoEOracleError(Exception):
    """Base class of every error this package raises on purpose.

    Every one crosses a process boundary (pickle, ``ProcessPoolExecutor``) whole: it is rebuilt
    from its attributes (the issues, the Decision), not by calling ``__init__`` with its message.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restored, (type(self), self.args, dict(self.__dict__)))


class _IssuesError(MoEOracleError):
    headline = "invalid input"

    def __init__(self, issues: Sequence[InputIssue], headline: str | None = None) -> None:
        self.issues: tuple[InputIssue, ...] = tuple(issues)
        if headline:
            self.headline = headline
        super().__init__(self.__str__())

    def __str__(self) -> str:
        lines = [f"{self.title()} ({len(self.issues)} problem{'s' if len(self.issues) != 1 else ''}):"]
        lines += [f"  - {issue.format()}" for issue in self.issues]
        return "\n".join(lines)

    def title(self) -> str:
        """What failed, first: the headline given, else ``bad <input>`` when every issue names
        the same file or input (``bad --gpu``, ``bad model.json``, ``bad Device.capability``),
        else the class headline. Named as the Python API names it, or after :meth:`naming_flags`
        as the command line does."""
        return self._title(_flag_of if self.__dict__.get("_naming_flags") else _field_of)

    def _title(self, name_of: Callable[[str], str | None]) -> str:
        if "headline" in self.__dict__:
            # A headline naming a flag the API takes as a parameter of its own ("bad --package",
            # "bad --env VLLM_USE_DEEP_GEMM") names that parameter in the API's view.
            flag = self.headline[4:].split(" ")[0] if self.headline.startswith("bad --") else ""
            if name_of is _field_of and flag in _API_FOR_FLAG:
                return f"bad {_API_FOR_FLAG[flag]}"
            return self.headline
        wheres = {issue.file or name_of(issue.path) for issue in self.issues}
        if len(wheres) == 1 and None not in wheres:
            return f"bad {_clipped(wheres.pop())}"
        return self.headline

    def naming_flags(self) -> "_IssuesError":
        """The same error headed as the command line sees it: a field a flag sets is named by
        the flag (``bad --sm``, not ``bad Device.capability``; ``bad --package``, not
        ``bad Environment.packages``). ``self`` when nothing changes."""
        if self._title(_flag_of) == self.title():
            return self
        new = type(self).__new__(type(self))
        new.__dict__.update(self.__dict__)
        new._naming_flags = True
        new.args = (str(new),)
        return new

    def to_dict(self) -> dict[str, Any]:
        return {"error": type(self).__name__, "message": self.title(), "issues": [i.to_dict() for i in self.issues]}


class ConfigError(_IssuesError, ValueError):
    """A MoEConfig, model config, environment declaration or CLI flag is invalid."""

    headline = "invalid MoE configuration"


class MissingDependencyError(_IssuesError):
    """An optional dependency a command needs is not installed (``run`` without torch): the input
    is fine and the same command works once it is installed, so the CLI exits 3, not 2."""

    headline = "missing optional dependency"


class TableError(_IssuesError):
    """A capability table set failed schema or semantic validation; nothing was loaded."""

    headline = "invalid capability tables"
