"""The rule engine: one pure function from (catalog, config, environment, policy) to a Decision.

0. Resolve the engine release the environment declares, probes or leaves to assume, and take
   the catalog's view for it (memoized: a dictionary lookup per call).
1. Resolve the requested backend (``moe_backend``, or an environment override);
   an unknown name raises before anything is evaluated.
2. Normalize the config (:mod:`moe_oracle.core.normalize`); a known release's pinned package
   versions stand in for undeclared ones.
3. Evaluate *every* check of *every* experts kernel and prepare/finalize
   (:class:`~moe_oracle.core.checks.CheckIndex`); unknown inputs abstain. Known-bad rules are
   evaluated too; they reject only under the safe policy.
4. Order backends by the first matching priority order (requested backends first, in the
   order their name maps them), then apply the adjustments that fire (each recorded); within
   a backend, monolithic before modular, then the backend's own family file, then other
   families by name, each in file order (``Catalog.by_backend``). Backends outside the order are
   rejected with ``path_not_enabled`` unless requested.
5. Under the faithful policy, a shortcut whose condition holds picks the winner as the
   engine's early return does (its unchecked failures become warnings). Otherwise the first
   eligible candidate wins. A faithful winner that matches a known-bad rule, or that a shortcut
   returned unchecked, gets a warning naming the safe alternative (the safe policy's winner).
"""

from __future__ import annotations

from dataclasses import replace
from itertools import chain
from types import MappingProxyType
from typing import Any, Mapping

from packaging.version import Version

from .catalog import Catalog, KeyRewrite, PriorityOrder, RequestMap, Shortcut
from .checks import Check, Outcome
from .config import MoEConfig, Provenance
from .decision import Decision
from .ranking import Ranking, Row
from .failures import make_failure
from .environment import Environment
from .envvars import env_notes
from .refusals import no_effect_notes
from .stages import before_selection
from .errors import ConfigError, InputIssue
from .fields import MORI_DISPATCH, NONE
from .normalize import Normalized, apply_block_rules, mori_resolution, normalize
from .predicates import compile_value_spec
from .quant import QuantScheme
from .records import DecisionWarning, Demotion
from .requests import apply_implied_quant, bind_all2all, engine_request, family_request, held_groups, holds
from .versions import EngineRelease
from .vocab import Policy, ReasonCode, Source
from .winner_notes import winner_notes

__all__ = ["evaluate"]


def _override(catalog: Catalog, values: Mapping[str, Any], sources: Mapping[str, Source]) -> tuple[str, str, tuple[Check, ...]] | None:
    """The first environment override that fires: (backend requested, rule id, assumptions).

    An override whose known inputs hold and some input is unknown (a ROCm device whose gfx arch
    is not known, which decides between the RDNA4 rule and the others) fires on the assumption
    that the unknown inputs hold: the returned checks record it on the forced candidates, so the
    answer says what it rests on instead of silently dropping the override.
    """
    for ov in catalog.overrides:
        if not any(sources.get(name) is Source.ENV_VAR for name in ov.explicit_fields):
            continue
        held = holds(ov.when, values)
        if held:
            return ov.request, ov.id, ()
        if held is None:
            unknown = tuple(p for p in ov.when if values.get(p.field) is None)
            checks = tuple(Check(ov.id, p.field, p, (), False, ReasonCode.SM_UNSUPPORTED if p.field == "gpu_arch" else ReasonCode.PATH_NOT_ENABLED,
                                 f"the environment override {ov.id} fires only then: {ov.reason}", ov.reference, seq=-1) for p in unknown)
            return ov.request, ov.id, checks
    return None


