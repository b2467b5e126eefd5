"""Legal edits of the shipped tables that widen, narrow or add to one kernel's capabilities.

Each strategy takes a kernel id and returns a :class:`Mutation`: the shipped table files with
one edit applied to (a deep copy of) their parsed data, ready for ``compile_tables``. Every
edited document is checked against its JSON Schema before it is returned, so the invariants
only ever see tables a maintainer could have written.

* widening: add a value to a ``supports`` list (or open a required field to its whole domain),
  relax ``min``/``max``/``multiple_of``/``not_in``, drop a ``supports`` field, a constraint, a
  platform requirement, a package or env requirement, a known-bad entry or a global
  constraint; enable a feature; add a platform;
* narrowing: the inverse edits, plus new ``supports`` fields, constraints, package and env
  requirements and known-bad entries;
* adding: a copy of an entry with a new id (optionally a new backend) inserted anywhere.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Callable

from hypothesis import strategies as st

from moe_oracle.core._resources import package_dir, table_dirs
from moe_oracle.core.fields import FIELDS, field_spec
from moe_oracle.core.tables import TableFile, check_document, load_schemas, read_tables_cached
from moe_oracle.core.vocab import Platform, ReasonCode, enum_values
from tests.property.strategies import CATALOG, table_values

__all__ = ["Mutation", "added_kernels", "narrowings", "shipped_files", "widenings"]

SCHEMAS = load_schemas()


@lru_cache(maxsize=1)
def shipped_files() -> tuple[TableFile, ...]:
    """The shipped tables as parsed, schema-valid files (display paths as the package loads them)."""
    files, issues = read_tables_cached(list(table_dirs()), SCHEMAS, package_dir())
    assert not issues, issues
    return tuple(files)


@dataclass(frozen=True)
class Mutation:
    """The table files after one edit, and what the edit was (printed by ``note``)."""

    description: str
    files: tuple[TableFile, ...]
    kernel: str
    new_id: str | None = None


Edit = Callable[[st.DrawFn, dict[str, Any]], str]
"""An edit of the kernel's entry (in place, given the per-path documents); returns its description."""


def _fresh(data: Any) -> Any:
    # A JSON round trip drops YAML anchor sharing, so an edit touches exactly one entry.
    return json.loads(json.dumps(data))


def _index(files: tuple[TableFile, ...]) -> dict[str, int]:
    return {f.path: i for i, f in enumerate(files)}


def _site(kernel: str) -> tuple[str, int]:
    for tf in shipped_files():
        if tf.kind == "experts":
            for j, entry in enumerate(tf.data["entries"]):
                if entry["id"] == kernel:
                    return tf.path, j
    raise KeyError(kernel)


def _path_of(kind: str) -> str:
    return next(tf.path for tf in shipped_files() if tf.kind == kind)


def _finish(description: str, docs: dict[str, Any], kernel: str, new_id: str | None = None) -> Mutation:
    files = list(shipped_files())
    where = _index(shipped_files())
    for path, data in docs.items():
        old = files[where[path]]
        problems = check_document(data, path, path.split("/")[0], SCHEMAS)
        assert not problems, f"{description}: the edit made {path} schema-invalid: {[p.format() for p in problems]}"
        files[where[path]] = TableFile(old.path, old.kind, data, f"mutated:{description}")
    return Mutation(description, tuple(files), kernel, new_id)


# ------------------------------------------------------------------------------- value specs


def _domain(field: str) -> tuple[Any, ...]:
    """Values a spec on ``field`` may name: the finite domain, else what the tables name plus a few more."""
    spec = FIELDS.get(field)
    if spec is not None and spec.domain is not None:
        return tuple(spec.domain)
    if field.startswith("env."):
        var = next(v for v in CATALOG.env_vars if v.name == field[4:])
        return (False, True) if var.type == "bool" else tuple(dict.fromkeys((var.default, *table_values(field, str), "fuzz")))
    kind = field_spec(field).kind
    if kind == "int":
        # Only values a table may list (core/fields.py IntDomain: num_experts >= 1, a known CUDA capability).
        ints = field_spec(field).ints
        values = tuple(dict.fromkeys((*table_values(field, int), 1, 7, 64, 90, 100, 128, 4096)))
        return tuple(v for v in values if ints is None or (ints.contains(v) and (ints.listed is None or v in ints.listed)))
    return tuple(dict.fromkeys((*table_values(field, str), "fuzz", "x86_64", "gfx942")))


