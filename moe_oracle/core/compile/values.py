"""Value specs, conditions, constraints and requirements: the pieces every table kind is made of.

Each function checks a table fragment against the field namespace (:mod:`moe_oracle.core.fields`) and
compiles it into :class:`~moe_oracle.core.predicates.Predicate` or :class:`~moe_oracle.core.checks.Check`
records; a problem becomes an issue in the :class:`~.context.CompileContext` and the function
returns ``None``.
"""

from __future__ import annotations

import math
from typing import Any, Mapping

from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from ..checks import Check
from ..environment import HOST_TOOLS
from ..errors import InputIssue, did_you_mean
from ..fields import FIELDS, IntDomain, field_spec, is_known_field
from ..predicates import Predicate, compile_value_spec
from ..vocab import Platform, ReasonCode
from .context import INVALID, CompileContext

__all__ = ["CONSTRAINT_KEYWORDS", "condition", "constraint", "predicate", "requirement_checks"]

CONSTRAINT_KEYWORDS = ("in", "not_in", "min", "max", "multiple_of", "not_multiple_of", "present", "version")
_PACKAGE_KEYWORDS = ("present", "version")
_NUMERIC = ("min", "max", "multiple_of", "not_multiple_of")


def _check_values(ctx: CompileContext, fieldname: str, spec: Any, path: str, field_path: str | None = None) -> bool:
    """``path``: where ``spec`` is written (its keywords under it); ``field_path``: where the field
    name is (default ``path``; a constraint's ``$.constraints[0].field``)."""
    field_path = field_path or path
    if not is_known_field(fieldname):
        ctx.issue(field_path, "unknown field", fieldname, list(FIELDS) + ["packages.<name>", "env.<VAR>"] + [f"tools.{t}" for t in HOST_TOOLS])
        return False
    if fieldname.startswith("env.") and fieldname[4:] not in ctx.env_types:
        ctx.issue(field_path, "environment variable is not declared in rules/environment.yaml", fieldname[4:], sorted(ctx.env_types))
        return False
    fs = field_spec(fieldname)
    keyed = {"in": spec} if isinstance(spec, list) else dict(spec)
    ok = True
    domain = fs.domain
    if fieldname.startswith("env.") and ctx.env_types.get(fieldname[4:]) == "bool":
        domain = (False, True)
    strings = fs.kind in ("enum", "str") and not (fieldname.startswith("env.") and ctx.env_types.get(fieldname[4:]) != "str")
    for key, arg in keyed.items():
        if key in ("in", "not_in"):
            for j, value in enumerate(arg):
                if strings and not isinstance(value, str):
                    where = f"{path}[{j}]" if isinstance(spec, list) else f"{path}.{key}[{j}]"
                    ctx.issue(where, f"field {fieldname!r} takes strings: YAML read the unquoted value as {_yaml_reading(value)}", value, list(domain) if domain is not None else None)
                    ok = False
                elif domain is not None and value not in domain:
                    ctx.issue(f"{path}.{key}" if not isinstance(spec, list) else path, f"value is not in the vocabulary of field {fieldname!r}", value, list(domain))
                    ok = False
                elif fs.kind == "int" and (isinstance(value, bool) or not isinstance(value, int)):
                    ctx.issue(f"{path}.{key}" if not isinstance(spec, list) else path, f"field {fieldname!r} takes integers", value, None)
                    ok = False
                elif fs.ints is not None and not _listable(fs.ints, value):
                    where = f"{path}.{key}" if not isinstance(spec, list) else path
                    if fs.ints.listed is not None and fs.ints.contains(value):
                        ctx.issues.append(_NumberIssue(where, f"value is not a known {fieldname} (a typo?)", value, list(fs.ints.listed), ctx.file, ctx.entry, "semantic"))
                    else:
                        ctx.issue(where, f"value is outside the domain of field {fieldname!r} ({fs.ints.describe()}): no config has it", value, None)
                    ok = False
        elif key == "present":
            if not fieldname.startswith("packages."):
                ctx.issue(f"{path}.{key}", "present only applies to packages.<name> fields", fieldname, None)
                ok = False
        elif key in _NUMERIC:
            if fs.kind not in ("int", "float"):
                ctx.issue(f"{path}.{key}", f"{key} only applies to numeric fields, and {fieldname!r} is {fs.kind}", arg, None)
                ok = False
            elif isinstance(arg, bool) or not isinstance(arg, (int, float)):
                ctx.issue(f"{path}.{key}", f"{key} takes a number", arg, None)
                ok = False
            elif (isinstance(arg, float) and not math.isfinite(arg)) or abs(arg) > 2**53:
                # A NaN bound fails every comparison and would silently reject every config.
                ctx.issue(f"{path}.{key}", f"{key} must be a finite number of magnitude at most 2**53", arg, None)
                ok = False
            elif fs.kind == "int" and not isinstance(arg, int):
                ctx.issue(f"{path}.{key}", f"field {fieldname!r} takes integers, so {key} is an integer", arg, None)
                ok = False
    return ok


def _listable(ints: IntDomain, value: int) -> bool:
    return ints.contains(value) and (ints.listed is None or value in ints.listed)


def _yaml_reading(value: Any) -> str:
    """What an unquoted YAML scalar became, and how to write the string instead."""
    if isinstance(value, bool):
        return f"the boolean {str(value).lower()} (unquoted yes/no, on/off and true/false are booleans in YAML); quote it, e.g. \"{'yes' if value else 'no'}\""
    return f"the {type(value).__name__} {value!r}; quote it, e.g. \"{value!r}\""