def _order(catalog: Catalog, values: Mapping[str, Any], requested: tuple[str, ...] | None = None) -> tuple[PriorityOrder | None, tuple[str, ...], tuple[Demotion, ...], tuple[str, ...]]:
    """(the priority order that matched, the backend order, the adjustments that fired, notes).

    A function of the fields the view's orders and adjustments read and of ``requested``: each
    answer is kept per view (a few hundred combinations of platform, capability, quant family
    ... in any process), so most selections pay one lookup.
    """
    memo = catalog.__dict__.get("_order_memo")
    if memo is None:
        fields = tuple(sorted({p.field for o in catalog.orders for p in o.when} | {p.field for a in catalog.adjustments for p in a.when}))
        memo = catalog.__dict__.setdefault("_order_memo", (fields, {}))
    fields, answers = memo
    key = (tuple(map(values.get, fields)), requested)
    try:
        hit = answers.get(key)
    except TypeError:  # an unhashable value: computed without the memo
        return _compute_order(catalog, values, requested)
    if hit is None:
        hit = _compute_order(catalog, values, requested)
        if len(answers) >= 4096:
            answers.clear()
        answers[key] = hit
    return hit


def _compute_order(catalog: Catalog, values: Mapping[str, Any], requested: tuple[str, ...] | None) -> tuple[PriorityOrder | None, tuple[str, ...], tuple[Demotion, ...], tuple[str, ...]]:
    notes: list[str] = []
    order = next((o for o in catalog.orders if holds(o.when, values)), None)
    if order is None:
        notes.append("no priority order matches this platform and quant family; backends are tried in name order")
        backends = sorted(catalog.backends)
    else:
        backends = list(order.backends)
    if requested:
        # An explicit request tries the backends its name maps to in the mapping's order
        # (vLLM's map_*_backend lists), ahead of everything else, which it rejects anyway.
        backends = list(requested) + [b for b in backends if b not in requested]
    demotions: list[Demotion] = []
    for adj in catalog.adjustments:
        held = holds(adj.when, values)
        if held is None:
            notes.append(f"priority adjustment {adj.id} not applied: an input it reads is unknown")
        if not held:
            continue
        present = [b for b in backends if b in adj.move]  # moved backends keep their relative order
        if not present:
            continue
        rest = [b for b in backends if b not in present]
        if adj.to == "front":
            backends = present + rest
        elif adj.to == "back":
            backends = rest + present
        else:
            # before:<backend> / after:<backend>: directly next to it. A backend already ahead of
            # its before-anchor stays where it is (vLLM prioritize_humming).
            where, anchor = adj.to.split(":", 1)
            if anchor not in rest:
                continue
            if where == "before" and all(backends.index(b) < backends.index(anchor) for b in present):
                continue
            at = rest.index(anchor) + (1 if where == "after" else 0)
            backends = rest[:at] + present + rest[at:]
        demotions += [Demotion(adj.id, b, adj.to, adj.reason, adj.reference) for b in present]
    for b in catalog.fallback:
        if b not in backends:
            backends.append(b)
    backends += sorted(set(catalog.backends) - set(backends))
    return order, tuple(backends), tuple(demotions), tuple(notes)


_MORI_DEPRECATED = frozenset({"mori_high_throughput", "mori_low_latency"})


def _input_notes(config: MoEConfig, env: Environment, values: Mapping[str, Any], catalog: Catalog, release: EngineRelease | None) -> tuple[str, ...]:
    """Inputs that have no effect, or that are read in a way the user may not expect; notes on
    variables name the release whose facts the answer uses (``release.stand_in``)."""
    notes = []
    par = config.parallel
    # passthrough is never "no effect": its prepare/finalize runs in every EP topology, TP-only
    # included (vLLM 0.32.0-0.34.0 P/config.py use_passthrough_all2all is not gated on use_all2all_kernels).
    if values["all2all"] == "none" and par.all2all_backend.value not in ("allgather_reducescatter", "passthrough"):
        why = "all2all kernels run only with expert parallelism and dp_size > 1 or pcp_size > 1 (vLLM 0.29.0-0.34.0 P/config.py use_all2all_kernels)"
        if par.all2all_backend.value == "moonep":  # its start-up checks (quantization, dtype, EPLB, placement) run all the same
            notes.append(f"all2all backend moonep runs no kernels here: {why}; vLLM still makes MoonEP's start-up checks (vllm/config/vllm.py VllmConfig.__post_init__)")
        else:
            notes.append(f"all2all backend {par.all2all_backend.value} has no effect: {why}")
    # No note on redundant experts without EPLB: vLLM 0.29.0-0.34.0 refuses them at start
    # (vllm/config/parallel.py _validate_parallel_config), which constraint.redundant_experts_need_eplb
    # reports; without expert parallelism, EPLB itself is refused.
    if values["dispatch"] in MORI_DISPATCH:
        notes.append(mori_resolution(config, env, values["quant_method"], config.quant.weight).note())
    elif values["all2all"] in _MORI_DEPRECATED and release is not None and Version(release.stand_in) >= Version("0.34.0"):
        # vLLM 0.34.0 vllm/distributed/device_communicators/cuda_communicator.py warns when it builds the manager.
        notes.append(f"--all2all {values['all2all']} is deprecated in vLLM 0.34.0 (it warns at start and runs MoRI EPv1); --all2all mori picks MoRI EPv1 or EPv2 itself")
    if env.env:  # notes are about declared variables only
        notes += env_notes(env.env, catalog.env_vars, catalog.removed_env_vars, release=release.stand_in if release is not None else None)
    notes += no_effect_notes(config, values, catalog)
    return tuple(notes)



