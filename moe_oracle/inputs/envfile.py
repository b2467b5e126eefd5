"""Read the environment an operator already has on file: pip, uv and vLLM's own reports.

Four formats are recognised from their content:

* ``pip freeze`` / ``uv pip freeze``: one requirement per line (``name==1.2``,
  ``name @ git+https://...``, ``-e git+...#egg=name``), parsed with
  ``packaging.requirements.Requirement``. An editable install without a VCS URL is the
  comment pip writes before it (``# Editable install with no version control (vllm==0.33.0)``)
  then ``-e /path``: the comment gives the name and version; a bare ``-e /path`` with neither
  that comment nor ``#egg=`` names no package and is skipped with a note. A bare ``name`` line,
  which pip never writes (a file cut short), is refused, naming the line. It lists every
  installed distribution (pip leaves out its own pip, setuptools, wheel and distribute), so
  any other package is absent.
* ``pip list --format=json`` / ``uv pip list --format=json``: a JSON array of
  ``{"name", "version"}`` objects; complete, like ``pip freeze``.
* ``pip list`` / ``uv pip list`` (columns): a ``Package Version`` header, a dashed rule,
  then one ``name version [location]`` row per distribution; complete.
* ``vllm collect-env`` (vLLM 0.33.0-0.34.0 vllm/collect_env.py): ``[pip3] name==version`` lines of
  the packages its name filter keeps (torch, numpy, triton, nvidia*, flashinfer-python, ...),
  ``vLLM Version : X``, the GPU list (``GPU 0: NVIDIA H200`` from ``nvidia-smi -L``, its
  ``(UUID: GPU-...)`` dropped, or
  ``AMD Instinct MI300X (gfx942...)`` from torch on ROCm) and the ``VAR=value`` lines of its
  Environment Variables section. Packages it does not list are *unknown*, not absent: the
  filter also hides names spelled another way. Its ``CUDA runtime version`` is what
  ``nvcc --version`` printed (vllm/collect_env.py get_running_cuda_version): a version says
  ``nvcc`` is on PATH, ``Could not collect`` that it is not (host tool ``nvcc``).

Local versions (``2.14.0+cu130``) are PEP 440 versions. A direct reference without a
version (``deep_gemm @ git+...``) is installed at an unknown version: predicates on its
version abstain (``pip list --format=json`` reports the version and is the better input).
A direct reference to a wheel (``vllm @ file:///wheels/vllm-0.31.0-cp38-abi3-linux_x86_64.whl``)
states its version in the filename (PEP 427), read with ``packaging.utils.parse_wheel_filename``;
the reader notes that the version comes from the filename.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from ..core.errors import ConfigError, InputIssue, did_you_mean
from ..core.names import non_ascii_message
from ..core.packages import MAX_VERSION_CHARS, PackageSpec, canonical_name, parse_requirement, parse_version, unique_specs
from .paths import read_user_file

__all__ = ["EnvironmentFile", "parse_environment_text", "read_environment_file"]


MAX_ENV_FILE_BYTES = 8 * 1024 * 1024
MAX_ENV_LINES = 20_000
MAX_ENV_PACKAGES = 10_000
MAX_ENV_LINE_CHARS = 4096
"""An environment file has at most this many lines (a ``pip freeze`` of a large environment has
about a thousand; ``vllm collect-env`` a few hundred) and packages, and lines of at most this many
characters (``NAME @ URL``): past them reading it would cost seconds per file, and nothing real is
that large."""


@dataclass(frozen=True)
class EnvironmentFile:
    """What an environment file says.

    Attributes:
        path: the file as given.
        format: ``pip freeze``, ``pip list --format=json``, ``pip list`` or ``vllm collect-env``.
        packages: every distribution listed, in file order.
        complete: the file lists every installed distribution (so an unlisted one is absent).
        env: ``(name, value)`` of the environment variables the file records.
        gpus: device names as the file prints them (``NVIDIA H200``), in order.
        notes: what the reader could not take at face value.
        tools: ``(name, found)`` of the host tools the file reveals (collect-env: ``nvcc``).
    """

    path: str
    format: str
    packages: tuple[PackageSpec, ...]
    complete: bool
    env: tuple[tuple[str, str], ...] = ()
    gpus: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    tools: tuple[tuple[str, bool], ...] = ()


def read_environment_file(path: str | Path, known: Iterable[str] = ()) -> EnvironmentFile:
    """Read and parse an environment file (see the module doc for the formats); ``known``: the
    package names a bad line is compared with for a did-you-mean (the tables' packages).

    Raises:
        ConfigError: not a regular file or a pipe (a directory, a device), unreadable, not UTF-8,
            too large, or in none of the formats; problems name the file and line.
    """
    # A regular file, or a pipe (``--environment <(pip freeze)``: the file is read once).
    read = read_user_file(path, "--environment", MAX_ENV_FILE_BYTES, pipe=True, headline="bad --environment")
    display, raw = read.shown, read.data
    if len(raw) > MAX_ENV_FILE_BYTES:
        raise ConfigError([InputIssue("--environment", f"larger than {MAX_ENV_FILE_BYTES} bytes", display, None, display)], headline="bad --environment")
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ConfigError([InputIssue("--environment", f"not UTF-8 (invalid byte at offset {exc.start})", display, None, display)], headline="bad --environment") from None
    return parse_environment_text(text, display, known)


_COLLECT_ENV_MARKERS = ("Versions of relevant libraries", "vLLM Version", "Collecting environment information", "PyTorch version")
_GPU_LINE = re.compile(r"^\s*GPU \d+: (.+?)\s*$")
_GPU_UUID = re.compile(r"\s*\(UUID: [^)]*\)\s*$")


def _gpu_name(text: str) -> str:
    """A GPU as ``nvidia-smi -L`` names it, without the ``(UUID: GPU-...)`` each line carries.

    >>> _gpu_name("NVIDIA H200 (UUID: GPU-0d3c5f2a-1b2c-4d5e-8f90-123456789abc)")
    'NVIDIA H200'
    """
    return _GPU_UUID.sub("", text).strip()


def parse_environment_text(text: str, path: str = "<text>", known: Iterable[str] = ()) -> EnvironmentFile:
    """Parse the content of an environment file; ``path`` is used in messages, ``known`` (package
    names) for a did-you-mean on a bare name.

    Raises:
        ConfigError: in none of the formats, or a line that does not parse.
    """
    stripped = text.strip()
    if not stripped:
        raise ConfigError([InputIssue("--environment", "the file is empty", path, None, path)], headline="bad --environment")
    if stripped.startswith("["):
        return _pip_json(stripped, path)
    lines = text.splitlines()
    if len(lines) > MAX_ENV_LINES:
        raise ConfigError([InputIssue("--environment", f"has {len(lines)} lines; at most {MAX_ENV_LINES} are read (a pip freeze of a large environment has about a thousand)", None, {"maxLines": MAX_ENV_LINES}, path)], headline="bad --environment")
    long = next((i for i, ln in enumerate(lines, start=1) if len(ln) > MAX_ENV_LINE_CHARS), None)
    if long is not None:
        raise ConfigError([InputIssue(f"line {long}", f"has {len(lines[long - 1])} characters; at most {MAX_ENV_LINE_CHARS} are read", None, {"maxLength": MAX_ENV_LINE_CHARS}, path)], headline="bad --environment")
    if any(marker in text for marker in _COLLECT_ENV_MARKERS):
        return _collect_env(text, path)
    first = next((ln for ln in lines if ln.strip()), "")
    if re.match(r"^\s*Package\s+Version\b", first):
        return _pip_columns(lines, path)
    return _pip_freeze(lines, path, tuple(known))


def _line_error(path: str, number: int, line: str, message: str) -> ConfigError:
    return ConfigError([InputIssue(f"line {number}", message, line.strip(), None, path)], headline="bad --environment")


# pip freeze names an editable install without a VCS URL in a comment on the line before it:
# "# Editable install with no version control (vllm==0.33.0)", "# Editable Git install with no remote (...)".
_EDITABLE_COMMENT = re.compile(r"^\s*#\s*Editable\b.*\(\s*([A-Za-z0-9][A-Za-z0-9._-]*)\s*==\s*([^\s()]+)\s*\)\s*$", re.IGNORECASE | re.ASCII)


_BARE_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*(\[[^\]]*\])?$")


def _bare_name_error(path: str, number: int, line: str, known: tuple[str, ...], others: list[str]) -> ConfigError:
    """A bare ``NAME`` line: ``pip freeze`` always writes a version or a location (a truncated
    file's last line is the usual cause), and reading it as installed at an unknown version would
    hide what was cut off."""
    name = line.strip()
    candidates = sorted({canonical_name(n) for n in (*known, *others)} - {canonical_name(name)})
    guess = did_you_mean(canonical_name(name), candidates)
    return ConfigError([InputIssue(f"line {number}", "a bare package name: pip freeze writes NAME==VERSION, NAME @ URL or -e ... on every line (is the file cut short?)"
                                   + (f"; did you mean {guess!r}?" if guess else ""), name, ["NAME==VERSION", "NAME @ URL", "-e URL#egg=NAME"], path)], headline="bad --environment")


def _pip_freeze(lines: list[str], path: str, known: tuple[str, ...] = ()) -> EnvironmentFile:
    packages = []
    notes: list[str] = []
    editable: tuple[str, str] | None = None  # (name, version) from the comment pip writes before "-e PATH"
    for number, line in enumerate(lines, start=1):
        comment = _EDITABLE_COMMENT.match(line)
        if comment:
            editable = (comment.group(1), comment.group(2))
            continue
        body = line.split(" #", 1)[0].strip() if not line.lstrip().startswith("#") else ""
        if not body or body.startswith(("-i ", "--index-url", "--extra-index-url", "-f ", "--find-links")):
            continue
        named, editable = editable, None
        if body.startswith(("-e ", "--editable ")) and not re.search(r"[#&]egg=", body):
            target = body.split(None, 1)[1] if len(body.split(None, 1)) > 1 else ""
            if named is None:
                notes.append(f"line {number} ({body}) was skipped: an editable install that names no package (no #egg=NAME and no pip comment before it)")
                continue
            try:
                parse_version(named[1])
            except ValueError:  # InvalidVersion, or a number past int()'s 4300-digit limit
                raise _line_error(path, number - 1, lines[number - 2], f"not a PEP 440 version of at most {MAX_VERSION_CHARS} characters: {named[1]!r}") from None
            packages.append((PackageSpec(canonical_name(named[0]), named[1], target or None), f"line {number}"))
            continue
        if _BARE_NAME.match(body):
            raise _bare_name_error(path, number, body, known, [spec.name for spec, _ in packages])
        try:
            spec = parse_requirement(body, "--environment")
        except ConfigError as exc:
            raise _line_error(path, number, line, exc.issues[0].message + "; expected the output of pip freeze, pip list (--format=json), uv pip list or vllm collect-env") from None
        packages.append((spec, f"line {number}"))
        note = spec.version_note()
        if note:
            notes.append(f"line {number}: {note}")
    if not packages:
        raise ConfigError([InputIssue("--environment", "no package found; expected the output of pip freeze, pip list (--format=json), uv pip list or vllm collect-env", path, None, path)], headline="bad --environment")
    return EnvironmentFile(path, "pip freeze", unique_specs(packages, "--environment", path), True, notes=tuple(notes))


def _pip_json(text: str, path: str) -> EnvironmentFile:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError, ValueError) as exc:
        raise ConfigError([InputIssue("--environment", f"looks like pip list --format=json but is not valid JSON: {exc}", path, None, path)], headline="bad --environment") from None
    if not isinstance(data, list):
        raise ConfigError([InputIssue("$", "pip list --format=json is an array of {name, version}", type(data).__name__, None, path)], headline="bad --environment")
    if len(data) > MAX_ENV_PACKAGES:
        raise ConfigError([InputIssue("$", f"lists {len(data)} packages; at most {MAX_ENV_PACKAGES} are read", None, {"maxItems": MAX_ENV_PACKAGES}, path)], headline="bad --environment")
    packages = []
    for i, item in enumerate(data):
        if not isinstance(item, dict) or not isinstance(item.get("name"), str) or not isinstance(item.get("version"), str):
            raise ConfigError([InputIssue(f"$[{i}]", "each entry needs a string name and version", item, None, path)], headline="bad --environment")
        try:
            parse_version(item["version"])
        except ValueError:  # InvalidVersion, or a number past int()'s 4300-digit limit
            raise ConfigError([InputIssue(f"$[{i}].version", f"not a PEP 440 version of at most {MAX_VERSION_CHARS} characters", item["version"], None, path)], headline="bad --environment") from None
        if (odd := non_ascii_message("package", item["name"])) is not None:
            raise ConfigError([InputIssue(f"$[{i}].name", odd, item["name"], None, path)], headline="bad --environment")
        packages.append((PackageSpec(canonical_name(item["name"]), item["version"]), f"$[{i}]"))
    return EnvironmentFile(path, "pip list --format=json", unique_specs(packages, "--environment", path), True)


def _pip_columns(lines: list[str], path: str) -> EnvironmentFile:
    packages = []
    for number, line in enumerate(lines, start=1):
        cols = line.split()
        if not cols or number == 1 or set(line.strip()) <= {"-", " "}:
            continue
        if len(cols) < 2:
            raise _line_error(path, number, line, "expected NAME VERSION (pip list / uv pip list columns)")
        try:
            parse_version(cols[1])
        except ValueError:  # InvalidVersion, or a number past int()'s 4300-digit limit
            raise _line_error(path, number, line, f"not a PEP 440 version of at most {MAX_VERSION_CHARS} characters: {cols[1]!r}") from None
        if (odd := non_ascii_message("package", cols[0])) is not None:
            raise _line_error(path, number, line, odd)
        packages.append((PackageSpec(canonical_name(cols[0]), cols[1]), f"line {number}"))
    return EnvironmentFile(path, "pip list", unique_specs(packages, "--environment", path), True)


def _collect_env(text: str, path: str) -> EnvironmentFile:
    packages: dict[str, PackageSpec] = {}
    pip_lines: list[tuple[PackageSpec, str]] = []
    conda: dict[str, PackageSpec] = {}  # [conda] rows: a package pip also lists is pip's
    env: list[tuple[str, str]] = []
    gpus: list[str] = []
    notes: list[str] = []
    tools: tuple[tuple[str, bool], ...] = ()
    lines = text.splitlines()
    in_env = False
    in_gpus = False
    vllm_version = None
    for number, line in enumerate(lines, start=1):
        stripped = line.strip()
        if stripped == "Environment Variables":
            in_env = True
            continue
        if in_env:
            if stripped.startswith("=") or not stripped:
                continue
            if "=" in stripped and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", stripped):
                name, value = stripped.split("=", 1)
                env.append((name, value))
            continue
        if stripped.startswith(("[pip3] ", "[pip] ")):
            body = stripped.split("] ", 1)[1].strip()
            if body in ("No relevant packages", "Could not collect"):
                continue
            try:
                spec = parse_requirement(body, "--environment")
            except ConfigError as exc:
                raise _line_error(path, number, line, exc.issues[0].message) from None
            pip_lines.append((spec, f"line {number}"))
            continue
        if stripped.startswith("[conda] "):
            cols = stripped.split()[1:]
            if len(cols) >= 2 and cols[0] not in ("No", "Could"):
                try:
                    parse_version(cols[1])
                except ValueError:  # InvalidVersion, or a number past int()'s 4300-digit limit
                    continue
                conda.setdefault(canonical_name(cols[0]), PackageSpec(canonical_name(cols[0]), cols[1]))
            continue
        key, sep, value = line.partition(":")
        key, value = key.strip(), value.strip()
        if sep and key == "vLLM Version" and value:
            vllm_version = value.split()[0]
            continue
        if sep and key == "CUDA runtime version" and value and value != "No CUDA":
            # vLLM's collect-env runs `nvcc --version` through the shell: a version means nvcc is on PATH.
            found = value != "Could not collect"
            tools = (("nvcc", found),)
            if not found:
                notes.append("CUDA runtime version: Could not collect (collect-env could not run `nvcc --version`): nvcc is taken as not on PATH")
            continue
        if sep and key == "GPU models and configuration":
            in_gpus = True
            if value and value not in ("Could not collect", "No CUDA"):
                # One GPU: `nvidia-smi -L`'s single line stays on the key's line (vLLM 0.33.0-0.34.0
                # vllm/collect_env.py get_gpu_info, maybe_start_on_next_line).
                single = _GPU_LINE.match(value)
                gpus.append(_gpu_name(single.group(1) if single else value))
            continue
        if in_gpus:
            match = _GPU_LINE.match(line)
            if match:
                gpus.append(_gpu_name(match.group(1)))
                continue
            if stripped:
                in_gpus = False
    packages.update({spec.name: spec for spec in unique_specs(pip_lines, "--environment", path)})
    for name, spec in conda.items():
        packages.setdefault(name, spec)
    if vllm_version is not None and "vllm" not in packages:
        try:
            parse_version(vllm_version)
            packages["vllm"] = PackageSpec("vllm", vllm_version)
        except ValueError:  # InvalidVersion, or a number past int()'s 4300-digit limit
            notes.append(f"vLLM Version {vllm_version!r} is not a PEP 440 version: vllm's version is unknown")
    notes.append("vllm collect-env lists only the packages its name filter keeps (torch, numpy, triton, nvidia*, flashinfer-python, ...): packages it does not list are unknown, not absent")
    if len(set(gpus)) > 1:
        notes.append(f"the file lists different GPUs ({', '.join(dict.fromkeys(gpus))}); the first one is used")
    return EnvironmentFile(path, "vllm collect-env", tuple(packages.values()), False, tuple(env), tuple(gpus), tuple(notes), tools)
