"""The one place where a path the operator wrote becomes a path to open, and where a file the
operator named is opened.

Every path the inputs layer reads goes through :func:`user_path`: ``--config``, ``--model``,
``--hf-quant-config``, ``--environment`` (and ``diff``'s environment-file sides), a MoEConfig
file's ``model.hf_config`` / ``model.hf_quant_config``, a serve line's MODEL,
``--hf-config-path`` and ``--config``; the CLI's ``--tables``, ``matrix --html`` and
``verify``'s path flags too, the path flags of the harness's standalone scripts
(``python -m moe_oracle.verify.<script>``) and ``tools.schemagen``, and ``$MOE_ORACLE_VLLM_ENV``
(``tests/unit/test_paths.py`` finds any argparse ``type=Path`` in the package). A shell expands a leading ``~`` only in a word it splits itself,
so ``--model=~/m``, a quoted ``'~/m'``, a path inside a ``--serve`` string or a file reach this
package unexpanded.

Messages keep naming what the operator wrote (``~/cfg.json``); only the filesystem sees the
expanded path (:func:`shown_path`, also for a file found under or beside it:
``~/ck/config.json`` for ``--model ~/ck``).

Every file the operator names is read through :func:`read_user_file`, which refuses anything
but a regular file (after following symbolic links) before opening it: a directory, a named
pipe (bash's ``<(...)``; taken only where a flag reads its file once, ``pipe=True``), a device
or a socket, charged to the flag or field that named it. :func:`user_directory` does the same
for a flag that names a directory (``--tables``).
"""

from __future__ import annotations

import errno
import os
import stat
from dataclasses import dataclass
from pathlib import Path

from ..core.errors import ConfigError, InputIssue

__all__ = ["SYMLINK_LOOP", "UserFile", "not_regular_file", "read_user_file", "refuse_special_file", "shown_path", "user_directory", "user_path"]


def user_path(text: str | os.PathLike[str], base: Path | None = None) -> Path:
    """The path ``text`` names: a leading ``~`` or ``~user`` expanded as a POSIX shell expands
    it (:func:`os.path.expanduser`; a ``~user`` of no such user, or one no user name can be,
    stays as written), then, when still relative, taken under ``base`` (the directory of the
    file that named it; ``None``: the working directory).

    >>> str(user_path("/etc/cfg.json")), str(user_path("cfg.json", Path("/srv/m"))), str(user_path("a/~b"))
    ('/etc/cfg.json', '/srv/m/cfg.json', 'a/~b')
    >>> user_path("~/cfg.json", Path("/srv/m")) == Path.home() / "cfg.json"
    True
    """
    text = os.fspath(text)
    try:
        path = Path(os.path.expanduser(text))
    except ValueError:  # ~NAME with a NUL byte (from a file): pwd cannot look it up; the open says why it fails
        path = Path(text)
    if base is not None and not path.is_absolute():
        path = base / path
    return path


def shown_path(text: str | os.PathLike[str], path: Path) -> str:
    """What a message names for ``path``, found from ``text`` by :func:`user_path` (or a file
    under or beside it: a checkpoint directory's ``config.json``, the ``hf_quant_config.json``
    beside a config): ``text`` as written when ``path`` is what it names and it starts with
    ``~`` (the operator's spelling, not the home directory); a path under the directory that
    ``~`` stood for keeps that ``~``; else ``path`` (``text`` under its base directory, as
    before expansion).

    >>> shown_path("~/x.yaml", user_path("~/x.yaml")), shown_path("x.yaml", user_path("x.yaml", Path("/srv")))
    ('~/x.yaml', '/srv/x.yaml')
    >>> shown_path("~/ck", user_path("~/ck") / "config.json")
    '~/ck/config.json'
    """
    text = os.fspath(text)
    if not text.startswith("~"):
        return str(path)
    if path == user_path(text):
        return text
    tilde = text.split("/", 1)[0]
    home = user_path(tilde)
    if str(home) == tilde:  # a ~user of no such user: nothing was expanded
        return str(path)
    try:
        rest = path.relative_to(home)
    except ValueError:
        return str(path)
    return tilde if str(rest) == "." else f"{tilde}/{rest}"


SYMLINK_LOOP = "a symbolic link loop"