# A shortcut returns before moe_backend is read and before the priority order: these checks do not stop it.
_BEFORE_REQUEST = frozenset({ReasonCode.NOT_REQUESTED, ReasonCode.PATH_NOT_ENABLED})


def evaluate(catalog: Catalog, config: MoEConfig, env: Environment, *, policy: Policy | str = Policy.FAITHFUL, rewrite: bool = True) -> Decision:
    """Select an experts kernel and prepare/finalize for ``config`` under ``env``.

    Args:
        catalog: any view of a table set; the view of the release ``env`` is for is used.
        config: the layer and deployment.
        env: packages (the engine release among them) and environment variables.
        policy: ``faithful`` (default: what the engine does) or ``safe``.
        rewrite: apply the front-end rewrites (``False``: select for the checkpoint's own method,
            as a rewrite with ``source_selection`` asks first).

    Never raises for "nothing eligible": the Decision then has no winner.

    Raises:
        ConfigError: ``config.moe_backend`` names no known backend, or ``policy`` is unknown.
    """
    try:
        policy = Policy(policy)
    except ValueError:
        raise ConfigError([InputIssue("policy", "unknown policy", policy, [p.value for p in Policy])]) from None
    release = catalog.release(env) if catalog.source is not None else None
    view = catalog.for_release(release) if release is not None else catalog
    original = config
    pending_source: Decision | None = None
    requested = engine_request(view, config.moe_backend, release)
    config, implied_note = apply_implied_quant(view, config)
    config, bound_note = bind_all2all(view, config)
    assumed = release.assumed_packages if release is not None else None
    norm = normalize(config, env, view.package_names, view.env_vars, assumed)
    notes: list[str] = []
    if view.rewrites and rewrite:
        rewritten = _rewrite(view.rewrites, held_groups(view, "rewrites", norm.values), config)
        if rewritten is not None:
            config, note, rw = rewritten
            if rw.source_selection:
                source = evaluate(catalog, original, env, policy=policy, rewrite=False)
                late = view.construction | view.after_selection
                chosen = _selected_ignoring(source, late | rw.source_late)
                if chosen is None:
                    return replace(source, notes=(f"{rw.id}: the method the front end hands the experts to first builds the checkpoint's own method, "
                                                  f"whose selection below refuses the layer ({rw.reference})",) + source.notes)
                notes.append(f"{rw.id}: the checkpoint's own method is built first and selects {chosen} (not run)")
                if _selected_ignoring(source, late) is None:
                    # Its layer checks (create_weights' block checks) run after the new method selected.
                    pending_source = replace(source, notes=(f"{rw.id}: the new method selects, then the checkpoint's own method's create_weights "
                                                            f"refuses the layer as below ({rw.reference})",) + source.notes)
            notes.append(note)
            norm = normalize(config, env, view.package_names, view.env_vars, assumed)
    values, sources = norm.values, norm.sources
    requested_by = "moe_backend" if requested is not None else None
    name = config.moe_backend.strip().lower().replace("-", "_")
    family_map, family_requested, forced_format = family_request(view, name, values)
    if family_map is not None:
        requested = family_requested
        requested_by = "moe_backend" if requested is not None else None
        changed: dict[str, Any] = {}
        if requested is None and name != "auto":
            changed["moe_backend"] = "auto"
            notes.append(f"moe_backend={config.moe_backend} is read as auto for this layer ({family_map.id}: {family_map.reference})")
        if forced_format is not None and forced_format != values["activation_format"]:
            changed["activation_format"] = forced_format
            if name in family_map.formats:
                notes.append(f"moe_backend={config.moe_backend} makes the oracle expect {forced_format}-format experts ({family_map.id})")
            else:
                notes.append(f"this layer's method asks its experts with the {forced_format} format, not the {values['activation_format']} format the prepare/finalize produces ({family_map.id})")
        if requested == ():
            notes.append(f"moe_backend={config.moe_backend} is not a backend this layer's oracle accepts ({family_map.id}: {', '.join(sorted(family_map.names))}); the engine raises")
        if changed:
            values = {**values, **changed}
            sources = {**sources, **{k: Source.USER_FLAG if k == "moe_backend" else Source.DERIVED for k in changed}}
            norm = Normalized(values, sources)
    # The FP8 front end pads the TP shard only for an explicit moe_backend, not for an env override.
    explicit = requested
    override_assumed: tuple[Check, ...] = ()
    if requested is None and env.env:  # an override needs an explicitly set variable
        ov = _override(view, values, sources)
        if ov is not None:
            override_assumed = ov[2]
            if override_assumed:
                notes.append(f"environment override {ov[1]} applied on an assumption: " + "; ".join(f"{c.field} is unknown, assumed {c.predicate.describe() if c.predicate else ''}" for c in override_assumed))
            requested, requested_by = ((ov[0],) if family_map is None else family_map.names.get(ov[0], (ov[0],))), ov[1]
            values = dict(values)
            sources = dict(sources)
            values["moe_backend"] = ov[0]
            sources["moe_backend"] = Source.ENV_VAR
            norm = Normalized(values, sources)
    if view.block_rules:
        norm = apply_block_rules(norm, view.block_rules, explicit)
        values, sources = norm.values, norm.sources

    lookup = norm.lookup if norm.lookup is not None else values
    fail, abstain = view.experts_index.evaluate(lookup)
    pf_fail, pf_abstain = view.pf_index.evaluate(lookup)
    kb_fail = kb_abstain = None
    if policy is Policy.SAFE and view.known_bad_index is not None:
        kb_fail, kb_abstain = view.known_bad_index.evaluate(lookup)
    order, backends, demotions, order_notes = _order(view, values, requested)
    notes += order_notes
    is_auto = values["moe_backend"] == "auto"

    # Checks that reject whole backends: outside the matched priority order, or opt-in only here.
    extra_fail: dict[str, tuple[Check, ...]] = {}
    extra_abstain: dict[str, tuple[Check, ...]] = {}
    if is_auto:
        if order is not None:
            for backend, chk in order.excluded.items():
                extra_fail[backend] = (chk,)
        for opt, held in zip(view.opt_in, held_groups(view, "opt_in", values)):
            if opt.check is None:
                continue
            if held:
                extra_fail[opt.backend] = extra_fail.get(opt.backend, ()) + (opt.check,)
            elif held is None:
                extra_abstain[opt.backend] = extra_abstain.get(opt.backend, ()) + (opt.check,)
    for backend in (requested or ()) if override_assumed else ():
        extra_abstain[backend] = extra_abstain.get(backend, ()) + override_assumed
    own_fail: Mapping[int, tuple[Check, ...]] = {}
    family_checks = _request_checks(family_map, requested) if (family_map is not None and requested is not None) else None
    if family_checks is not None:
        assert family_map is not None
        # The family's oracle reads moe_backend itself (vLLM map_<family>_backend): its checks
        # replace each kernel's own request check.
        fail &= ~view.request_bits
        own_fail = _family_fails(view, family_map, name if requested_by == "moe_backend" else None, values["moe_backend"])
    by_backend = view.by_backend
    ranked = tuple(chain.from_iterable([by_backend[b] for b in backends]))
    ranking = Ranking.of(view, ranked, values["dispatch"], fail, abstain, pf_fail, pf_abstain, kb_fail, kb_abstain, extra_fail, extra_abstain, own_fail)

    shortcut: Shortcut | None = None
    waived: tuple[Check, ...] = ()
    refused: int | None = None
    # vLLM selects experts without building their prepare/finalize: under the faithful policy the
    # pairing and the prepare/finalize's own requirements do not stop a selection (they become
    # warnings); the safe policy and the runtime view (which builds what it selects) keep them.
    deferred = view.construction if (policy is Policy.FAITHFUL and view.view_name == "engine") else frozenset()
    # A shortcut before selection reorders the candidates: the rows are materialized for it (the
    # slow path); every other selection stays on the bit sets.
    taken = _shortcut(view, values, ranking, notes, deferred) if (policy is Policy.FAITHFUL and view.shortcuts) else None
    if taken is not None:
        # No winner: vLLM returns the kernel at `refused` or raises for it (_return_or_raise), and
        # the layer is refused; None when a check binding every kernel refuses it first.
        shortcut, ranking, winner, waived, refused = taken
    else:
        ranking, winner, waived, refused = _first_selected(view, ranking, notes, bool(deferred))
        after = _after_selection(view, values, ranking, winner, notes) if (winner is not None and policy is Policy.FAITHFUL and view.shortcuts) else None
        if after is not None:
            # The engine checked this winner but returns another class in its place.
            if waived:
                ranking = ranking.with_row(winner, None)  # type: ignore[arg-type]
            shortcut, ranking, winner, waived = after

    if pending_source is not None and winner is not None:
        return pending_source
    warnings = _warnings(view, original, env, norm, ranking, winner, release, policy, shortcut, waived, notes)
    if shortcut is not None and requested is not None and winner is not None:
        notes.append(f"{requested_by}={values['moe_backend']} is not read: the engine returns {ranking.entry(winner).upstream} {shortcut.label} before reading it ({shortcut.id})")
    return Decision.of(
        config=config,
        environment=env,
        normalized=norm,
        tables_hash=view.tables_hash,
        order_rule=order.id if order is not None else None,
        backend_order=tuple(backends),
        demotions=tuple(demotions),
        requested=requested,
        requested_by=requested_by,
        ranking=ranking,
        winner=winner,
        notes=tuple(notes) + ((implied_note,) if implied_note else ()) + ((bound_note,) if bound_note else ()) + _config_warnings(config) + _input_notes(config, env, values, view, release) + winner_notes(ranking.entry(winner).backend if winner is not None else None, config),
        release=release,
        view=view.view_name,
        policy=policy.value,
        warnings=warnings,
        shortcut=shortcut.id if shortcut is not None else None,
        refused=refused,
    )