class _NumberIssue(InputIssue):
    """A listed number outside the values its field may list; the did-you-mean compares digits
    (``1070`` -> ``107``)."""

    def suggestion(self) -> str | None:
        return did_you_mean(str(self.value), [str(v) for v in self.allowed or ()])


def predicate(ctx: CompileContext, fieldname: str, spec: Any, path: str, field_path: str | None = None) -> Predicate | None:
    """One value spec on one field (a list means ``in``); the paths as :func:`_check_values`'s."""
    if not _check_values(ctx, fieldname, spec, path, field_path):
        return None
    try:
        return compile_value_spec(fieldname, spec)
    except ValueError as exc:
        ctx.issue(path, str(exc), spec)
        return None


def condition(ctx: CompileContext, cond: Mapping[str, Any] | None, path: str) -> tuple[Predicate, ...] | None:
    """Every field of ``when``/``if`` must hold; ``None`` when any part is invalid."""
    preds = []
    for fieldname, spec in (cond or {}).items():
        p = predicate(ctx, fieldname, spec, f"{path}.{fieldname}")
        if p is None:
            return None
        preds.append(p)
    return tuple(preds)


def constraint(ctx: CompileContext, raw: Mapping[str, Any], path: str, default_ref: str) -> Check | None:
    """A constraint (``field`` + keywords, optionally under ``if``) as a Check."""
    spec = {k: raw[k] for k in CONSTRAINT_KEYWORDS if k in raw}
    misplaced = [k for k in _PACKAGE_KEYWORDS if k in spec] if not raw["field"].startswith("packages.") else []
    if misplaced:
        ctx.issue(f"{path}.{misplaced[0]}", f"{misplaced[0]} applies only to packages.<name> fields", raw["field"], ["packages.<name>"])
        return None
    # The keywords sit beside `field`, so their paths are the constraint's ($.constraints[0].max).
    pred = predicate(ctx, raw["field"], spec, path, f"{path}.field")
    cond = condition(ctx, raw.get("if"), f"{path}.if")
    if pred is None or cond is None:
        return None
    if raw.get("after_selection"):
        ctx.after_selection.add(raw["id"])
    if raw.get("raised_on_request"):
        ctx.request_gates.add(raw["id"])
    return Check(raw["id"], raw["field"], pred, cond, False, ReasonCode(raw["reason"]), raw["hint"], raw.get("reference", default_ref))


def ranged_constraints(ctx: CompileContext, raws: Any, path: str, default_ref: str) -> tuple[list[Check], list[SpecifierSet | None]]:
    """An entry's ``constraints`` with the engine range of each."""
    checks: list[Check] = []
    ranges: list[SpecifierSet | None] = []
    for j, craw in enumerate(raws or ()):
        where = f"{path}.constraints[{j}]"
        rng = ctx.engine_range(craw, where)
        chk = constraint(ctx, craw, where, default_ref)
        if chk is not None and rng is not INVALID:
            checks.append(chk)
            ranges.append(rng)  # type: ignore[arg-type]
    return checks, ranges


def package_checks(ctx: CompileContext, owner: str, packages: Mapping[str, str], reference: str, path: str, what: str) -> list[Check]:
    """``packages: {name: PEP 440 range}``: installed (package_missing) and in range (package_version_unsupported)."""
    checks: list[Check] = []
    for name, spec in (packages or {}).items():
        canon = canonicalize_name(name)
        if canon != name:
            ctx.issue(f"{path}.packages.{name}", "package names must be canonical (PEP 503)", name, [canon])
            continue
        if ctx.engine is not None and name == ctx.engine.name:
            ctx.issue(f"{path}.packages.{name}", f"{name} is the engine, not a dependency: give the releases a fact holds for as `engine: {{{name}: \"<range>\"}}`", name)
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
    return checks


def requirement_checks(ctx: CompileContext, owner: str, raw: Mapping[str, Any], reference: str, path: str, what: str) -> list[Check]:
    """Platform, package and environment checks shared by experts and prepare/finalize entries.

    ``platforms`` may be absent on an entry that implements another (it inherits that one's).
    """
    checks: list[Check] = []
    platforms = raw.get("platforms")
    if platforms is not None:
        names = sorted(platforms)
        checks.append(Check(f"{owner}.platform", "platform", compile_value_spec("platform", names), (), False, ReasonCode.PLATFORM_UNSUPPORTED, f"{what} runs on {', '.join(names)}", reference))
        for plat, reqs in platforms.items():
            when = compile_value_spec("platform", [plat])
            for fieldname, spec in (reqs or {}).items():
                if plat != Platform.CUDA.value and fieldname == "device_capability":
                    ctx.issue(f"{path}.platforms.{plat}.{fieldname}", "device_capability only applies to platform cuda", plat, ["cuda"])
                    continue
                p = predicate(ctx, fieldname, spec, f"{path}.platforms.{plat}.{fieldname}")
                if p is None:
                    continue
                hint = f"{what} on {plat} needs {fieldname} {p.describe()}"
                checks.append(Check(f"{owner}.platforms.{plat}.{fieldname}", fieldname, p, (when,), False, ReasonCode.SM_UNSUPPORTED, hint, reference))
    checks += package_checks(ctx, owner, raw.get("packages") or {}, reference, path, what)
    for var, allowed in (raw.get("env") or {}).items():
        p = predicate(ctx, f"env.{var}", list(allowed), f"{path}.env.{var}")
        if p is None:
            continue
        text = p.describe()
        checks.append(Check(f"{owner}.env.{var}", f"env.{var}", p, (), False, ReasonCode.ENV_DISABLED, f"set {var} to {text[7:] if text.startswith('one of ') else text}", reference))
    return checks
