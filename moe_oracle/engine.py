"""The rule engine: one pure function from (catalog, config, environment, policy) to a Decision.

0. Resolve the engine release the environment declares, probes or leaves to assume, and take
   the catalog's view for it (memoized: a dictionary lookup per call).
1. Resolve the requested backend (``moe_backend``, or an environment override);
   an unknown name raises before anything is evaluated.
2. Normalize the config (:mod:`moe_oracle.normalize`); a known release's pinned package
   versions stand in for undeclared ones.
3. Evaluate *every* check of *every* experts kernel and prepare/finalize
   (:class:`~moe_oracle.checks.CheckIndex`); unknown inputs abstain. Known-bad rules are
   evaluated too; they reject only under the safe policy.
4. Order backends by the first matching priority order, then apply the
   adjustments that fire (each recorded); within a backend, monolithic before
   modular, then table order. Backends outside the order are rejected with
   ``path_not_enabled`` unless requested.
5. Under the faithful policy, a shortcut whose condition holds picks the winner as the
   engine's early return does (its unchecked failures become warnings). Otherwise the first
   eligible candidate wins. A faithful winner that matches a known-bad rule, or that a shortcut
   returned unchecked, gets a warning naming the safe alternative (the safe policy's winner).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from .catalog import Catalog, PriorityOrder, Shortcut
from .checks import Check, Outcome
from .config import MoEConfig, Provenance
from .decision import Decision, Ranking, Row, make_failure
from .environment import Environment
from .envvars import env_notes
from .refusals import no_effect_notes
from .errors import ConfigError, InputIssue
from .normalize import Normalized, normalize
from .predicates import Predicate
from .quant import SCHEMES
from .records import DecisionWarning, Demotion
from .versions import EngineRelease
from .vocab import Policy, ReasonCode, Source

__all__ = ["evaluate", "resolve_request"]


def resolve_request(catalog: Catalog, moe_backend: str) -> tuple[str, ...] | None:
    """Backend ids a ``moe_backend`` name selects; ``None`` for ``auto``.

    Raises:
        ConfigError: unknown name (with did-you-mean and every accepted name).
    """
    name = moe_backend.strip().lower().replace("-", "_")
    if name == "auto":
        return None
    if name not in catalog.backend_names:
        raise ConfigError([InputIssue("$.moe_backend", "unknown MoE backend", moe_backend, ["auto", *sorted(catalog.backend_names)])])
    return catalog.backend_names[name]


def _apply_implied_quant(catalog: Catalog, config: MoEConfig) -> tuple[MoEConfig, str | None]:
    """A backend name that also names an activation key (vLLM's ``*_afp8``) sets the quant scheme.

    It applies only to layers whose weight key is the one the name is for; otherwise the name
    requests its backend alone, and the returned note says why (vLLM raises instead).
    """
    scheme_name = catalog.implied_quant.get(config.moe_backend)
    if scheme_name is None or config.quant.name == scheme_name:
        return config, None
    scheme = SCHEMES[scheme_name]
    if config.quant.weight != scheme.weight:
        return config, f"moe_backend={config.moe_backend} selects the {scheme_name} scheme for {scheme.weight} weights; this layer's weights are {config.quant.weight or 'unquantized'}, so it requests {', '.join(catalog.backend_names[config.moe_backend])} with the layer's own scheme"
    note = Provenance("quant", Source.USER_FLAG, f"moe_backend={config.moe_backend} selects activation key {scheme.activation} ({scheme_name})")
    kept = tuple(p for p in config.provenance if p.field != "quant")
    return replace(config, quant=scheme, provenance=tuple(sorted(kept + (note,), key=lambda p: p.field))), None


def _holds(preds: tuple[Predicate, ...], values: Mapping[str, Any]) -> bool | None:
    """All predicates hold (True), one fails (False), or one input is unknown (None)."""
    unknown = False
    for p in preds:
        v = values.get(p.field)
        if v is None:
            unknown = True
        elif not p.test(v):
            return False
    return None if unknown else True


def _override(catalog: Catalog, values: Mapping[str, Any], sources: Mapping[str, Source]) -> tuple[str, str] | None:
    for ov in catalog.overrides:
        if any(sources.get(f"env.{var}") is Source.ENV_VAR for var in ov.explicit) and _holds(ov.when, values):
            return ov.request, ov.id
    return None


def _order(catalog: Catalog, values: Mapping[str, Any]) -> tuple[PriorityOrder | None, list[str], list[Demotion], list[str]]:
    notes: list[str] = []
    order = next((o for o in catalog.orders if _holds(o.when, values)), None)
    if order is None:
        notes.append("no priority order matches this platform and quant family; backends are tried in name order")
        backends = sorted(catalog.backends)
    else:
        backends = list(order.backends)
    demotions: list[Demotion] = []
    for adj in catalog.adjustments:
        held = _holds(adj.when, values)
        if held is None:
            notes.append(f"priority adjustment {adj.id} not applied: an input it reads is unknown")
        if not held:
            continue
        present = [b for b in adj.move if b in backends]
        if not present:
            continue
        rest = [b for b in backends if b not in present]
        backends = present + rest if adj.to == "front" else rest + present
        demotions += [Demotion(adj.id, b, adj.to, adj.reason, adj.reference) for b in present]
    for b in catalog.fallback:
        if b not in backends:
            backends.append(b)
    backends += sorted(set(catalog.backends) - set(backends))
    return order, backends, demotions, notes


def _input_notes(config: MoEConfig, env: Environment, values: Mapping[str, Any], catalog: Catalog) -> tuple[str, ...]:
    """Inputs that have no effect, or that are read in a way the user may not expect."""
    notes = []
    par = config.parallel
    if values["all2all"] == "none" and par.all2all_backend.value != "allgather_reducescatter":
        notes.append(f"all2all backend {par.all2all_backend.value} has no effect: all2all kernels run only with expert parallelism and dp_size > 1")
    if par.num_redundant_experts and not (par.enable_eplb and values["use_ep"]):
        notes.append(f"{par.num_redundant_experts} redundant experts have no effect without EPLB and expert parallelism")
    notes += env_notes(env.env, catalog.env_vars, catalog.removed_env_vars)
    notes += no_effect_notes(config, values, catalog)
    return tuple(notes)



# A shortcut returns before moe_backend is read and before the priority order: these checks do not stop it.
_BEFORE_REQUEST = frozenset({ReasonCode.NOT_REQUESTED, ReasonCode.PATH_NOT_ENABLED})


def evaluate(catalog: Catalog, config: MoEConfig, env: Environment, *, policy: Policy | str = Policy.FAITHFUL) -> Decision:
    """Select an experts kernel and prepare/finalize for ``config`` under ``env``.

    Args:
        catalog: any view of a table set; the view of the release ``env`` is for is used.
        config: the layer and deployment.
        env: packages (the engine release among them) and environment variables.
        policy: ``faithful`` (default: what the engine does) or ``safe``.

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
    requested = resolve_request(view, config.moe_backend)
    config, implied_note = _apply_implied_quant(view, config)
    norm = normalize(config, env, view.package_names, view.env_vars, release.assumed_packages if release is not None else None)
    values, sources = norm.values, norm.sources
    requested_by = "moe_backend" if requested is not None else None
    if requested is None:
        ov = _override(view, values, sources)
        if ov is not None:
            requested, requested_by = (ov[0],), ov[1]
            values = dict(values)
            sources = dict(sources)
            values["moe_backend"] = ov[0]
            sources["moe_backend"] = Source.ENV_VAR
            norm = Normalized(values, sources)

    fail, abstain = view.experts_index.evaluate(values)
    pf_fail, pf_abstain = view.pf_index.evaluate(values)
    kb_fail = kb_abstain = None
    if policy is Policy.SAFE and view.known_bad_index is not None:
        kb_fail, kb_abstain = view.known_bad_index.evaluate(values)
    order, backends, demotions, notes = _order(view, values)
    is_auto = values["moe_backend"] == "auto"

    # Checks that reject whole backends: outside the matched priority order, or opt-in only here.
    extra_fail: dict[str, tuple[Check, ...]] = {}
    extra_abstain: dict[str, tuple[Check, ...]] = {}
    if is_auto:
        if order is not None:
            for backend, chk in order.excluded.items():
                extra_fail[backend] = (chk,)
        for opt in view.opt_in:
            if opt.check is None:
                continue
            held = _holds(opt.when, values)
            if held:
                extra_fail[opt.backend] = extra_fail.get(opt.backend, ()) + (opt.check,)
            elif held is None:
                extra_abstain[opt.backend] = extra_abstain.get(opt.backend, ()) + (opt.check,)
    by_backend = view.by_backend
    ranked: list[int] = []
    for b in backends:
        ranked += by_backend[b]
    ranking = Ranking(view, tuple(ranked), values["dispatch"], fail, abstain, pf_fail, pf_abstain, kb_fail, kb_abstain, extra_fail, extra_abstain)

    shortcut: Shortcut | None = None
    waived: tuple[Check, ...] = ()
    if policy is Policy.FAITHFUL and view.shortcuts:
        taken = _shortcut(view, values, ranking, notes)
        if taken is not None:
            shortcut, rows, winner, waived = taken
            ranking = replace(ranking, fixed=tuple(rows))
        else:
            winner = ranking.first_eligible()
    else:
        winner = ranking.first_eligible()

    warnings = _warnings(view, original, env, norm, ranking, winner, release, policy, shortcut, waived, notes)
    if shortcut is not None and requested is not None:
        notes.append(f"{requested_by}={values['moe_backend']} is not read: the engine returns {ranking.entry(winner).upstream} {shortcut.label} before reading it ({shortcut.id})")  # type: ignore[arg-type]
    return Decision(
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
        notes=tuple(notes) + ((implied_note,) if implied_note else ()) + _config_warnings(config) + _input_notes(config, env, values, view),
        release=release,
        view=view.view_name,
        policy=policy.value,
        warnings=warnings,
        shortcut=shortcut.id if shortcut is not None else None,
    )


def _shortcut(view: Catalog, values: Mapping[str, Any], ranking: Ranking, notes: list[str]) -> tuple[Shortcut, list[Row], int, tuple[Check, ...]] | None:
    """The first shortcut whose condition holds: (shortcut, rows with its kernels first, winner, waived checks)."""
    for sc in view.shortcuts:
        held = _holds(sc.when, values)
        if held is None:
            notes.append(f"shortcut {sc.id} not applied: an input it reads is unknown")
            continue
        if not held:
            continue
        rows = ranking.rows
        by_id = {r.entry.id: r for r in rows}
        front = [by_id[k] for k in sc.try_kernels] + [by_id[sc.otherwise]]
        chosen = next((r for r in front[:-1] if not any(c.code not in _BEFORE_REQUEST for c in r.failures)), front[-1])
        waived = chosen.failures
        cleared = chosen._replace(failures=())
        ordered = [cleared if r is chosen else r for r in front] + [r for r in rows if r not in front]
        return sc, ordered, ordered.index(cleared), waived
    return None


def _warnings(
    view: Catalog, config: MoEConfig, env: Environment, norm: Normalized, ranking: Ranking, winner: int | None, release: EngineRelease | None,
    policy: Policy, shortcut: Shortcut | None, waived: tuple[Check, ...], notes: list[str],
) -> tuple[DecisionWarning, ...]:
    out = [DecisionWarning("engine_release", w) for w in (release.warnings if release is not None else ())]
    if policy is not Policy.FAITHFUL or winner is None:
        return tuple(out)
    index, entry = ranking.index(winner), ranking.entry(winner)
    hits: list[Check] = []
    # Under the faithful policy only the winner's known-bad rules matter: evaluated for it alone.
    for chk in view.known_bad_checks[index] if view.known_bad_checks else ():
        outcome = chk.evaluate(norm.values)
        if outcome is Outcome.FAIL:
            hits.append(chk)
        elif outcome is Outcome.ABSTAIN:
            notes.append(f"the selected {entry.id} may be affected by {chk.rule} (an input it reads is unknown): {chk.hint}")
    unchecked = [c for c in waived if c.code not in _BEFORE_REQUEST] if shortcut is not None else []
    if not hits and not unchecked:
        return tuple(out)
    safe = evaluate(view, config, env, policy=Policy.SAFE)
    alternative = safe.kernel
    instead = f"the safe policy selects {alternative}" if alternative else "nothing is eligible under the safe policy"
    for chk in sorted(hits, key=lambda c: c.rule):
        kb = next((k for k in view.known_bad if k.id == chk.rule), None)
        effect = f" ({kb.effect})" if kb is not None and kb.effect else ""
        out.append(DecisionWarning("known_bad", f"{entry.id} is known bad here{effect}: {chk.hint}; {instead}", chk.rule, chk.reference, alternative))
    display = release.display if release is not None else "the engine"
    assert shortcut is not None or not unchecked
    for chk in sorted(unchecked, key=lambda c: (c.seq, c.rule)):
        failure = make_failure(chk, norm)
        text = f"{display} returns {entry.upstream} {shortcut.label} before checking it: {failure.code.value}: {failure.field} = {failure.observed!r}, allowed {failure.allowed!r} [{failure.rule}]; {instead}"  # type: ignore[union-attr]
        out.append(DecisionWarning("unchecked", text, shortcut.id, shortcut.reference, alternative, failure))  # type: ignore[union-attr]
    return tuple(out)


def _config_warnings(config: MoEConfig) -> tuple[str, ...]:
    return tuple(f"{p.field}: {p.evidence}" for p in config.provenance if p.evidence.startswith("warning:"))
