"""The compiled catalog: every table turned into frozen entries and indexed checks.

:func:`load_catalog` reads the embedded tables (or given directories), validates
them against the JSON Schemas, runs the semantic checks (unknown values with a
did-you-mean, duplicate ids naming both files, rules naming unknown backends or
kernels, undeclared environment variables) and compiles every requirement into
:class:`~moe_oracle.checks.Check` records. Any problem raises one
:class:`~moe_oracle.errors.TableError` listing all of them; nothing half-loaded
is ever returned. A :class:`Catalog` is an immutable value carrying the sha256
of its tables.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import MappingProxyType
from typing import Any, Mapping, Sequence

from packaging.utils import canonicalize_name

from ._resources import package_dir, table_dirs
from .checks import Check, CheckIndex, build_index
from .errors import InputIssue, TableError, did_you_mean
from .fields import FIELDS, field_spec, is_known_field
from .envvars import EnvVarSpec, RemovedEnvVar, removed_from_tables
from .predicates import Predicate, compile_value_spec
from .tables import Schemas, TableFile, load_schemas, read_tables_cached
from .vocab import ActivationFormat, Interface, Platform, ReasonCode

__all__ = [
    "Adjustment",
    "All2AllAlias",
    "Catalog",
    "ExpertsEntry",
    "KnownBad",
    "OptIn",
    "Override",
    "PrepareFinalizeEntry",
    "PriorityOrder",
    "compile_tables",
    "load_catalog",
]


@dataclass(frozen=True)
class _Entry:
    """What experts and prepare/finalize entries share: identity, adapter, provenance, checks."""

    id: str
    interface: Interface
    activation_format: ActivationFormat
    adapter: str
    provider: str
    runtime: str
    upstream: str
    reference: str
    file: str
    declared: Mapping[str, Any] = field(repr=False, compare=False)
    checks: tuple[Check, ...] = field(repr=False)


@dataclass(frozen=True)
class ExpertsEntry(_Entry):
    """One experts kernel variant as declared in ``kernels/<family>.yaml``."""

    backend: str = ""
    notes: str = ""


@dataclass(frozen=True)
class PrepareFinalizeEntry(_Entry):
    """One prepare/finalize implementation (``prepare_finalize/<kind>.yaml``)."""

    dispatch: frozenset[str] = frozenset()
    carries_router_logits: bool = False


@dataclass(frozen=True)
class PriorityOrder:
    """Base backend order for the contexts ``when`` matches (first matching order wins).

    ``excluded`` holds, per backend outside the order and the fallback, the check that
    rejects its kernels under ``moe_backend=auto`` (``path_not_enabled``).
    """

    id: str
    when: tuple[Predicate, ...]
    backends: tuple[str, ...]
    reference: str
    notes: str = ""
    excluded: Mapping[str, Check] = field(default_factory=dict, repr=False, compare=False)


@dataclass(frozen=True)
class Adjustment:
    id: str
    when: tuple[Predicate, ...]
    move: tuple[str, ...]
    to: str
    kind: str
    reason: str
    reference: str


@dataclass(frozen=True)
class OptIn:
    """A backend kept out of auto-selection where ``when`` holds; ``check`` rejects it then."""

    id: str
    backend: str
    when: tuple[Predicate, ...]
    reason: str
    reference: str
    check: Check | None = field(default=None, repr=False, compare=False)


@dataclass(frozen=True)
class KnownBad:
    id: str
    kernels: tuple[str, ...]
    check: Check
    effect: str
    replaces: str


@dataclass(frozen=True)
class All2AllAlias:
    name: str
    to: str
    status: str
    remove_after: str | None
    note: str
    reference: str


@dataclass(frozen=True)
class Override:
    id: str
    when: tuple[Predicate, ...]
    explicit: tuple[str, ...]
    request: str
    reason: str
    reference: str


@dataclass(frozen=True)
class Catalog:
    """Every table of one table set, compiled. Immutable; ``tables_hash`` identifies it."""

    experts: tuple[ExpertsEntry, ...]
    prepare_finalize: tuple[PrepareFinalizeEntry, ...]
    orders: tuple[PriorityOrder, ...]
    adjustments: tuple[Adjustment, ...]
    opt_in: tuple[OptIn, ...]
    fallback: tuple[str, ...]
    known_bad: tuple[KnownBad, ...]
    global_constraints: tuple[Check, ...]
    backend_names: Mapping[str, tuple[str, ...]]
    implied_quant: Mapping[str, str]
    all2all_aliases: Mapping[str, All2AllAlias]
    env_vars: tuple[EnvVarSpec, ...]
    overrides: tuple[Override, ...]
    package_names: tuple[str, ...]
    files: tuple[str, ...]
    tables_hash: str
    experts_index: CheckIndex = field(repr=False, compare=False)
    pf_index: CheckIndex = field(repr=False, compare=False)
    pf_choice: tuple[Mapping[str, int], ...] = field(repr=False, compare=False, default=())
    rank_key: tuple[tuple[int, int], ...] = field(repr=False, compare=False, default=())
    removed_env_vars: tuple[RemovedEnvVar, ...] = ()

    @property
    def backends(self) -> tuple[str, ...]:
        """Every backend id, sorted."""
        return tuple(sorted({e.backend for e in self.experts}))

    def experts_by_id(self, kernel_id: str) -> ExpertsEntry:
        for entry in self.experts:
            if entry.id == kernel_id:
                return entry
        raise KeyError(kernel_id)

    def prepare_finalize_by_id(self, pf_id: str) -> PrepareFinalizeEntry:
        for entry in self.prepare_finalize:
            if entry.id == pf_id:
                return entry
        raise KeyError(pf_id)


# ---------------------------------------------------------------------------------------------
# Compilation


class _Ctx:
    """Collects issues while compiling; carries the current file and entry."""

    def __init__(self) -> None:
        self.issues: list[InputIssue] = []
        self.file: str | None = None
        self.entry: str | None = None
        self.env_types: dict[str, str] = {}

    def issue(self, path: str, message: str, value: Any = None, allowed: Any = None, keyword: str = "semantic") -> None:
        self.issues.append(InputIssue(path, message, value, allowed, self.file, self.entry, keyword))


def _check_values(ctx: _Ctx, fieldname: str, spec: Any, path: str) -> bool:
    if not is_known_field(fieldname):
        allowed = list(FIELDS) + ["packages.<name>", "env.<VAR>"]
        ctx.issue(path, "unknown field", fieldname, allowed)
        return False
    if fieldname.startswith("env.") and fieldname[4:] not in ctx.env_types:
        ctx.issue(path, "environment variable is not declared in rules/environment.yaml", fieldname[4:], sorted(ctx.env_types))
        return False
    fs = field_spec(fieldname)
    items = spec if isinstance(spec, list) else spec
    keyed = {"in": items} if isinstance(items, list) else dict(items)
    ok = True
    domain = fs.domain
    if fieldname.startswith("env.") and ctx.env_types.get(fieldname[4:]) == "bool":
        domain = (False, True)
    for key, arg in keyed.items():
        if key in ("in", "not_in"):
            for value in arg:
                if domain is not None and value not in domain:
                    ctx.issue(f"{path}.{key}" if not isinstance(spec, list) else path, f"value is not in the vocabulary of field {fieldname!r}", value, list(domain))
                    ok = False
                elif fs.kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
                    ctx.issue(path, f"field {fieldname!r} takes integers", value, None)
                    ok = False
        elif key in ("min", "max", "multiple_of"):
            if fs.kind not in ("int", "float"):
                ctx.issue(f"{path}.{key}", f"{key} only applies to numeric fields, and {fieldname!r} is {fs.kind}", arg, None)
                ok = False
            elif (isinstance(arg, float) and not math.isfinite(arg)) or abs(arg) > 2**53:
                # A NaN bound fails every comparison and would silently reject every config.
                ctx.issue(f"{path}.{key}", f"{key} must be a finite number of magnitude at most 2**53", arg, None)
                ok = False
    return ok


def _pred(ctx: _Ctx, fieldname: str, spec: Any, path: str) -> Predicate | None:
    if not _check_values(ctx, fieldname, spec, path):
        return None
    try:
        return compile_value_spec(fieldname, spec)
    except ValueError as exc:
        ctx.issue(path, str(exc), spec)
        return None


def _condition(ctx: _Ctx, cond: Mapping[str, Any] | None, path: str) -> tuple[Predicate, ...] | None:
    preds = []
    for fieldname, spec in (cond or {}).items():
        p = _pred(ctx, fieldname, spec, f"{path}.{fieldname}")
        if p is None:
            return None
        preds.append(p)
    return tuple(preds)


_KEYWORDS = ("in", "not_in", "min", "max", "multiple_of")



def _constraint(ctx: _Ctx, raw: Mapping[str, Any], path: str, default_ref: str) -> Check | None:
    spec = {k: raw[k] for k in _KEYWORDS if k in raw}
    pred = _pred(ctx, raw["field"], spec, f"{path}.{raw['field']}")
    cond = _condition(ctx, raw.get("if"), f"{path}.if")
    if pred is None or cond is None:
        return None
    return Check(raw["id"], raw["field"], pred, cond, False, ReasonCode(raw["reason"]), raw["hint"], raw.get("reference", default_ref))


def _requirement_checks(ctx: _Ctx, owner: str, raw: Mapping[str, Any], reference: str, path: str, what: str) -> list[Check]:
    """Platform, package and environment checks shared by experts and prepare/finalize entries."""
    checks: list[Check] = []
    platforms = raw["platforms"]
    names = sorted(platforms)
    checks.append(
        Check(f"{owner}.platform", "platform", compile_value_spec("platform", names), (), False, ReasonCode.PLATFORM_UNSUPPORTED, f"{what} runs on {', '.join(names)}", reference)
    )
    for plat, reqs in platforms.items():
        when = compile_value_spec("platform", [plat])
        for fieldname, spec in (reqs or {}).items():
            if plat != Platform.CUDA.value and fieldname == "device_capability":
                ctx.issue(f"{path}.platforms.{plat}.{fieldname}", "device_capability only applies to platform cuda", plat, ["cuda"])
                continue
            p = _pred(ctx, fieldname, spec, f"{path}.platforms.{plat}.{fieldname}")
            if p is None:
                continue
            hint = f"{what} on {plat} needs {fieldname} {p.describe()}"
            checks.append(Check(f"{owner}.platforms.{plat}.{fieldname}", fieldname, p, (when,), False, ReasonCode.SM_UNSUPPORTED, hint, reference))
    for name, spec in (raw.get("packages") or {}).items():
        canon = canonicalize_name(name)
        if canon != name:
            ctx.issue(f"{path}.packages.{name}", "package names must be canonical (PEP 503)", name, [canon])
            continue
        fieldname = f"packages.{name}"
        checks.append(Check(f"{owner}.packages.{name}", fieldname, compile_value_spec(fieldname, {"present": True}), (), False, ReasonCode.PACKAGE_MISSING, f"install {name}{spec or ''}", reference))
        if spec:
            try:
                p = compile_value_spec(fieldname, {"version": spec})
            except ValueError as exc:
                ctx.issue(f"{path}.packages.{name}", str(exc), spec)
                continue
            checks.append(Check(f"{owner}.packages.{name}.version", fieldname, p, (), False, ReasonCode.PACKAGE_VERSION_UNSUPPORTED, f"{what} needs {name}{spec}", reference))
    for var, allowed in (raw.get("env") or {}).items():
        p = _pred(ctx, f"env.{var}", list(allowed), f"{path}.env.{var}")
        if p is None:
            continue
        checks.append(Check(f"{owner}.env.{var}", f"env.{var}", p, (), False, ReasonCode.ENV_DISABLED, f"set {var} to {p.describe()[7:] if p.describe().startswith('one of ') else p.describe()}", reference))
    return checks


_FEATURE_FIELDS = {"lora": "lora", "batch_invariant": "batch_invariant", "eplb": "enable_eplb"}


def _experts_entry(ctx: _Ctx, tf: TableFile, raw: Mapping[str, Any], index: int, file_ref: str) -> ExpertsEntry | None:
    eid = raw["id"]
    ctx.entry = eid
    path = f"$.entries[{index}]"
    reference = raw.get("reference", file_ref)
    what = raw["upstream"]
    n_issues = len(ctx.issues)
    checks = _requirement_checks(ctx, eid, raw, reference, path, what)
    for fieldname, spec in raw["supports"].items():
        p = _pred(ctx, fieldname, spec, f"{path}.supports.{fieldname}")
        if p is None:
            continue
        fs = field_spec(fieldname)
        hint = f"{what} supports {fieldname} {p.describe()}"
        checks.append(Check(f"{eid}.supports.{fieldname}", fieldname, p, (), False, fs.code, hint, reference))
    for feature, supported in raw["features"].items():
        if not supported:
            fieldname = _FEATURE_FIELDS[feature]
            code = FIELDS[fieldname].code
            checks.append(Check(f"{eid}.features.{feature}", fieldname, compile_value_spec(fieldname, [False]), (), False, code, f"{what} does not support {feature}", reference))
    for j, craw in enumerate(raw.get("constraints") or ()):
        chk = _constraint(ctx, craw, f"{path}.constraints[{j}]", reference)
        if chk is not None:
            checks.append(chk)
    if len(ctx.issues) != n_issues:
        return None
    return ExpertsEntry(
        id=eid,
        backend=raw["backend"],
        interface=Interface(raw["interface"]),
        activation_format=ActivationFormat(raw["activation_format"]),
        adapter=raw["adapter"],
        provider=raw["provider"],
        runtime=raw["runtime"],
        upstream=raw["upstream"],
        reference=reference,
        file=tf.path,
        notes=raw.get("notes", ""),
        declared=MappingProxyType(dict(raw)),
        checks=tuple(checks),
    )


def _pf_entry(ctx: _Ctx, tf: TableFile, raw: Mapping[str, Any], index: int, file_ref: str) -> PrepareFinalizeEntry | None:
    pid = raw["id"]
    ctx.entry = pid
    path = f"$.entries[{index}]"
    reference = raw.get("reference", file_ref)
    n_issues = len(ctx.issues)
    checks = _requirement_checks(ctx, pid, raw, reference, path, raw["upstream"])
    for j, craw in enumerate(raw.get("constraints") or ()):
        chk = _constraint(ctx, craw, f"{path}.constraints[{j}]", reference)
        if chk is not None:
            checks.append(chk)
    if len(ctx.issues) != n_issues:
        return None
    return PrepareFinalizeEntry(
        id=pid,
        dispatch=frozenset(raw["dispatch"]),
        interface=Interface(raw["interface"]),
        activation_format=ActivationFormat(raw["activation_format"]),
        carries_router_logits=raw["carries_router_logits"],
        adapter=raw["adapter"],
        provider=raw["provider"],
        runtime=raw["runtime"],
        upstream=raw["upstream"],
        reference=reference,
        file=tf.path,
        declared=MappingProxyType(dict(raw)),
        checks=tuple(checks),
    )


def _sequenced(checks: Sequence[Check]) -> tuple[Check, ...]:
    return tuple(Check(c.rule, c.field, c.predicate, c.condition, c.deny, c.code, c.hint, c.reference, seq) for seq, c in enumerate(checks))


def compile_tables(files: Sequence[TableFile]) -> Catalog:
    """Compile schema-valid table files into a :class:`Catalog`.

    Files are processed in sorted path order whatever order they are given in.

    Raises:
        TableError: every semantic problem found, at once.
    """
    files = sorted(files, key=lambda f: f.path)
    ctx = _Ctx()
    by_kind: dict[str, list[TableFile]] = {}
    for tf in files:
        by_kind.setdefault(tf.kind, []).append(tf)
    for kind in ("priority", "aliases", "environment"):
        if len(by_kind.get(kind, [])) != 1:
            ctx.issues.append(InputIssue("$", f"exactly one table of kind {kind!r} is required", [f.path for f in by_kind.get(kind, [])], None, None, None, "kind"))
    if ctx.issues:
        raise TableError(ctx.issues)

    env_doc = by_kind["environment"][0]
    env_vars: list[EnvVarSpec] = []
    ctx.file = env_doc.path
    for i, var in enumerate(env_doc.data["variables"]):
        if var["name"] in ctx.env_types:
            ctx.issue(f"$.variables[{i}].name", "duplicate environment variable", var["name"])
        expected = bool if var["type"] == "bool" else str
        if not isinstance(var["default"], expected):
            ctx.issue(f"$.variables[{i}].default", f"default must be a {var['type']}", var["default"])
        ctx.env_types[var["name"]] = var["type"]
        env_vars.append(EnvVarSpec(var["name"], var["type"], var["default"], var["doc"], var["parse"]))
        if var["type"] == "str" and var["parse"] != "str" or var["type"] == "bool" and var["parse"] == "str":
            ctx.issue(f"$.variables[{i}].parse", f"a {var['type']} variable cannot be parsed as {var['parse']}", var["parse"])
    removed_env_vars = removed_from_tables(env_doc.data.get("removed") or ())
    for i, gone in enumerate(removed_env_vars):
        if gone.name in ctx.env_types:
            ctx.issue(f"$.removed[{i}].name", "a removed variable cannot also be read", gone.name)

    ids: dict[str, str] = {}

    def claim(identifier: str, where: str) -> None:
        if identifier in ids:
            ctx.issue("$.id", f"duplicate id, also defined in {ids[identifier]}", identifier)
        else:
            ids[identifier] = where

    experts: list[ExpertsEntry] = []
    for tf in by_kind.get("experts", []):
        ctx.file = tf.path
        for i, raw in enumerate(tf.data["entries"]):
            ctx.entry = raw["id"]
            claim(raw["id"], tf.path)
            entry = _experts_entry(ctx, tf, raw, i, tf.data["reference"])
            if entry is not None:
                experts.append(entry)
    pfs: list[PrepareFinalizeEntry] = []
    for tf in by_kind.get("prepare_finalize", []):
        ctx.file = tf.path
        for i, raw in enumerate(tf.data["entries"]):
            ctx.entry = raw["id"]
            claim(raw["id"], tf.path)
            entry = _pf_entry(ctx, tf, raw, i, tf.data["reference"])
            if entry is not None:
                pfs.append(entry)
    ctx.entry = None
    backends = {e.backend for e in experts}
    kernel_ids = {e.id for e in experts}

    def known_backend(name: str, path: str) -> bool:
        if name not in backends:
            ctx.issue(path, "rule names an unknown backend", name, sorted(backends))
            return False
        return True

    # Priority
    pri = by_kind["priority"][0]
    ctx.file = pri.path
    orders: list[PriorityOrder] = []
    for i, raw in enumerate(pri.data["orders"]):
        ctx.entry = raw["id"]
        claim(raw["id"], pri.path)
        when = _condition(ctx, raw["when"], f"$.orders[{i}].when")
        for j, b in enumerate(raw["backends"]):
            known_backend(b, f"$.orders[{i}].backends[{j}]")
        if when is not None:
            orders.append(PriorityOrder(raw["id"], when, tuple(raw["backends"]), raw["reference"], raw.get("notes", "")))
    fallback = tuple(pri.data["fallback"])
    for j, b in enumerate(fallback):
        known_backend(b, f"$.fallback[{j}]")
    adjustments: list[Adjustment] = []
    for i, raw in enumerate(pri.data.get("adjustments", [])):
        ctx.entry = raw["id"]
        claim(raw["id"], pri.path)
        when = _condition(ctx, raw["when"], f"$.adjustments[{i}].when")
        for j, b in enumerate(raw["move"]):
            known_backend(b, f"$.adjustments[{i}].move[{j}]")
        if when is not None:
            adjustments.append(Adjustment(raw["id"], when, tuple(raw["move"]), raw["to"], raw["kind"], raw["reason"], raw["reference"]))
    opt_in: list[OptIn] = []
    for i, raw in enumerate(pri.data.get("opt_in_only", [])):
        ctx.entry = raw["id"]
        claim(raw["id"], pri.path)
        when = _condition(ctx, raw.get("when"), f"$.opt_in_only[{i}].when")
        known_backend(raw["backend"], f"$.opt_in_only[{i}].backend")
        if when is not None:
            opt_in.append(OptIn(raw["id"], raw["backend"], when, raw["reason"], raw["reference"]))

    # Global constraints
    global_checks: list[tuple[Check, Mapping[str, Any]]] = []
    for tf in by_kind.get("constraints", []):
        ctx.file = tf.path
        for i, raw in enumerate(tf.data["constraints"]):
            ctx.entry = raw["id"]
            claim(raw["id"], tf.path)
            applies = raw.get("applies_to") or {}
            for key in ("backends", "except_backends"):
                for j, b in enumerate(applies.get(key, [])):
                    known_backend(b, f"$.constraints[{i}].applies_to.{key}[{j}]")
            chk = _constraint(ctx, raw, f"$.constraints[{i}]", raw.get("reference", ""))
            if chk is not None:
                global_checks.append((chk, applies))

    # Known bad
    known_bad: list[KnownBad] = []
    for tf in by_kind.get("known_bad", []):
        ctx.file = tf.path
        for i, raw in enumerate(tf.data["entries"]):
            ctx.entry = raw["id"]
            claim(raw["id"], tf.path)
            for j, k in enumerate(raw["kernels"]):
                if k not in kernel_ids:
                    ctx.issue(f"$.entries[{i}].kernels[{j}]", "known-bad entry names an unknown kernel", k, sorted(kernel_ids))
            cond = _condition(ctx, raw["when"], f"$.entries[{i}].when")
            pkg_preds = []
            for name, spec in (raw.get("packages") or {}).items():
                try:
                    pkg_preds.append(compile_value_spec(f"packages.{name}", {"present": True, "version": spec}))
                except ValueError as exc:
                    ctx.issue(f"$.entries[{i}].packages.{name}", str(exc), spec)
            if cond is None:
                continue
            full = cond + tuple(pkg_preds)
            fieldname = ",".join(p.field for p in full)
            chk = Check(raw["id"], fieldname, None, full, True, ReasonCode.KNOWN_BAD, raw["hint"], raw["reference"])
            known_bad.append(KnownBad(raw["id"], tuple(raw["kernels"]), chk, raw.get("effect", ""), raw.get("replaces", "")))

    # Aliases
    al = by_kind["aliases"][0]
    ctx.file = al.path
    backend_names: dict[str, tuple[str, ...]] = {b: (b,) for b in sorted(backends)}
    implied_quant: dict[str, str] = {}
    for name, raw in al.data["backends"].items():
        ctx.entry = name
        for j, b in enumerate(raw["backends"]):
            known_backend(b, f"$.backends.{name}.backends[{j}]")
        if name in backends and tuple(raw["backends"]) != (name,):
            ctx.issue(f"$.backends.{name}", "an alias may not redefine a backend id", name)
        backend_names[name] = tuple(raw["backends"])
        if "quant_scheme" in raw:
            implied_quant[name] = raw["quant_scheme"]
    if "auto" in backend_names:
        ctx.issue("$.backends.auto", "'auto' is reserved", "auto")
    all2all_aliases = {
        name: All2AllAlias(name, raw["to"], raw["status"], raw.get("remove_after"), raw.get("note", ""), raw["reference"]) for name, raw in al.data["all2all"].items()
    }

    # Overrides
    overrides: list[Override] = []
    for tf in by_kind.get("overrides", []):
        ctx.file = tf.path
        for i, raw in enumerate(tf.data["overrides"]):
            ctx.entry = raw["id"]
            claim(raw["id"], tf.path)
            when = _condition(ctx, raw["when"], f"$.overrides[{i}].when")
            for j, var in enumerate(raw["explicit"]):
                if var not in ctx.env_types:
                    ctx.issue(f"$.overrides[{i}].explicit[{j}]", "environment variable is not declared in rules/environment.yaml", var, sorted(ctx.env_types))
            known_backend(raw["request"], f"$.overrides[{i}].request")
            if when is not None:
                overrides.append(Override(raw["id"], when, tuple(raw["explicit"]), raw["request"], raw["reason"], raw["reference"]))

    ctx.file = None
    ctx.entry = None
    if not experts and not ctx.issues:
        ctx.issue("$", "the table set declares no experts kernel")
    if not pfs and not ctx.issues:
        ctx.issue("$", "the table set declares no prepare/finalize")
    if ctx.issues:
        raise TableError(ctx.issues)

    # Checks that depend on the whole table set: pairing with a prepare/finalize, the
    # backend request, and exclusion from an automatic priority order.
    # The backend's own id first: hints and why-not suggest the canonical name.
    names_for = {b: (b, *sorted(n for n, bs in backend_names.items() if b in bs and n != b)) for b in backends}
    request_checks = {
        b: Check(f"request.{b}", "moe_backend", compile_value_spec("moe_backend", ["auto", *names_for[b]]), (), False, ReasonCode.NOT_REQUESTED, f"another backend was requested; this one answers to moe_backend={'|'.join(names_for[b])}", "rules/aliases.yaml")
        for b in backends
    }
    pf_choice: list[dict[str, int]] = []
    final_experts = []
    for entry in experts:
        ctx.file, ctx.entry = entry.file, entry.id
        choice: dict[str, int] = {}
        for j, pf in enumerate(pfs):
            if pf.interface is entry.interface and pf.activation_format is entry.activation_format:
                for d in sorted(pf.dispatch):
                    if d in choice:
                        ctx.issue("$.dispatch", f"two prepare/finalize entries serve dispatch {d!r} for {entry.interface.value} {entry.activation_format.value} experts: {pfs[choice[d]].id} and {pf.id}", d)
                    choice[d] = j
        pf_choice.append(choice)
        if not choice:
            ctx.issue("$.interface", "no prepare/finalize pairs with this kernel's interface and activation format", f"{entry.interface.value}/{entry.activation_format.value}")
            continue
        allowed = sorted(choice)
        pairing = Check(
            f"{entry.id}.pairing", "dispatch", compile_value_spec("dispatch", allowed), (), False, ReasonCode.PAIRING_INCOMPATIBLE,
            f"{entry.interface.value} {entry.activation_format.value}-format experts pair only with a prepare/finalize for dispatch {', '.join(allowed)}", entry.reference,
        )
        extra: list[Check] = [pairing, request_checks[entry.backend]]
        for chk, applies in global_checks:
            if applies.get("backends") and entry.backend not in applies["backends"]:
                continue
            if entry.backend in applies.get("except_backends", []):
                continue
            extra.append(chk)
        extra += [kb.check for kb in known_bad if entry.id in kb.kernels]
        final_experts.append(_replace_checks(entry, _sequenced(entry.checks + tuple(extra))))
    final_pfs = [_replace_checks(pf, _sequenced(pf.checks)) for pf in pfs]
    ctx.file = ctx.entry = None
    if ctx.issues:
        raise TableError(ctx.issues)

    def excluded_checks(order: PriorityOrder) -> dict[str, Check]:
        listed = set(order.backends) | set(fallback)
        return {
            b: Check(order.id, "moe_backend", compile_value_spec("moe_backend", list(names_for[b])), (), False, ReasonCode.PATH_NOT_ENABLED,
                     f"{b} is not in the automatic priority order {order.id}; request it with moe_backend={names_for[b][0]}", order.reference)
            for b in sorted(backends - listed)
        }

    orders = [_replace_field(o, excluded=MappingProxyType(excluded_checks(o))) for o in orders]
    opt_in = [
        _replace_field(o, check=Check(o.id, "moe_backend", compile_value_spec("moe_backend", list(names_for[o.backend])), (), False, ReasonCode.PATH_NOT_ENABLED, f"{o.reason}; request it with moe_backend={names_for[o.backend][0]}", o.reference))
        for o in opt_in
    ]

    packages: set[str] = set()
    for owner in (*final_experts, *final_pfs):
        packages.update(c.field[9:] for c in owner.checks if c.field.startswith("packages."))
        for c in owner.checks:
            packages.update(p.field[9:] for p in c.condition if p.field.startswith("packages."))

    digest = hashlib.sha256()
    for tf in files:
        digest.update(tf.path.encode())
        digest.update(tf.sha256.encode())
    env_types = dict(ctx.env_types)
    return Catalog(
        experts=tuple(final_experts),
        prepare_finalize=tuple(final_pfs),
        orders=tuple(orders),
        adjustments=tuple(adjustments),
        opt_in=tuple(opt_in),
        fallback=fallback,
        known_bad=tuple(known_bad),
        global_constraints=tuple(c for c, _ in global_checks),
        backend_names=MappingProxyType(backend_names),
        implied_quant=MappingProxyType(implied_quant),
        all2all_aliases=MappingProxyType(all2all_aliases),
        env_vars=tuple(env_vars),
        overrides=tuple(overrides),
        package_names=tuple(sorted(packages)),
        files=tuple(tf.path for tf in files),
        tables_hash=digest.hexdigest()[:16],
        experts_index=build_index([e.id for e in final_experts], [e.checks for e in final_experts], env_types),
        pf_index=build_index([p.id for p in final_pfs], [p.checks for p in final_pfs], env_types),
        pf_choice=tuple(MappingProxyType(c) for c in pf_choice),
        # Within a backend: monolithic first, then table order.
        rank_key=tuple((0 if e.interface is Interface.MONOLITHIC else 1, i) for i, e in enumerate(final_experts)),
        removed_env_vars=removed_env_vars,
    )


def _replace_checks(entry: Any, checks: tuple[Check, ...]) -> Any:
    return replace(entry, checks=checks)


def _replace_field(record: Any, **changes: Any) -> Any:
    return replace(record, **changes)


def load_catalog(directories: Sequence[Path] | None = None, schemas: Schemas | None = None) -> Catalog:
    """Load, validate and compile a table set (default: the tables shipped in the package).

    Raises:
        TableError: every schema and semantic problem, with file, entry id and JSON path.
    """
    dirs = list(directories) if directories is not None else list(table_dirs())
    schemas = schemas or load_schemas()
    root = package_dir() if directories is None else None
    files, issues = read_tables_cached(dirs, schemas, root)
    if issues:
        raise TableError(issues)
    return compile_tables(files)


def suggest_backend(catalog: Catalog, name: str) -> str | None:
    """Did-you-mean for a backend name."""
    return did_you_mean(name, list(catalog.backend_names))
