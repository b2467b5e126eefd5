"""The software environment selection may read: installed packages and a closed list of env vars.

An :class:`Environment` is either *declared* (offline explanation: packages
given on the command line; any other package is unknown, so predicates on it
abstain and are recorded as assumptions) or *probed* from the running machine
(:func:`probe_environment`: every package the tables name is looked up, so a
package not found is known to be absent). Besides packages and variables it may say which
host tools of the closed list :data:`HOST_TOOLS` are found (FlashInfer's JIT toolchain); a tool
nobody declared or probed is unknown. It is frozen and carries a sha256 fingerprint that every
Decision echoes.

Only :func:`probe_environment` touches the host. Checks never read ``os.environ``.
"""

from __future__ import annotations

import enum
import hashlib
import json
import os
import platform as _platform
from pathlib import Path
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Iterable, Mapping, NoReturn

from packaging.version import InvalidVersion, Version

from .config import Device
from .names import non_ascii_message
from .packages import VENDORED, canonical_name, parse_requirement, provided_by, same_version, unique_specs
from .errors import ConfigError, InputIssue
from .vocab import Platform

__all__ = ["ABSENT", "HOST_TOOLS", "Environment", "parse_package_spec", "probe_device", "probe_environment", "probe_tools"]


class _Absent(enum.Enum):
    """Sentinel type: the package is known not to be installed."""

    ABSENT = "absent"

    def __repr__(self) -> str:
        return "absent"


ABSENT = _Absent.ABSENT


HOST_TOOLS: Mapping[str, str] = MappingProxyType({
    "nvcc": "`nvcc` is on PATH (vLLM 0.29.0-0.31.0 has_flashinfer() looks for it there only: shutil.which(\"nvcc\"))",
    "jit_nvcc": "the nvcc FlashInfer's JIT would run exists: <CUDA home>/bin/nvcc, the CUDA home being $CUDA_HOME, else $CUDA_PATH, "
                "else the directory above the `nvcc` on PATH, else /usr/local/cuda (vLLM 0.32.0+ vllm/utils/flashinfer.py _flashinfer_nvcc_path)",
    "ninja": "`ninja` is on PATH (vLLM 0.32.0+ has_flashinfer(): shutil.which(\"ninja\"))",
})
"""The closed list of host tools selection may read (field ``tools.<name>``): name -> what "found" means.

vLLM's has_flashinfer() needs FlashInfer's precompiled kernels (flashinfer-cubin, or
VLLM_HAS_FLASHINFER_CUBIN) or the toolchain its JIT runs; ``rules/constraints.yaml`` says which
tools each release reads. A declared ``nvcc`` stands for ``jit_nvcc`` too unless that is declared
(:mod:`moe_oracle.inputs.declared`): an nvcc on PATH is the one the JIT runs."""