def _numeric(field: str) -> bool:
    return field_spec(field).kind in ("int", "float")


def _as_dict(spec: Any) -> dict[str, Any]:
    return {"in": list(spec)} if isinstance(spec, list) else dict(spec)


def _widen_spec(draw: st.DrawFn, field: str, spec: Any) -> tuple[Any | None, str]:
    """A spec that allows everything ``spec`` allows and maybe more; ``None`` = no restriction at all."""
    d = _as_dict(spec)
    key = draw(st.sampled_from(sorted(d)))
    arg = d[key]
    if key == "in":
        extra = [v for v in _domain(field) if v not in arg]
        if not extra:
            return None, "in: already the whole domain, dropped"
        value = draw(st.sampled_from(extra))
        d["in"] = [*arg, value]
        return (d["in"] if isinstance(spec, list) else d), f"in += {value!r}"
    if key == "not_in":
        value = draw(st.sampled_from(arg))
        rest = [v for v in arg if v != value]
        if rest:
            d["not_in"] = rest
        else:
            del d["not_in"]
        return (d or None), f"not_in -= {value!r}"
    if key == "min":
        d["min"] = arg - draw(st.integers(1, 4096))
        return d, f"min {arg} -> {d['min']}"
    if key == "max":
        d["max"] = arg + draw(st.integers(1, 4096))
        return d, f"max {arg} -> {d['max']}"
    divisors = [k for k in range(1, arg) if arg % k == 0]
    if not divisors:
        del d["multiple_of"]
        return (d or None), "multiple_of 1 dropped"
    d["multiple_of"] = draw(st.sampled_from(divisors))
    return d, f"multiple_of {arg} -> {d['multiple_of']}"


def _narrow_spec(draw: st.DrawFn, field: str, spec: Any) -> tuple[Any, str]:
    """A spec that allows at most what ``spec`` allows."""
    d = _as_dict(spec)
    key = draw(st.sampled_from(sorted(d) + ["+not_in"]))
    if key == "+not_in":
        value = draw(st.sampled_from(_domain(field)))
        d["not_in"] = sorted(set(d.get("not_in", [])) | {value}, key=repr)
        return d, f"not_in += {value!r}"
    arg = d[key]
    if key == "in":
        if len(arg) == 1:
            d["not_in"] = list(arg)
            return d, f"not_in {arg!r}: nothing passes"
        value = draw(st.sampled_from(arg))
        d["in"] = [v for v in arg if v != value]
        return (d["in"] if isinstance(spec, list) else d), f"in -= {value!r}"
    if key == "not_in":
        extra = [v for v in _domain(field) if v not in arg]
        if extra:
            value = draw(st.sampled_from(extra))
            d["not_in"] = [*arg, value]
            return d, f"not_in += {value!r}"
        return d, "not_in unchanged (whole domain)"
    if key == "min":
        d["min"] = arg + draw(st.integers(1, 4096))
        return d, f"min {arg} -> {d['min']}"
    if key == "max":
        d["max"] = arg - draw(st.integers(1, 4096))
        return d, f"max {arg} -> {d['max']}"
    d["multiple_of"] = arg * draw(st.integers(2, 8))
    return d, f"multiple_of {arg} -> {d['multiple_of']}"


def _new_spec(draw: st.DrawFn, field: str) -> Any:
    """Some restriction on ``field`` (a subset of its values, or a numeric bound)."""
    if _numeric(field) and draw(st.booleans()):
        key = draw(st.sampled_from(("min", "max", "multiple_of")))
        return {key: draw(st.integers(1, 4096) if key != "multiple_of" else st.sampled_from((2, 16, 64, 128, 256)))}
    return draw(st.lists(st.sampled_from(_domain(field)), min_size=1, max_size=4, unique=True))


_REQUIRED_SUPPORTS = ("activation", "quant_scheme", "weight_quant")
_MONOLITHIC_REQUIRED = ("routing_method", "router_logits_dtype")
_PLATFORM_FIELDS = {"cuda": ("device_capability",), "rocm": ("gpu_arch",), "xpu": ("gpu_arch",), "cpu": ("cpu_arch", "cpu_amx"), "tpu": ()}
_FEATURE_FIELDS = ("lora", "batch_invariant", "eplb")