def _family_fails(view: Catalog, family_map: RequestMap, name: str | None, moe_backend: Any) -> Mapping[int, tuple[Check, ...]]:
    """Kernel index -> the request check of ``family_map`` that rejects it, for ``moe_backend``
    (``name``: the request as read from ``moe_backend``, ``None`` for an env override). A function
    of the view, the map and the two names alone: each answer is built once per view (the map's
    names are a closed list, so this stays small)."""
    memo = view.__dict__.get("_family_fails")
    if memo is None:
        memo = view.__dict__.setdefault("_family_fails", {})
    key = (family_map.id, name, moe_backend)
    hit = memo.get(key)
    if hit is not None:
        return hit
    family_checks = family_map.checks
    tried = family_map.kernels.get(name) if name is not None else None
    kernel_check = None
    if tried is not None:
        kernel_check = Check(f"{family_map.id}.kernels", "moe_backend", compile_value_spec("moe_backend", ["(none)"]), (), False, ReasonCode.NOT_REQUESTED,
                             f"this layer's oracle tries only {', '.join(tried)} for moe_backend={name}", family_map.reference, 10_001)
    own_fail: dict[int, tuple[Check, ...]] = {}
    backend_ok: dict[str, bool] = {}
    for i, entry in enumerate(view.experts):
        chk = family_checks.get(entry.backend, family_checks["*"])
        passed = backend_ok.get(entry.backend)
        if passed is None:
            passed = backend_ok[entry.backend] = chk.predicate.test(moe_backend)  # type: ignore[union-attr]
        if not passed:
            own_fail[i] = (chk,)
        elif kernel_check is not None and tried is not None and entry.id not in tried:
            own_fail[i] = (kernel_check,)  # a name that maps to some kernels of its backend only
    frozen = MappingProxyType(own_fail)
    if len(memo) < 256:
        memo[key] = frozen
    return frozen


