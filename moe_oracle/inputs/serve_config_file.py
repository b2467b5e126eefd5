"""Which of a serve line's flags came from its ``--config`` YAML file, so that a problem with
one of them names the file it was written in.

vLLM splices the file's keys into the command line as flags before argparse sees them
(``FlexibleArgumentParser._pull_args_from_config``, vLLM 0.29.0-0.34.0
vllm/utils/argparse_utils.py), so its own refusals name a flag the operator never typed. We keep
the flag name (it is what vLLM says) and add the file (:attr:`InputIssue.file`) wherever the file
alone gave the flag; a flag given on the command line too is left unattributed, since either
occurrence may be the bad one.
"""

from __future__ import annotations

import copy
import re
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Iterable, Iterator, Mapping

from ..core.errors import ConfigError, InputIssue
from .serve_argv import ConfigSplice

__all__ = ["ConfigFileFlags", "charged_to_config_file", "config_file_flags", "dest_of_options"]

# A refusal names its flag in the issue path ("--serve --tensor-parallel-size", "--serve
# --kernel-config moe_backend") or, for argparse's own refusals, in the message ("argument
# --dtype: invalid choice ...", "ambiguous option: --dp could match ...").
_ARGPARSE_FLAG = re.compile(r"(?:argument|ambiguous option:) (-{1,2}[\w.-]+)")


@dataclass(frozen=True)
class ConfigFileFlags:
    """The destinations (argparse ``dest``) and unknown flag names a ``--config`` file gave
    and the command line did not.

    Attributes:
        file: the file as the operator wrote it (a leading ``~`` kept).
        dests: argparse destinations set only by the file (``tensor_parallel_size``).
        unknown: flags the release does not know, written only in the file (``--nonsense-key``).
        dest_of: option string -> destination, for every option of the release's serve parser.
    """

    file: str
    dests: frozenset[str]
    unknown: frozenset[str]
    dest_of: Mapping[str, str]

    def gave(self, flag: str) -> bool:
        """Whether ``flag`` (an option string as a message names it) came from the file alone."""
        dest = self.dest_of.get(flag)
        return dest in self.dests if dest is not None else flag in self.unknown

    def charge(self, exc: ConfigError) -> ConfigError:
        """``exc`` with every problem in a flag the file alone gave naming the file; ``exc``
        itself when there is none (or a problem names a file already)."""
        issues = [self._charged(issue) for issue in exc.issues]
        if all(a is b for a, b in zip(issues, exc.issues)):
            return exc
        charged = copy.copy(exc)  # the same class and headline (errors copy by their attributes)
        charged.issues = tuple(issues)
        charged.args = (str(charged),)
        return charged

    def charge_issues(self, issues: list[InputIssue]) -> list[InputIssue]:
        """:meth:`charge` for problems not raised (a deployment's start refusals)."""
        return [self._charged(issue) for issue in issues]

    def _charged(self, issue: InputIssue) -> InputIssue:
        if issue.file is not None:
            return issue
        words = issue.path.split()
        if words[:1] != ["--serve"]:
            return issue
        if len(words) > 1:
            flag = words[1]
        else:
            named = _ARGPARSE_FLAG.search(issue.message)
            if named is None:
                return issue
            flag = named.group(1)
        return replace(issue, file=self.file) if self.gave(flag) else issue


def _flags(words: Iterable[str]) -> list[str]:
    """The option strings among argv ``words``: ``--x=1`` -> ``--x``, ``--x.y`` -> ``--x``."""
    return [w.split("=", 1)[0].split(".", 1)[0] for w in words if w.startswith("-") and len(w) > 1 and not w[1:2].isdigit()]


@contextmanager
def charged_to_config_file(from_config: ConfigFileFlags | None) -> Iterator[None]:
    """Re-raise a :class:`ConfigError` from the block with its problems in flags the ``--config``
    file alone gave naming that file (:meth:`ConfigFileFlags.charge`); others pass unchanged."""
    try:
        yield
    except ConfigError as exc:
        charged = from_config.charge(exc) if from_config is not None else exc
        if charged is exc:
            raise
        raise charged from None


def dest_of_options(serve_flags: Iterable[Mapping[str, object]]) -> dict[str, str]:
    """Option string -> argparse destination for a release's serve flags (its facts file's
    ``serve_flags``: ``options`` and ``negative`` spellings)."""
    return {str(o): str(f["dest"]) for f in serve_flags for key in ("options", "negative") for o in (f.get(key) or ())}  # type: ignore[union-attr]


def config_file_flags(splice: ConfigSplice, dest_of: Mapping[str, str]) -> ConfigFileFlags:
    """What a ``--config`` file gave that the command line did not, by argparse destination
    (so ``-tp 8`` on the line and ``tensor-parallel-size`` in the file are the same flag).

    Args:
        splice: the file and its words, and the line's (:func:`~moe_oracle.inputs.serve_argv.vllm_rewrite`).
        dest_of: every option string of the release's serve parser -> its destination
            (:func:`dest_of_options`).

    >>> f = config_file_flags(ConfigSplice("s.yaml", ("--tensor-parallel-size", "eight", "--oops", "1"), ("m", "-tp", "2", "--dtype", "x")), {"-tp": "tp", "--tensor-parallel-size": "tp", "--dtype": "dtype"})
    >>> sorted(f.dests), sorted(f.unknown), f.gave("--oops"), f.gave("--tensor-parallel-size")
    ([], ['--oops'], True, False)
    """
    def split(words: Iterable[str]) -> tuple[set[str], set[str]]:
        flags = _flags(words)
        return {dest_of[f] for f in flags if f in dest_of}, {f for f in flags if f not in dest_of}

    file_dests, file_unknown = split(splice.file_words)
    cli_dests, cli_unknown = split(splice.cli_words)
    return ConfigFileFlags(splice.file, frozenset(file_dests - cli_dests), frozenset(file_unknown - cli_unknown), dest_of)