@dataclass(frozen=True)
class Environment:
    """Installed packages and the environment variables the oracle reads.

    Attributes:
        packages: canonical package name -> installed version string: ``(name, version)``
            pairs, or a mapping (stored as sorted pairs).
        absent: canonical names known not to be installed (a collection of names, not one string).
        complete: every package not in ``packages`` is absent (probed environments).
        env: environment variable -> raw string value, only for variables that are set:
            ``(name, value)`` pairs, or a mapping (stored as sorted pairs). Values are strings.
        probed: built by :func:`probe_environment`.
        notes: what the probe could not determine, and where the packages were read.
        unversioned: canonical names installed at a version nobody declared (a direct
            reference such as ``deep_gemm @ git+...``): neither absent nor known, so
            predicates on them abstain even in a complete environment.
        tools: ``(name, found)`` of the host tools of :data:`HOST_TOOLS` that were declared or
            probed (a mapping is stored as sorted pairs); an unlisted tool is unknown, even in a
            complete environment (a package list says nothing of PATH).

    Raises:
        ConfigError: (a ``ValueError``) a field of the wrong shape (a bare string for a
            collection; ``packages``/``env`` items that are not ``(name, string)`` pairs; an empty
            name), one package or variable given two different values, a package declared both
            installed and absent, a version that is not PEP 440, ``complete`` or ``probed`` not a
            bool, or a tool outside
            :data:`HOST_TOOLS` or not given as a bool.
    """

    packages: tuple[tuple[str, str], ...] = ()
    absent: frozenset[str] = frozenset()
    complete: bool = False
    env: tuple[tuple[str, str], ...] = ()
    probed: bool = False
    notes: tuple[str, ...] = ()
    unversioned: frozenset[str] = frozenset()
    tools: tuple[tuple[str, bool], ...] = ()
    fingerprint: str = field(init=False, compare=False)

    def __post_init__(self) -> None:
        for flag in ("complete", "probed"):  # complete=1 would change the answer as True does, unsaid
            if not isinstance(getattr(self, flag), bool):
                raise ConfigError([InputIssue(flag, "must be True or False", getattr(self, flag), [True, False])], headline=f"bad Environment.{flag}")
        pairs = _pairs("packages", self.packages)
        _ascii_names("packages", [n for n, _ in pairs])
        _ascii_names("absent", _names("absent", self.absent))
        _ascii_names("unversioned", _names("unversioned", self.unversioned))
        packages = tuple(sorted(_unique_pairs("packages", ((canonical_name(n), v) for n, v in pairs))))
        object.__setattr__(self, "packages", packages)
        object.__setattr__(self, "absent", frozenset(canonical_name(n) for n in _names("absent", self.absent)))
        object.__setattr__(self, "env", tuple(sorted(_unique_pairs("env", _pairs("env", self.env)))))
        object.__setattr__(self, "notes", tuple(_names("notes", self.notes)))
        object.__setattr__(self, "unversioned", frozenset(canonical_name(n) for n in _names("unversioned", self.unversioned)) - {n for n, _ in packages})
        object.__setattr__(self, "tools", _tools(self.tools))
        clash = ({n for n, _ in packages} | self.unversioned) & self.absent
        if clash:
            raise ConfigError([InputIssue("--package", "package declared both installed and absent", sorted(clash), None)])
        for name, version in packages:
            try:
                Version(version)
            except InvalidVersion:
                raise ConfigError([InputIssue(f"--package {name}", "not a PEP 440 version", version, None)]) from None
        object.__setattr__(self, "fingerprint", self._fingerprint())
        object.__setattr__(self, "_versions", dict(packages))

    def _fingerprint(self) -> str:
        payload = json.dumps(
            {
                "packages": self.packages,
                "absent": sorted(self.absent),
                "complete": self.complete,
                "env": self.env,
                "probed": self.probed,
                **({"unversioned": sorted(self.unversioned)} if self.unversioned else {}),
                **({"tools": self.tools} if self.tools else {}),
            },
            sort_keys=True,
        )
        return hashlib.sha256(payload.encode()).hexdigest()[:16]

    def package(self, name: str) -> str | _Absent | None:
        """Installed version of ``name``, :data:`ABSENT`, or ``None`` when unknown."""
        return self.package_canonical(canonical_name(name))

    def package_canonical(self, key: str) -> str | _Absent | None:
        """:meth:`package` for a name already in PEP 503 canonical form (the selection hot path).

        A package another distribution provides (:data:`~moe_oracle.core.packages.PROVIDERS`)
        reads at that distribution's version; one whose module vLLM's wheel also carries
        (:data:`~moe_oracle.core.packages.VENDORED`: DeepGEMM, triton_kernels) reads, where it is
        not installed itself and not declared absent, at the installed vllm's version (unknown
        where that build may not carry it).

        >>> env = Environment({"vllm": "0.34.0"}, complete=True)
        >>> env.package("deep-gemm"), env.package("deep-ep"), Environment({"vllm": "0.34.0"}, {"deep-gemm"}, True).package("deep-gemm")
        ('0.34.0', absent, absent)
        """
        version = self._versions.get(key)  # type: ignore[attr-defined]
        if version is not None:
            return version
        if key in self.unversioned:
            return None
        for dist in provided_by(key):  # amd-aiter installs the module vLLM imports as aiter
            version = self._versions.get(dist)  # type: ignore[attr-defined]
            if version is not None:
                return version
            if dist in self.unversioned:
                return None
        if key in self.absent:
            return ABSENT
        vendored = VENDORED.get(key)
        if vendored is not None:  # vLLM's wheel carries a copy it imports when the package is not installed
            host = self._versions.get(vendored.host)  # type: ignore[attr-defined]
            if host is not None:
                carried = vendored.provides(host)
                if carried is not False:
                    return host if carried else None
            elif vendored.host in self.unversioned:
                return None
        return ABSENT if self.complete else None

    def tool(self, name: str) -> bool | None:
        """Whether host tool ``name`` (:data:`HOST_TOOLS`) is found; ``None`` when unknown."""
        for tool, found in self.tools:
            if tool == name:
                return found
        return None

    def with_tool(self, name: str, found: bool | None) -> "Environment":
        """Copy with host tool ``name`` found or not (``None``: unknown)."""
        tools = tuple((n, v) for n, v in self.tools if n != name) + (((name, found),) if found is not None else ())
        return replace(self, tools=tools)

    def env_value(self, name: str) -> str | None:
        """Raw value of environment variable ``name``, ``None`` when unset."""
        for var, value in self.env:
            if var == name:
                return value
        return None

    def with_package(self, name: str, version: str | None) -> "Environment":
        """Copy with ``name`` installed at ``version`` (``None``: removed, i.e. absent)."""
        key = canonical_name(name)
        packages = tuple((n, v) for n, v in self.packages if n != key)
        absent = self.absent - {key}
        if version is None:
            absent = absent | {key}
        else:
            packages = packages + ((key, version),)
        return Environment(packages, absent, self.complete, self.env, self.probed, self.notes, self.unversioned - {key}, self.tools)

    def with_env(self, name: str, value: str | None) -> "Environment":
        """Copy with environment variable ``name`` set to ``value`` (``None``: unset)."""
        env = tuple((n, v) for n, v in self.env if n != name)
        if value is not None:
            env = env + ((name, value),)
        return Environment(self.packages, self.absent, self.complete, env, self.probed, self.notes, self.unversioned, self.tools)

    def to_dict(self) -> dict[str, Any]:
        return {
            "packages": dict(self.packages),
            "absent": sorted(self.absent),
            "complete": self.complete,
            "env": dict(self.env),
            "probed": self.probed,
            "notes": list(self.notes),
            **({"unversioned": sorted(self.unversioned)} if self.unversioned else {}),
            **({"tools": dict(self.tools)} if self.tools else {}),
            "fingerprint": self.fingerprint,
        }

    @classmethod
    def declared(cls, packages: Iterable[str] = (), absent: Iterable[str] = (), env: Mapping[str, str] | None = None) -> "Environment":
        """Offline environment from requirement strings (``NAME==VERSION``, ``NAME @ URL``) and absent names.

        >>> Environment.declared(["flashinfer-python==0.7.2"]).package("flashinfer_python")
        '0.7.2'
        >>> Environment.declared(["deep_gemm @ git+https://github.com/deepseek-ai/DeepGEMM"]).unversioned
        frozenset({'deep-gemm'})

        One package declared twice must be declared at the same version:

        >>> Environment.declared(["vllm==0.10.0", "vllm==0.9.0"])
        Traceback (most recent call last):
        ...
        moe_oracle.core.errors.ConfigError: bad Environment.packages (1 problem):
          - --package vllm: declared twice with different versions: '0.10.0' and '0.9.0'; declare one version

        Raises:
            ConfigError: a spec that is not a requirement pinning one version, or a URL; one
                package at two different versions; a bare string for ``packages`` or
                ``absent``; ``env`` not a mapping of non-empty names to string values.
        """
        if isinstance(packages, (str, bytes)):
            _shape_error("packages", "expected a list of requirement strings (NAME==VERSION), not one string", packages)
        specs = unique_specs([(parse_requirement(spec) if isinstance(spec, str) else _not_a_spec(spec), None) for spec in packages], "--package")
        pairs = tuple((s.name, s.version) for s in specs if s.version is not None)
        unversioned = frozenset(s.name for s in specs if s.version is None)
        return cls(pairs, _names("absent", absent), False, _pairs("env", env if env is not None else {}), unversioned=unversioned)