def _first_selected(view: Catalog, ranking: Ranking, notes: list[str], deferred: bool) -> tuple[Ranking, int | None, tuple[Check, ...], int | None]:
    """The first candidate the engine selects and the checks waived for it (``deferred``: those vLLM
    makes only when it builds the kernel, ``view.construction``): (the ranking with its row
    cleared, its position, the waived checks, ``None``). No winner when there is none, or when
    the selected one fails a check the engine makes only after selecting (``after_selection``):
    the layer is refused then, and the last item is that candidate's position (its row keeps
    the refusing failures: it is rejected, and the eligible candidates after it are outranked by it)."""
    tolerated = view.tolerance(deferred) if (deferred or view.after_selection) else None
    first = ranking.first_eligible(tolerated)
    if first is None:
        return ranking, None, (), None
    if not ranking.has_failure(first):
        return ranking, first, (), None
    row = ranking.row(first)
    post = view.after_selection
    refused = [c for c in row.failures if c.rule in post and (not deferred or c.rule not in view.construction)]
    if refused:
        rules = ", ".join(sorted({c.rule for c in refused}))
        notes.append(f"the engine selects {row.entry.upstream} ({row.entry.id}), then refuses the layer: {'; '.join(c.hint for c in refused)} [{rules}]")
        return ranking, None, (), first
    return ranking.with_row(first, row._replace(failures=())), first, row.failures, None


