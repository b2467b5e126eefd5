"""Installed distributions as declared: a name and a version (PEP 503 names, PEP 440 versions,
PEP 427 wheel filenames), read with ``packaging``.

The core's :class:`~moe_oracle.core.environment.Environment` and the environment-file readers
(:mod:`moe_oracle.inputs.envfile`) share these.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, Mapping, Sequence
from urllib.parse import unquote, urlsplit

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from .errors import ConfigError, InputIssue
from .names import ascii_lower, non_ascii_message

# packaging.requirements and packaging.utils are imported where a name or a requirement is read:
# with packaging.tags, markers and their parser they are ~15 ms of imports, which a selection
# that names no package (`moe-oracle select --model M --gpu G`) never uses.

__all__ = ["MAX_REQUIREMENT_CHARS", "MAX_VERSION_CHARS", "PACKAGE_IMPORTS", "PROVIDERS", "VENDORED", "PackageSpec", "Vendored", "canonical_name", "is_distribution_name", "parse_requirement", "parse_version", "provided_by", "same_version", "unique_specs"]

PACKAGE_IMPORTS: dict[str, str] = {
    "aiter": "aiter",  # vllm/utils/import_utils.py has_aiter: _has_module("aiter")
    "amd-quark": "quark",  # import_utils.has_quark
    "b12x": "b12x",  # vllm/utils/b12x.py has_b12x
    "deep-ep": "deep_ep",  # import_utils.has_deep_ep
    "deep-gemm": "deep_gemm",  # import_utils.has_deep_gemm (or the vendored vllm.third_party.deep_gemm)
    "flashinfer-python": "flashinfer",  # vllm/utils/flashinfer.py has_flashinfer: find_spec("flashinfer")
    "flashinfer-cubin": "flashinfer_cubin",  # vllm/utils/flashinfer.py has_flashinfer_cubin: find_spec("flashinfer_cubin")
    "flydsl": "flydsl",  # v1/attention/ops/flydsl_*: import flydsl
    "hpc": "hpc",  # vllm/utils/hpc.py has_hpc: find_spec("hpc")
    "humming": "humming",  # import_utils.has_humming
    "moonep": "moonep",  # import_utils.has_moonep
    "mori": "mori",  # import_utils.has_mori
    "nixl-ep": "nixl_ep",  # import_utils.has_nixl_ep
    "triton-kernels": "triton_kernels",  # import_utils.has_triton_kernels (or vllm.third_party.triton_kernels)
    "zentorch": "zentorch",
}
"""Every package name the tables read (``packages.<name>``) -> the module vLLM imports for it
(vLLM 0.33.0-0.34.0 sources named per entry). The tables name the package by its distribution where the
distribution is named like the module (PEP 503: ``deep_gemm`` is ``deep-gemm``); the ones whose
distribution is named otherwise are in :data:`PROVIDERS`."""

PROVIDERS: dict[str, tuple[tuple[str, str], ...]] = {
    "aiter": (("amd-aiter", "amd_aiter-0.1.7.post2.dev18 wheel metadata: Name amd-aiter, top_level.txt aiter, aiter_meta"),),
    "humming": (("humming-kernels", "humming_kernels-0.1.19 wheel metadata: Name humming-kernels, top_level.txt humming; vLLM 0.29.0-0.34.0 "
                 "METADATA Requires-Dist humming-kernels[cu13] (0.1.12 ... 0.1.19)"),),
}
"""Table package name -> distributions (other than one of the same name) whose metadata says
they install the module vLLM imports for it, with the evidence; the installed version is that
distribution's. ROCm images list AITER as ``amd-aiter`` in ``pip freeze``; vLLM imports ``aiter``.
(The PyPI distribution named ``aiter`` is an unrelated asynchronous-iterator library; a freeze
naming it is read as the tables' ``aiter``, as before.) vLLM's CUDA wheels depend on
``humming-kernels``, which installs ``humming``."""


@dataclass(frozen=True)
class Vendored:
    """A module vLLM also imports from a copy its own wheel carries (``vllm.third_party``).

    Attributes:
        host: the distribution whose wheel carries the copy (``vllm``).
        since: the first release known to carry it (older ones, pre-releases of it included:
            not read, taken as not carrying).
        through: the last release series whose wheels were read (``0.34``: every 0.34.x).
        evidence: the code that falls back to the copy, and the wheels read.
    """

    host: str
    since: str
    through: str
    evidence: str

    def provides(self, version: str) -> bool | None:
        """Whether the host installed at ``version`` carries the copy: ``True`` for a release from
        :attr:`since` through the :attr:`through` series built for CUDA (no local label, or a ``+cu...`` one: vLLM's CUDA
        wheels), ``None`` (unknown) for a local build of another platform (``+rocm...``,
        ``+cpu``) or a release newer than those read, ``False`` before :attr:`since`.

        >>> v = VENDORED["deep-gemm"]
        >>> v.provides("0.34.0"), v.provides("0.33.0+cu129"), v.provides("0.34.0+rocm700"), v.provides("0.99.0"), v.provides("0.10.0")
        (True, True, None, None, False)
        """
        return _carries(self.since, self.through, version)


@lru_cache(maxsize=256)
def _carries(since: str, through: str, version: str) -> bool | None:
    """:meth:`Vendored.provides`, cached: it is asked on the selection hot path."""
    installed = Version(version)
    public = Version(installed.public)
    if public < Version(since):
        return False
    if public.release[:2] > Version(through).release[:2]:
        return None
    return True if installed.local is None or installed.local.startswith("cu") else None


_WHEELS = "the vllm 0.29.0-0.34.0 manylinux_2_28_x86_64 wheels (dist-info RECORD)"

VENDORED: dict[str, Vendored] = {
    "deep-gemm": Vendored("vllm", "0.29.0", "0.34", "vLLM 0.29.0-0.34.0 vllm/utils/import_utils.py has_deep_gemm: _has_module('deep_gemm') or "
                          f"_has_module('vllm.third_party.deep_gemm'); {_WHEELS} list vllm/third_party/deep_gemm (879-902 files, its compiled _C "
                          "extension included; __version__ 2.6.1 in 0.29.0, 2.8.0 in 0.30.0-0.32.0, 2.8.1 in 0.33.0-0.34.0)"),
    "triton-kernels": Vendored("vllm", "0.29.0", "0.34", "vLLM 0.29.0-0.34.0 vllm/utils/import_utils.py has_triton_kernels: _has_module('triton_kernels') or "
                               f"_has_module('vllm.third_party.triton_kernels'); {_WHEELS} list vllm/third_party/triton_kernels (40 files)"),
}
"""Table package name -> the copy of its module vLLM's wheel carries: where the package itself is
not installed (unlisted in a ``pip freeze``), vLLM imports the copy, so the package reads as
installed at the host's version unless declared absent (``--without``). The tables read these
packages' presence only, no version range."""


def provided_by(name: str) -> tuple[str, ...]:
    """Distributions that provide table package ``name`` besides ``name`` itself.

    >>> provided_by("aiter")
    ('amd-aiter',)
    >>> provided_by("flashinfer-python")
    ()
    """
    return tuple(d for d, _ in PROVIDERS.get(name, ()))


# re.ASCII: with IGNORECASE alone a str pattern's [A-Z] also matches the Kelvin sign (U+212A), which
# canonicalize_name then lowers to "k": "triton-\u212aernels" would name triton-kernels.
_DISTRIBUTION_NAME = re.compile(r"[A-Z0-9]|[A-Z0-9][A-Z0-9._-]*[A-Z0-9]", re.IGNORECASE | re.ASCII)


def is_distribution_name(name: str) -> bool:
    """Whether ``name`` is a valid distribution name: ASCII letters and digits, with ``.``, ``_``
    and ``-`` inside (the core metadata ``Name`` field, PEP 508 ``identifier``; what
    ``packaging.utils.canonicalize_name(name, validate=True)`` accepts).

    >>> [is_distribution_name(n) for n in ("flashinfer-python", "vllm", "vllm==0.31.0", "", "-x", "triton-\u212aernels")]
    [True, True, False, False, False, False]
    """
    return isinstance(name, str) and _DISTRIBUTION_NAME.fullmatch(name) is not None


def canonical_name(name: str) -> str:
    """The PEP 503 normalized form of a distribution name (``packaging.utils.canonicalize_name``).

    Case is folded on ASCII letters only: a name holding another character (the Kelvin sign
    U+212A, which ``str.lower`` makes ``k``) names no package an ASCII name names (every
    distribution name is ASCII, :func:`is_distribution_name`); the doors refuse it.

    >>> canonical_name("Flashinfer_Python"), canonical_name("triton-\u212aernels") == "triton-kernels"
    ('flashinfer-python', False)
    """
    if not name.isascii():
        return ascii_lower(re.sub(r"[-_.]+", "-", name))
    from packaging.utils import canonicalize_name

    return canonicalize_name(name)


@dataclass(frozen=True)
class PackageSpec:
    """One installed distribution as declared: canonical name and version (``None``: unknown).

    ``version_from`` says where a version not written as a pin came from (``wheel filename``:
    a ``NAME @ URL`` whose URL names a wheel); ``None`` for a pinned or unknown version.
    """

    name: str
    version: str | None
    reference: str | None = None
    version_from: str | None = field(default=None, compare=False, repr=False)

    def version_note(self) -> str | None:
        """The sentence saying where the version came from, when it was not pinned."""
        if self.version_from is None:
            return None
        return f"{self.name} {self.version}: the version is read from the {self.version_from} ({self.reference}), as PEP 427 names wheels"


MAX_VERSION_CHARS = 128
MAX_REQUIREMENT_CHARS = 4096
"""A declared version is at most this long (released versions, local parts included, are under 40
characters: ``2.14.0+cu130``); a requirement line (``NAME @ URL``) at most this long. Past them the
text is no release, and every answer and note would repeat it."""


def parse_version(text: str) -> Version:
    """``Version(text)``, refusing a text longer than :data:`MAX_VERSION_CHARS`.

    Raises:
        ValueError: not a PEP 440 version, or too long to be a release's.
    """
    if len(text) > MAX_VERSION_CHARS:
        raise ValueError(f"a version is at most {MAX_VERSION_CHARS} characters")
    return Version(text)


def parse_requirement(text: str, where: str = "--package", known: Mapping[str, Sequence[str]] | None = None) -> PackageSpec:
    """One ``pip freeze`` line or ``--package`` value.

    Accepts ``name==version`` (also ``===``), ``name @ url`` (version unknown unless the
    same line pins one), ``-e URL#egg=name`` and a bare ``name`` (installed, version
    unknown); extras and markers are allowed and ignored.

    >>> parse_requirement("torch==2.14.0+cu130")
    PackageSpec(name='torch', version='2.14.0+cu130', reference=None)
    >>> parse_requirement("deep_gemm @ git+https://github.com/deepseek-ai/DeepGEMM@v2.1.1").version is None
    True
    >>> parse_requirement("vllm @ file:///wheels/vllm-0.31.0-cp38-abi3-linux_x86_64.whl").version
    '0.31.0'

    A URL naming a wheel gives its version through the wheel filename (PEP 427,
    ``packaging.utils.parse_wheel_filename``); any other URL leaves the version unknown.

    ``known``: canonical name -> the versions the tables know (``EngineSpec.known_versions``:
    vLLM's modelled releases). A range instead of one version is refused either way; the
    refusal then lists the known versions the range admits, newest first, and suggests the
    newest as the exact pin:

    >>> try:
    ...     parse_requirement("vllm>=0.33.0", known={"vllm": ("0.34.0", "0.33.0", "0.31.0")})
    ... except ConfigError as exc:
    ...     exc.issues[0].allowed, exc.issues[0].suggestion()
    (['vllm==0.34.0', 'vllm==0.33.0'], 'vllm==0.34.0')

    Raises:
        ConfigError: not a requirement (a name holding a character outside ASCII is told so,
            with its code point), a range instead of one version, an invalid version, or a wheel
            URL whose filename is invalid or names another package.
    """
    line = text.strip()
    if len(line) > MAX_REQUIREMENT_CHARS:
        raise ConfigError([InputIssue(where, f"a requirement is at most {MAX_REQUIREMENT_CHARS} characters (got {len(line)})", None, None)], headline=f"bad {where}")
    if line.startswith(("-e ", "--editable ")):
        egg = re.search(r"[#&]egg=([A-Za-z0-9._-]+)", line)
        if not egg:
            raise ConfigError([InputIssue(where, "an editable requirement needs #egg=NAME to name the package", text, None)], headline=f"bad {where}")
        return PackageSpec(canonical_name(egg.group(1)), None, line.split(None, 1)[1])
    odd = non_ascii_message("package", re.split(r"[\s=<>!~@;\[(]", line, maxsplit=1)[0])  # the name; a URL may hold any character
    if odd is not None:
        raise ConfigError([InputIssue(where, odd, text, None)], headline=f"bad {where}")
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(line)
    except InvalidRequirement as exc:
        raise ConfigError([InputIssue(where, f"not a requirement NAME==VERSION or NAME @ URL ({exc})", text, None)], headline=f"bad {where}") from None
    name = canonical_name(req.name)
    pins = [s for s in req.specifier if s.operator in ("==", "===") and "*" not in s.version]
    if req.url:
        if pins:
            return PackageSpec(name, pins[0].version, req.url)
        return _wheel_reference(name, req.url, text, where)
    if not req.specifier:
        return PackageSpec(name, None)  # a bare name: installed, version unknown
    if len(pins) != 1 or len(req.specifier) != 1:
        raise ConfigError([_range_issue(where, text, name, req.specifier, (known or {}).get(name, ()))], headline=f"bad {where}")
    version = pins[0].version
    try:
        parse_version(version)
    except ValueError:  # InvalidVersion, too long, or a number past int()'s 4300-digit limit
        raise ConfigError([InputIssue(where, f"not a PEP 440 version of at most {MAX_VERSION_CHARS} characters", version, None)], headline=f"bad {where}") from None
    return PackageSpec(name, version)


def _range_issue(where: str, text: str, name: str, specifier: SpecifierSet, versions: Sequence[str]) -> InputIssue:
    """A version range where one version is needed: the known versions it admits (newest first,
    the newest suggested), or that it admits none of them."""
    message = "declare the installed version exactly: NAME==VERSION (or NAME @ URL)"
    if not versions:
        return InputIssue(where, message, text, None)
    ordered = sorted(versions, key=Version, reverse=True)
    admitted = [v for v in ordered if specifier.contains(v, prereleases=True)]
    shown = text.strip()
    if not admitted:
        return InputIssue(where, f"{message}; {shown} admits none of the {name} versions moe-oracle models ({', '.join(ordered)})", text, None)
    pins = [f"{name}=={v}" for v in admitted]
    return InputIssue(where, f"{message}; of the {name} versions moe-oracle models, {shown} admits {', '.join(admitted)}", text, pins, suggest=pins[0])


def unique_specs(specs: Iterable[tuple[PackageSpec, str | None]], where: str, file: str | None = None) -> tuple[PackageSpec, ...]:
    """Each package once, in first-seen order; the same declaration repeated is accepted.

    ``specs``: (spec, where it was read: ``"line 3"``, ``"$[2]"``, or ``None``); ``where``: the
    flag the declarations came from (``--package``, ``--environment``); ``file``: their file.

    >>> [s.version for s in unique_specs([(parse_requirement("vllm==0.9.0"), None), (parse_requirement("vllm==0.9"), None)], "--package")]
    ['0.9.0']

    Raises:
        ConfigError: one package declared at two different versions (naming the package, both
            versions and, for a file, both lines). A pinned version and an unknown one
            (``NAME @ URL``) are different declarations.
    """
    seen: dict[str, tuple[PackageSpec, str | None]] = {}
    for spec, at in specs:
        first = seen.get(spec.name)
        if first is None:
            seen[spec.name] = (spec, at)
        elif not (same_version(first[0].version, spec.version) and (spec.version is not None or first[0].reference == spec.reference)):
            raise ConfigError([InputIssue(f"{where} {spec.name}", f"declared twice with different versions: {_shown(*first)} and {_shown(spec, at)}; declare one version", None, None, file)], headline=f"bad {where}")
    return tuple(s for s, _ in seen.values())


def same_version(a: str | None, b: str | None) -> bool:
    """Whether two declarations of one package name the same version: equal as PEP 440
    versions (``0.9`` is ``0.9.0``), or the same text where one is not a PEP 440 version; an
    unknown version (``None``: ``NAME @ URL``, a bare name) equals only another unknown one.
    The one test of "one package declared at two versions", for requirement specs
    (:func:`unique_specs`) and for :class:`~moe_oracle.core.environment.Environment` pairs.

    >>> same_version("0.9", "0.9.0"), same_version("0.9.0", "0.10.0"), same_version(None, None), same_version("1.0", None)
    (True, False, True, False)
    """
    if a is None or b is None:
        return a is None and b is None
    if a == b:
        return True
    try:
        return Version(a) == Version(b)
    except ValueError:  # InvalidVersion, or a number past int()'s 4300-digit limit
        return False


def _shown(spec: PackageSpec, at: str | None) -> str:
    text = repr(spec.version) if spec.version is not None else f"an unknown version ({spec.reference or 'no version given'})"
    return text + (f" ({at})" if at else "")


def _wheel_reference(name: str, url: str, text: str, where: str) -> PackageSpec:
    """``NAME @ URL``: the version from the URL's wheel filename, else unknown."""
    filename = unquote(urlsplit(url).path).rsplit("/", 1)[-1]
    if not filename.endswith(".whl"):
        return PackageSpec(name, None, url)
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    try:
        wheel_name, version, _, _ = parse_wheel_filename(filename)
    except InvalidWheelFilename as exc:
        raise ConfigError([InputIssue(where, f"the URL names a wheel whose filename is invalid ({exc})", text, None)], headline=f"bad {where}") from None
    if wheel_name != name:
        raise ConfigError([InputIssue(where, f"the wheel {filename!r} is package {wheel_name!r}, not {name!r}", text, None)], headline=f"bad {where}")
    return PackageSpec(name, str(version), url, version_from="wheel filename")