def _required(entry: dict[str, Any], field: str) -> bool:
    return field in _REQUIRED_SUPPORTS or (entry["interface"] == "monolithic" and field in _MONOLITHIC_REQUIRED)


def _delete(*keys: Any) -> Edit:
    """Delete ``entry[k0][k1]...`` of the kernel's entry."""

    def edit(draw: st.DrawFn, docs: dict[str, Any]) -> str:
        node = docs["entry"]
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]
        return "delete " + ".".join(map(str, keys))

    return edit


def _set(value: Any, *keys: Any) -> Edit:
    """Set ``entry[k0][k1]...`` of the kernel's entry to ``value``."""

    def edit(draw: st.DrawFn, docs: dict[str, Any]) -> str:
        node = docs["entry"]
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value
        return f"{'.'.join(map(str, keys))} = {value!r}"

    return edit


# ------------------------------------------------------------------------------- widening


def _widen_edits(kernel: str, entry: dict[str, Any]) -> list[tuple[str, Edit]]:
    edits: list[tuple[str, Edit]] = []
    for field in entry["supports"]:

        def widen_support(draw: st.DrawFn, docs: dict[str, Any], field: str = field) -> str:
            e = docs["entry"]
            new, how = _widen_spec(draw, field, e["supports"][field])
            if new is None and _required(e, field):
                new, how = list(_domain(field)), "opened to the whole domain"
            if new is None:
                del e["supports"][field]
            else:
                e["supports"][field] = new
            return f"supports.{field}: {how}"

        edits.append((f"widen supports.{field}", widen_support))
        if not _required(entry, field):
            edits.append((f"drop supports.{field}", _delete("supports", field)))
    for j, c in enumerate(entry.get("constraints") or ()):
        edits.append((f"drop constraint {c['id']}", _delete("constraints", j)))

        def widen_constraint(draw: st.DrawFn, docs: dict[str, Any], j: int = j) -> str:
            c = docs["entry"]["constraints"][j]
            spec = {k: c.pop(k) for k in ("in", "not_in", "min", "max", "multiple_of") if k in c}
            new, how = _widen_spec(draw, c["field"], spec)
            if new is None:
                docs["entry"]["constraints"].pop(j)
                return f"constraint {c['id']}: {how}; dropped"
            c.update(_as_dict(new))
            return f"constraint {c['id']}: {how}"

        edits.append((f"widen constraint {c['id']}", widen_constraint))
    for feature in _FEATURE_FIELDS:
        if not entry["features"][feature]:
            edits.append((f"enable {feature}", _set(True, "features", feature)))
    for platform in enum_values(Platform):
        if platform not in entry["platforms"]:
            edits.append((f"add platform {platform}", _set({}, "platforms", platform)))
    for platform, reqs in entry["platforms"].items():
        for field in reqs or {}:

            def widen_platform(draw: st.DrawFn, docs: dict[str, Any], p: str = platform, field: str = field) -> str:
                reqs = docs["entry"]["platforms"][p]
                new, how = _widen_spec(draw, field, reqs[field])
                if new is None:
                    del reqs[field]
                else:
                    reqs[field] = new
                return f"platforms.{p}.{field}: {how}"

            edits.append((f"widen platforms.{platform}.{field}", widen_platform))
    for name, spec in (entry.get("packages") or {}).items():
        edits.append((f"drop package {name}", _delete("packages", name)))
        if spec:
            edits.append((f"unpin package {name}", _set("", "packages", name)))
    for var in entry.get("env") or {}:
        edits.append((f"drop env {var}", _delete("env", var)))
    kb_path = _path_of("known_bad")
    for k, kb in enumerate(next(tf for tf in shipped_files() if tf.path == kb_path).data["entries"]):
        if kernel in kb["kernels"]:

            def drop_known_bad(draw: st.DrawFn, docs: dict[str, Any], k: int = k) -> str:
                entries = docs.setdefault(kb_path, _fresh(next(tf for tf in shipped_files() if tf.path == kb_path).data))["entries"]
                kb = entries[k]
                kb["kernels"] = [x for x in kb["kernels"] if x != kernel]
                if not kb["kernels"]:
                    entries.pop(k)
                return f"known_bad {kb['id']} no longer names {kernel}"

            edits.append((f"drop known_bad {kb['id']}", drop_known_bad))
    for cpath in [tf.path for tf in shipped_files() if tf.kind == "constraints"]:
        for k, c in enumerate(next(tf for tf in shipped_files() if tf.path == cpath).data["constraints"]):

            def drop_global(draw: st.DrawFn, docs: dict[str, Any], k: int = k, cpath: str = cpath) -> str:
                doc = docs.setdefault(cpath, _fresh(next(tf for tf in shipped_files() if tf.path == cpath).data))
                return f"drop global constraint {doc['constraints'].pop(k)['id']}"

            edits.append((f"drop global constraint {c['id']}", drop_global))
    return edits