def _shortcut(view: Catalog, values: Mapping[str, Any], ranking: Ranking, notes: list[str], deferred: frozenset[str]) -> tuple[Shortcut, Ranking, int | None, tuple[Check, ...], int | None] | None:
    """The first shortcut whose condition holds: (shortcut, the ranking with its kernels first, winner,
    waived checks, the refused kernel's position when there is no winner).

    A ``try`` kernel is taken when every check it fails is one the early return does not read:
    the request and priority checks, the checks vLLM makes only when it builds the kernel
    (``deferred``) and the activation-format peek (the early return asks for standard-format
    experts), or one made after it returned (a constraint binding every kernel, an
    ``after_selection`` one), which then refuses the layer for that kernel (vLLM 0.34.0
    P/oracle/unquantized.py returns TrtLlmBf16LoRAExperts, then vllm/lora/layers/fused_moe.py
    ``_ep_check`` refuses an all2all other than allgather_reducescatter). The ``otherwise``
    kernel is returned unchecked, except that a constraint binding every kernel (the layer itself is refused before any oracle runs) or one the engine checks
    after the oracle returned (``after_selection``: the routed experts' EPLB gate) leaves no winner.

    With no winner, the refused kernel is the one vLLM's early return returns or raises for: the
    ``try`` kernel taken or the ``otherwise`` kernel, else the last ``try`` kernel (the
    ``return_or_raise`` call, e.g. vLLM 0.34.0 P/oracle/unquantized.py, LoRA: TRITON); ``None`` when
    it fails a constraint binding every kernel that vLLM makes before any kernel is selected
    (:func:`_refused_first`): the layer is refused there, and no kernel is selected.
    """
    for sc, held in zip(view.shortcuts, held_groups(view, "shortcuts", values)):
        if sc.selected:
            continue
        if not _shortcut_holds(sc, held, notes):
            continue
        rows = ranking.rows
        by_id = {r.entry.id: r for r in rows}
        tried = [by_id[k] for k in sc.try_kernels]
        front = tried + ([by_id[sc.otherwise]] if sc.otherwise is not None else [])

        def unread(r: Row, c: Check) -> bool:
            return c.code in _BEFORE_REQUEST or c.rule in deferred or c.rule == f"{r.entry.id}.activation_format"

        def later(c: Check) -> bool:
            # Checked once the early return has returned its kernel (an EPLB gate, the LoRA
            # wrapper, the profile run) or binding every kernel: it refuses the layer for the
            # kernel returned rather than passing the return on to the next one.
            return c.rule in view.layer_rules or c.rule in view.after_selection

        chosen = next((r for r in tried if all(unread(r, c) or later(c) for c in r.failures)), by_id.get(sc.otherwise) if sc.otherwise is not None else None)  # type: ignore[arg-type]
        # A check the engine makes after the oracle returned (an EPLB gate) is not waived either.
        if chosen is None or any(later(c) for c in chosen.failures):
            ordered = front + [r for r in rows if r not in front]
            at = front.index(chosen) if chosen is not None else len(front) - 1
            return sc, replace(ranking, fixed=tuple(ordered)), None, (), (None if _refused_first(view, front[at]) else at)
        waived = chosen.failures
        cleared = chosen._replace(failures=())
        ordered = [cleared if r is chosen else r for r in front] + [r for r in rows if r not in front]
        return sc, replace(ranking, fixed=tuple(ordered)), ordered.index(cleared), waived, None
    return None