def _shape_error(name: str, message: str, value: object) -> "NoReturn":
    raise ConfigError([InputIssue(name, message, value, None)], headline=f"bad Environment.{name}")


def _names(name: str, value: object) -> frozenset[str] | tuple[str, ...]:
    """``value`` as a collection of non-empty strings (a frozenset, or a tuple for ``notes``).

    Raises:
        ConfigError: ``value`` is one string, not iterable, or holds a non-string or empty item.
    """
    if isinstance(value, (str, bytes)):
        _shape_error(name, "expected a collection of strings, not one string (wrap it: [" + repr(value) + "])", value)
    try:
        items = tuple(value)  # type: ignore[arg-type]
    except TypeError:
        _shape_error(name, "expected a collection of strings", type(value).__name__)
    for item in items:
        if not isinstance(item, str) or (name != "notes" and not item.strip()):
            _shape_error(name, "every item must be a non-empty string", item)
    return items if name == "notes" else frozenset(items)


def _pairs(name: str, value: object) -> tuple[tuple[str, str], ...]:
    """``value`` (``(name, string)`` pairs or a mapping) as a tuple of pairs.

    Raises:
        ConfigError: one string, not iterable, an item that is not a pair, an empty name, or a
            value that is not a string (environment variables and versions are strings).
    """
    what = "NAME -> VERSION" if name == "packages" else "NAME -> VALUE"
    if isinstance(value, (str, bytes)):
        _shape_error(name, f"expected a mapping {what} or (name, value) pairs, not one string", value)
    if isinstance(value, Mapping):
        items = tuple(value.items())
    else:
        try:
            items = tuple(value)  # type: ignore[arg-type]
        except TypeError:
            _shape_error(name, f"expected a mapping {what} or (name, value) pairs", type(value).__name__)
    for item in items:
        if isinstance(item, (str, bytes)) or not isinstance(item, (tuple, list)) or len(item) != 2:
            _shape_error(name, f"every item must be a (name, value) pair (or give a mapping {what})", item)
        key, val = item
        if not isinstance(key, str) or not key.strip():
            _shape_error(name, "every name must be a non-empty string", key)
        if not isinstance(val, str):
            kind = "versions" if name == "packages" else "environment variable values"
            raise ConfigError([InputIssue(_item_path(name, key), f"{kind} are strings; got {type(val).__name__} (write {str(val)!r})", val, None)], headline=f"bad Environment.{name}")
    return tuple((k, v) for k, v in items)


