"""The project's typed errors. Each carries its problems as data; ``str()`` only formats.

Every error raised for bad input names the file (when there is one), the JSON
path of the field, the value seen and what is allowed.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Sequence

__all__ = [
    "ConfigError",
    "InputIssue",
    "MoEOracleError",
    "TableError",
    "did_you_mean",
]


def did_you_mean(value: Any, allowed: Iterable[Any]) -> str | None:
    """Closest allowed spelling of ``value``, or ``None``.

    >>> did_you_mean("deepep_low_latncy", ["deepep_low_latency", "nixl_ep"])
    'deepep_low_latency'
    >>> did_you_mean("deepep_ll", ["deepep_v2", "deepep_low_latency"])
    'deepep_low_latency'
    """
    if not isinstance(value, str):
        return None
    options = [str(a) for a in allowed]
    if len(value) > 3 * max((len(o) for o in options), default=0):
        # difflib's ratio 2*matches/(len(value)+len(option)) cannot reach the 0.6 cutoff past
        # 2.33 times the option's length; its work grows with the value's length.
        return None
    lowered = {o.lower().replace("-", "_"): o for o in options}
    key = value.lower().replace("-", "_")
    if key in lowered and lowered[key] != value:
        return lowered[key]
    for low, option in lowered.items():  # an abbreviation: deepep_ll for deepep_low_latency
        parts = low.split("_")
        if any(key == "_".join(parts[:i] + ["".join(p[:1] for p in parts[i:])]) for i in range(len(parts) - 1)):
            return option
    match = difflib.get_close_matches(key, list(lowered), n=1, cutoff=0.6)
    return lowered[match[0]] if match else None


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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
    """

    path: str
    message: str
    value: Any = None
    allowed: Any = None
    file: str | None = None
    entry: str | None = None
    keyword: str | None = None

    def suggestion(self) -> str | None:
        if isinstance(self.allowed, (list, tuple)):
            return did_you_mean(self.value, self.allowed)
        return None

    def format(self) -> str:
        where = ":".join(p for p in (self.file, self.entry) if p)
        head = f"{where}: {self.path}" if where else self.path
        text = f"{head}: {self.message}"
        if self.value is not None and not _says(self.message, _short(self.value)):
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
            "message": self.message,
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
            return f"bad {wheres.pop()}"
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


class TableError(_IssuesError):
    """A capability table set failed schema or semantic validation; nothing was loaded."""

    headline = "invalid capability tables"