def _refused_first(view: Catalog, row: Row) -> bool:
    """Whether ``row`` fails a constraint binding every kernel (``Catalog.layer_rules``) that vLLM
    makes before it selects any kernel: at start, in the layer factory or at the start of the
    family's oracle (:func:`moe_oracle.core.stages.before_selection`; not ``create_weights``, not
    the EPLB gate after selection). The layer is refused there."""
    return any(c.rule in view.layer_rules and before_selection(c.reference) for c in row.failures)


def _request_checks(rm: RequestMap, requested: tuple[str, ...]) -> Mapping[str, Check]:
    """Per backend, the check that rejects it under an explicit request read through ``rm``
    (``RequestMap.checks``: the same whatever was requested, built once per linked map)."""
    return rm.checks


def _rewrite(rewrites: tuple[KeyRewrite, ...], held: tuple[bool | None, ...], config: MoEConfig) -> tuple[MoEConfig, str, KeyRewrite] | None:
    """The config with the quant keys (and quant method) the first matching front-end rewrite gives
    the oracle, a note, and the rewrite (``held``: each rewrite's condition, :func:`held_groups`)."""
    for rw, applies in zip(rewrites, held):
        if applies:
            q = config.quant
            activation = q.activation if rw.activation is None else (None if rw.activation == NONE else rw.activation)
            scheme = QuantScheme(rw.weight or q.weight, activation)
            fields = ("quant", "quant_method") if rw.quant_method is not None else ("quant",)
            made = tuple(Provenance(f, Source.DERIVED, f"{rw.id}: {rw.reason}") for f in fields)
            kept = tuple(p for p in config.provenance if p.field not in fields)
            changes: dict[str, Any] = {"quant": scheme, "provenance": tuple(sorted(kept + made, key=lambda p: p.field))}
            method = ""
            if rw.quant_method is not None:
                changes["quant_method"] = rw.quant_method
                method = f", served by the {rw.quant_method} method instead of {config.quant_method}"
            new = replace(config, **changes)
            return new, f"the quantization front end selects with keys ({scheme.weight}, {scheme.activation}) instead of the checkpoint's ({q.weight}, {q.activation}){method}: {rw.reason} ({rw.id}; {rw.reference})", rw
    return None


def _selected_ignoring(source: Decision, ignored: frozenset[str]) -> str | None:
    """The upstream class the checkpoint's own method (built first by a ``source_selection``
    rewrite) selects when the checks of ``ignored`` are not made, or ``None``: its winner, else
    the first candidate failing only such checks (that method only selects; its experts class is
    never built, and its layer checks run later)."""
    if source.winner is not None:
        return source.rows[source.winner].entry.upstream
    return next((row.entry.upstream for row in source.rows if row.failures and all(f.rule in ignored for f in row.failures)), None)