def _tools(value: object) -> tuple[tuple[str, bool], ...]:
    """``value`` (``(name, found)`` pairs or a mapping) as sorted pairs of :data:`HOST_TOOLS` names and bools.

    Raises:
        ConfigError: one string, an item that is not a pair, a name outside :data:`HOST_TOOLS`,
            a value that is not a bool, or one tool given two values.
    """
    if isinstance(value, (str, bytes)):
        _shape_error("tools", "expected a mapping TOOL -> bool or (tool, bool) pairs, not one string", value)
    items = tuple(value.items()) if isinstance(value, Mapping) else tuple(value)  # type: ignore[arg-type]
    seen: dict[str, bool] = {}
    for item in items:
        if isinstance(item, (str, bytes)) or not isinstance(item, (tuple, list)) or len(item) != 2:
            _shape_error("tools", "every item must be a (tool, found) pair (or give a mapping TOOL -> bool)", item)
        name, found = item
        if name not in HOST_TOOLS:
            raise ConfigError([InputIssue(f"tools {name}", "not a host tool selection reads", name, sorted(HOST_TOOLS))], headline="bad Environment.tools")
        if not isinstance(found, bool):
            raise ConfigError([InputIssue(f"tools {name}", f"found or not is a bool; got {type(found).__name__}", found, [True, False])], headline="bad Environment.tools")
        if seen.get(name, found) != found:
            raise ConfigError([InputIssue(f"tools {name}", "declared both found and not found", None, None)], headline="bad Environment.tools")
        seen[name] = found
    return tuple(sorted(seen.items()))