@st.composite
def widenings(draw: st.DrawFn, kernel: str) -> Mutation:
    """One edit that widens what ``kernel`` supports (or lifts a rule that binds it)."""
    path, j = _site(kernel)
    doc = _fresh(next(tf for tf in shipped_files() if tf.path == path).data)
    name, edit = draw(st.sampled_from(_widen_edits(kernel, doc["entries"][j])))
    docs: dict[str, Any] = {path: doc, "entry": doc["entries"][j]}
    how = edit(draw, docs)
    docs.pop("entry")
    return _finish(f"{kernel}: {how}", docs, kernel)


# ------------------------------------------------------------------------------- narrowing

_CONSTRAINT_FIELDS = tuple(sorted(FIELDS))
_REASONS = enum_values(ReasonCode)


def _narrow_edits(kernel: str, entry: dict[str, Any]) -> list[tuple[str, Edit]]:
    edits: list[tuple[str, Edit]] = []
    for field in entry["supports"]:

        def narrow_support(draw: st.DrawFn, docs: dict[str, Any], field: str = field) -> str:
            new, how = _narrow_spec(draw, field, docs["entry"]["supports"][field])
            docs["entry"]["supports"][field] = new
            return f"supports.{field}: {how}"

        edits.append((f"narrow supports.{field}", narrow_support))
    missing = [f for f in _CONSTRAINT_FIELDS if f not in entry["supports"]]

    def add_support(draw: st.DrawFn, docs: dict[str, Any]) -> str:
        field = draw(st.sampled_from(missing))
        docs["entry"]["supports"][field] = spec = _new_spec(draw, field)
        return f"supports.{field} = {spec!r}"

    edits.append(("add a supports field", add_support))

    def add_constraint(draw: st.DrawFn, docs: dict[str, Any]) -> str:
        field = draw(st.sampled_from(_CONSTRAINT_FIELDS))
        c: dict[str, Any] = {"id": f"{kernel}.fuzz_narrowing", "field": field, **_as_dict(_new_spec(draw, field))}
        if draw(st.booleans()):
            cond_field = draw(st.sampled_from([f for f in _CONSTRAINT_FIELDS if FIELDS[f].domain is not None]))
            c["if"] = {cond_field: _new_spec(draw, cond_field)}
        c.update(reason=draw(st.sampled_from(_REASONS)), hint="added by a narrowing property test")
        docs["entry"].setdefault("constraints", []).append(c)
        return f"constraint += {c!r}"

    edits.append(("add a constraint", add_constraint))
    for j, c in enumerate(entry.get("constraints") or ()):

        def narrow_constraint(draw: st.DrawFn, docs: dict[str, Any], j: int = j) -> str:
            c = docs["entry"]["constraints"][j]
            spec = {k: c.pop(k) for k in ("in", "not_in", "min", "max", "multiple_of") if k in c}
            new, how = _narrow_spec(draw, c["field"], spec)
            c.update(_as_dict(new))
            return f"constraint {c['id']}: {how}"

        edits.append((f"narrow constraint {c['id']}", narrow_constraint))
    for feature in _FEATURE_FIELDS:
        if entry["features"][feature]:
            edits.append((f"disable {feature}", _set(False, "features", feature)))
    if len(entry["platforms"]) > 1:

        def drop_platform(draw: st.DrawFn, docs: dict[str, Any]) -> str:
            platform = draw(st.sampled_from(sorted(docs["entry"]["platforms"])))
            del docs["entry"]["platforms"][platform]
            return f"platforms -= {platform}"

        edits.append(("drop a platform", drop_platform))
    for platform in entry["platforms"]:
        for field in _PLATFORM_FIELDS[platform]:

            def narrow_platform(draw: st.DrawFn, docs: dict[str, Any], p: str = platform, field: str = field) -> str:
                reqs = docs["entry"]["platforms"][p] = dict(docs["entry"]["platforms"][p] or {})
                if field in reqs:
                    reqs[field], how = _narrow_spec(draw, field, reqs[field])
                else:
                    reqs[field] = _new_spec(draw, field)
                    how = f"= {reqs[field]!r}"
                return f"platforms.{p}.{field}: {how}"

            edits.append((f"narrow platforms.{platform}.{field}", narrow_platform))

    def add_package(draw: st.DrawFn, docs: dict[str, Any]) -> str:
        # The engine itself is no package requirement (its releases are `engine:` ranges; the compiler refuses it).
        name = draw(st.sampled_from((*(p for p in CATALOG.package_names if p != CATALOG.engine.name), "fuzz-package")))
        spec = draw(st.sampled_from(("", ">=1.0", "<0.1", "==2.*")))
        docs["entry"].setdefault("packages", {})[name] = spec
        return f"packages.{name} = {spec!r}"

    edits.append(("add a package requirement", add_package))

    def add_env(draw: st.DrawFn, docs: dict[str, Any]) -> str:
        var = draw(st.sampled_from(CATALOG.env_vars))
        allowed = draw(st.lists(st.sampled_from(_domain(f"env.{var.name}")), min_size=1, max_size=2, unique=True))
        docs["entry"].setdefault("env", {})[var.name] = allowed
        return f"env.{var.name} = {allowed!r}"

    edits.append(("add an env requirement", add_env))
    kb_path = _path_of("known_bad")

    def add_known_bad(draw: st.DrawFn, docs: dict[str, Any]) -> str:
        doc = docs.setdefault(kb_path, _fresh(next(tf for tf in shipped_files() if tf.path == kb_path).data))
        fields = draw(st.lists(st.sampled_from(_CONSTRAINT_FIELDS), min_size=1, max_size=2, unique=True))
        kb = {"id": "known_bad.fuzz_narrowing", "kernels": [kernel], "when": {f: _new_spec(draw, f) for f in fields}, "hint": "added by a narrowing property test", "reference": "tests/property"}
        doc["entries"].append(kb)
        return f"known_bad += {kb['when']!r}"

    edits.append(("add a known_bad entry", add_known_bad))
    return edits