_KINDS = ((stat.S_ISDIR, "a directory"), (stat.S_ISFIFO, "a named pipe (such as bash's <(...))"), (stat.S_ISCHR, "a character device"),
          (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"))


def not_regular_file(path: Path) -> str | None:
    """What ``path`` is when it exists and is not a regular file, after following symbolic links
    (``"a directory"``, ``"a named pipe (such as bash's <(...))"``, ``"a character device"``, ...);
    ``None`` for a regular file, and for a path that cannot be looked at (missing, a name too
    long, a NUL byte: opening it says why).

    A symbolic link that leads back to itself is ``"a symbolic link loop"`` (opening it says
    "too many levels of symbolic links", which read as "no such file" where a reader first asks
    whether the file exists).

    >>> not_regular_file(Path("/")), not_regular_file(Path("/dev/null")), not_regular_file(Path("/no/such/file"))
    ('a directory', 'a character device', None)
    """
    try:
        mode = os.stat(path).st_mode
    except OSError as exc:
        return SYMLINK_LOOP if exc.errno == errno.ELOOP else None
    except ValueError:
        return None
    if stat.S_ISREG(mode):
        return None
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def _headline(flag: str) -> str | None:
    """``bad --flag`` for a command-line flag (``--serve --config`` -> ``bad --serve``); ``None``
    for a field of a file (the error is then headed by the file)."""
    return f"bad {flag.split()[0]}" if flag.startswith("--") else None


def _refusal(flag: str, shown: str, kind: str, file: str | None, *, directory: bool, pipe: bool) -> ConfigError:
    wanted = "a regular file" + (" or a directory" if directory else "") + (" or a pipe" if pipe else "")
    advice = ("give a file's path" if kind == "a directory" else "point the link at the file, or give the file's path" if kind == SYMLINK_LOOP
              else "save the document to a file and give its path")
    return ConfigError([InputIssue(flag, f"{shown!r} is {kind}, not {wanted}: {advice}", shown, None, file, keyword="file_type")], headline=_headline(flag))


def refuse_special_file(path: Path, flag: str, shown: str, *, file: str | None = None, directory: bool = False, pipe: bool = False) -> str | None:
    """Refuse ``path`` when it exists and is no regular file (after following symbolic links),
    nor a directory where ``directory``, nor a named pipe where ``pipe``; said before anything
    opens it (a pipe nothing writes to would block the read forever).

    Returns:
        what ``path`` is when it is let through as a directory or a pipe (:func:`not_regular_file`),
        ``None`` for a regular file or a path that cannot be looked at (the open says why).

    Raises:
        ConfigError: charged to ``flag`` (and ``file``), naming ``shown``, what it is and what
            ``flag`` takes (``keyword="file_type"``; headed ``bad --flag`` for a flag).
    """
    kind = not_regular_file(path)
    if kind is None or (directory and kind == "a directory") or (pipe and kind.startswith("a named pipe")):
        return kind
    raise _refusal(flag, shown, kind, file, directory=directory, pipe=pipe)


@dataclass(frozen=True)
class UserFile:
    """A file the operator named, read.

    Attributes:
        path: the path opened (a leading ``~`` expanded, under the naming file's directory).
        shown: the path as messages name it (:func:`shown_path`).
        data: its first ``limit + 1`` bytes (one more than the reader takes, so that it can
            tell a file that is too large).
    """

    path: Path
    shown: str
    data: bytes


def read_user_file(text: str | os.PathLike[str], flag: str, limit: int, *, base: Path | None = None, shown: str | None = None, file: str | None = None,
                   pipe: bool = False, headline: str | None = None) -> UserFile:
    """Read the file ``text`` names (:func:`user_path`), at most ``limit + 1`` bytes: a device
    such as ``/dev/zero`` never ends.

    Anything but a regular file (after following symbolic links) is refused before it is
    opened: a directory, a device, a socket, and a named pipe unless ``pipe`` (a flag that
    reads its file once and takes ``<(pip freeze)``; the read waits for the pipe's writer, as
    ``cat`` does). The file is opened non-blocking and looked at again, so that a path that
    became a pipe in between is refused rather than waited on.

    Args:
        flag: the flag or field that named it (``--config``, ``$.model.hf_config``).
        shown: how messages name it (default: :func:`shown_path` of ``text``).
        file: the file an issue is charged to (default: ``shown``; a config file for a field).
        headline: the error's headline (default: ``bad FLAG`` for a flag, else the file's).

    Raises:
        ConfigError: not a regular file (``keyword="file_type"``), or unreadable (missing, no
            permission, a NUL byte in the name), naming ``flag`` and the path as written.
    """
    path = user_path(text, base)
    shown = shown if shown is not None else shown_path(text, path)
    where = file if file is not None else shown
    kind = refuse_special_file(path, flag, shown, file=file, pipe=pipe)
    became: str | None = None  # what the path turned out to be once open, when not what it was
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC | (0 if kind is not None else os.O_NONBLOCK))
        with os.fdopen(fd, "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if stat.S_ISREG(mode) or (pipe and stat.S_ISFIFO(mode)):
                os.set_blocking(fd, True)
                data = handle.read(limit + 1)
            else:
                became = next((k for test, k in _KINDS if test(mode)), "not a regular file")
    except (OSError, ValueError) as exc:  # ValueError: a NUL or unencodable character in the name
        raise ConfigError([InputIssue(flag, f"cannot read: {getattr(exc, 'strerror', None) or exc}", shown, None, where)], headline=headline) from None
    if became is not None:
        raise _refusal(flag, shown, became, file, directory=False, pipe=pipe)
    return UserFile(path, shown, data)


def user_directory(text: str | os.PathLike[str], flag: str) -> Path:
    """The directory ``text`` names (:func:`user_path`), for a flag that takes one (``--tables``).

    Raises:
        ConfigError: it does not exist, or is not a directory (a file, a pipe, a device), once,
            naming ``flag`` and the path as written.
    """
    path = user_path(text)
    shown = shown_path(text, path)
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError) as exc:
        reason = ("does not exist" if isinstance(exc, FileNotFoundError) else f"is {SYMLINK_LOOP}" if getattr(exc, "errno", None) == errno.ELOOP
                  else f"cannot be read: {getattr(exc, 'strerror', None) or exc}")
        raise ConfigError([InputIssue(flag, f"{shown!r} {reason}; {flag} takes a directory", shown, None, keyword="file_type")], headline=f"bad {flag}") from None
    if not stat.S_ISDIR(mode):
        kind = "a regular file" if stat.S_ISREG(mode) else next((k for test, k in _KINDS if test(mode)), "not a directory")
        raise ConfigError([InputIssue(flag, f"{shown!r} is {kind}; {flag} takes a directory", shown, None, keyword="file_type")], headline=f"bad {flag}")
    return path
