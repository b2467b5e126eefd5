"""The one place where a path the operator wrote becomes a path to open.

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
expanded path.
"""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["shown_path", "user_path"]


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
    """What a message names for ``path``, found from ``text`` by :func:`user_path`: ``text`` as
    written when it starts with ``~`` (the operator's spelling, not the home directory), else
    ``path`` (``text`` under its base directory, as before expansion).

    >>> shown_path("~/x.yaml", user_path("~/x.yaml")), shown_path("x.yaml", user_path("x.yaml", Path("/srv")))
    ('~/x.yaml', '/srv/x.yaml')
    """
    text = os.fspath(text)
    return text if text.startswith("~") else str(path)
