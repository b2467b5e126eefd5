"""Materialize the view of a compiled table set for one engine release.

Keeps the items whose ``engine:`` range admits the release (a per-entry constraint by its own
range; a runtime entry that ``implements`` an engine entry only where that entry exists, with its
checks), then adds what depends on the whole set:

* ``<kernel>.pairing``: the dispatch kinds for which a prepare/finalize with the kernel's
  interface and activation format exists;
* ``request.<backend>``: the ``moe_backend`` names that select the backend;
* the constraints that bind every kernel (``rules/constraints.yaml``);
* per priority order, ``path_not_enabled`` checks for the backends outside it, and the opt-in checks;
* the known-bad deny checks, in their own index (the engine applies them under the safe policy).

References to backends or kernels that the release does not have are dropped from orders,
adjustments, aliases and rules, as the engine's own lists for that release would not name them.
"""

from __future__ import annotations

from dataclasses import replace
from types import MappingProxyType
from typing import Any, Iterable, Sequence, TypeVar

from packaging.version import Version

from ..catalog import Catalog, CompiledTables, ExpertsEntry, KnownBad, PrepareFinalizeEntry, _Entry
from ..checks import Check, build_index
from ..errors import InputIssue, TableError
from ..predicates import compile_value_spec
from ..versions import admits
from ..normalize import BATCHED_DISPATCH
from ..vocab import ActivationFormat, Interface, ReasonCode
from .formats import KEY as _BY_ENGINE, PARSED_KEY as _PARSED, identity_for

__all__ = ["link", "pairing_issues"]

E = TypeVar("E", bound=_Entry)


def _sequenced(checks: Sequence[Check], start: int = 0) -> tuple[Check, ...]:
    return tuple(Check(c.rule, c.field, c.predicate, c.condition, c.deny, c.code, c.hint, c.reference, start + seq) for seq, c in enumerate(checks))


def _entries(entries: Iterable[E], version: Version, base: dict[str, _Entry] | None) -> list[E]:
    """Admitted entries with their admitted checks (inherited first for an ``implements`` entry)."""
    out = []
    for e in entries:
        if not admits(e.engine, version):
            continue
        checks = [c for c, r in zip(e.checks, e.check_engine) if admits(r, version)] if e.check_engine else list(e.checks)
        identity: dict[str, Any] = {}
        if e.implements is not None:
            target = (base or {}).get(e.implements)
            if target is None:
                continue  # the engine entry it implements does not exist in this release
            checks = list(target.checks) + checks
            # the release's upstream class of the engine entry (already resolved in ``base``); the
            # activation format stays the entry's own: our adapter consumes what our runtime's
            # prepare/finalize produce (Standard), whatever format vLLM's class declares in this release
            identity = {"upstream": target.upstream}
        elif e.declared.get(_BY_ENGINE):
            identity = identity_for(e.declared, version)
        out.append(replace(e, checks=tuple(checks), check_engine=(), **identity))
    return out


def _admitted_base(compiled: CompiledTables, version: Version) -> tuple[dict[str, _Entry] | None, dict[str, _Entry] | None]:
    if compiled.base is None:
        return None, None
    experts = {e.id: e for e in _entries(compiled.base.experts, version, None)}
    pfs = {e.id: e for e in _entries(compiled.base.prepare_finalize, version, None)}
    return experts, pfs  # type: ignore[return-value]


def _pairings(experts: Sequence[ExpertsEntry], pfs: Sequence[PrepareFinalizeEntry], version: Version) -> tuple[list[dict[str, int] | None], list[InputIssue]]:
    """Per kernel, dispatch kind -> index of the prepare/finalize serving it (``None``: none pairs), and the issues."""
    issues: list[InputIssue] = []
    choices: list[dict[str, int] | None] = []
    for entry in experts:
        choice: dict[str, int] = {}
        for j, pf in enumerate(pfs):
            # vLLM 0.34.0 is_supported_config / make_moe_kernel: the experts format must be a
            # superset of what the prepare/finalize produces (equality before PaddedStandard existed).
            if pf.interface is entry.interface and entry.activation_format.is_superset(pf.activation_format):
                for d in sorted(pf.dispatch):
                    if d in choice:
                        issues.append(InputIssue("$.dispatch", f"two prepare/finalize entries serve dispatch {d!r} for {entry.interface.value} {entry.activation_format.value} experts: {pfs[choice[d]].id} and {pf.id} (engine release {version})", d, None, entry.file, entry.id, "semantic"))
                    choice[d] = j
        if not choice:
            issues.append(InputIssue("$.interface", f"no prepare/finalize pairs with this kernel's interface and activation format (engine release {version})", f"{entry.interface.value}/{entry.activation_format.value}", None, entry.file, entry.id, "semantic"))
        choices.append(choice or None)
    return choices, issues


