"""The rule engine: one pure function from (catalog, config, environment) to a Decision.

1. Resolve the requested backend (``moe_backend``, or an environment override);
   an unknown name raises before anything is evaluated.
2. Normalize the config (:mod:`moe_oracle.normalize`).
3. Evaluate *every* check of *every* experts kernel and prepare/finalize
   (:class:`~moe_oracle.checks.CheckIndex`); unknown inputs abstain.
4. Order backends by the first matching priority order, then apply the
   adjustments that fire (each recorded); within a backend, monolithic before
   modular, then table order. Backends outside the order are rejected with
   ``path_not_enabled`` unless requested.
5. The first eligible candidate wins.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping

from .catalog import Catalog, PriorityOrder
from .checks import Check
from .config import MoEConfig, Provenance
from .decision import Decision, Row
from .environment import Environment
from .envvars import env_notes
from .refusals import no_effect_notes
from .errors import ConfigError, InputIssue
from .normalize import Normalized, normalize
from .predicates import Predicate
from .quant import SCHEMES
from .records import Demotion
from .vocab import Source

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


def evaluate(catalog: Catalog, config: MoEConfig, env: Environment) -> Decision:
    """Select an experts kernel and prepare/finalize for ``config`` under ``env``.

    Never raises for "nothing eligible": the Decision then has no winner.

    Raises:
        ConfigError: ``config.moe_backend`` names no known backend.
    """
    requested = resolve_request(catalog, config.moe_backend)
    config, implied_note = _apply_implied_quant(catalog, config)
    norm = normalize(config, env, catalog.package_names, catalog.env_vars)
    values, sources = norm.values, norm.sources
    requested_by = "moe_backend" if requested is not None else None
    if requested is None:
        ov = _override(catalog, values, sources)
        if ov is not None:
            requested, requested_by = (ov[0],), ov[1]
            values = dict(values)
            sources = dict(sources)
            values["moe_backend"] = ov[0]
            sources["moe_backend"] = Source.ENV_VAR
            norm = Normalized(values, sources)

    fails, abstains = catalog.experts_index.evaluate(values)
    pf_fails, pf_abstains = catalog.pf_index.evaluate(values)
    order, backends, demotions, notes = _order(catalog, values)
    position = {b: i for i, b in enumerate(backends)}
    dispatch = values["dispatch"]
    is_auto = values["moe_backend"] == "auto"

    rows: list[Row] = []
    excluded = order.excluded if (is_auto and order is not None) else {}
    opt_in = catalog.opt_in if is_auto else ()
    pf_choice = catalog.pf_choice
    pfs = catalog.prepare_finalize
    for i, entry in enumerate(catalog.experts):
        f: list[Check] = fails[i]
        a: list[Check] = abstains[i]
        pf_idx = pf_choice[i].get(dispatch)
        pf = None
        if pf_idx is not None:
            pf = pfs[pf_idx]
            f += pf_fails[pf_idx]
            a += pf_abstains[pf_idx]
        if entry.backend in excluded:
            f.append(excluded[entry.backend])
        for opt in opt_in:
            if opt.backend != entry.backend or opt.check is None:
                continue
            held = _holds(opt.when, values)
            if held:
                f.append(opt.check)
            elif held is None:
                a.append(opt.check)
        rows.append(Row(i, entry, pf, tuple(f), tuple(a)))
    rank = catalog.rank_key
    rows.sort(key=lambda r: (position[r.entry.backend], rank[r.index]))
    winner = next((k for k, r in enumerate(rows) if not r.failures), None)
    return Decision(
        config=config,
        environment=env,
        normalized=norm,
        tables_hash=catalog.tables_hash,
        order_rule=order.id if order is not None else None,
        backend_order=tuple(backends),
        demotions=tuple(demotions),
        requested=requested,
        requested_by=requested_by,
        rows=tuple(rows),
        winner=winner,
        notes=tuple(notes) + ((implied_note,) if implied_note else ()) + _config_warnings(config) + _input_notes(config, env, values, catalog),
    )


def _config_warnings(config: MoEConfig) -> tuple[str, ...]:
    return tuple(f"{p.field}: {p.evidence}" for p in config.provenance if p.evidence.startswith("warning:"))