def _ascii_names(name: str, names: Iterable[str]) -> None:
    """Refuse a package name holding a character outside ASCII (a lookalike such as the Kelvin
    sign U+212A would otherwise fold onto an ASCII name), with the character's code point.

    Raises:
        ConfigError: at the name's path (``--package NAME``, ``absent NAME``).
    """
    for key in names:
        if (odd := non_ascii_message("package", key)) is not None:
            raise ConfigError([InputIssue(_item_path(name, key), odd, key, None)], headline=f"bad Environment.{name}")


def _item_path(name: str, key: str) -> str:
    return f"--package {key}" if name == "packages" else f"{name} {key}"


def _unique_pairs(name: str, pairs: Iterable[tuple[str, str]]) -> tuple[tuple[str, str], ...]:
    """``pairs`` with repeats dropped (packages compared as versions, :func:`~moe_oracle.core.packages.same_version`;
    variables as text).

    Raises:
        ConfigError: one name given two different values.
    """
    same = same_version if name == "packages" else (lambda a, b: a == b)
    seen: dict[str, str] = {}
    for key, value in pairs:
        if key in seen and not same(seen[key], value):
            noun = "versions" if name == "packages" else "values"
            raise ConfigError([InputIssue(_item_path(name, key), f"declared twice with different {noun}: {seen[key]!r} and {value!r}; declare one", None, None)], headline=f"bad Environment.{name}")
        seen[key] = value
    return tuple(seen.items())


def _not_a_spec(spec: object) -> "NoReturn":
    raise ConfigError([InputIssue("--package", "expected NAME==VERSION", spec, None)], headline="bad --package")


def parse_package_spec(spec: str) -> tuple[str, str]:
    """Split ``"NAME==VERSION"`` (a requirement pinning one version; local versions allowed).

    >>> parse_package_spec("deep-gemm==2.1.0")
    ('deep-gemm', '2.1.0')
    >>> parse_package_spec("torch==2.14.0+cu130")
    ('torch', '2.14.0+cu130')

    Raises:
        ConfigError: not of that form, or an invalid version.
    """
    if not isinstance(spec, str):
        _not_a_spec(spec)
    parsed = parse_requirement(spec)
    if parsed.version is None:
        raise ConfigError([InputIssue("--package", "expected NAME==VERSION", spec, None)], headline="bad --package")
    return parsed.name, parsed.version


def probe_environment(package_names: Iterable[str], env_var_names: Iterable[str], tool_names: Iterable[str] = tuple(HOST_TOOLS)) -> Environment:
    """Read installed versions of ``package_names``, the values of ``env_var_names`` and which
    host tools of ``tool_names`` are found (:func:`probe_tools`).

    Never raises for a failed probe: the package counts as absent and a note says why.
    The result is ``complete``: packages not found are known absent.
    """
    from importlib import metadata

    packages: list[tuple[str, str]] = []
    notes: list[str] = []
    locations: dict[str, None] = {}
    for name in sorted({canonical_name(n) for n in package_names}):
        try:
            dist = metadata.distribution(name)
            packages.append((name, dist.version))
            locations[_site_of(dist)] = None
        except metadata.PackageNotFoundError:
            continue
        except Exception as exc:  # a broken dist-info must not break selection
            notes.append(f"package {name}: probe failed ({type(exc).__name__}: {exc}); treated as absent")
    notes.insert(0, probe_source(tuple(locations)))
    env = tuple((var, os.environ[var]) for var in sorted(set(env_var_names)) if var in os.environ)
    return Environment(tuple(packages), frozenset(), True, env, True, tuple(notes), tools=probe_tools(tool_names, os.environ))