def pairing_issues(compiled: CompiledTables, version: Version) -> list[InputIssue]:
    """What would stop the view of ``version`` from linking (checked at load for every release a
    range names, without building the view)."""
    base_experts, base_pfs = _admitted_base(compiled, version)
    experts = _entries(compiled.experts, version, base_experts)
    pfs = _entries(compiled.prepare_finalize, version, base_pfs)
    return _pairings(experts, pfs, version)[1]


def _required_packages(checks: Sequence[Check]) -> frozenset[str]:
    """The packages an entry requires: its unconditional ``packages.<name>`` presence checks."""
    return frozenset(c.field[9:] for c in checks if c.field.startswith("packages.") and not c.condition and c.predicate is not None and ("present", True) in c.predicate.spec)


def link(compiled: CompiledTables, version: Version, key: tuple[bool, ...]) -> Catalog:
    """The :class:`~moe_oracle.core.catalog.Catalog` of ``compiled`` for engine release ``version``.

    Raises:
        TableError: a kernel no prepare/finalize pairs with, or two prepare/finalize entries for
            one dispatch kind, among the entries this release admits.
    """
    ok = lambda rng: admits(rng, version)  # noqa: E731
    base_experts, base_pfs = _admitted_base(compiled, version)
    experts: list[ExpertsEntry] = _entries(compiled.experts, version, base_experts)
    pfs: list[PrepareFinalizeEntry] = _entries(compiled.prepare_finalize, version, base_pfs)
    backends = {e.backend for e in experts}
    present = lambda names: tuple(b for b in names if b in backends)  # noqa: E731

    pri = compiled.priority
    orders = [replace(o, backends=present(o.backends)) for o in pri.orders if ok(o.engine)]
    adjustments = [replace(a, move=present(a.move)) for a in pri.adjustments if ok(a.engine)]
    opt_in = [o for o in pri.opt_in if ok(o.engine) and o.backend in backends]
    fallback = present(pri.fallback)
    env_vars = tuple(v for v in compiled.env_vars if ok(v.engine))
    overrides = tuple(o for o in compiled.overrides if ok(o.engine) and o.request in backends)
    kernel_ids = {e.id for e in experts}
    shortcuts = tuple(
        replace(s, try_kernels=tuple(k for k in s.try_kernels if k in kernel_ids), selected=tuple(k for k in s.selected if k in kernel_ids))
        for s in compiled.shortcuts
        if ok(s.engine) and (s.otherwise in kernel_ids if s.otherwise is not None else any(k in kernel_ids for k in s.try_kernels)) and (not s.selected or any(k in kernel_ids for k in s.selected))
    )
    global_checks = [g for g in compiled.constraints if ok(g.engine)]
    # A constraint on whether a package is usable binds the prepare/finalize entries that require it
    # too, under a rule id of the entry's own: prepare/finalize rules are checked at construction
    # (``construction`` below), and the experts' copies must not be taken for such.
    package_gates = [g for g in global_checks if g.packages]
    if package_gates:
        pfs = [replace(pf, checks=pf.checks + tuple(replace(g.check, rule=f"{pf.id}.{g.check.rule}") for g in package_gates if _required_packages(pf.checks).intersection(g.packages))) for pf in pfs]
    known_bad: list[KnownBad] = [kb for kb in compiled.known_bad if ok(kb.engine)]

    backend_names: dict[str, tuple[str, ...]] = {b: (b,) for b in sorted(backends)}
    implied_quant: dict[str, str] = {}
    bound_all2all: dict[str, str] = {}
    for alias in compiled.backend_aliases:
        targets = present(alias.backends)
        if not ok(alias.engine) or not targets or (alias.name in backends and targets[0] != alias.name):
            continue
        backend_names[alias.name] = targets
        if alias.quant_scheme:
            implied_quant[alias.name] = alias.quant_scheme
        if alias.all2all:
            bound_all2all[alias.name] = alias.all2all
    all2all_aliases = {a.name: a for a in compiled.all2all_aliases if ok(a.engine)}

    # The backend's own id first: hints and why-not suggest the canonical name.
    names_for = {b: (b, *sorted(n for n, bs in backend_names.items() if b in bs and n != b)) for b in backends}
    accepted_names = next((names for names, rng in compiled.engine_names if ok(rng)), None)
    # What a hint may tell the operator to type: only names the release's KernelConfig accepts
    # (backend ids such as flashinfer_trtllm_afp8 or moonep are ours, not vLLM's MoEBackend values).
    spoken = {b: tuple(n for n in names_for[b] if accepted_names is None or n in accepted_names) for b in backends}
    request_checks = {
        b: Check(f"request.{b}", "moe_backend", compile_value_spec("moe_backend", ["auto", *names_for[b]]), (), False, ReasonCode.NOT_REQUESTED,
                 f"another backend was requested; this one answers to moe_backend={'|'.join(spoken[b])}" if spoken[b] else "another backend was requested; no moe_backend value of this release requests this one", "rules/aliases.yaml")
        for b in backends
    }
    choices, issues = _pairings(experts, pfs, version)
    if issues:
        raise TableError(issues)
    pf_choice: list[dict[str, int]] = []
    construction: set[str] = {c.rule for pf in pfs for c in pf.checks} | {g.check.rule for g in global_checks if g.construction}
    # Dispatch kinds whose prepare/finalize produces another format than the one normalization
    # derives from the dispatch alone (vLLM 0.34.0: DeepEP v2 produces PaddedStandard). vLLM 0.34.0
    # computes the format from the parallel config before selecting (P/config.py
    # FusedMoEConfig.activation_format), so experts that cannot consume it are refused at selection.
    # (A dispatch kind some P/F still serves in the derived format, e.g. "none" with the XPU batched
    # P/F beside the standard ones, is left to the pairing.)
    formats_by_dispatch: dict[str, set[ActivationFormat]] = {}
    for pf in pfs:
        for d in pf.dispatch:
            formats_by_dispatch.setdefault(d, set()).add(pf.activation_format)
    produced_elsewhere: dict[str, ActivationFormat] = {}
    for d, formats in formats_by_dispatch.items():
        derived = ActivationFormat.BATCHED_EXPERTS if d in BATCHED_DISPATCH else ActivationFormat.STANDARD
        if derived not in formats and len(formats) == 1:
            produced_elsewhere[d] = next(iter(formats))
    final_experts: list[ExpertsEntry] = []
    kb_owner: list[int] = []
    kb_checks: list[tuple[Check, ...]] = []
    for entry, choice in zip(experts, choices):
        assert choice is not None
        pf_choice.append(choice)
        allowed = sorted(choice)
        pairing = Check(
            f"{entry.id}.pairing", "dispatch", compile_value_spec("dispatch", allowed), (), False, ReasonCode.PAIRING_INCOMPATIBLE,
            f"{entry.interface.value} {entry.activation_format.value}-format experts pair only with a prepare/finalize for dispatch {', '.join(allowed)}", entry.reference,
        )
        fmt = entry.activation_format.value
        consumed = [f.value for f in entry.activation_format.consumed()]
        # The oracle peeks the activation format before selecting (vLLM P/oracle/*.py "peak into
        # the P/F selection"); is_supported_config rejects experts whose format is not a superset.
        peek = Check(
            f"{entry.id}.activation_format", "activation_format", compile_value_spec("activation_format", consumed), (), False, ReasonCode.PAIRING_INCOMPATIBLE,
            f"{fmt}-format experts; the all2all backend (or the request) makes the oracle expect another format", entry.reference,
        )
        construction.add(pairing.rule)
        extra = [peek]
        refused = sorted(d for d, f in produced_elsewhere.items() if not entry.activation_format.is_superset(f))
        if refused and entry.provider != "platform":  # a platform's own MoE takes no prepare/finalize
            # Only while the format is the one derived from the dispatch: a moe_backend that forces
            # the batched format (batched_triton) decides first in P/config.py activation_format.
            derived_only = (compile_value_spec("activation_format", [ActivationFormat.STANDARD.value]),)
            extra.append(Check(
                f"{entry.id}.activation_format.dispatch", "dispatch", compile_value_spec("dispatch", {"not_in": refused}), derived_only, False, ReasonCode.PAIRING_INCOMPATIBLE,
                f"{fmt}-format experts; the all2all backend produces " + ", ".join(sorted({produced_elsewhere[d].value for d in refused})) + " activations (" + ", ".join(refused) + ")",
                entry.reference,
            ))
        requires = _required_packages(entry.checks)
        extra += [pairing, request_checks[entry.backend]] + [g.check for g in global_checks if g.applies(entry.backend, entry.interface.value, entry.implements or entry.id, requires)]
        own = _sequenced(entry.checks + tuple(extra))
        final_experts.append(replace(entry, checks=own))
        bad = [kb.check for kb in known_bad if entry.id in kb.kernels or (entry.implements is not None and entry.implements in kb.kernels)]
        if bad:
            kb_owner.append(len(final_experts) - 1)
            kb_checks.append(_sequenced(bad, start=len(own)))
    final_pfs = [replace(pf, checks=_sequenced(pf.checks)) for pf in pfs]

    listed = lambda o: set(o.backends) | set(fallback)  # noqa: E731
    backend_of = {e.id: e.backend for e in experts}

    def how_to_request(b: str) -> str:
        if spoken[b]:
            return f"request it with moe_backend={spoken[b][0]}"
        # A backend no accepted name requests runs only through a shortcut (MoonEP: its all2all).
        all2all = sorted({str(v) for sc in shortcuts if b in {backend_of.get(k) for k in (*sc.try_kernels, sc.otherwise)}
                          for p in sc.when if p.field == "all2all" for kw, vals in p.spec if kw == "in" for v in vals})
        return f"no moe_backend value requests it; it runs with --all2all-backend {'|'.join(all2all)}" if all2all else "no moe_backend value of this release requests it"

    orders = [
        replace(o, excluded=MappingProxyType({
            b: Check(o.id, "moe_backend", compile_value_spec("moe_backend", list(names_for[b])), (), False, ReasonCode.PATH_NOT_ENABLED,
                     f"{b} is not in the automatic priority order {o.id}; {how_to_request(b)}", o.reference)
            for b in sorted(backends - listed(o))
        }))
        for o in orders
    ]
    opt_in = [
        replace(o, check=Check(o.id, "moe_backend", compile_value_spec("moe_backend", list(names_for[o.backend])), (), False, ReasonCode.PATH_NOT_ENABLED, f"{o.reason}; {how_to_request(o.backend)}", o.reference))
        for o in opt_in
    ]
    kernel_ids = {e.id for e in final_experts}
    known_bad = [replace(kb, kernels=tuple(k for k in kb.kernels if k in kernel_ids or any(e.implements == k for e in final_experts))) for kb in known_bad]

    packages: set[str] = {compiled.engine.name}
    for c in [c for owner in (*final_experts, *final_pfs) for c in owner.checks] + [kb.check for kb in known_bad]:
        if c.field.startswith("packages."):
            packages.add(c.field[9:])
        packages.update(p.field[9:] for p in c.condition if p.field.startswith("packages."))
    # Conditions of rules read packages too (an override that does not fire when a package is installed).
    for when in [o.when for o in orders] + [a.when for a in adjustments] + [o.when for o in opt_in] + [o.when for o in overrides] + [s.when for s in shortcuts] + [r.when for r in compiled.request_maps] + [r.when for r in compiled.rewrites] + [r.when for r in compiled.block_rules]:
        packages.update(p.field[9:] for p in when if p.field.startswith("packages."))

    request_maps = tuple(
        replace(r, names=MappingProxyType({n: present(bs) for n, bs in r.names.items()}),
                kernels=MappingProxyType({n: tuple(k for k in ks if k in kernel_ids) for n, ks in r.kernels.items()}))
        for r in compiled.request_maps
        if ok(r.engine)
    )
    env_types = dict(compiled.env_types)
    # Within a backend: monolithic first, then the backend's own family file, then other families
    # by name; within a family, file order (one file per family, so file names never decide).
    rank_key = tuple((0 if e.interface is Interface.MONOLITHIC else 1, e.family != e.backend, e.family, i) for i, e in enumerate(final_experts))
    by_backend = {b: tuple(sorted((i for i, e in enumerate(final_experts) if e.backend == b), key=rank_key.__getitem__)) for b in sorted(backends)}
    return Catalog(
        experts=tuple(final_experts),
        prepare_finalize=tuple(final_pfs),
        orders=tuple(orders),
        adjustments=tuple(adjustments),
        opt_in=tuple(opt_in),
        fallback=fallback,
        known_bad=tuple(known_bad),
        global_constraints=tuple(g.check for g in global_checks),
        backend_names=MappingProxyType(backend_names),
        implied_quant=MappingProxyType(implied_quant),
        bound_all2all=MappingProxyType(bound_all2all),
        all2all_aliases=MappingProxyType(all2all_aliases),
        env_vars=env_vars,
        removed_env_vars=compiled.removed_env_vars,
        overrides=overrides,
        package_names=tuple(sorted(packages)),
        files=compiled.files,
        tables_hash=compiled.tables_hash,
        experts_index=build_index([e.id for e in final_experts], [e.checks for e in final_experts], env_types),
        pf_index=build_index([p.id for p in final_pfs], [p.checks for p in final_pfs], env_types),
        pf_choice=tuple(MappingProxyType(c) for c in pf_choice),
        rank_key=rank_key,
        shortcuts=shortcuts,
        known_bad_index=build_index([final_experts[i].id for i in kb_owner], kb_checks, env_types) if kb_owner else None,
        known_bad_owner=tuple(kb_owner),
        known_bad_checks=tuple(kb_checks[kb_owner.index(i)] if i in kb_owner else () for i in range(len(final_experts))),
        view_name=compiled.view_name,
        engine=compiled.engine,
        after_selection=compiled.after_selection,
        request_gates=compiled.request_gates,
        source=compiled,
        key=key,
        request_maps=request_maps,
        rewrites=tuple(r for r in compiled.rewrites if ok(r.engine)),
        block_rules=tuple(replace(r, refinable=present(r.refinable)) for r in compiled.block_rules if ok(r.engine)),
        request_checks=MappingProxyType(request_checks),
        accepted_names=accepted_names,
        construction=frozenset(construction),
        layer_rules=frozenset(g.check.rule for g in global_checks if g.binds_every_kernel),
        by_backend=MappingProxyType(by_backend),
        known_bad_position=MappingProxyType({i: j for j, i in enumerate(kb_owner)}),
    )