@st.composite
def narrowings(draw: st.DrawFn, kernel: str) -> Mutation:
    """One edit that narrows what ``kernel`` supports (or adds a rule that binds it)."""
    path, j = _site(kernel)
    doc = _fresh(next(tf for tf in shipped_files() if tf.path == path).data)
    name, edit = draw(st.sampled_from(_narrow_edits(kernel, doc["entries"][j])))
    docs: dict[str, Any] = {path: doc, "entry": doc["entries"][j]}
    how = edit(draw, docs)
    docs.pop("entry")
    return _finish(f"{kernel}: {how}", docs, kernel)


# ------------------------------------------------------------------------------- adding


@st.composite
def added_kernels(draw: st.DrawFn, source: str) -> Mutation:
    """A copy of ``source`` with a new id (and maybe a new backend), inserted in any experts file at any position."""
    path, j = _site(source)
    entry = _fresh(next(tf for tf in shipped_files() if tf.path == path).data["entries"][j])
    new_id = f"{source}_fuzz_copy"[:120]
    entry["id"] = new_id
    backend = draw(st.sampled_from((entry["backend"], "zz_fuzz_backend", "aa_fuzz_backend")))
    entry["backend"] = backend
    target = draw(st.sampled_from([tf.path for tf in shipped_files() if tf.kind == "experts"]))
    doc = _fresh(next(tf for tf in shipped_files() if tf.path == target).data)
    position = draw(st.integers(0, len(doc["entries"])))
    doc["entries"].insert(position, entry)
    return _finish(f"copy of {source} as {new_id} (backend {backend}) at {target}[{position}]", {target: doc}, source, new_id)