def _shortcut_holds(sc: Shortcut, held: bool | None, notes: list[str]) -> bool:
    """Whether ``sc``'s condition holds (``held``: :func:`held_groups`); an unknown input it reads leaves
    it unapplied, with a note."""
    if held is None:
        notes.append(f"shortcut {sc.id} not applied: an input it reads is unknown")
    return bool(held)


def _after_selection(view: Catalog, values: Mapping[str, Any], ranking: Ranking, winner: int, notes: list[str]) -> tuple[Shortcut, Ranking, int, tuple[Check, ...]] | None:
    """A shortcut after selection that replaces the winner: (shortcut, the ranking with the
    replacement's row cleared, the new winner, its waived checks).

    The replacement is returned unchecked (its row's failures are cleared and become warnings).
    """
    chosen = ranking.entry(winner).id
    for sc, held in zip(view.shortcuts, held_groups(view, "shortcuts", values)):
        if chosen not in sc.selected:
            continue
        if not _shortcut_holds(sc, held, notes):
            continue
        assert sc.otherwise is not None
        k = ranking.position(sc.otherwise)
        row = ranking.row(k)
        notes.append(f"the engine checked {ranking.entry(winner).upstream} ({chosen}) but returns {row.entry.upstream} ({sc.otherwise}) {sc.label} ({sc.id})")
        return sc, ranking.with_row(k, row._replace(failures=())), k, row.failures
    return None


def _warnings(
    view: Catalog, config: MoEConfig, env: Environment, norm: Normalized, ranking: Ranking, winner: int | None, release: EngineRelease | None,
    policy: Policy, shortcut: Shortcut | None, waived: tuple[Check, ...], notes: list[str],
) -> tuple[DecisionWarning, ...]:
    out = [DecisionWarning("engine_release", w) for w in (release.warnings if release is not None else ())]
    if policy is not Policy.FAITHFUL or winner is None:
        return tuple(out)
    entry = ranking.entry(winner)
    hits: list[Check] = []
    # Under the faithful policy only the winner's known-bad rules matter: evaluated for it alone.
    for chk in view.known_bad_checks[ranking.index(winner)] if view.known_bad_checks else ():
        outcome = chk.evaluate(norm.values)
        if outcome is Outcome.FAIL:
            hits.append(chk)
        elif outcome is Outcome.ABSTAIN:
            notes.append(f"the selected {entry.id} may be affected by {chk.rule} (an input it reads is unknown): {chk.hint}")
    unchecked = [c for c in waived if c.code not in _BEFORE_REQUEST]
    if not hits and not unchecked:
        return tuple(out)
    row = ranking.row(winner)
    safe = evaluate(view, config, env, policy=Policy.SAFE)
    alternative = safe.kernel
    instead = f"the safe policy selects {alternative}" if alternative else "nothing is eligible under the safe policy"
    for chk in sorted(hits, key=lambda c: c.rule):
        kb = next((k for k in view.known_bad if k.id == chk.rule), None)
        effect = f" ({kb.effect})" if kb is not None and kb.effect else ""
        out.append(DecisionWarning("known_bad", f"{row.entry.id} is known bad here{effect}: {chk.hint}; {instead}", chk.rule, chk.reference, alternative))
    display = release.display if release is not None else "the engine"
    for chk in sorted(unchecked, key=lambda c: (c.seq, c.rule)):
        failure = make_failure(chk, norm)
        what = f"{failure.code.value}: {failure.field} = {failure.observed!r}, allowed {failure.allowed!r} [{failure.rule}]; {instead}"
        if shortcut is not None:
            text = f"{display} returns {row.entry.upstream} {shortcut.label} before checking it: {what}"
            out.append(DecisionWarning("unchecked", text, shortcut.id, shortcut.reference, alternative, failure))
        else:
            # A check vLLM makes only when it builds the selected kernel (prepare/finalize pairing).
            text = f"{display} selects {row.entry.upstream} without checking its prepare/finalize, which fails when the kernel is built: {what}"
            out.append(DecisionWarning("unchecked", text, failure.rule, failure.reference, alternative, failure))
    return tuple(out)


def _config_warnings(config: MoEConfig) -> tuple[str, ...]:
    return tuple(f"{p.field}: {p.evidence}" for p in config.provenance if p.evidence.startswith("warning:"))