def versioned_items(compiled: CompiledTables) -> list[tuple[str, str, Any]]:
    """Every item of a compiled table set with its engine range: ``(kind, id, SpecifierSet | None)``.

    The hook for lint rules on ranges (e.g. facts open-ended past the newest verified release).
    """
    out: list[tuple[str, str, Any]] = []
    for e in compiled.experts:
        out.append(("experts", e.id, e.engine))
        out += [("constraint", f"{e.id}:{c.rule}", r) for c, r in zip(e.checks, e.check_engine) if r is not None]
        out += [("identity", f"{e.id}:{_BY_ENGINE}[{i}]", rng) for i, (rng, _) in enumerate(e.declared.get(_PARSED) or ())]
    for p in compiled.prepare_finalize:
        out.append(("prepare_finalize", p.id, p.engine))
        out += [("constraint", f"{p.id}:{c.rule}", r) for c, r in zip(p.checks, p.check_engine) if r is not None]
        out += [("identity", f"{p.id}:{_BY_ENGINE}[{i}]", rng) for i, (rng, _) in enumerate(p.declared.get(_PARSED) or ())]
    out += [("global_constraint", g.check.rule, g.engine) for g in compiled.constraints]
    out += [("priority_order", o.id, o.engine) for o in compiled.priority.orders]
    out += [("adjustment", a.id, a.engine) for a in compiled.priority.adjustments]
    out += [("opt_in", o.id, o.engine) for o in compiled.priority.opt_in]
    out += [("known_bad", k.id, k.engine) for k in compiled.known_bad]
    out += [("override", o.id, o.engine) for o in compiled.overrides]
    out += [("backend_alias", a.name, a.engine) for a in compiled.backend_aliases]
    out += [("all2all_alias", a.name, a.engine) for a in compiled.all2all_aliases]
    out += [("environment", v.name, v.engine) for v in compiled.env_vars]
    out += [("shortcut", s.id, s.engine) for s in compiled.shortcuts]
    out += [("request_map", r.id, r.engine) for r in compiled.request_maps]
    out += [("engine_names", ",".join(sorted(names))[:40], rng) for names, rng in compiled.engine_names]
    out += [("rewrite", r.id, r.engine) for r in compiled.rewrites]
    out += [("block_rule", r.id, r.engine) for r in compiled.block_rules]
    return out