def probe_tools(names: Iterable[str], environ: Mapping[str, str], which: Any = None) -> tuple[tuple[str, bool], ...]:
    """Look the host tools ``names`` (:data:`HOST_TOOLS`) up as vLLM does (``which``: the PATH
    lookup, ``shutil.which`` unless given; ``environ``: the variables CUDA_HOME / CUDA_PATH are read from).

    >>> found = {"nvcc": "/opt/cuda/bin/nvcc", "/opt/cuda/bin/nvcc": "/opt/cuda/bin/nvcc"}
    >>> probe_tools(["nvcc", "jit_nvcc", "ninja"], {}, found.get)
    (('jit_nvcc', True), ('ninja', False), ('nvcc', True))
    >>> probe_tools(["jit_nvcc"], {"CUDA_HOME": "/elsewhere"}, found.get)
    (('jit_nvcc', False),)
    """
    import shutil

    lookup = which or shutil.which
    out = []
    for name in sorted(set(names)):
        if name == "nvcc":
            out.append((name, lookup("nvcc") is not None))
        elif name == "ninja":
            out.append((name, lookup("ninja") is not None))
        elif name == "jit_nvcc":
            # vLLM 0.32.0+ _flashinfer_nvcc_path: the CUDA home is $CUDA_HOME, else $CUDA_PATH,
            # else two levels above the nvcc on PATH, else /usr/local/cuda; nvcc must sit in its bin/.
            home = environ.get("CUDA_HOME") or environ.get("CUDA_PATH")
            if not home:
                on_path = lookup("nvcc")
                home = os.path.dirname(os.path.dirname(on_path)) if on_path else "/usr/local/cuda"
            out.append((name, lookup(os.path.join(home, "bin", "nvcc")) is not None))
    return tuple(out)


def _site_of(dist: Any) -> str:
    """The directory a distribution was found in (its site-packages), or ``"?"``."""
    try:
        return str(Path(str(dist.locate_file(""))).resolve())
    except Exception:  # noqa: BLE001 - only used in a note
        return "?"


def probe_source(found_in: tuple[str, ...] = ()) -> str:
    """Which interpreter the probe ran in and which site-packages it read, one sentence.

    ``found_in``: directories where probed packages were found; the interpreter's own
    ``purelib``/``platlib`` are always named.
    """
    import sys
    import sysconfig

    paths = dict.fromkeys([sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *found_in])
    paths.pop("?", None)
    return f"probed packages of {sys.executable} (Python {_platform.python_version()}, prefix {sys.prefix}); site-packages: {', '.join(paths)}"


def probe_device() -> tuple[Device, tuple[str, ...]]:
    """The device this process would run on: the first CUDA/ROCm GPU via torch, else the CPU.

    Returns:
        (device, notes). Without torch, or with torch but no GPU, the CPU of this host.
    """
    notes: list[str] = []
    try:
        import torch  # noqa: PLC0415 - optional, probes only

        if torch.cuda.is_available():
            props = torch.cuda.get_device_properties(0)
            if getattr(torch.version, "hip", None):
                arch = getattr(props, "gcnArchName", "") or None
                return Device(Platform.ROCM, arch=arch.split(":")[0] if arch else None, name=props.name), tuple(notes)
            major, minor = torch.cuda.get_device_capability(0)
            return Device(Platform.CUDA, capability=major * 10 + minor, name=props.name), tuple(notes)
        amx = None
        cpu_mod = getattr(torch, "cpu", None)
        if cpu_mod is not None and hasattr(cpu_mod, "_is_amx_tile_supported"):
            try:
                amx = bool(cpu_mod._is_amx_tile_supported())
            except Exception as exc:  # noqa: BLE001 - probe failures become notes
                notes.append(f"AMX probe failed: {exc}")
        return Device(Platform.CPU, arch=_machine(), cpu_amx=amx, name="this host"), tuple(notes)
    except ImportError:
        notes.append("torch not installed: device probed as this host's CPU, AMX unknown")
        return Device(Platform.CPU, arch=_machine(), name="this host"), tuple(notes)


def _machine() -> str:
    machine = _platform.machine().lower()
    return {"amd64": "x86_64", "arm64": "aarch64"}.get(machine, machine)
