"""The environment an operator declares: an environment file, ``--package``/``--without``/``--env``/
``--tool`` and the serve line's variables, merged into one
:class:`~moe_oracle.core.environment.Environment` with notes; and the engine release an answer is for.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Sequence

from ..core.environment import ABSENT, HOST_TOOLS, Environment
from ..core.envvars import env_issues, env_notes, start_refusals
from ..core.errors import ConfigError, InputIssue, did_you_mean
from ..core.names import non_ascii_message
from ..core.packages import MAX_REQUIREMENT_CHARS, PACKAGE_IMPORTS, VENDORED, PackageSpec, canonical_name, is_distribution_name, parse_requirement, provided_by, unique_specs
from .envfile import read_environment_file
from .release_facts import env_start_rules, release_values

if TYPE_CHECKING:
    from ..core.versions import EngineRelease

__all__ = ["DeclaredEnvironment", "answer_release", "declare_environment", "engine_release", "parse_tools", "start_issues", "with_implied_tools"]

_FOUND = {"yes": True, "true": True, "1": True, "found": True, "no": False, "false": False, "0": False, "absent": False, "missing": False}


def parse_tools(items: Sequence[str]) -> dict[str, bool]:
    """``--tool NAME[=yes|no]`` items as ``{name: found}`` (a bare name is found).

    >>> parse_tools(["nvcc", "ninja=no"])
    {'nvcc': True, 'ninja': False}

    Raises:
        ConfigError: a name outside :data:`~moe_oracle.core.environment.HOST_TOOLS`, a value
            other than yes/no (true/false, 1/0, found/absent/missing), or one tool given twice
            with different values.
    """
    out: dict[str, bool] = {}
    for item in items:
        name, sep, raw = item.partition("=")
        name = name.strip()
        if name not in HOST_TOOLS:
            guess = did_you_mean(name, sorted(HOST_TOOLS))
            raise ConfigError([InputIssue("--tool", "not a host tool selection reads" + (f" (did you mean {guess!r}?)" if guess else ""), name, sorted(HOST_TOOLS))], headline="bad --tool")
        value = _FOUND.get(raw.strip().lower()) if sep else True
        if value is None:
            raise ConfigError([InputIssue(f"--tool {name}", "expected NAME=yes or NAME=no", raw, ["yes", "no"])], headline="bad --tool")
        if out.get(name, value) != value:
            raise ConfigError([InputIssue(f"--tool {name}", "declared both found and not found; declare one", None, None)], headline="bad --tool")
        out[name] = value
    return out


def with_implied_tools(tools: Mapping[str, bool]) -> tuple[tuple[str, bool], ...]:
    """``tools`` with ``jit_nvcc`` implied by ``nvcc`` where only ``nvcc`` is declared: the nvcc on
    PATH is the one FlashInfer's JIT runs unless $CUDA_HOME / $CUDA_PATH point elsewhere (declare
    ``jit_nvcc`` for that case).

    >>> with_implied_tools({"nvcc": False})
    (('jit_nvcc', False), ('nvcc', False))
    """
    out = dict(tools)
    if "nvcc" in out and "jit_nvcc" not in out:
        out["jit_nvcc"] = out["nvcc"]
    return tuple(sorted(out.items()))


@dataclass(frozen=True)
class DeclaredEnvironment:
    """The environment built from the flags, plus where the device may come from."""

    environment: Environment
    notes: tuple[str, ...]
    gpu: str | None = None
    gpu_source: str | None = None


def declare_environment(
    catalog: Any,
    *,
    packages: Sequence[str] = (),
    package_given_by: Sequence[str] = (),
    without: Sequence[str] = (),
    env: Sequence[str] = (),
    env_file: str | None = None,
    serve_env: Iterable[tuple[str, str]] = (),
    base: Environment | None = None,
    tools: Sequence[str] = (),
) -> DeclaredEnvironment:
    """An :class:`Environment` from ``--environment FILE``, ``--package``, ``--without``, ``--env``
    and ``--tool``.

    ``package_given_by``: the flag each of ``packages`` was given by (empty: ``--package``; a
    diff side's ``--from``/``--to``, :meth:`OperatorInputs.packages_given
    <moe_oracle.inputs.operator_inputs.OperatorInputs.packages_given>`); errors name it with the
    package as written. A note on a package ``--package`` gave is headed ``--package:``; one on a
    diff side's is not headed here, as the diff heads a note of one side with that side's flag
    (``moe_oracle.cli.diff.side_notes``) and prints a note both sides give once.

    Later sources win: the file (or ``base``, a config file's environment), then the serve
    line's ``NAME=VALUE`` words, then the flags (``tools``: ``--tool NAME[=yes|no]`` items,
    :func:`parse_tools`; host tools a file says nothing of stay unknown). Only packages and variables the tables read
    are kept in the record; the others are accepted and listed in a note. Notes and errors on
    variables name the engine release the declared packages make the answer for
    (:func:`answer_release`), and its variable names decide which are unknown.

    Raises:
        ConfigError: a malformed declaration (``--env`` without a variable name), one package
            given two different versions by ``--package`` (or within the file), one variable
            given two different values by ``--env``, or a value the engine refuses at start
            (``VLLM_USE_DEEP_GEMM=true``; from vLLM 0.34.0 a removed variable such as
            ``VLLM_MARLIN_INPUT_DTYPE`` or ``VLLM_USE_V2_MODEL_RUNNER`` other than ``1``:
            :func:`~moe_oracle.core.envvars.start_refusals`).
    """
    notes: list[str] = []
    read = set(catalog.package_names)
    read |= {dist for name in catalog.package_names for dist in provided_by(name)}  # amd-aiter provides aiter
    specs: dict[str, PackageSpec] = {}
    absent: set[str] = set(base.absent) if base is not None else set()
    complete = bool(base.complete) if base is not None else False
    variables: dict[str, str] = dict(base.env) if base is not None else {}
    found_tools: dict[str, bool] = dict(base.tools) if base is not None else {}
    flag_tools = dict(with_implied_tools(parse_tools(tools)))
    set_by: dict[str, str] = {name: "the --config file's environment" for name in variables}  # variable -> the input that set it
    gpu = gpu_source = None
    file_vars: dict[str, str] = {}
    doc = None
    if base is not None:
        specs.update({n: PackageSpec(n, v) for n, v in base.packages})
        specs.update({n: PackageSpec(n, None) for n in base.unversioned})
    # Packages first: they decide the release that the variables' notes and errors are about.
    if env_file is not None:
        doc = read_environment_file(env_file, catalog.package_names)
        specs.update({p.name: p for p in doc.packages})
        complete = doc.complete
        found_tools.update(with_implied_tools(dict(doc.tools)))
    if package_given_by and len(package_given_by) != len(packages):
        raise ValueError(f"package_given_by names {len(package_given_by)} flags for {len(packages)} package(s)")
    given = list(zip(packages, package_given_by or ["--package"] * len(packages)))
    known = catalog.engine.known_versions if catalog.engine is not None else None  # a range is refused naming the modelled releases it admits
    parsed = [(parse_requirement(text, by, known), text, by) for text, by in given]
    written: dict[str, tuple[str, str]] = {}  # package -> (flag, text) of its first declaration: ("--to", "vllm==0.33.0")
    for spec, text, by in parsed:
        written.setdefault(spec.name, (by, text))
    sides = [by for _, by in given if by != "--package"]
    declared_packages = []
    for spec in unique_specs([(spec, None if by == "--package" else by) for spec, _, by in parsed], sides[0] if sides else "--package"):
        specs[spec.name] = spec
        absent.discard(spec.name)
        declared_packages.append(spec.name)
        if spec.version_note():
            notes.append(f"--package: {spec.version_note()}" if written[spec.name][0] == "--package" else spec.version_note())
    for name in without:
        if len(name) > MAX_REQUIREMENT_CHARS or not is_distribution_name(name):
            what = "takes a distribution NAME (letters and digits, with '.', '_' or '-' inside: --without flashinfer-cubin); to declare a version, give --package NAME==VERSION"
            odd = non_ascii_message("package", name[:MAX_REQUIREMENT_CHARS])
            raise ConfigError([InputIssue("--without", f"{odd}; --without {what}" if odd else what, name[:MAX_REQUIREMENT_CHARS], None)], headline="bad --without")
        key = canonical_name(name)
        if key in declared_packages:
            raise ConfigError([InputIssue("--without", f"package declared both installed ({' '.join(written[key])}) and absent (--without)", name, None)], headline="bad --without")
        specs.pop(key, None)
        absent.add(key)
    flag_vars: dict[str, str] = {}
    for item in env:
        if "=" not in item:
            raise ConfigError([InputIssue("--env", "expected VAR=VALUE", item, None)], headline="bad --env")
        name, value = item.split("=", 1)
        if not name.strip():
            raise ConfigError([InputIssue("--env", "the variable name is empty: expected VAR=VALUE", item, None)], headline="bad --env")
        if name in flag_vars and flag_vars[name] != value:
            # As a repeated --gpu or --tp (cli.common.LastWins): why-not's and a dead end's fixes
            # are flags appended to the command, and a fix that sets a variable back
            # (--env VLLM_ROCM_USE_AITER=1 after --env VLLM_ROCM_USE_AITER=0) must run as printed.
            notes.append(f"--env {name} given more than once: the last ({value!r}) is used, not {flag_vars[name]!r}")
            del flag_vars[name]  # the later value takes the later place, as the command line reads
        flag_vars[name] = value
    kept_specs = [s for n, s in specs.items() if n in read]
    packages_only = Environment(
        tuple((s.name, s.version) for s in kept_specs if s.version is not None),
        frozenset(n for n in absent if n in read),
        complete,
        unversioned=frozenset(s.name for s in kept_specs if s.version is None),
    )
    release = answer_release(catalog, packages_only)

    if env_file is not None and doc is not None:
        notes += [f"--environment {env_file}: {n}" for n in doc.notes]
        unread = sorted({p.name for p in doc.packages} - read)
        kept = sorted({p.name for p in doc.packages} & read)
        carried = _carried_copies(packages_only, {p.name for p in doc.packages})
        notes.append(f"--environment {env_file} ({doc.format}): {len(doc.packages)} package{'s' if len(doc.packages) != 1 else ''}, {len(kept)} read by the tables ({', '.join(kept) or 'none'})" + (f"; {len(unread)} {'other does' if len(unread) == 1 else 'others do'} not affect selection" if unread else "") + ("; every unlisted package is absent" + (" but the modules vLLM's own wheel carries (next note)" if carried else "") if doc.complete else ""))
        if carried:
            notes.append(f"--environment {env_file}: {carried}")
        file_vars = dict(doc.env)
        _collect_vars(catalog, file_vars, variables, set_by, notes, f"--environment {env_file}", release, quiet_unread=True)
        if doc.gpus:
            gpu, gpu_source = doc.gpus[0], f"--environment {env_file}"
    serve_vars = dict(serve_env)
    if serve_vars:
        _collect_vars(catalog, serve_vars, variables, set_by, notes, "--serve", release, quiet_unread=False)
    unread = [n for n in sorted({canonical_name(p) for p in declared_packages} | {canonical_name(n) for n in without}) if n not in read]
    if unread:
        shown = []
        by_module = {module.replace("_", "-"): dist for dist, module in PACKAGE_IMPORTS.items() if dist in read}
        for name in unread:
            # The module's name first (flashinfer is flashinfer-python's), then the closest spelling.
            guess = by_module.get(name) or did_you_mean(name, sorted(read))
            shown.append(name + (f" (did you mean {guess!r}?)" if guess else ""))
        notes.append(f"packages no table reads (accepted; they do not change the answer): {', '.join(shown)}")
    _collect_vars(catalog, flag_vars, variables, set_by, notes, "--env", release, quiet_unread=False)
    # Name where each value came from: the engine refuses it, and the operator must find it.
    origin = {**{n: f"--environment {env_file}:" for n in file_vars}, **{n: "--serve" for n in serve_vars}, **{n: "--env" for n in flag_vars}}
    issues = [issue for name, value in sorted(variables.items()) for issue in env_issues([(name, value)], catalog.env_vars, origin.get(name, "--env"), release=release)]
    # Every declared variable is in vLLM's environment, read by the tables or not: the release's start-up check sees them all.
    every = {**(dict(base.env) if base is not None else {}), **file_vars, **serve_vars, **flag_vars}
    start_issues, start_notes = _start_checks(every, origin, release)
    issues += start_issues
    notes += start_notes
    if issues:
        raise ConfigError(issues, headline="bad environment variable")
    found_tools.update(flag_tools)
    environment = replace(packages_only, env=tuple(sorted(variables.items())), tools=tuple(sorted(found_tools.items())))
    for s in kept_specs:
        if s.version is None:
            # Installed at an unknown version reads as an undeclared package does (Environment.package_canonical):
            # the assumptions then say "packages.NAME is unknown", and this note says why.
            notes.append(f"{s.name} is {'installed from ' + s.reference if s.reference else 'declared installed without a version'}: its version is unknown, so the checks on it (installed, version) abstain "
                         f"as for an undeclared package and are listed as assumptions (packages.{s.name} is unknown); --package {s.name}==VERSION decides them (pip list --format=json reports it)")
    return DeclaredEnvironment(environment, tuple(notes), gpu, gpu_source)


def _carried_copies(env: Environment, listed: set[str]) -> str | None:
    """The note for packages a file does not list that ``env`` reads as installed because vLLM's
    wheel carries their module (:data:`~moe_oracle.core.packages.VENDORED`), or as unknown
    because the listed vllm build may not; ``None`` when there are none."""
    found, unknown = [], []
    for name, vendored in VENDORED.items():
        if name in listed or name in env.absent or env.package(vendored.host) in (None, ABSENT):
            continue
        version = env.package(name)
        if version is None:
            unknown.append(name)
        elif version is not ABSENT:
            found.append(name)
    parts = []
    if found:
        parts.append(f"{', '.join(found)} not listed, yet installed: vLLM imports the copy its wheel carries (vllm.third_party; --without NAME if that copy is removed)")
    if unknown:
        parts.append(f"{', '.join(unknown)} not listed, and unknown: the listed vllm build may or may not carry vLLM's copy (its CUDA wheels do)")
    return "; ".join(parts) or None


def engine_release(catalog: Any, env: Environment) -> "EngineRelease | None":
    """The engine release an answer for ``env`` is for (``Catalog.release``: declared, probed or
    assumed); ``None`` for a catalog without an engine (hand-built in tests)."""
    if getattr(catalog, "source", None) is None:
        return None
    return catalog.release(env)


def answer_release(catalog: Any, env: Environment) -> str | None:
    """The modelled engine release whose facts an answer for ``env`` states: the declared or
    probed release when the tables model it, else the modelled release standing in for it
    (:meth:`~moe_oracle.core.versions.EngineRelease.stand_in`), the newest when none is known;
    ``None`` for a catalog without an engine (hand-built in tests)."""
    release = engine_release(catalog, env)
    return release.stand_in if release is not None else None


def _start_checks(env: Mapping[str, str], origin: Mapping[str, str], release: str | None, file: str | None = None) -> tuple[list[InputIssue], list[str]]:
    """The start-up refusals (and warnings) of ``release`` for ``env``
    (:func:`~moe_oracle.core.envvars.start_refusals` over
    :func:`~moe_oracle.inputs.release_facts.env_start_rules`); none without a release."""
    if release is None or not env:
        return [], []
    removed, rules = env_start_rules(release)
    if not removed and not rules:
        return [], []
    return start_refusals(sorted(env.items()), removed, rules, origin=origin, file=file, release=release)


def start_issues(env: Iterable[tuple[str, str]], where: str, release: str | None, file: str | None = None) -> list[InputIssue]:
    """The variables of ``env`` (all given in ``where``: ``$.environment.env``, ``this process's
    environment:``) that vLLM ``release`` refuses at start (empty before 0.34.0)."""
    given = dict(env)
    return _start_checks(given, {n: where for n in given}, release, file)[0]


def _collect_vars(catalog: Any, given: Mapping[str, str], into: dict[str, str], set_by: dict[str, str], notes: list[str], where: str, release: str | None, *, quiet_unread: bool) -> None:
    """Keep the variables the tables read in ``into`` (``set_by``: variable -> the input that set
    it, for the note when a later input overrides it); note removed, irrelevant and unknown ones
    (as vLLM ``release`` declares its variables: ``engine_facts/vllm-release-values.yaml``)."""
    read = {s.name for s in catalog.env_vars}
    removed = {r.name for r in catalog.removed_env_vars}
    other = []
    for name, value in given.items():
        if name in read:
            if into.get(name, value) != value:  # later sources win (declare_environment): say so
                notes.append(f"{where}: {name}={value!r} overrides {name}={into[name]!r} from {set_by.get(name, 'an earlier input')}")
            into[name] = value
            set_by[name] = where
        elif name not in removed:
            other.append(name)
    checked = set().union(*env_start_rules(release)) if release is not None else set()  # noted or refused by _start_checks
    shown = [(n, v) for n, v in given.items() if n not in checked and (n in read or n in removed or not quiet_unread)]
    # The release's own variable names come from a generated facts file (a large YAML document): read only when there is a variable to note.
    engine_names = release_values(release)["env_vars"] if shown and release is not None else None
    for note in env_notes(shown, catalog.env_vars, catalog.removed_env_vars, engine_names, release=release):
        notes.append(f"{where}: {note}")
    if quiet_unread and other:
        notes.append(f"{where}: {len(other)} other environment {'variable does' if len(other) == 1 else 'variables do'} not affect MoE kernel selection")
